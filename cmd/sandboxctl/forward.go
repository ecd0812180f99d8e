package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/coder/websocket"
	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/client"
)

func newPortForwardCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "port-forward SESSION [LOCAL:]PORT",
		Short: "Forward a local port on 127.0.0.1 to a port a session's server listens on",
		Long: `Listen on 127.0.0.1:LOCAL (default: PORT; 0 or an empty LOCAL picks a free
one) and carry each connection to PORT on the session's own loopback,
through sandboxd: HTTP, WebSocket or any TCP. The sandbox's network stays
none. Runs until interrupted; sandboxctl session ports lists what listens.`,
		Example: "  sandboxctl exec $id -- sh -c 'python3 -m http.server 8000 >/dev/null 2>&1 &'\n  sandboxctl port-forward $id 8080:8000 &\n  curl http://127.0.0.1:8080/",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			local, remote, ok := strings.Cut(args[1], ":")
			if !ok {
				local, remote = remote, local
			}
			port, err := strconv.Atoi(remote)
			if err != nil || port < 1 || port > 65535 {
				return fail("port %q: a number from 1 to 65535", remote)
			}
			if local == "" && !ok {
				local = remote
			}
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", local))
			if err != nil {
				return fail("listening on 127.0.0.1:%s: %v", local, err)
			}
			defer ln.Close()
			c := g.client()
			// The session must exist before we say we forward.
			if _, err := c.Session(cmd.Context(), args[0]); err != nil {
				return apiFailure(err)
			}
			fmt.Printf("Forwarding from %s -> %d\n", ln.Addr(), port)
			go func() { <-cmd.Context().Done(); ln.Close() }()
			for {
				conn, err := ln.Accept()
				if err != nil {
					return nil // interrupted
				}
				go forward(cmd.Context(), c, args[0], port, conn)
			}
		},
	}
}

// forward carries one local connection to port in session id.
func forward(ctx context.Context, c *client.Client, id string, port int, local net.Conn) {
	defer local.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	remote, err := c.ConnectPort(ctx, id, port)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sandboxctl: port-forward: %v\n", err)
		return
	}
	defer remote.Close()
	go func() {
		_, _ = io.Copy(remote, local)
		cancel() // the local side is done: so is the forward
	}()
	_, err = io.Copy(local, remote)
	var ce websocket.CloseError
	if errors.As(err, &ce) && ce.Code != websocket.StatusNormalClosure {
		fmt.Fprintf(os.Stderr, "sandboxctl: port-forward to %d: %s\n", port, ce.Reason)
	}
}
