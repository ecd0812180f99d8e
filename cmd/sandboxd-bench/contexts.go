package main

import (
	"context"
	"fmt"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

// contexts prints an exec of `pass` (python) and `0` (node) in a context
// beside a fresh interpreter exec'd in the same session: the cost of a
// step an agent takes in a notebook-like context against starting over.
func contexts(c *client.Client, n int) error {
	ctx := context.Background()
	fmt.Println("\n| exec in a session, p50 ms | in a context | a fresh interpreter | ratio |\n|---|---|---|---|")
	for _, l := range []struct {
		lang, code string
		fresh      []string
	}{
		{"python", "pass", []string{"python3", "-c", "pass"}},
		{"node", "0", []string{"node", "-e", "0"}},
	} {
		s, err := c.CreateSession(ctx, api.SessionRequest{Language: l.lang})
		if err != nil {
			return err
		}
		// The context's first exec starts its interpreter: untimed.
		if _, err := c.Exec(ctx, s.ID, api.ExecRequest{Context: "main", Code: l.code}); err != nil {
			return err
		}
		exec := func(req api.ExecRequest) func() error {
			return func() error {
				res, err := c.Exec(ctx, s.ID, req)
				if err == nil && res.ExitCode != 0 {
					err = fmt.Errorf("exit %d: %s", res.ExitCode, res.Stderr)
				}
				return err
			}
		}
		inContext := measure(n, nil, exec(api.ExecRequest{Context: "main", Code: l.code}))
		fresh := measure(n, nil, exec(api.ExecRequest{Argv: l.fresh}))
		_ = c.DeleteSession(ctx, s.ID)
		fmt.Printf("| %s `%s` | %.2f | %.1f | %s |\n", l.lang, l.code, inContext.p50, fresh.p50, ratio(inContext.p50, fresh.p50))
	}
	return nil
}
