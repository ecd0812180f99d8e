package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

// ociRuntimes prints what gVisor's runsc costs beside runc: python
// print(1) one-shot, in a session, a session's creation, a session's
// fresh container, and `docker run --rm`, each daemon with every sandbox
// under one runtime.
func ociRuntimes(bin string, n, nDocker int) error {
	if !hasRunsc() {
		fmt.Println("\nruntimes: the engine has no runsc; restart it with scripts/docker-engine.sh to measure gVisor")
		return nil
	}
	fmt.Println("\n| python print(1), p50 ms | runc | runsc | runsc / runc |\n|---|---|---|---|")
	var rows [2][]stats
	names := []string{"one-shot run (`POST /v1/run`, warm pool)", "session exec", "session create (warm pool)",
		"session create with a container of its own (lower memory)", "`docker run --rm`"}
	for i, rt := range []string{"runc", "runsc"} {
		// Uids of its own beside the first daemon's.
		d, err := startDaemon(bin, fmt.Sprintf("sandbox_uids = \"1000100000-1000101999\"\ndocker {\n  runtime = %q\n}\n", rt))
		if err != nil {
			return err
		}
		rows[i], err = runtimeRows(client.New(d.socket), "python", n)
		d.stop()
		if err != nil {
			return fmt.Errorf("%s: %w", rt, err)
		}
		rows[i] = append(rows[i], measure(nDocker, nil, func() error {
			out, err := exec.Command("docker", "run", "--rm", "--runtime", rt, "--network", "none", "--log-driver", "none",
				"sandboxd/python:latest", "python3", "-c", "print(1)").Output()
			return checkOut(out, err, "1\n")
		}))
	}
	for i, name := range names {
		fmt.Printf("| %s | %.1f | %.1f | %s |\n", name, rows[0][i].p50, rows[1][i].p50, ratio(rows[1][i].p50, rows[0][i].p50))
	}
	return nil
}

// runtimeRows measures python print(1) in language lang (a python of some
// runtime): one-shot, session exec, session create from the warm pool,
// and session create with a sandbox made for it (lower memory).
func runtimeRows(c *client.Client, lang string, n int) ([]stats, error) {
	ctx := context.Background()
	quiet := func() error { waitQuiet(c, lang); return nil }
	oneShot := measure(n, quiet, func() error {
		res, err := c.Run(ctx, api.RunRequest{Language: lang, Code: "print(1)"})
		if err == nil && res.Stdout != "1\n" {
			err = fmt.Errorf("unexpected output %q", res.Stdout)
		}
		return err
	})
	sess, err := c.CreateSession(ctx, api.SessionRequest{Language: lang})
	if err != nil {
		return nil, err
	}
	exec1 := measure(n, nil, func() error {
		res, err := c.Exec(ctx, sess.ID, api.ExecRequest{Argv: []string{"python3", "-c", "print(1)"}})
		if err == nil && res.Stdout != "1\n" {
			err = fmt.Errorf("unexpected output %q", res.Stdout)
		}
		return err
	})
	_ = c.DeleteSession(ctx, sess.ID)
	create := func(req api.SessionRequest) stats {
		last := ""
		deleteLast := func() {
			if last != "" {
				_ = c.DeleteSession(ctx, last)
				last = ""
			}
		}
		defer deleteLast()
		return measure(max(n/4, 5), func() error {
			deleteLast()
			return quiet()
		}, func() error {
			s, err := c.CreateSession(ctx, req)
			if err == nil {
				last = s.ID
			}
			return err
		})
	}
	warm := create(api.SessionRequest{Language: lang})
	// Lower limits than the pool's: runc lowers a warm container's, runsc
	// and pods cannot, so the session gets a sandbox made for it.
	cold := create(api.SessionRequest{Language: lang, Limits: &api.Limits{Memory: 128 << 20}})
	return []stats{oneShot, exec1, warm, cold}, nil
}

// hasRunsc says whether the engine has gVisor's runsc.
func hasRunsc() bool {
	out, err := exec.Command("docker", "info", "--format", "{{json .Runtimes}}").Output()
	return err == nil && strings.Contains(string(out), `"runsc"`)
}
