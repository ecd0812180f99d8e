package sessions

import "testing"

// The file operations reach the workspace by relative paths and the
// sandbox's /tmp by its name; nothing else.
func TestFilePaths(t *testing.T) {
	for _, c := range []struct{ in, want, writable string }{
		{"a/b.txt", "a/b.txt", "a/b.txt"},
		{"/workspace/a", "a", "a"},
		{"", ".", ""},
		{"/tmp", "/tmp", ""},
		{"/tmp/", "/tmp", ""},
		{"/tmp/x/../y", "/tmp/y", "/tmp/y"},
		{"/tmp//repo/.git", "/tmp/repo/.git", "/tmp/repo/.git"},
		{"/tmp/..", "", ""},
		{"/tmp/../etc/passwd", "", ""},
		{"/tmpfile", "", ""},
		{"/etc/passwd", "", ""},
		{"../x", "", ""},
		{"project_files/a", "project_files/a", ""},
	} {
		got, err := FilePath(c.in)
		if (err == nil) != (c.want != "") || got != c.want {
			t.Errorf("FilePath(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
		w, err := writablePath(c.in)
		if (err == nil) != (c.writable != "") || w != c.writable {
			t.Errorf("writablePath(%q) = %q, %v; want %q", c.in, w, err, c.writable)
		}
	}
}
