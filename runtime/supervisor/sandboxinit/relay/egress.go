// Package relay carries connections across the sandbox's edge: the
// programs' egress, from a listener on the container's loopback to
// sandboxd's proxy over the socket mounted from the host, and a port
// forwarded to a server in the sandbox (sandbox-init started as
// supervisor.RelayArg).
package relay

import (
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// maxRelays bounds the connections relayed at once: each holds two of the
// supervisor's file descriptors. sandboxd's proxy has its own, lower limit.
const maxRelays = 256

// ListenEgress listens where the programs' proxy connections go,
// supervisor.EgressListen on the container's loopback, and returns nil
// when the sandbox has no egress (no socket to sandboxd's proxy is
// mounted): then nothing listens.
func ListenEgress() net.Listener {
	if _, err := os.Stat(supervisor.EgressSocket); err != nil {
		return nil
	}
	ln, err := net.Listen("tcp", supervisor.EgressListen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sandbox-init: egress: %v\n", err)
		return nil
	}
	return ln
}

// Egress carries the connections ln accepts to sandboxd's egress
// proxy over the socket mounted from the host: the container has no other
// way out.
func Egress(ln net.Listener) {
	slots := make(chan struct{}, maxRelays)
	for {
		c, err := ln.Accept()
		if err != nil {
			time.Sleep(10 * time.Millisecond) // out of descriptors: the programs hold them
			continue
		}
		select {
		case slots <- struct{}{}:
			go func() {
				defer func() { <-slots }()
				carry(c)
			}()
		default:
			c.Close()
		}
	}
}

// carry copies both ways between c and the proxy socket until both ends
// are done.
func carry(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("unix", supervisor.EgressSocket)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(up, c)
		_ = up.(*net.UnixConn).CloseWrite()
		close(done)
	}()
	_, _ = io.Copy(c, up)
	_ = c.(*net.TCPConn).CloseWrite()
	// The proxy is done; a client that never closes its side does not
	// hold the slot for long.
	select {
	case <-done:
	case <-time.After(30 * time.Second):
	}
}
