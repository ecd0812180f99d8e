package relay

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"
)

// ForwardPort is sandbox-init started with supervisor.RelayArg: one forwarded
// connection to a port on the sandbox's loopback, IPv4 or IPv6, over its
// stdin and stdout. It never returns.
func ForwardPort(args []string) {
	port, err := strconv.Atoi(firstArg(args))
	if err != nil || port < 1 || port > 65535 {
		fmt.Fprintf(os.Stderr, "relay: port %q: a number from 1 to 65535\n", firstArg(args))
		os.Exit(2)
	}
	conn, err := dialLoopback(port)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nothing in the session accepts connections on port %d (%v)\n", port, err)
		os.Exit(1)
	}
	go func() {
		_, _ = io.Copy(conn, os.Stdin)
		// The client is done: the server may still answer, for a while.
		if tcp, ok := conn.(*net.TCPConn); ok {
			_ = tcp.CloseWrite()
		}
		time.Sleep(relayLinger)
		os.Exit(0)
	}()
	_, _ = io.Copy(os.Stdout, conn)
	os.Exit(0)
}

// relayLinger is how long a forwarded connection lives on after its
// client is done, for the server's answer.
const relayLinger = 30 * time.Second

// dialLoopback connects to port on 127.0.0.1, or else ::1, trying again
// for a second: a server's accept queue may be full for a moment (gVisor
// refuses a connection past it where Linux lets the client retry).
func dialLoopback(port int) (net.Conn, error) {
	var first error
	for wait := 10 * time.Millisecond; ; wait *= 2 {
		for _, host := range []string{"127.0.0.1", "::1"} {
			conn, err := net.DialTimeout("tcp", net.JoinHostPort(host, strconv.Itoa(port)), 5*time.Second)
			if err == nil {
				return conn, nil
			}
			if first == nil {
				first = err
			}
		}
		if wait > 640*time.Millisecond {
			return nil, first
		}
		time.Sleep(wait)
	}
}

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}
