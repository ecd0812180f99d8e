package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

// benchE2BKey is the bench daemon's E2B key.
const benchE2BKey = "e2b_00000000000000000000000000000000000000be"

// e2bCommand is what E2B's SDK asks to run for commands.run("echo 1"):
// the native path runs the same.
var e2bCommand = []string{"/bin/bash", "-l", "-c", "echo 1"}

// e2bPath prints a sandbox's create to its first command's output, p50
// and p99: through E2B's own JS SDK (e2b on npm, `make npm-tools`)
// against the E2B listener, beside the native API's (a session and an
// exec, Go client). At rest (one client, pools refilled between), and at
// 4 clients back to back, where the pool must refill under them.
func e2bPath(bin string, n int) error {
	node, err := exec.LookPath("node")
	if err != nil {
		return fmt.Errorf("the E2B bench runs E2B's JS SDK: install node")
	}
	script := filepath.Join(bin, "..", "e2e", "npm", "bench-e2b.mjs")
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "e2b")); err != nil {
		return fmt.Errorf("E2B's SDK is not installed: run make npm-tools")
	}
	addr, err := freeLoopback()
	if err != nil {
		return err
	}
	d, err := startDaemon(bin, fmt.Sprintf("e2b {\n  listen = %q\n  api_keys = [%q]\n}\n", addr, benchE2BKey))
	if err != nil {
		return err
	}
	defer d.stop()
	c := client.New(d.socket)
	url := "http://" + addr
	sdk := func(args ...string) *exec.Cmd {
		cmd := exec.Command(node, append([]string{script}, args...)...)
		cmd.Env = append(os.Environ(), "E2B_API_KEY="+benchE2BKey, "E2B_API_URL="+url, "E2B_SANDBOX_URL="+url)
		cmd.Stderr = os.Stderr
		return cmd
	}
	viaSDK := func(total, clients int) ([]float64, error) {
		out, err := sdk(fmt.Sprint(total), fmt.Sprint(clients)).Output()
		if err != nil {
			return nil, fmt.Errorf("node %s: %v", filepath.Base(script), err)
		}
		var samples []float64
		return samples, json.Unmarshal(out, &samples)
	}
	// At rest, one SDK process takes a sample per line it is sent, so
	// that the SDK's own first call (about 100 ms in a new process) is
	// the untimed warm-up's, as with the Go client.
	viaSDKAtRest := func() ([]float64, error) {
		cmd := sdk()
		in, _ := cmd.StdinPipe()
		outPipe, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		defer func() { in.Close(); _ = cmd.Wait() }()
		out := bufio.NewScanner(outPipe)
		var samples []float64
		for i := 0; i <= n; i++ {
			waitQuiet(c, "python")
			fmt.Fprintln(in)
			if !out.Scan() {
				return nil, fmt.Errorf("node %s ended: %v", filepath.Base(script), out.Err())
			}
			ms, err := strconv.ParseFloat(strings.TrimSpace(out.Text()), 64)
			if err != nil {
				return nil, fmt.Errorf("node %s said %q", filepath.Base(script), out.Text())
			}
			if i > 0 {
				samples = append(samples, ms)
			}
		}
		return samples, nil
	}
	native := func(total, clients int) ([]float64, error) {
		var mu sync.Mutex
		var samples []float64
		var failed error
		rate(clients, total, func(int) error {
			ctx := context.Background()
			began := time.Now()
			s, err := c.CreateSession(ctx, api.SessionRequest{Language: "python"})
			if err == nil {
				var res *api.RunResult
				if res, err = c.Exec(ctx, s.ID, api.ExecRequest{Argv: e2bCommand}); err == nil && res.Stdout != "1\n" {
					err = fmt.Errorf("first command: %+v", res)
				}
				took := time.Since(began)
				_ = c.DeleteSession(ctx, s.ID)
				mu.Lock()
				samples = append(samples, float64(took.Microseconds())/1000)
				mu.Unlock()
			}
			if err != nil {
				mu.Lock()
				failed = err
				mu.Unlock()
			}
			return err
		})
		return samples, failed
	}
	fmt.Printf("\n| sandbox create → first command's output, python | p50 ms | p99 ms |\n|---|---|---|\n")
	atRest := func(path func(total, clients int) ([]float64, error)) func() ([]float64, error) {
		return func() ([]float64, error) {
			var samples []float64
			for i := 0; i <= n; i++ { // the first, a warm-up
				waitQuiet(c, "python")
				s, err := path(1, 1)
				if err != nil {
					return nil, err
				}
				if i > 0 {
					samples = append(samples, s...)
				}
			}
			return samples, nil
		}
	}
	loaded := func(path func(total, clients int) ([]float64, error)) func() ([]float64, error) {
		return func() ([]float64, error) {
			waitQuiet(c, "python")
			return path(n, 4)
		}
	}
	for _, row := range []struct {
		name    string
		measure func() ([]float64, error)
	}{
		{"native API (`POST /v1/sessions`, then exec of the same `bash -l -c`), at rest", atRest(native)},
		{"E2B SDK (`Sandbox.create`, `commands.run`), at rest", viaSDKAtRest},
		{"native API, 4 clients back to back", loaded(native)},
		{"E2B SDK, 4 clients back to back", loaded(viaSDK)},
	} {
		samples, err := row.measure()
		if err != nil {
			return err
		}
		st := summarize(samples)
		fmt.Printf("| %s | %.1f | %.1f |\n", row.name, st.p50, st.p99)
	}
	return nil
}

// freeLoopback is a free TCP address on 127.0.0.1.
func freeLoopback() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
