package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

// hello is one language's hello world, and the shell steps that do what
// its plugin's plan does, for `docker run --rm` of the same image (the
// source arrives on stdin).
type hello struct {
	name, image, file, code, steps string
}

var hellos = []hello{
	{"python", "python", "main.py", `print("hello")`, "python3 main.py"},
	{"node", "node", "main.js", `console.log("hello")`, "node main.js"},
	{"typescript", "node", "main.ts", `const s: string = "hello"; console.log(s)`, "node /usr/local/lib/sandboxd/transpile.js out main.ts && node out/main.js"},
	{"go", "go", "main.go", "package main\nimport \"fmt\"\nfunc main() { fmt.Println(\"hello\") }", "go build -o prog main.go && ./prog"},
	{"java", "java", "Main.java", `public class Main { public static void main(String[] a) { System.out.println("hello"); } }`,
		"javac -J-XX:+UseSerialGC -J-XX:TieredStopAtLevel=1 -d out Main.java && java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp out Main"},
	{"ruby", "ruby", "main.rb", `puts "hello"`, "ruby main.rb"},
	{"php", "php", "main.php", `<?php echo "hello\n";`, "php main.php"},
	{"bash", "bash", "main.sh", `echo hello`, "bash main.sh"},
	{"c", "c", "main.c", "#include <stdio.h>\nint main(void) { puts(\"hello\"); return 0; }", "gcc -O2 -o prog main.c -lm && ./prog"},
	{"cpp", "c", "main.cpp", "#include <iostream>\nint main() { std::cout << \"hello\" << std::endl; }", "g++ -O2 -std=c++20 -I/usr/local/lib/sandboxd/pch -o prog main.cpp && ./prog"},
	{"rust", "rust", "main.rs", `fn main() { println!("hello"); }`, "rustc --edition 2021 -C prefer-dynamic -o prog main.rs && ./prog"},
	{"lua", "lua", "main.lua", `print("hello")`, "lua5.4 main.lua"},
}

// perLanguage prints hello world per language: `sandboxctl run` against
// `docker run --rm`, started cold where the language has warm runtimes
// (its twin with warm = false: d must have warmTwins), and for compiled
// languages the compile and run steps as sandboxd measured them inside the
// sandbox.
func perLanguage(c *client.Client, bin string, d *daemon, n, nDocker int) error {
	fmt.Printf("\n## Hello world per language, one-shot (n=%d, docker n=%d)\n\n", n, nDocker)
	fmt.Println("| language | `sandboxctl run` p50 | p95 | started cold p50 | `docker run --rm` p50 | p95 | ratio | compile step p50 | run step p50 |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	p50 := map[string]float64{}
	for _, h := range hellos {
		prog := filepath.Join(d.dir, h.file)
		if err := os.WriteFile(prog, []byte(h.code+"\n"), 0o644); err != nil {
			return err
		}
		waitWarm(c, h.name)
		cli := func(lang string) stats {
			waitWarm(c, lang)
			return measure(n, func() error { waitQuiet(c, lang); return nil }, func() error {
				out, err := exec.Command(filepath.Join(bin, "sandboxctl"), "--socket", d.socket, "run", "--lang", lang, prog).Output()
				return checkOut(out, err, "hello\n")
			})
		}
		ctl, cold := cli(h.name), "-"
		if twin, ok := coldTwin[h.name]; ok {
			cold = fmt.Sprintf("%.0f", cli(twin).p50)
		}
		var compile, run []float64
		for range n {
			waitQuiet(c, h.name)
			res, err := c.Run(context.Background(), api.RunRequest{Language: h.name, Code: h.code})
			if err != nil {
				return fmt.Errorf("%s: %w", h.name, err)
			}
			for _, st := range res.Steps {
				if st.Name == "compile" {
					compile = append(compile, st.DurationMS)
				} else {
					run = append(run, st.DurationMS)
				}
			}
		}
		dockerRun := measure(nDocker, nil, func() error {
			cmd := exec.Command("docker", "run", "--rm", "-i", "--network", "none", "--log-driver", "none", "-w", "/tmp",
				"sandboxd/"+h.image+":latest", "sh", "-c", "cat > "+h.file+" && "+h.steps)
			cmd.Stdin = strings.NewReader(h.code + "\n")
			out, err := cmd.Output()
			return checkOut(out, err, "hello\n")
		})
		steps := func(xs []float64) string {
			if len(xs) == 0 {
				return "-"
			}
			return fmt.Sprintf("%.0f", summarize(xs).p50)
		}
		fmt.Printf("| %s | %.0f | %.0f | %s | %.0f | %.0f | %s | %s | %s |\n", h.name, ctl.p50, ctl.p95, cold, dockerRun.p50, dockerRun.p95,
			ratio(ctl.p50, dockerRun.p50), steps(compile), steps(run))
		p50[h.name] = ctl.p50
	}
	// The compiled languages' goals, against python's one-shot.
	fmt.Print("\nAgainst python's one-shot in this run:")
	for _, g := range []struct {
		name string
		goal float64
	}{{"typescript", 3}, {"go", 6}, {"rust", 6}, {"cpp", 5}} {
		fmt.Printf(" %s %s (goal %.0fx);", g.name, ratio(p50[g.name], p50["python"]), g.goal)
	}
	fmt.Println()
	return nil
}

// shippedLanguages is the language blocks of a sandboxd.hcl.
func shippedLanguages(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	i := strings.Index(string(data), "\nlanguage ")
	if i < 0 {
		return "", fmt.Errorf("%s has no language blocks", path)
	}
	return string(data[i:]), nil
}
