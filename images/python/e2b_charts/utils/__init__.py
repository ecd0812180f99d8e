from .filtering import is_grid_line
