package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

// hibernation prints what pausing and resuming a session costs, by
// workspace size, under runc and (when the engine has it) runsc; and what
// 200 hibernated sessions hold: sandboxd's memory and the engine's
// containers, before and after.
func hibernation(bin string, n int) error {
	runtimes := []string{"runc"}
	if hasRunsc() {
		runtimes = append(runtimes, "runsc")
	}
	fmt.Println("\n| hibernation, python session | pause p50 ms | pause p95 ms | resume p50 ms | resume p95 ms | archive |\n|---|---|---|---|---|---|")
	var hold string
	for _, rt := range runtimes {
		d, err := startDaemon(bin, fmt.Sprintf("sandbox_uids = \"1000100000-1000101999\"\ndocker {\n  runtime = %q\n}\n"+
			"defaults {\n  disk = \"512MiB\"\n  memory = \"1GiB\"\n  timeout = \"60s\"\n}\n", rt))
		if err != nil {
			return err
		}
		err = hibernationRows(client.New(d.socket), rt, n)
		if err == nil {
			// gVisor's checkpoints take longer to make: fewer of them.
			var h string
			h, err = hibernatedHold(client.New(d.socket), d, rt, map[string]int{"runc": 200, "runsc": 50}[rt])
			hold += h
		}
		d.stop()
		if err != nil {
			return fmt.Errorf("%s: %w", rt, err)
		}
	}
	fmt.Println("\n(runc: a pause archives the workspace through the supervisor, fsyncs it and removes the container; a resume takes a warm container from the pool, extracts the archive into it and checks its digest. runsc, with keep_memory and an engine that can checkpoint: a pause also checkpoints the sandbox, memory and tmpfs workspace included, and a resume restores that checkpoint. Each starts from a quiet pool.)")
	fmt.Print(hold)
	return nil
}

// hibernationRows pauses and resumes one session n times for each
// workspace size; the pool is quiet before each resume (what a session
// idle for minutes finds).
func hibernationRows(c *client.Client, rt string, n int) error {
	ctx := context.Background()
	for _, size := range []int64{0, 10 << 20, 100 << 20} {
		s, err := c.CreateSession(ctx, api.SessionRequest{Language: "python"})
		if err != nil {
			return err
		}
		if size > 0 {
			if _, err := c.Exec(ctx, s.ID, api.ExecRequest{Argv: []string{"sh", "-c", fmt.Sprintf("head -c %d /dev/urandom > data", size)}}); err != nil {
				return err
			}
		}
		var archive int64
		pause := measure(n, func() error {
			_, err := c.ResumeSession(ctx, s.ID) // each pause needs an active session
			waitQuiet(c, "python")
			return err
		}, func() error {
			h, err := c.PauseSession(ctx, s.ID)
			if err == nil {
				archive = h.Hibernation.Bytes
			}
			return err
		})
		resume := measure(n, func() error {
			_, err := c.PauseSession(ctx, s.ID)
			waitQuiet(c, "python")
			return err
		}, func() error {
			_, err := c.ResumeSession(ctx, s.ID)
			return err
		})
		_ = c.DeleteSession(ctx, s.ID)
		fmt.Printf("| %s, %s workspace | %.1f | %.1f | %.1f | %.1f | %s |\n", rt, api.ByteSize(size), pause.p50, pause.p95, resume.p50, resume.p95, api.ByteSize(archive))
	}
	return nil
}

// hibernatedHold makes count sessions with a small workspace each and a
// context holding its number, and hibernates them; it reports sandboxd's
// resident memory and the engine's sandboxd containers before and after,
// a call to one of them at a time (its resume included), and all called
// at once.
func hibernatedHold(c *client.Client, d *daemon, rt string, count int) (string, error) {
	ctx := context.Background()
	waitQuiet(c, "python")
	rssBefore, ctrsBefore := rssKiB(d.cmd.Process.Pid), sandboxdContainers()
	var ids []string
	var disk int64
	for i := range count {
		s, err := c.CreateSession(ctx, api.SessionRequest{Language: "python"})
		if err != nil {
			return "", err
		}
		ids = append(ids, s.ID)
		if _, err := c.Exec(ctx, s.ID, api.ExecRequest{Argv: []string{"sh", "-c", "echo state > notes.txt && mkdir -p src && head -c 4096 /dev/urandom > src/blob"}}); err != nil {
			return "", err
		}
		if _, err := c.Exec(ctx, s.ID, api.ExecRequest{Code: "v = " + strconv.Itoa(i), Context: "main"}); err != nil {
			return "", err
		}
		h, err := c.PauseSession(ctx, s.ID)
		if err != nil {
			return "", err
		}
		disk += h.Hibernation.Bytes
	}
	waitQuiet(c, "python")
	rssAfter, ctrsAfter := rssKiB(d.cmd.Process.Pid), sandboxdContainers()
	one, kept, failed := sampleHibernated(c, ids)
	storm := resumeStorm(c, ids[:count/2])
	for _, id := range ids {
		_ = c.DeleteSession(ctx, id)
	}
	return fmt.Sprintf("\n| %d hibernated python sessions, %s | before | after |\n|---|---|---|\n", count, rt) +
		fmt.Sprintf("| sandboxd resident memory | %s | %s |\n", api.ByteSize(rssBefore<<10), api.ByteSize(rssAfter<<10)) +
		fmt.Sprintf("| the engine's sandboxd containers (pools) | %d | %d |\n", ctrsBefore, ctrsAfter) +
		fmt.Sprintf("| archives on disk | 0 | %s |\n", api.ByteSize(disk)) +
		fmt.Sprintf("| a call to one of them at random, its resume included: p50 / p99 | %.0f / %.0f ms (%d failed) |\n", one.p50, one.p99, failed) +
		fmt.Sprintf("| its context's variable there after the resume | %d of %d |\n", kept, min(len(ids), hibernatedSample)) + storm, nil
}

// hibernatedSample is how many of the hibernated sessions are called one
// at a time.
const hibernatedSample = 50

// sampleHibernated calls hibernatedSample of the hibernated sessions ids
// at random, one at a time, each with the pool quiet (as a session idle
// for long finds it): a command that reads its file, its resume included,
// then a cell that reads its context's variable (session i's holds v =
// i), which only a resume with memory keeps. Each is hibernated again.
func sampleHibernated(c *client.Client, ids []string) (st stats, kept, failed int) {
	ctx := context.Background()
	var samples []float64
	for range min(hibernatedSample, len(ids)) {
		i := rand.IntN(len(ids))
		waitQuiet(c, "python")
		start := time.Now()
		res, err := c.Exec(ctx, ids[i], api.ExecRequest{Argv: []string{"cat", "notes.txt"}})
		if err != nil || res.Stdout != "state\n" {
			failed++
			fmt.Fprintln(os.Stderr, "bench: hibernated session", i, err)
			continue
		}
		samples = append(samples, float64(time.Since(start).Microseconds())/1000)
		if res, err := c.Exec(ctx, ids[i], api.ExecRequest{Code: "print(v)", Context: "main"}); err == nil && res.Stdout == strconv.Itoa(i)+"\n" {
			kept++
		}
		if _, err := c.PauseSession(ctx, ids[i]); err != nil {
			fmt.Fprintln(os.Stderr, "bench: hibernating again:", err)
		}
	}
	return summarize(samples), kept, failed
}

// resumeStorm calls every session of ids at once (an exec that reads its
// file) and says how long they took and how many failed: more than
// sessions.max, so resumes make room by hibernating the idle ones.
func resumeStorm(c *client.Client, ids []string) string {
	start := time.Now()
	var failed atomic.Int64
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.Exec(context.Background(), id, api.ExecRequest{Argv: []string{"cat", "notes.txt"}})
			if err != nil || res.Stdout != "state\n" {
				failed.Add(1)
				fmt.Fprintln(os.Stderr, "bench: storm:", id, err)
			}
		}()
	}
	wg.Wait()
	return fmt.Sprintf("\n%d hibernated sessions called at once (sessions.max 32): all answered in %.1f s, %d failed.\n",
		len(ids), time.Since(start).Seconds(), failed.Load())
}

// rssKiB is a process's resident memory in KiB, 0 if unknown.
func rssKiB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// sandboxdContainers counts the engine's containers labelled sandboxd's.
func sandboxdContainers() int {
	out, err := exec.Command("docker", "ps", "-q", "--filter", "label=io.sandboxd.managed").Output()
	if err != nil {
		return -1
	}
	return len(strings.Fields(string(out)))
}
