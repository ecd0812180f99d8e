package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sandboxd/sandboxd/internal/testutil"
)

// TestInstall runs `make install` into a temporary prefix and checks what
// an operator gets: binaries and plugins that the installed config finds,
// a systemd unit systemd accepts, and shell completions.
func TestInstall(t *testing.T) {
	prefix := t.TempDir()
	root, _ := filepath.Abs("..")
	cmd := exec.Command("make", "-C", root, "install", "PREFIX="+prefix, "SYSCONFDIR="+prefix+"/etc",
		"UNITDIR="+prefix+"/units", "SOCKET_GROUP=daemon") // an existing group: no groupadd
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	config := filepath.Join(prefix, "etc", "sandboxd", "sandboxd.hcl")
	out, err := exec.Command(filepath.Join(prefix, "bin", "sandboxd"), "--config", config, "--validate").CombinedOutput()
	languages := strings.Count(readFile(t, filepath.Join(root, "sandboxd.hcl")), "\nlanguage \"")
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("is valid: %d languages", languages)) {
		t.Errorf("the installed config: %v\n%s", err, out)
	}
	if cfg := readFile(t, config); !strings.Contains(cfg, `socket_group = "daemon"`) || !strings.Contains(cfg, `plugin_dir = "`+prefix+`/lib/sandboxd/plugins"`) {
		t.Errorf("the installed config:\n%s", cfg)
	}
	unit := filepath.Join(prefix, "units", "sandboxd.service")
	if u := readFile(t, unit); !strings.Contains(u, "ExecStart="+prefix+"/bin/sandboxd --config "+config+"\n") {
		t.Errorf("the unit:\n%s", u)
	}
	if _, err := exec.LookPath("systemd-analyze"); err == nil {
		// verify wants the units it depends on: docker.service is the
		// engine's own, absent here.
		if err := os.WriteFile(filepath.Join(prefix, "units", "docker.service"), []byte("[Service]\nExecStart=/bin/true\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("systemd-analyze", "verify", unit).CombinedOutput(); err != nil {
			t.Errorf("systemd-analyze verify: %v\n%s", err, out)
		}
	} else {
		t.Log("no systemd-analyze here: the unit's syntax is not verified")
	}
	bash := filepath.Join(prefix, "share", "bash-completion", "completions", "sandboxctl")
	out, err = exec.Command("bash", "-c", "source "+bash+" && complete -p sandboxctl").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "__start_sandboxctl sandboxctl") {
		t.Errorf("bash completion: %v\n%s", err, out)
	}
	for file, want := range map[string]string{
		"share/zsh/site-functions/_sandboxctl":            "#compdef sandboxctl",
		"share/fish/vendor_completions.d/sandboxctl.fish": "complete -c sandboxctl",
	} {
		if !strings.Contains(readFile(t, filepath.Join(prefix, file)), want) {
			t.Errorf("%s lacks %q", file, want)
		}
	}
}

// TestSocketGroup: with socket_group set, the socket is 0660 and the
// group's; a user in the group may use sandboxd, one outside it is told
// how to get in.
func TestSocketGroup(t *testing.T) {
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Fatal("setpriv (util-linux) is needed to act as another user")
	}
	d := testutil.StartDaemon(t, testutil.Options{Extra: `socket_group = "daemon"`})
	fi, err := os.Stat(d.Socket)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Perm() != 0o660 || st.Gid != 1 {
		t.Fatalf("socket mode %v gid %d, want 0660 and daemon's gid 1", fi.Mode().Perm(), st.Gid)
	}
	// Let another user reach the socket's directory and the binary.
	for _, dir := range []string{filepath.Dir(d.Socket), d.Bin} {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	as := func(groups string) (string, error) {
		args := []string{"--reuid=65534", "--regid=65534", "--clear-groups"}
		if groups != "" {
			args = []string{"--reuid=65534", "--regid=65534", "--groups=" + groups}
		}
		args = append(args, filepath.Join(d.Bin, "sandboxctl"), "--socket", d.Socket, "run", "--lang", "python", "-")
		cmd := exec.Command("setpriv", args...)
		cmd.Stdin = strings.NewReader("print('as nobody')")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := as("1"); err != nil || out != "as nobody\n" {
		t.Errorf("a member of the group: %v\n%s", err, out)
	}
	out, err := as("")
	if err == nil || !strings.Contains(out, "permission denied: use it as a member of the socket's group") {
		t.Errorf("outside the group: %v\n%s", err, out)
	}
}
