package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

// throughputClients is the load the goals are stated at.
const throughputClients = 4

// dockerSample is how many of a corpus `docker run --rm` runs: at a
// container per program it takes about a second each.
const dockerSample = 16

// throughput runs each language's corpus (corpus.go) at 4 clients as bare
// processes on the host, through sandboxd's API and, for a sample,
// through `docker run --rm`, checking every verdict; then sandboxd's
// latency at 1, 4 and 8 clients. The pools are what the daemon's
// configuration makes them, so a run that finds none idle waits for one.
func throughput(c *client.Client, langs []string) error {
	fmt.Printf("\n## Throughput: %d small programs with their tests per language, %d clients\n\n", corpusSize, throughputClients)
	fmt.Println("Programs/s over the whole corpus; every program's verdict checked in every mode. Bare, image's toolchain: the same programs as plain processes on the host, chrooted into the language image's files (its interpreter or compiler, no namespaces, cgroups, seccomp or container): the sandbox's cost alone, and the ratio the goal is stated on. Bare, host's toolchain: as processes of the host with its own toolchains (another version may be faster or slower). Latency: sandboxd's `POST /v1/run`, ms.")
	fmt.Println()
	fmt.Println("| language | bare, image's toolchain /s | sandboxd /s | ratio | bare, host's toolchain /s | ratio | `docker run --rm` /s | sandboxd vs docker | p50/p95 at 1 client | at 4 | at 8 | runs in a recycled container | containers created |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, l := range corpus {
		if len(langs) > 0 && !contains(langs, l.name) {
			continue
		}
		progs, err := l.programs()
		if err != nil {
			return err
		}
		// Both streams start once every pool is quiet: a pool still filling
		// takes the cores from the bare host's programs as from sandboxd's.
		root, err := exportImage(l.image)
		if err != nil {
			return fmt.Errorf("%s image's files: %w", l.name, err)
		}
		waitAllQuiet(c)
		chrooted, _, err := load(throughputClients, progs, func(p string) error { return root.run(l, p) })
		root.remove()
		if err != nil {
			return fmt.Errorf("%s bare in the image's files: %w", l.name, err)
		}
		bare, _, err := load(throughputClients, progs, func(p string) error { return runBare(l, p) })
		if err != nil {
			return fmt.Errorf("%s bare: %w", l.name, err)
		}
		waitAllQuiet(c)
		before := poolOf(c, l.name)
		viaAPI := func(p string) error {
			res, err := c.Run(context.Background(), api.RunRequest{Language: l.name, Code: p})
			if err == nil && (res.ExitCode != 0 || res.Stdout != "ok\n") {
				err = fmt.Errorf("verdict: exit %d, %q %q", res.ExitCode, res.Stdout, res.Stderr)
			}
			return err
		}
		rate, at4, err := load(throughputClients, progs, viaAPI)
		if err != nil {
			return fmt.Errorf("%s via sandboxd: %w", l.name, err)
		}
		after := poolOf(c, l.name)
		_, at1, err := load(1, progs[:20], viaAPI)
		if err != nil {
			return err
		}
		// Eight clients on these cores may outwait a pool's queue_timeout:
		// what failed is counted in the latencies and said.
		_, at8, err := load(8, progs[:48], viaAPI)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s at 8 clients: %v\n", l.name, err)
		}
		docker, _, err := load(throughputClients, progs[:dockerSample], func(p string) error { return runDocker(l, p) })
		if err != nil {
			return fmt.Errorf("%s docker run: %w", l.name, err)
		}
		fmt.Printf("| %s | %.1f | %.1f | %.2fx | %.1f | %.2fx | %.2f | %.1fx | %.0f/%.0f | %.0f/%.0f | %.0f/%.0f | %d of %d | %d |\n",
			l.name, chrooted, rate, rate/chrooted, bare, rate/bare, docker, rate/docker, at1.p50, at1.p95, at4.p50, at4.p95, at8.p50, at8.p95,
			after.Reused-before.Reused, after.Hits+after.Misses-before.Hits-before.Misses, after.Created-before.Created)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// load runs every program once on workers goroutines and returns the
// programs per second and the latencies; the first failure is its error.
func load(workers int, progs []string, run func(prog string) error) (float64, stats, error) {
	jobs := make(chan string, len(progs))
	for _, p := range progs {
		jobs <- p
	}
	close(jobs)
	var mu sync.Mutex
	var latencies []float64
	var first error
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range jobs {
				began := time.Now()
				err := run(p)
				mu.Lock()
				latencies = append(latencies, float64(time.Since(began).Microseconds())/1000)
				if err != nil && first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return float64(len(progs)) / time.Since(start).Seconds(), summarize(latencies), first
}

// runBare builds and runs a program as the host's own process, in a
// directory of its own.
func runBare(l corpusLanguage, prog string) error {
	dir, err := writeProgram("", l, prog)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command("sh", "-c", l.steps)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "PYTHON3="+hostTool("python3"), "RUSTC="+hostTool("rustc"), "RUST_LIB="+hostRustLib())
	out, err := cmd.Output()
	return checkOut(out, err, "ok\n")
}

// writeProgram puts prog, as l's file, in a new directory under parent
// ("": the system's temporary directory) and returns the directory.
func writeProgram(parent string, l corpusLanguage, prog string) (string, error) {
	dir, err := os.MkdirTemp(parent, "bench-bare-")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, l.file), []byte(prog), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// runDocker runs a program in a container of its own, as `docker run
// --rm` does for systems that make one per program.
func runDocker(l corpusLanguage, prog string) error {
	cmd := exec.Command("docker", "run", "--rm", "-i", "--network", "none", "--log-driver", "none", "-w", "/tmp",
		"sandboxd/"+l.image+":latest", "sh", "-c", "cat > "+l.file+" && "+l.imageSteps)
	cmd.Stdin = strings.NewReader(prog)
	out, err := cmd.Output()
	return checkOut(out, err, "ok\n")
}

// hostTool is the host's binary of a toolchain: Debian's, the one the
// images have, where the host has it (a newer one on PATH would measure a
// different compiler), else the first on PATH.
func hostTool(name string) string {
	if _, err := os.Stat("/usr/bin/" + name); err == nil {
		return "/usr/bin/" + name
	}
	return name
}

// hostRustLib is where the host's Rust toolchain keeps its libstd.
var hostRustLib = sync.OnceValue(func() string {
	out, err := exec.Command(hostTool("rustc"), "--print", "target-libdir").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
})

func poolOf(c *client.Client, name string) api.PoolStats {
	pools, _ := c.Pools(context.Background())
	return pools[name]
}
