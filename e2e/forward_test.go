package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// A server a session starts on its own loopback is reached from the host
// through sandboxd: one connection through the API, many through
// `sandboxctl port-forward`'s local listener at once; a port where nothing
// listens is refused with a reason; odd port strings are the same port.
// Under runc and runsc.
// serveSite starts python's http.server on port in session id, serving
// index.html with text, and waits until it listens.
func serveSite(t *testing.T, c *client.Client, id string, port int, text string) {
	t.Helper()
	sh(t, c, id, fmt.Sprintf("mkdir site && echo %s > site/index.html && "+
		"cd site && python3 -m http.server %d --bind 127.0.0.1 >/dev/null 2>&1 </dev/null &", text, port))
	waitFor(t, "the server to listen", func() bool {
		ports, err := c.Ports(ctx(t), id)
		return err == nil && slices.Contains(ports, api.Port{Address: "127.0.0.1", Port: port})
	})
}

func TestPortForward(t *testing.T) { ociRuntimes(t, testPortForward) }

func testPortForward(t *testing.T, runtime string) {
	d := testutil.StartDaemon(t, testutil.Options{Runtime: runtime})
	c := d.Client()
	id := newSession(t, c, api.SessionRequest{})
	serveSite(t, c, id, 8765, "hello from the sandbox")

	// One connection, through the API.
	conn, err := c.ConnectPort(ctx(t), id, 8765)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, "GET /index.html HTTP/1.0\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	answer, err := io.ReadAll(conn)
	conn.Close()
	if err != nil || !strings.HasPrefix(string(answer), "HTTP/1.0 200") || !strings.HasSuffix(string(answer), "hello from the sandbox\n") {
		t.Fatalf("GET through ConnectPort: %v %q", err, answer)
	}

	// Nothing listens: the connection is refused, and says so.
	conn, err = c.ConnectPort(ctx(t), id, 8766)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(conn)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 4404 || !strings.Contains(ce.Reason, "8766") {
		t.Fatalf("a port where nothing listens: %v", err)
	}

	// Ports are integers: 08765 and +8765 are 8765; 70000 and x are refused.
	for port, want := range map[string]int{"08765": 101, "+8765": 101, "70000": 400, "x": 400, "0": 400} {
		req, _ := http.NewRequest("GET", "http://sandboxd/v1/sessions/"+id+"/ports/"+port+"/connect", nil)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		resp, err := unixHTTP(d.Socket).Do(req)
		if err != nil {
			t.Fatalf("port %q: %v", port, err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("port %q: %d, want %d", port, resp.StatusCode, want)
		}
	}

	// Clients that go away at once leave the server running.
	for range 3 {
		conn, err := c.ConnectPort(ctx(t), id, 8765)
		if err != nil {
			t.Fatal(err)
		}
		conn.Close()
	}
	conn, err = c.ConnectPort(ctx(t), id, 8765)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(conn, "GET /index.html HTTP/1.0\r\n\r\n")
	if answer, err := io.ReadAll(conn); err != nil || !strings.HasPrefix(string(answer), "HTTP/1.0 200") {
		t.Fatalf("after clients that went away: %v %q", err, answer)
	}
	conn.Close()

	// sandboxctl port-forward: a local listener, many clients at once.
	cmd := exec.Command(filepath.Join(d.Bin, "sandboxctl"), "--socket", d.Socket, "port-forward", id, "0:8765")
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("sandboxctl port-forward said: %s", stderr.String())
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	var local string
	if _, serr := fmt.Sscanf(line, "Forwarding from %s -> 8765", &local); err != nil || serr != nil {
		t.Fatalf("port-forward said %q (%v)", line, err)
	}
	// As many clients as a session carries at once: past that a client
	// waits 2 s for one to end, and 16 requests to a python server under
	// gVisor beside the other e2e tests took longer than that (the wait
	// is internal/daemon's TestForwardsWaitForRoomThenRefuse).
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get("http://" + local + "/index.html")
			if err != nil {
				errs <- err
				return
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || string(body) != "hello from the sandbox\n" {
				errs <- fmt.Errorf("%d %q %v", resp.StatusCode, body, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error("through port-forward:", err)
	}
}
