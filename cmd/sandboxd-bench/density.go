package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
	"github.com/sandboxd/sandboxd/internal/hostmem"
)

// densityFloor is the memory the host keeps available: density stops
// opening sessions below it, and says so.
const densityFloor = 3 << 30

// density prints what freezing costs and holds: a frozen session's thaw
// (alone, and with a cell that reads its context's variable), bursts of
// session creates, and count python sessions open at once, each with a
// context holding a variable, frozen: sandboxd's memory, the host's memory
// per session, and the thaw of a sample of them.
func density(bin string, n, count int) error {
	// pyburst is python with a pool sized for a burst of 32, which may
	// grow to 100.
	d, err := startDaemon(bin, "sandbox_uids = \"1000300000-1000302999\"\n"+
		"sessions {\n  max = 32\n  max_frozen = 4000\n  freeze_after = \"0s\"\n  ttl = \"2h\"\n}\n"+
		"language \"pyburst\" {\n  plugin = \"python\"\n  pool {\n    min_idle = 32\n    max = 100\n  }\n}\n")
	if err != nil {
		return err
	}
	// The d of the end (runsc's daemon follows runc's), with its sessions:
	// a daemon stopped keeps them, and its state goes with the bench.
	defer func() { deleteAll(client.New(d.socket)); d.stop() }()
	c := client.New(d.socket)
	ctx := context.Background()
	waitAllQuiet(c)
	fmt.Printf("\n| frozen python session, runc | p50 ms | p99 ms |\n|---|---|---|\n")
	s, err := c.CreateSession(ctx, api.SessionRequest{Language: "python"})
	if err != nil {
		return err
	}
	if _, err := c.Exec(ctx, s.ID, api.ExecRequest{Code: "x = 41", Context: "main"}); err != nil {
		return err
	}
	freeze := func() error { _, err := c.FreezeSession(ctx, s.ID); return err }
	thaw := measure(n, freeze, func() error { _, err := c.ResumeSession(ctx, s.ID); return err })
	cell := func() error {
		res, err := c.Exec(ctx, s.ID, api.ExecRequest{Code: "print(x + 1)", Context: "main"})
		if err == nil && res.Stdout != "42\n" {
			err = fmt.Errorf("the context's variable: %q", res.Stdout)
		}
		return err
	}
	warmCell := measure(n, nil, cell)
	frozenCell := measure(n, freeze, cell)
	fmt.Printf("| thaw (resume) | %.1f | %.1f |\n", thaw.p50, thaw.p99)
	fmt.Printf("| a cell reading its context's variable, running session | %.1f | %.1f |\n", warmCell.p50, warmCell.p99)
	fmt.Printf("| the same cell, frozen session (thaw included) | %.1f | %.1f |\n", frozenCell.p50, frozenCell.p99)
	_ = c.DeleteSession(ctx, s.ID)

	// The shipped pool keeps as many idle as the last burst asked for,
	// for a minute or two: a burst that comes again finds them.
	for _, burst := range []struct {
		lang  string
		count int
		pool  string
	}{
		{"python", 32, "the shipped pool at rest, min_idle 2"},
		{"python", 32, "again, the shipped pool grown to the burst before"},
		{"python", 100, "the shipped pool, grown to the bursts before"},
		{"pyburst", 32, "a pool of min_idle 32"},
		{"pyburst", 100, "a pool of min_idle 32, max 100"},
		{"pyburst", 100, "again, that pool grown to the burst before"},
	} {
		deleteAll(c)
		fmt.Print(createBurst(c, burst.lang, burst.count, burst.pool+refilled(c, burst.lang)))
	}
	deleteAll(c)
	waitQuiet(c, "python")
	hold, err := frozenHold(c, d, "runc", count)
	fmt.Print(hold)
	deleteAll(c)
	if err != nil || !hasRunsc() {
		return err
	}
	d.stop()
	// Under gVisor, a sandbox is a sentry of its own, which spends about
	// 4.5% of a core idle, frozen (`runsc pause`) or not
	// (docs/benchmarks.md): 80 filled this 2-core host and the engine's
	// calls passed their deadlines. Twenty per core leave the host a core
	// for the rest.
	d, err = startDaemon(bin, "sandbox_uids = \"1000300000-1000302999\"\ndocker {\n  runtime = \"runsc\"\n}\n"+
		"sessions {\n  max = 32\n  max_frozen = 4000\n  freeze_after = \"0s\"\n  ttl = \"2h\"\n}\n")
	if err != nil {
		return err
	}
	c = client.New(d.socket)
	waitAllQuiet(c)
	hold, err = frozenHold(c, d, "runsc", min(count, 20*goruntime.NumCPU()))
	fmt.Print(hold)
	deleteAll(c)
	return err
}

// refilled waits until lang's pool has made what it wants idle (up to
// two minutes: after a burst of 100 the engine makes 100 containers at
// its pace, about 8 a second), and says how long that took and what the
// pool holds.
func refilled(c *client.Client, lang string) string {
	start := time.Now()
	var p api.PoolStats
	for time.Since(start) < 2*time.Minute {
		pools, err := c.Pools(context.Background())
		if p = pools[lang]; err == nil && p.Idle >= p.Target && p.Starting == 0 && p.Removing == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Sprintf("; %d idle, quiet after %.1f s", p.Idle, time.Since(start).Seconds())
}

// createBurst asks for count sessions of lang at once, and says how long
// each took to be created and how many failed.
func createBurst(c *client.Client, lang string, count int, pool string) string {
	var failed atomic.Int64
	var mu sync.Mutex
	var samples []float64
	var wg sync.WaitGroup
	for range count {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			if _, err := c.CreateSession(context.Background(), api.SessionRequest{Language: lang}); err != nil {
				failed.Add(1)
				fmt.Fprintln(os.Stderr, "bench: burst:", err)
				return
			}
			mu.Lock()
			samples = append(samples, float64(time.Since(start).Microseconds())/1000)
			mu.Unlock()
		}()
	}
	wg.Wait()
	st := summarize(samples)
	return fmt.Sprintf("\n%d %s session creates at once (%s; sessions.max 32, past it each create freezes the least recently used): p50 %.0f ms, p99 %.0f ms, %d failed.\n",
		count, "python", pool, st.p50, st.p99, failed.Load())
}

// frozenHold opens count python sessions, each with a context holding its
// number, and freezes them; it reports memory, and the thaw of 100 of
// them, at random, with their variables read back.
func frozenHold(c *client.Client, d *daemon, rt string, count int) (string, error) {
	ctx := context.Background()
	rssBefore, availBefore, threadsBefore := rssKiB(d.cmd.Process.Pid), memAvailable(), hostThreads()
	started := time.Now()
	var ids []string
	stopped := ""
	for i := range count {
		if memAvailable() < densityFloor {
			stopped = fmt.Sprintf(" (stopped at %d of %d: the host had less than %s available)", i, count, api.ByteSize(densityFloor))
			break
		}
		s, err := c.CreateSession(ctx, api.SessionRequest{Language: "python"})
		if err != nil {
			return "", fmt.Errorf("session %d: %w", i, err)
		}
		ids = append(ids, s.ID)
		if _, err := c.Exec(ctx, s.ID, api.ExecRequest{Code: "v = " + strconv.Itoa(i), Context: "main"}); err != nil {
			return "", fmt.Errorf("session %d's cell: %w", i, err)
		}
		if _, err := c.FreezeSession(ctx, s.ID); err != nil {
			return "", fmt.Errorf("freezing session %d: %w", i, err)
		}
	}
	opened := time.Since(started)
	waitQuiet(c, "python")
	rssAfter, availAfter, threadsAfter := rssKiB(d.cmd.Process.Pid), memAvailable(), hostThreads()
	perSession := (availBefore - availAfter) / int64(max(len(ids), 1))
	st, failed := sampleFrozen(c, ids)
	// SIGKILL, as a crash: every frozen session comes back frozen.
	d.kill()
	restarted := time.Now()
	if err := d.start(); err != nil {
		return "", err
	}
	back := time.Since(restarted)
	frozen := 0
	if list, err := c.Sessions(ctx); err == nil {
		for _, s := range list {
			if s.State == api.SessionFrozen {
				frozen++
			} else {
				fmt.Fprintf(os.Stderr, "bench: after the restart, session %s is %s %s\n", s.ID, s.State, s.Error)
			}
		}
	}
	after, failedAfter := sampleFrozen(c, ids)
	return fmt.Sprintf("\n| %d frozen python sessions, %s, each with a context holding a variable%s | |\n|---|---|\n", len(ids), rt, stopped) +
		fmt.Sprintf("| opened (create, cell, freeze, one after another) in | %.0f s |\n", opened.Seconds()) +
		fmt.Sprintf("| sandboxd resident memory, before → after | %s → %s |\n", api.ByteSize(rssBefore<<10), api.ByteSize(rssAfter<<10)) +
		fmt.Sprintf("| host memory per frozen session (MemAvailable's fall / sessions) | %s |\n", api.ByteSize(perSession)) +
		fmt.Sprintf("| host threads (pids) per frozen session | %d |\n", (threadsAfter-threadsBefore)/max(len(ids), 1)) +
		fmt.Sprintf("| a cell in one of them at random, thaw included: p50 / p99 | %.1f / %.1f ms (%d failed) |\n", st.p50, st.p99, failed) +
		fmt.Sprintf("| sandboxd killed (SIGKILL) and started again: healthy in | %.1f s |\n", back.Seconds()) +
		fmt.Sprintf("| frozen after the restart | %d of %d |\n", frozen, len(ids)) +
		fmt.Sprintf("| a cell in one of them at random after the restart: p50 / p99 | %.1f / %.1f ms (%d failed) |\n", after.p50, after.p99, failedAfter), nil
}

// sampleFrozen runs a cell in 100 of the frozen sessions ids at random
// (session i's context holds v = i), thaw included, and freezes each
// again; it says how long they took, and how many failed.
func sampleFrozen(c *client.Client, ids []string) (stats, int) {
	ctx := context.Background()
	var samples []float64
	failed := 0
	for range min(100, len(ids)) {
		i := rand.IntN(len(ids))
		start := time.Now()
		res, err := c.Exec(ctx, ids[i], api.ExecRequest{Code: "print(v)", Context: "main"})
		if err != nil || res.Stdout != strconv.Itoa(i)+"\n" {
			failed++
			fmt.Fprintln(os.Stderr, "bench: frozen session", i, err)
			continue
		}
		samples = append(samples, float64(time.Since(start).Microseconds())/1000)
		if _, err := c.FreezeSession(ctx, ids[i]); err != nil {
			fmt.Fprintln(os.Stderr, "bench: freezing again:", err)
		}
	}
	return summarize(samples), failed
}

// deleteAll deletes every session.
func deleteAll(c *client.Client) {
	list, err := c.Sessions(context.Background())
	if err != nil {
		return
	}
	slots := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, s := range list {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			_ = c.DeleteSession(context.Background(), s.ID)
		}()
	}
	wg.Wait()
}

// hostThreads is how many threads the host runs (/proc/loadavg), 0 if
// unknown.
func hostThreads() int {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 4 {
		if _, total, ok := strings.Cut(f[3], "/"); ok {
			n, _ := strconv.Atoi(total)
			return n
		}
	}
	return 0
}

// memAvailable is the host's MemAvailable in bytes, 0 if unknown.
func memAvailable() int64 {
	n, _ := hostmem.Available()
	return n
}
