package runtime

import "testing"

func TestWorkspaceMount(t *testing.T) {
	for labels, want := range map[string]string{"": Workspace, "/workspace": Workspace, "/home/user": "/home/user", "/home/a/b": "/home/a/b"} {
		l := map[string]string{}
		if labels != "" {
			l[ImageWorkspaceLabel] = labels
		}
		if got, err := WorkspaceMount(l); err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", labels, got, err, want)
		}
	}
	for _, bad := range []string{"home/user", "/home/user/", "/home/../etc", "/usr", "/", "/home"} {
		if got, err := WorkspaceMount(map[string]string{ImageWorkspaceLabel: bad}); err == nil {
			t.Errorf("%q: %q, want an error", bad, got)
		}
	}
}
