from .main import chart_figure_to_chart, chart_figure_to_dict
