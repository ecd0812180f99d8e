package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
// processes on the host and through sandboxd's API, in turns (interleave),
// and a sample through `docker run --rm`, checking every verdict; then sandboxd's
// latency at 1, 4 and 8 clients. The pools are what the daemon's
// configuration makes them, so a run that finds none idle waits for one.
func throughput(c *client.Client, langs []string) error {
	fmt.Printf("\n## Throughput: %d small programs with their tests per language, %d clients\n\n", corpusSize, throughputClients)
	fmt.Printf("Programs/s over the whole corpus; every program's verdict checked in every mode. Bare, image's toolchain: the same programs as plain processes on the host, chrooted into the language image's files (its interpreter or compiler, no namespaces, cgroups, seccomp or container): the sandbox's cost alone, and the ratio the goal is stated on. Bare, host's toolchain: as processes of the host with its own toolchains (another version may be faster or slower). The modes take turns, a quarter of the corpus each (and again from its start until the stream has lasted %[1]s), in an order reversed each round, so the host's noise falls on them alike; the bare modes run a stream of %[1]s first, unmeasured, sandboxd none; beside the ratio, each round's. Latency: sandboxd's `POST /v1/run`, ms.\n", sustainedStream)
	fmt.Println()
	fmt.Println("| language | bare, image's toolchain /s | sandboxd /s | ratio (rounds) | bare, host's toolchain /s | ratio | `docker run --rm` /s | sandboxd vs docker | p50/p95 at 1 client | at 4 | at 8 | runs in a recycled container | containers created |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, l := range corpus {
		if len(langs) > 0 && !contains(langs, l.name) {
			continue
		}
		progs, err := l.programs()
		if err != nil {
			return err
		}
		root, err := exportImage(l.image)
		if err != nil {
			return fmt.Errorf("%s image's files: %w", l.name, err)
		}
		before := poolOf(c, l.name)
		viaAPI := func(p string) error {
			res, err := c.Run(context.Background(), api.RunRequest{Language: l.name, Code: p})
			if err == nil && (res.ExitCode != 0 || res.Stdout != "ok\n") {
				err = fmt.Errorf("verdict: exit %d, %q %q", res.ExitCode, res.Stdout, res.Stderr)
			}
			return err
		}
		modes := []mode{
			{"bare in the image's files", func(p string) error { return root.run(l, p) }, true},
			{"via sandboxd", viaAPI, false},
			{"bare", func(p string) error { return runBare(l, p) }, true},
		}
		streams, perRound, err := interleave(c, progs, modes)
		root.remove()
		if err != nil {
			return fmt.Errorf("%s %w", l.name, err)
		}
		chrooted, sandboxd, bare := streams[0].rate(), streams[1].rate(), streams[2].rate()
		after := poolOf(c, l.name)
		one, err := load(1, progs[:20], 0, viaAPI)
		if err != nil {
			return err
		}
		// Eight clients on these cores may outwait a pool's queue_timeout:
		// what failed is counted in the latencies and said.
		eight, err := load(8, progs[:48], 0, viaAPI)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s at 8 clients: %v\n", l.name, err)
		}
		docker, err := load(throughputClients, progs[:dockerSample], 0, func(p string) error { return runDocker(l, p) })
		if err != nil {
			return fmt.Errorf("%s docker run: %w", l.name, err)
		}
		at1, at4, at8 := one.stats(), streams[1].stats(), eight.stats()
		fmt.Printf("| %s | %.1f | %.1f | %.2fx (%s) | %.1f | %.2fx | %.2f | %.1fx | %.0f/%.0f | %.0f/%.0f | %.0f/%.0f | %d of %d | %d |\n",
			l.name, chrooted, sandboxd, sandboxd/chrooted, roundRatios(perRound), bare, sandboxd/bare, docker.rate(), sandboxd/docker.rate(), at1.p50, at1.p95, at4.p50, at4.p95, at8.p50, at8.p95,
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

// throughputRounds: the corpus is measured in this many parts, every mode
// on each part in turn.
const throughputRounds = 4

// sustainedStream is the least a mode's stream of a round lasts: it goes
// through its part again until then. A stream's start and end, where fewer
// than all clients have a program, cost each mode about one program's
// latency; over a 25-program stream of 1.2 s (python's) that read as 8%
// less throughput for the mode with the longer latency, which a user's
// sustained stream does not pay.
const sustainedStream = 10 * time.Second

// mode is one way of running the corpus's programs.
type mode struct {
	name string
	run  func(prog string) error
	// bare modes run a stream of sustainedStream before they are
	// measured: a toolchain just unpacked is slow at first (the image's
	// python ran 14-18 programs/s in its first 10 s, 22-24 after, and 8
	// programs first did not change that).
	// sandboxd's are measured from its first: a pool's growth is part of
	// its figure.
	bare bool
}

// interleave runs progs through every mode in rounds, a part of the
// corpus per round and the modes' order reversed each round, each mode's
// stream once the pools are quiet (a pool still filling takes the cores
// from the bare programs as from sandboxd's). This machine's host takes
// its share of the cores at will, for minutes at a time: in turns, the
// modes share that noise, where a stream each would not. It returns each
// mode's streams summed, and per round the ratio of the second mode's
// rate to the first's.
func interleave(c *client.Client, progs []string, modes []mode) ([]stream, []float64, error) {
	for _, m := range modes {
		if m.bare {
			if _, err := load(throughputClients, progs[:2*throughputClients], sustainedStream, m.run); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", m.name, err)
			}
		}
	}
	total := make([]stream, len(modes))
	var perRound []float64
	for r := range throughputRounds {
		part := progs[r*len(progs)/throughputRounds : (r+1)*len(progs)/throughputRounds]
		round := make([]stream, len(modes))
		for k := range modes {
			i := k
			if r%2 == 1 {
				i = len(modes) - 1 - k
			}
			waitAllQuiet(c)
			s, err := load(throughputClients, part, sustainedStream, modes[i].run)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", modes[i].name, err)
			}
			round[i] = s
			total[i].add(s)
		}
		perRound = append(perRound, round[1].rate()/round[0].rate())
	}
	return total, perRound, nil
}

// roundRatios lists the ratios of the rounds, in their order.
func roundRatios(ratios []float64) string {
	parts := make([]string, len(ratios))
	for i, r := range ratios {
		parts[i] = fmt.Sprintf("%.2f", r)
	}
	return strings.Join(parts, " ")
}

// stream is what a load of programs measured.
type stream struct {
	programs  int
	elapsed   time.Duration
	latencies []float64 // ms
}

func (s stream) rate() float64 { return float64(s.programs) / s.elapsed.Seconds() }

func (s stream) stats() stats { return summarize(slices.Clone(s.latencies)) }

// add counts o, a stream of the same mode, in s.
func (s *stream) add(o stream) {
	s.programs += o.programs
	s.elapsed += o.elapsed
	s.latencies = append(s.latencies, o.latencies...)
}

// load runs every program once on workers goroutines, then goes on
// through them again until the stream has lasted sustain; the first
// failure is its error.
func load(workers int, progs []string, sustain time.Duration, run func(prog string) error) (stream, error) {
	var mu sync.Mutex
	var latencies []float64
	var first error
	var wg sync.WaitGroup
	start, taken := time.Now(), 0
	take := func() (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		if taken >= len(progs) && time.Since(start) >= sustain {
			return "", false
		}
		taken++
		return progs[(taken-1)%len(progs)], true
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p, ok := take(); ok; p, ok = take() {
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
	return stream{programs: taken, elapsed: time.Since(start), latencies: latencies}, first
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
