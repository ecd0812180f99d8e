package warm

import (
	"sync"
	"testing"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/spawn"
)

// Take hands an exec a warm process only where it stands in for it,
// and says why not otherwise.
func TestTakeWarm(t *testing.T) {
	env := []string{"PATH=/bin", "HOME=/workspace"}
	warm := func(exact bool, stands ...string) *Process {
		return &Process{req: supervisor.WarmRequest{Stands: stands, Exact: exact}, env: env, dir: "/workspace"}
	}
	cases := []struct {
		name   string
		w      *Process
		argv   []string
		env    []string
		dir    string
		missed string // "" when it is taken
	}{
		{"its argv", warm(false, "python3", "main.py"), []string{"python3", "main.py"}, env, "/workspace", ""},
		{"its argv and arguments", warm(false, "python3", "main.py"), []string{"python3", "main.py", "x"}, env, "/workspace", ""},
		{"the environment in another order", warm(false, "python3", "main.py"), []string{"python3", "main.py"}, []string{env[1], env[0]}, "/workspace", ""},
		{"another script", warm(false, "python3", "main.py"), []string{"python3", "other.py"}, env, "/workspace", "another command"},
		{"a shorter argv", warm(false, "go", "build"), []string{"go"}, env, "/workspace", "another command"},
		{"another directory", warm(false, "python3", "main.py"), []string{"python3", "main.py"}, env, "/tmp", "another directory"},
		{"another environment", warm(false, "python3", "main.py"), []string{"python3", "main.py"}, append(env, "FOO=bar"), "/workspace", "another environment"},
		{"exact: its argv", warm(true, "php", "main.php"), []string{"php", "main.php"}, env, "/workspace", ""},
		{"exact: with arguments", warm(true, "php", "main.php"), []string{"php", "main.php", "x"}, env, "/workspace", "other arguments"},
	}
	spawner := spawn.New(false, nil)
	defer spawner.Close()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &Pool{mu: &sync.Mutex{}, spawner: spawner, warms: map[string]*Process{warmKey(c.w.req.Stands): c.w}}
			got, missed := s.Take(supervisor.ExecRequest{Argv: c.argv}, c.env, c.dir)
			if missed != c.missed || (got == c.w) != (c.missed == "") {
				t.Fatalf("took %v, missed %q; want missed %q", got != nil, missed, c.missed)
			}
			if _, left := s.warms[warmKey(c.w.req.Stands)]; left != (c.missed != "") {
				t.Errorf("the warm process is still there: %v", left)
			}
		})
	}
	if _, missed := (&Pool{mu: &sync.Mutex{}, spawner: spawner}).Take(supervisor.ExecRequest{Argv: []string{"x"}}, env, "/"); missed != "no warm process" {
		t.Errorf("none: %q", missed)
	}
}
