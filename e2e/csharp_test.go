package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// csharpView is what a C# program sees of its sandbox that another run
// could have left: processes, and the entries of every writable place.
const csharpView = `using System;
using System.IO;
using System.Linq;
class View {
  static void Main() {
    var procs = Directory.GetDirectories("/proc").Select(Path.GetFileName).Where(d => d.All(char.IsDigit))
      .Select(p => { try { return File.ReadAllText("/proc/" + p + "/comm").Trim(); } catch { return "gone"; } })
      .OrderBy(c => c);
    Console.WriteLine("processes: " + string.Join(",", procs));
    foreach (var dir in new[] { "/workspace", "/tmp", "/dev/shm" }) {
      var names = Directory.EnumerateFileSystemEntries(dir, "*", SearchOption.AllDirectories)
        .Where(p => !p.StartsWith("/tmp/.sandboxd")).OrderBy(p => p);
      Console.WriteLine(dir + ": " + string.Join(",", names));
    }
  }
}`

// C# programs that try to break a limit or leave something behind, run
// one by one in the language's one reused container, each followed by a
// canary that must see what a run in a brand-new container sees.
func TestCSharpHostile(t *testing.T) {
	testutil.RequireDocker(t, "sandboxd/csharp:latest")
	d := testutil.StartDaemon(t, testutil.Options{Defaults: `timeout = "20s"`, Languages: strings.Replace(shippedBlock(t, "csharp"),
		"min_idle = 1\n    max      = 8", "min_idle = 1\n    max      = 1", 1)})
	c := d.Client()
	view := func() (string, string) {
		t.Helper()
		res := run(t, c, api.RunRequest{Language: "csharp", Code: csharpView})
		if res.ExitCode != 0 {
			t.Fatalf("the view: %+v", res)
		}
		return res.Stdout, res.Container
	}
	fresh, _ := view()
	const deadline = 3 * time.Second
	for _, tc := range []struct {
		name, code string
		memory     api.ByteSize
		check      func(r *api.RunResult) string
	}{
		{"busy loop", "class P { static void Main() { for (;;) {} } }", 0, timedOut},
		{"threads spinning", "using System.Threading;\nclass P { static void Main() { for (int i = 0; i < 8; i++) new Thread(() => { for (;;) {} }).Start(); Thread.Sleep(-1); } }", 0, timedOut},
		{"process bomb", "using System.Diagnostics;\nclass P { static void Main() { for (;;) { try { Process.Start(\"sh\", \"-c 'sleep 1000'\"); } catch {} } } }", 0, contained},
		{"memory bomb", "using System.Collections.Generic;\nclass P { static void Main() { var l = new List<byte[]>(); for (;;) { var b = new byte[1 << 20]; for (int i = 0; i < b.Length; i += 4096) b[i] = 1; l.Add(b); } } }", 128 << 20,
			func(r *api.RunResult) string {
				if r.ExitCode == 0 || !r.OOMKilled && !strings.Contains(r.Stderr, "OutOfMemoryException") {
					return "must end in an OOM kill or Mono's OutOfMemoryException"
				}
				return ""
			}},
		{"stdout flood", "class P { static void Main() { var s = new string('o', 65536); for (;;) System.Console.Out.Write(s); } }", 0,
			func(r *api.RunResult) string {
				if !r.Truncated || int64(len(r.Stdout)) != 1<<20 {
					return "stdout must be capped at output_limit and flagged"
				}
				return ""
			}},
		{"setsid child left behind, files planted", `using System.Diagnostics; using System.IO;
class P { static void Main() {
  File.WriteAllText("/tmp/implant", "x"); File.WriteAllText("/dev/shm/implant", "x"); File.WriteAllText("/workspace/implant", "x");
  Process.Start("setsid", "sh -c 'sleep 1000 & sleep 1000'");
  System.Console.WriteLine("left");
} }`, 0,
			func(r *api.RunResult) string {
				if r.ExitCode != 0 || r.Stdout != "left\n" || r.TimedOut {
					return "the program must end at once, exit 0"
				}
				return ""
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := api.RunRequest{Language: "csharp", Code: tc.code, Timeout: api.Duration(deadline)}
			if tc.memory > 0 {
				req.Limits = &api.Limits{Memory: tc.memory}
				req.Timeout = api.Duration(10 * time.Second)
			}
			res, err := c.Run(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if why := tc.check(res); why != "" {
				t.Errorf("%s: exit %d timed_out %v oom %v truncated %v stdout %.200q stderr %.300q",
					why, res.ExitCode, res.TimedOut, res.OOMKilled, res.Truncated, res.Stdout, res.Stderr)
			}
			if after, container := view(); after != fresh {
				t.Errorf("the next run (container %s, the hostile one's %s) sees what a new container's first run does not:\n%s\nfresh:\n%s",
					container, res.Container, after, fresh)
			}
		})
	}
}
