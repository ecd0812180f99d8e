// Command sandboxd-soak runs a mixed workload against a real sandboxd for a set
// time and reports what it left behind: requests, errors by code, leaked
// containers, and the growth of sandboxd's goroutines, open files and RSS.
//
// The workload, from -clients clients at once: one-shot runs, sessions
// (create, exec, file upload and download, delete) and hostile programs
// (fork bomb, memory bomb, output flood, an escaping setsid child). A third
// of the way in the language plugin is SIGKILLed; two thirds in, the engine
// is restarted. The engine is one of the soak's own (testutil.StartEngine),
// so nothing else on the machine is disturbed. Run it with `make soak`.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
	"github.com/sandboxd/sandboxd/internal/testutil"
	"github.com/sandboxd/sandboxd/runtime"
)

func main() {
	duration := flag.Duration("duration", 10*time.Minute, "how long the workload runs")
	clients := flag.Int("clients", 8, "clients at once")
	flag.Parse()
	m := &testutil.Main{}
	defer m.Close()
	if err := soak(m, *duration, *clients); err != nil {
		m.Close()
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

// tally counts outcomes by action and error code.
type tally struct {
	mu     sync.Mutex
	counts map[string]int    // "action ok" or "action code"
	first  map[string]string // the first message of each error code
	total  int
}

func (t *tally) add(action string, err error) {
	key, code := action+" ok", ""
	if err != nil {
		code = "transport"
		var ae *api.Error
		if errors.As(err, &ae) {
			code = ae.Code
		}
		key = action + " " + code
	}
	t.mu.Lock()
	if _, seen := t.first[code]; code != "" && !seen {
		t.first[code] = err.Error()
	}
	t.counts[key]++
	t.total++
	t.mu.Unlock()
}

const python = `
language "python" {
  image = "sandboxd/python:latest"
  pool {
    min_idle = 2
    max      = 12
  }
}`

func soak(m *testutil.Main, duration time.Duration, clients int) error {
	e := testutil.StartEngine(m, "sandboxd/python:latest")
	d := testutil.StartDaemon(m, testutil.Options{DockerHost: e.Host, Languages: python, Defaults: `timeout = "10s"`,
		Extra: "sessions {\n  max = 64\n}"})
	c := d.Client()
	before := scrape(d.Socket)
	t := &tally{counts: map[string]int{}, first: map[string]string{}}
	start := time.Now()
	deadline := start.Add(duration)

	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := i; time.Now().Before(deadline); n += clients {
				action, err := step(c, n)
				t.add(action, err)
				if err != nil {
					time.Sleep(200 * time.Millisecond) // do not spin while the engine is away
				}
			}
		}()
	}
	faults := []string{}
	time.Sleep(duration / 3)
	if pid := child(d.PID(), "sandbox-lang-python"); pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		faults = append(faults, fmt.Sprintf("%s: language plugin SIGKILLed", time.Since(start).Round(time.Second)))
	}
	time.Sleep(time.Until(start.Add(2 * duration / 3)))
	e.Stop()
	e.Start()
	faults = append(faults, fmt.Sprintf("%s: engine restarted", time.Since(start).Round(time.Second)))
	wg.Wait()

	// Quiet: every session gone, every container idle in the pool.
	ctx := context.Background()
	if list, err := c.Sessions(ctx); err == nil {
		for _, s := range list {
			_ = c.DeleteSession(ctx, s.ID)
		}
	}
	// Removals that met the engine away are retried every 20 s: give them
	// two minutes before counting what is left.
	var idle, containers int
	for wait := time.Now().Add(2 * time.Minute); time.Now().Before(wait); time.Sleep(time.Second) {
		pools, err := c.Pools(ctx)
		p := pools["python"]
		// Idle may stay above the target until the pool trims it: what
		// counts is that every container is an idle one.
		if err != nil || p.Busy != 0 || p.Recycling != 0 || p.Starting != 0 || p.Removing != 0 {
			continue
		}
		out, err := exec.Command("docker", "-H", e.Host, "ps", "-aq", "--filter", "label="+testutil.TestLabel+"="+d.RunID).Output()
		if err != nil {
			return fmt.Errorf("listing containers: %w", err)
		}
		idle, containers = p.Idle, len(strings.Fields(string(out)))
		if containers == idle {
			break
		}
	}
	leaked := containers - idle
	procs, uids, err := leakedProcesses(e.Host, d)
	if err != nil {
		return err
	}
	pools, _ := c.Pools(ctx)
	endPool := pools["python"]
	after := scrape(d.Socket)

	fmt.Printf("# sandboxd soak (%s, %d clients, %s)\n\n", time.Now().UTC().Format("2006-01-02"), clients, duration)
	fmt.Printf("faults: %s\n\n", strings.Join(faults, "; "))
	fmt.Println("| action | outcome | count |")
	fmt.Println("|---|---|---|")
	keys := make([]string, 0, len(t.counts))
	for k := range t.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		action, outcome, _ := strings.Cut(k, " ")
		fmt.Printf("| %s | %s | %d |\n", action, outcome, t.counts[k])
	}
	fmt.Printf("\nrequests: %d (%.1f/s)\n\n", t.total, float64(t.total)/duration.Seconds())
	codes := make([]string, 0, len(t.first))
	for code := range t.first {
		codes = append(codes, code)
	}
	sort.Strings(codes)
	for _, code := range codes {
		fmt.Printf("- first %s: %.300s\n", code, t.first[code])
	}
	fmt.Println()
	fmt.Println("| sandboxd | at start | at end |")
	fmt.Println("|---|---|---|")
	for _, name := range []string{"go_goroutines", "process_open_fds", "process_resident_memory_bytes"} {
		fmt.Printf("| %s | %.0f | %.0f |\n", name, before[name], after[name])
	}
	fmt.Printf("\nleaked containers (beyond the %d idle in the pool, sessions deleted): %d\n", idle, leaked)
	fmt.Printf("leaked processes (a sandbox uid that no container holds): %d, in %d uids\n", procs, uids)
	fmt.Printf("pool at the end: idle %d busy %d starting %d removing %d target %d, created %d destroyed %d failures %d (%s)\n",
		endPool.Idle, endPool.Busy, endPool.Starting, endPool.Removing, endPool.Target, endPool.Created, endPool.Destroyed, endPool.Failures, endPool.LastError)
	fmt.Printf("reuse: %d runs in a recycled container; %d containers recycled, %d retired after a run\n",
		endPool.Reused, endPool.Recycled, endPool.Retired)
	return nil
}

// leakedProcesses counts the host's processes that run as one of d's
// sandbox uids but belong to no container of d's (under runc a sandbox's
// processes are host processes of its uid), and their distinct uids.
func leakedProcesses(host string, d *testutil.Daemon) (procs, uids int, err error) {
	out, err := exec.Command("docker", "-H", host, "ps", "--filter", "label="+testutil.TestLabel+"="+d.RunID,
		"--format", `{{.Label "`+runtime.LabelUID+`"}}`).Output()
	if err != nil {
		return 0, 0, fmt.Errorf("listing containers' uids: %w", err)
	}
	held := map[int]bool{}
	for _, f := range strings.Fields(string(out)) {
		if uid, err := strconv.Atoi(f); err == nil {
			held[uid] = true
		}
	}
	status, _ := filepath.Glob("/proc/[0-9]*/status")
	seen := map[int]bool{}
	for _, path := range status {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // it ended meanwhile
		}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 || f[0] != "Uid:" {
				continue
			}
			if uid, _ := strconv.Atoi(f[1]); uid >= d.UIDs[0] && uid <= d.UIDs[1] && !held[uid] {
				procs++
				seen[uid] = true
			}
		}
	}
	return procs, len(seen), nil
}

// step runs the n-th action of the mix.
func step(c *client.Client, n int) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run := func(code string, limits *api.Limits) error {
		_, err := c.Run(ctx, api.RunRequest{Language: "python", Code: code, Limits: limits, Timeout: api.Duration(2 * time.Second)})
		return err
	}
	switch n % 8 {
	case 0, 1, 2:
		return "run", run("print(sum(range(1000)))", nil)
	case 3:
		return "session", session(ctx, c)
	case 4:
		return "hostile-forkbomb", run("import os\nwhile True:\n    try: os.fork()\n    except OSError: pass\n", nil)
	case 5:
		return "hostile-memory", run("x = bytearray(1 << 30)", &api.Limits{Memory: 128 << 20})
	case 6:
		return "hostile-flood", run("import sys\nwhile True: sys.stdout.write('x' * 65536)\n", nil)
	default:
		return "hostile-setsid", run("import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(1000)\nprint('parent')\n", nil)
	}
}

// session creates a session, runs in it, moves a file both ways and
// deletes it.
func session(ctx context.Context, c *client.Client) error {
	s, err := c.CreateSession(ctx, api.SessionRequest{Language: "python"})
	if err != nil {
		return err
	}
	defer func() { _ = c.DeleteSession(context.Background(), s.ID) }()
	if _, err := c.PutFile(ctx, s.ID, "data/in.txt", strings.NewReader("soak\n"), 0o644); err != nil {
		return err
	}
	if _, err := c.Exec(ctx, s.ID, api.ExecRequest{Argv: []string{"sh", "-c", "tr a-z A-Z < data/in.txt > outputs/out.txt"}}); err != nil {
		return err
	}
	body, _, err := c.GetFile(ctx, s.ID, "outputs/out.txt")
	if err != nil {
		return err
	}
	defer body.Close()
	got, err := io.ReadAll(body)
	if err == nil && string(got) != "SOAK\n" {
		err = fmt.Errorf("download: %q", got)
	}
	return err
}

// scrape reads sandboxd's own process figures from /metrics.
func scrape(socket string) map[string]float64 {
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}}}
	out := map[string]float64{}
	resp, err := hc.Get("http://x/metrics")
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if v, err := strconv.ParseFloat(value, 64); ok && err == nil && !strings.HasPrefix(name, "#") {
			out[name] = v
		}
	}
	return out
}

// child finds a process of parent's named name.
func child(parent int, name string) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || !strings.Contains(s[:i], "("+name[:min(len(name), 15)]) {
			continue
		}
		if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == strconv.Itoa(parent) {
			return pid
		}
	}
	return 0
}
