package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

// warmTwins is a language block per language with warm runtimes: the
// same plugin with warm = false, named by coldTwin, with the shipped
// block's min_idle (with 1, a run's replacement is made while it runs).
func warmTwins() string {
	minIdle := map[string]int{"python": 2, "node": 2}
	var b strings.Builder
	for warm, cold := range coldTwin {
		fmt.Fprintf(&b, "language %q {\n  plugin = %q\n  warm   = false\n  pool {\n    min_idle = %d\n  }\n}\n", cold, warm, max(minIdle[warm], 1))
	}
	return b.String()
}

var coldTwin = map[string]string{"python": "pycold", "node": "nodecold", "typescript": "tscold", "java": "javacold", "ruby": "rubycold", "php": "phpcold",
	"go": "gocold", "c": "ccold", "cpp": "cppcold", "rust": "rustcold"}

// warmLanguages are languages with a warm runtime, and the goal for the
// ratio of a warm one-shot run to the same program started fresh by
// `sandboxctl exec`.
var warmLanguages = []struct {
	name, cold, file, code string
	interp                 []string
	goal                   float64
}{
	{"python", coldTwin["python"], "main.py", `print("hello")`, []string{"python3", "main.py"}, 0.6},
	{"node", coldTwin["node"], "main.js", `console.log("hello")`, []string{"node", "main.js"}, 0.3},
	{"ruby", coldTwin["ruby"], "main.rb", `puts "hello"`, []string{"ruby", "main.rb"}, 0.6},
	{"php", coldTwin["php"], "main.php", `<?php echo "hello\n";`, []string{"php", "main.php"}, 0.6},
	// Java's baseline is javac and java, as its plan runs them, by exec.
	{"java", coldTwin["java"], "Main.java", `public class Main { public static void main(String[] a) { System.out.println("hello"); } }`,
		[]string{"sh", "-c", "javac -J-XX:+UseSerialGC -J-XX:TieredStopAtLevel=1 -encoding UTF-8 -d /tmp/.sandboxd Main.java && java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp /tmp/.sandboxd Main"}, 0.3},
}

// warmRuntimes prints hello world run by a warm runtime, started cold,
// and as a fresh interpreter started by an exec in a session (the same
// path, minus the warm start), on d (started with warmTwins).
func warmRuntimes(bin string, d *daemon, n int) error {
	c := client.New(d.socket)
	// Every language's pool fills at start: measure once the host is calm.
	for i := 0; i < 1200; i++ {
		pools, err := c.Pools(context.Background())
		calm := err == nil
		for _, p := range pools {
			calm = calm && p.Idle >= p.Target && p.Starting == 0 && p.Removing == 0
		}
		if calm {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	ctl := func(args ...string) ([]byte, error) {
		return exec.Command(filepath.Join(bin, "sandboxctl"), append([]string{"--socket", d.socket}, args...)...).Output()
	}
	fmt.Printf("\n## Warm runtimes: hello world (n=%d)\n\n", n)
	fmt.Println("| language | `sandboxctl run`, warm p50 | cold p50 | warm/cold | `sandboxctl exec` fresh interpreter p50 | warm/exec (goal) | API run warm p50 | cold p50 | API exec, fresh interpreter p50 | warm/exec | in the sandbox, warm p50 | cold p50 |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, l := range warmLanguages {
		prog := filepath.Join(d.dir, l.file)
		if err := os.WriteFile(prog, []byte(l.code+"\n"), 0o644); err != nil {
			return err
		}
		cli := func(lang string) stats {
			waitWarm(c, lang)
			return measure(n, func() error { waitQuiet(c, lang); return nil }, func() error {
				out, err := ctl("run", "--lang", lang, prog)
				return checkOut(out, err, "hello\n")
			})
		}
		inSandbox := map[string][]float64{}
		apiRun := func(lang string) stats {
			waitWarm(c, lang)
			return measure(n, func() error { waitQuiet(c, lang); return nil }, func() error {
				res, err := c.Run(context.Background(), api.RunRequest{Language: lang, Code: l.code})
				if err == nil && res.Stdout != "hello\n" {
					err = fmt.Errorf("%s: unexpected output %q", lang, res.Stdout)
				}
				if err == nil {
					inSandbox[lang] = append(inSandbox[lang], res.DurationMS)
				}
				return err
			})
		}
		warm, cold := cli(l.name), cli(l.cold)
		apiWarm, apiCold := apiRun(l.name), apiRun(l.cold)
		sess, err := c.CreateSession(context.Background(), api.SessionRequest{Language: l.cold})
		if err != nil {
			return err
		}
		if _, err := c.PutFile(context.Background(), sess.ID, l.file, strings.NewReader(l.code+"\n"), 0o644); err != nil {
			return err
		}
		fresh := measure(n, nil, func() error {
			out, err := ctl(append([]string{"exec", sess.ID, "--"}, l.interp...)...)
			return checkOut(out, err, "hello\n")
		})
		apiFresh := measure(n, nil, func() error {
			res, err := c.Exec(context.Background(), sess.ID, api.ExecRequest{Argv: l.interp})
			if err == nil && res.Stdout != "hello\n" {
				err = fmt.Errorf("%s: unexpected output %q", l.cold, res.Stdout)
			}
			return err
		})
		_ = c.DeleteSession(context.Background(), sess.ID)
		fmt.Printf("| %s | %.1f | %.1f | %s | %.1f | %s (%.1fx) | %.1f | %.1f | %.1f | %s | %.1f | %.1f |\n", l.name, warm.p50, cold.p50, ratio(warm.p50, cold.p50),
			fresh.p50, ratio(warm.p50, fresh.p50), l.goal, apiWarm.p50, apiCold.p50, apiFresh.p50, ratio(apiWarm.p50, apiFresh.p50),
			summarize(inSandbox[l.name]).p50, summarize(inSandbox[l.cold]).p50)
	}
	return nil
}
