// Command sandboxd-bench measures sandboxd against its baselines in one run and
// prints markdown tables: p50/p95 of python print(1) and node
// console.log(1) through `sandboxctl run`, through the API alone, through
// a session's exec, through `docker run --rm` and `docker exec` on the same
// image, and the bare interpreter started inside a running container; then
// session creation, and throughput with 4 concurrent clients; then a
// corpus of small programs with their tests per language at 4 clients,
// against the same programs as bare host processes; then hello
// world in every shipped language, one-shot through `sandboxctl run`
// against `docker run --rm` of the same image doing the same steps, with
// the compile and run steps apart; then python under runc against gVisor's
// runsc; and a sandbox's create to its first command through E2B's SDK
// against the native API's. It starts its own daemon from -bin with
// the language blocks of the repository's sandboxd.hcl; run it through
// `make bench`.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/runtime"
)

type language struct {
	name, image, ext, code string
	interp                 []string // argv of the bare interpreter for the code
}

var languages = []language{
	{"python", "sandboxd/python:latest", "py", "print(1)", []string{"python3", "-c", "print(1)"}},
	{"node", "sandboxd/node:latest", "js", "console.log(1)", []string{"node", "-e", "console.log(1)"}},
}

func main() {
	bin := flag.String("bin", "bin", "directory with sandboxd, sandboxctl, sandbox-init and plugins/")
	n := flag.Int("n", 40, "iterations per sandboxd measurement")
	nDocker := flag.Int("n-docker", 15, "iterations per docker baseline")
	only := flag.String("only", "", "one section alone: runtimes (runc against runsc), kubernetes (pods against Docker), contexts, desktop, egress, e2b, warm, languages, paced, throughput, hibernation or density")
	langs := flag.String("langs", "", "throughput: these languages of the corpus alone, comma separated")
	sessions := flag.Int("sessions", 1000, "density: python sessions held frozen at once")
	flag.Parse()
	var err error
	switch *bin, _ = filepath.Abs(*bin); *only {
	case "":
		err = run(*bin, *n, *nDocker, *sessions)
	case "runtimes":
		err = ociRuntimes(*bin, *n, *nDocker)
	case "egress":
		err = egressPath(*bin, *n)
	case "hibernation":
		err = hibernation(*bin, max(*n/4, 5))
	case "kubernetes":
		err = kubernetesRuntime(*bin, *n)
	case "warm", "languages":
		var d *daemon
		if d, err = startDaemon(*bin, warmTwins()); err == nil {
			if *only == "warm" {
				err = warmRuntimes(*bin, d, *n)
			} else {
				err = perLanguage(client.New(d.socket), *bin, d, max(*n/4, 5), max(*nDocker/3, 3))
			}
			d.stop()
		}
	case "paced":
		var d *daemon
		if d, err = startDaemon(*bin, ""); err == nil {
			err = paced(client.New(d.socket), *bin, d, *n)
			d.stop()
		}
	case "throughput":
		var d *daemon
		if d, err = startDaemon(*bin, ""); err == nil {
			err = throughput(client.New(d.socket), splitList(*langs))
			d.stop()
		}
	case "e2b":
		err = e2bPath(*bin, *n)
	case "density":
		err = density(*bin, *n, *sessions)
	case "desktop":
		var d *daemon
		if d, err = startDaemon(*bin, ""); err == nil {
			err = desktopSessions(client.New(d.socket), max(*n/4, 5))
			d.stop()
		}
	case "contexts":
		var d *daemon
		if d, err = startDaemon(*bin, ""); err == nil {
			err = contexts(client.New(d.socket), *n)
			d.stop()
		}
	default:
		err = fmt.Errorf("-only %q: runtimes, kubernetes, contexts, desktop, egress, e2b, warm, languages, paced, throughput, hibernation or density", *only)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(bin string, n, nDocker, sessions int) error {
	d, err := startDaemon(bin, warmTwins())
	if err != nil {
		return err
	}
	defer d.stop()
	c := client.New(d.socket)
	fmt.Printf("# sandboxd benchmark (%s, %d cores)\n\n", time.Now().UTC().Format("2006-01-02"), numCPU())
	fmt.Println("| language | path | p50 ms | p95 ms | vs docker run --rm | vs docker exec | vs bare interpreter |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, l := range languages {
		prog := filepath.Join(d.dir, "hello."+l.ext)
		if err := os.WriteFile(prog, []byte(l.code+"\n"), 0o644); err != nil {
			return err
		}
		quiet := func() error { waitQuiet(c, l.name); return nil }
		ctl := measure(n, quiet, func() error {
			out, err := exec.Command(filepath.Join(bin, "sandboxctl"), "--socket", d.socket, "run", prog).Output()
			return checkOut(out, err, "1\n")
		})
		apiRun := func() error {
			res, err := c.Run(context.Background(), api.RunRequest{Language: l.name, Code: l.code})
			if err == nil && res.Stdout != "1\n" {
				err = fmt.Errorf("unexpected output %q", res.Stdout)
			}
			return err
		}
		apiOnly := measure(n, quiet, apiRun)
		// Back to back: each run's container removal and its replacement's
		// creation overlap the next run on these 2 cores.
		backToBack := measure(n, func() error { waitWarm(c, l.name); return nil }, apiRun)
		sess, err := c.CreateSession(context.Background(), api.SessionRequest{Language: l.name})
		if err != nil {
			return err
		}
		sessionExec := measure(n, nil, func() error {
			res, err := c.Exec(context.Background(), sess.ID, api.ExecRequest{Argv: l.interp})
			if err == nil && res.Stdout != "1\n" {
				err = fmt.Errorf("unexpected output %q", res.Stdout)
			}
			return err
		})
		ctlExec := measure(n, nil, func() error {
			out, err := exec.Command(filepath.Join(bin, "sandboxctl"), append([]string{"--socket", d.socket, "exec", sess.ID, "--"}, l.interp...)...).Output()
			return checkOut(out, err, "1\n")
		})
		_ = c.DeleteSession(context.Background(), sess.ID)
		dockerRun := measure(nDocker, nil, func() error {
			out, err := exec.Command("docker", append([]string{"run", "--rm", "--network", "none", "--log-driver", "none", l.image}, l.interp...)...).Output()
			return checkOut(out, err, "1\n")
		})
		ctr, err := exec.Command("docker", "run", "-d", "--rm", "--network", "none", "--label", "io.sandboxd.bench=1", "--entrypoint", "sleep", l.image, "600").Output()
		if err != nil {
			return fmt.Errorf("starting a baseline container: %v", err)
		}
		id := strings.TrimSpace(string(ctr))
		dockerExec := measure(n, nil, func() error {
			out, err := exec.Command("docker", append([]string{"exec", id}, l.interp...)...).Output()
			return checkOut(out, err, "1\n")
		})
		bare, err := bareInterpreter(id, l, n)
		_ = exec.Command("docker", "rm", "-f", id).Run()
		if err != nil {
			return err
		}
		rows := []struct {
			name string
			s    stats
		}{
			{"`sandboxctl run` (whole CLI process)", ctl},
			{"sandboxd API (`POST /v1/run`)", apiOnly},
			{"sandboxd API, back to back (pool churning)", backToBack},
			{"session exec, API (`POST /v1/sessions/{id}/exec`)", sessionExec},
			{"`sandboxctl exec` into a session (whole CLI process)", ctlExec},
			{"`docker run --rm`", dockerRun},
			{"`docker exec` (CLI) into a running container", dockerExec},
			{"bare interpreter inside a running container", bare},
		}
		for _, r := range rows {
			fmt.Printf("| %s | %s | %.1f | %.1f | %s | %s | %s |\n", l.name, r.name, r.s.p50, r.s.p95,
				ratio(r.s.p50, dockerRun.p50), ratio(r.s.p50, dockerExec.p50), ratio(r.s.p50, bare.p50))
		}
	}
	if err := sessionsAndThroughput(c, n); err != nil {
		return err
	}
	if err := throughput(c, nil); err != nil {
		return err
	}
	if err := paced(c, bin, d, n); err != nil {
		return err
	}
	if err := contexts(c, n); err != nil {
		return err
	}
	if err := perLanguage(c, bin, d, max(n/4, 5), max(nDocker/3, 3)); err != nil {
		return err
	}
	if err := warmRuntimes(bin, d, n); err != nil {
		return err
	}
	if err := desktopSessions(c, max(n/4, 5)); err != nil {
		return err
	}
	if err := ociRuntimes(bin, n, nDocker); err != nil {
		return err
	}
	if err := kubernetesRuntime(bin, n); err != nil {
		return err
	}
	if err := egressPath(bin, n); err != nil {
		return err
	}
	if err := hibernation(bin, max(n/4, 5)); err != nil {
		return err
	}
	if err := e2bPath(bin, n); err != nil {
		return err
	}
	if err := density(bin, n, sessions); err != nil {
		return err
	}
	st, err := c.Stats(context.Background())
	if err == nil {
		for name, p := range st.Pools {
			fmt.Printf("\npool %s: %d hits, %d misses", name, p.Hits, p.Misses)
		}
		fmt.Println()
	}
	return nil
}

// sessionsAndThroughput prints session creation latency and throughput
// with 4 concurrent clients: one-shot runs (each a fresh container, so
// Docker's create and remove set the pace) and execs in sessions.
func sessionsAndThroughput(c *client.Client, n int) error {
	ctx := context.Background()
	last := ""
	// Before each create (untimed): the previous session goes, the pool refills.
	create := measure(n, func() error {
		if last != "" {
			_ = c.DeleteSession(ctx, last)
		}
		waitQuiet(c, "python")
		return nil
	}, func() error {
		s, err := c.CreateSession(ctx, api.SessionRequest{Language: "python"})
		if err == nil {
			last = s.ID
		}
		return err
	})
	_ = c.DeleteSession(ctx, last)
	fmt.Printf("\n| sessions | p50 ms | p95 ms |\n|---|---|---|\n| create (warm pool, `POST /v1/sessions`) | %.1f | %.1f |\n", create.p50, create.p95)

	fmt.Println("\n| throughput, 4 concurrent clients, python print(1) | per second |\n|---|---|")
	waitQuiet(c, "python")
	before, _ := c.Pools(ctx)
	runs := rate(4, 60, func(int) error {
		_, err := c.Run(ctx, api.RunRequest{Language: "python", Code: "print(1)"})
		return err
	})
	after, _ := c.Pools(ctx)
	fmt.Printf("| one-shot runs (`POST /v1/run`, each in a fresh sandbox of a recycled container; %d of 60 waited for a container to be created) | %.1f |\n",
		after["python"].Misses-before["python"].Misses, runs)
	one, err := c.CreateSession(ctx, api.SessionRequest{Language: "python"})
	if err != nil {
		return err
	}
	argv := []string{"python3", "-c", "print(1)"}
	shared := rate(4, 200, func(int) error {
		_, err := c.Exec(ctx, one.ID, api.ExecRequest{Argv: argv})
		return err
	})
	_ = c.DeleteSession(ctx, one.ID)
	fmt.Printf("| execs in one session (one container; a session runs one exec at a time) | %.1f |\n", shared)
	var four []string
	for i := 0; i < 4; i++ {
		s, err := c.CreateSession(ctx, api.SessionRequest{Language: "python"})
		if err != nil {
			return err
		}
		four = append(four, s.ID)
	}
	own := rate(4, 200, func(worker int) error {
		_, err := c.Exec(ctx, four[worker], api.ExecRequest{Argv: argv})
		return err
	})
	for _, id := range four {
		_ = c.DeleteSession(ctx, id)
	}
	fmt.Printf("| execs, each client in its own session (4 containers) | %.1f |\n", own)
	return nil
}

// rate runs total operations on workers goroutines and returns operations
// per second.
func rate(workers, total int, op func(worker int) error) float64 {
	jobs := make(chan struct{}, total)
	for i := 0; i < total; i++ {
		jobs <- struct{}{}
	}
	close(jobs)
	start := time.Now()
	done := make(chan struct{})
	for w := 0; w < workers; w++ {
		go func(w int) {
			defer func() { done <- struct{}{} }()
			for range jobs {
				if err := op(w); err != nil {
					fmt.Fprintln(os.Stderr, "bench: operation failed:", err)
				}
			}
		}(w)
	}
	for w := 0; w < workers; w++ {
		<-done
	}
	return float64(total) / time.Since(start).Seconds()
}

// bareInterpreter times the interpreter started by a loop inside the
// container itself: the floor any sandbox can reach.
func bareInterpreter(id string, l language, n int) (stats, error) {
	script := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do s=$(date +%%s%%N); %s >/dev/null; e=$(date +%%s%%N); echo $(( (e-s)/1000 )); i=$((i+1)); done`,
		n, strings.Join(quote(l.interp), " "))
	out, err := exec.Command("docker", "exec", id, "sh", "-c", script).Output()
	if err != nil {
		return stats{}, fmt.Errorf("timing the bare interpreter: %v", err)
	}
	var samples []float64
	for _, f := range strings.Fields(string(out)) {
		us, err := strconv.ParseFloat(f, 64)
		if err == nil {
			samples = append(samples, us/1000)
		}
	}
	return summarize(samples), nil
}

func quote(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return out
}

// waitWarm waits (untimed) until the language's pool has a warm container.
func waitWarm(c *client.Client, name string) {
	waitPool(c, name, func(p api.PoolStats) bool { return p.Idle > 0 })
}

// waitQuiet waits (untimed) until the pool is full and no container is
// being created or removed: the latency of a request on a calm host.
func waitQuiet(c *client.Client, name string) {
	waitPool(c, name, func(p api.PoolStats) bool { return p.Idle >= p.Target && p.Starting == 0 && p.Removing == 0 })
}

// waitAllQuiet waits up to two minutes until every pool is quiet: a
// language measured while others still fill their pools shares the
// cores with their warm-up.
func waitAllQuiet(c *client.Client) {
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		pools, err := c.Pools(context.Background())
		quiet := err == nil
		for _, p := range pools {
			quiet = quiet && p.Idle >= p.Target && p.Starting == 0 && p.Removing == 0
		}
		if quiet {
			return
		}
	}
	fmt.Fprintln(os.Stderr, "bench: the pools were not quiet after 2 minutes; measuring anyway")
}

func waitPool(c *client.Client, name string, ready func(api.PoolStats) bool) {
	for i := 0; i < 500; i++ {
		if pools, err := c.Pools(context.Background()); err == nil && ready(pools[name]) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type stats struct{ p50, p95, p99 float64 }

// measure runs prepare (untimed) then op (timed) n times, after one
// untimed warm-up.
func measure(n int, prepare, op func() error) stats {
	var samples []float64
	for i := 0; i <= n; i++ {
		if prepare != nil {
			_ = prepare()
		}
		start := time.Now()
		if err := op(); err != nil {
			fmt.Fprintln(os.Stderr, "bench: sample failed:", err)
			continue
		}
		if i > 0 {
			samples = append(samples, float64(time.Since(start).Microseconds())/1000)
		}
	}
	return summarize(samples)
}

func summarize(samples []float64) stats {
	if len(samples) == 0 {
		return stats{}
	}
	sort.Float64s(samples)
	at := func(q float64) float64 { return samples[min(len(samples)-1, int(q*float64(len(samples))))] }
	return stats{p50: at(0.5), p95: at(0.95), p99: at(0.99)}
}

func ratio(x, base float64) string {
	if base == 0 || x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", x/base)
}

// checkOut tells a command that failed or printed other than want.
func checkOut(out []byte, err error, want string) error {
	var exit *exec.ExitError
	if errors.As(err, &exit) && len(exit.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(exit.Stderr))
	}
	if err != nil {
		return err
	}
	if string(out) != want {
		return fmt.Errorf("unexpected output %q", out)
	}
	return nil
}

// splitList is a comma-separated flag's values.
func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func numCPU() int {
	out, err := exec.Command("nproc").Output()
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return n
}

type daemon struct {
	dir, socket string
	bin         string // where sandboxd is
	cmd         *exec.Cmd
}

// startDaemon starts sandboxd with the shipped language blocks and extra
// top-level HCL.
// (extra, more HCL, comes after the shipped language blocks, so that
// those keep their names.)
func startDaemon(bin, extra string) (*daemon, error) {
	dir, err := os.MkdirTemp("/tmp", "sandboxd-bench-")
	if err != nil {
		return nil, err
	}
	d := &daemon{dir: dir, socket: filepath.Join(dir, "s.sock"), bin: bin}
	blocks, err := shippedLanguages(filepath.Join(bin, "..", "sandboxd.hcl"))
	if err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf(`
socket     = %q
state_dir  = %q
plugin_dir = %q
supervisor = %q
%s
%s
`, d.socket, filepath.Join(dir, "state"), filepath.Join(bin, "plugins"), filepath.Join(bin, "sandbox-init"), blocks, extra)
	if err := os.WriteFile(filepath.Join(dir, "sandboxd.hcl"), []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	if err := d.start(); err != nil {
		d.stop()
		return nil, err
	}
	return d, nil
}

// start starts sandboxd on d's configuration (and state, if it has some),
// and waits for it to answer healthy.
func (d *daemon) start() error {
	logf, err := os.OpenFile(filepath.Join(d.dir, "sandboxd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	d.cmd = exec.Command(filepath.Join(d.bin, "sandboxd"), "--config", filepath.Join(d.dir, "sandboxd.hcl"))
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	if err := d.cmd.Start(); err != nil {
		return err
	}
	c := client.New(d.socket)
	for i := 0; i < 1200; i++ {
		if h, err := c.Health(context.Background()); err == nil && h.Status == "ok" {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("sandboxd did not start; see %s", logf.Name())
}

// kill ends sandboxd with SIGKILL, as a crash would.
func (d *daemon) kill() {
	_ = d.cmd.Process.Kill()
	_ = d.cmd.Wait()
}

// stop ends sandboxd and removes what it leaves behind: its state goes
// with the bench, so a container it kept (a session a stop keeps, one
// whose delete did not finish under load) would be nobody's.
func (d *daemon) stop() {
	_ = d.cmd.Process.Signal(os.Interrupt)
	_ = d.cmd.Wait()
	filter := "label=" + runtime.LabelInstance + "=" + state.InstanceOf(filepath.Join(d.dir, "state"))
	if out, err := exec.Command("docker", "ps", "-aq", "--filter", filter).Output(); err == nil && len(strings.Fields(string(out))) > 0 {
		_ = exec.Command("docker", append([]string{"rm", "-f"}, strings.Fields(string(out))...)...).Run()
	}
	os.RemoveAll(d.dir)
}
