package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// wsEcho is a node server with a WebSocket, as an agent's web app would
// have one: node's own http module and a hand-made handshake (the image
// has no WebSocket library), echoing each text message.
const wsEcho = `
const http = require('http'), crypto = require('crypto');
const srv = http.createServer((req, res) => res.end('plain http\n'));
srv.on('upgrade', (req, sock) => {
  const accept = crypto.createHash('sha1').update(req.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
  sock.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ' + accept + '\r\n\r\n');
  let buf = Buffer.alloc(0);
  sock.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    while (buf.length >= 2) {
      const op = buf[0] & 0x0f;
      let len = buf[1] & 0x7f, off = 2;
      if (len > 125) { sock.destroy(); return; }
      const mask = buf.subarray(off, off + 4); off += 4;
      if (buf.length < off + len) return;
      const payload = Buffer.from(buf.subarray(off, off + len)).map((b, i) => b ^ mask[i % 4]);
      buf = buf.subarray(off + len);
      if (op === 8) { sock.end(Buffer.from([0x88, 0])); return; }
      const out = Buffer.from('echo: ' + payload.toString());
      sock.write(Buffer.concat([Buffer.from([0x81, out.length]), out]));
    }
  });
});
srv.listen(8090, '127.0.0.1');
`

// TestWebSocketServerInASession reaches a node server's WebSocket in a
// session through sandboxctl port-forward and through a preview link.
func TestWebSocketServerInASession(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{Extra: `http { listen = "127.0.0.1:0" }`})
	c := d.Client()
	id := newSession(t, c, api.SessionRequest{Language: "node"})
	if _, err := c.PutFile(ctx(t), id, "ws.js", strings.NewReader(wsEcho), 0); err != nil {
		t.Fatal(err)
	}
	if r, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"sh", "-c", "node ws.js >ws.log 2>&1 </dev/null &"}}); err != nil || r.ExitCode != 0 {
		t.Fatalf("starting the server: %v %+v", err, r)
	}
	for i := 0; ; i++ {
		ports, _ := c.Ports(ctx(t), id)
		if len(ports) > 0 && ports[0].Port == 8090 {
			break
		}
		if i == 100 {
			t.Fatalf("the server never listened: %v", ports)
		}
		time.Sleep(100 * time.Millisecond)
	}
	echo := func(t *testing.T, u string, opts *websocket.DialOptions) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx(t), 30*time.Second)
		defer cancel()
		conn, _, err := websocket.Dial(wctx, u, opts)
		if err != nil {
			t.Fatalf("dialing %s: %v", u, err)
		}
		defer conn.CloseNow()
		for _, msg := range []string{"hello", "again"} {
			if err := conn.Write(wctx, websocket.MessageText, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			if _, got, err := conn.Read(wctx); err != nil || string(got) != "echo: "+msg {
				t.Fatalf("%s: %q %v", u, got, err)
			}
		}
		_ = conn.Close(websocket.StatusNormalClosure, "")
	}

	t.Run("port-forward", func(t *testing.T) {
		cmd := exec.Command(filepath.Join(d.Bin, "sandboxctl"), "--socket", d.Socket, "port-forward", id, "0:8090")
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		line, err := bufio.NewReader(stdout).ReadString('\n')
		var local string
		if _, serr := fmt.Sscanf(line, "Forwarding from %s -> 8090", &local); err != nil || serr != nil {
			t.Fatalf("port-forward said %q (%v)", line, err)
		}
		echo(t, "ws://"+local+"/", nil)
	})

	t.Run("preview", func(t *testing.T) {
		p, err := c.Preview(ctx(t), id, 8090, 0)
		if err != nil {
			t.Fatal(err)
		}
		link, _ := url.Parse(p.URL)
		jar, _ := cookiejar.New(nil)
		browser := &http.Client{Jar: jar, Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, "127.0.0.1:"+link.Port())
		}}}
		resp, err := browser.Get(p.URL) // the link's token becomes the origin's cookie
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("the preview link: %d", resp.StatusCode)
		}
		origin := "http://" + link.Host
		echo(t, "ws://"+link.Host+"/", &websocket.DialOptions{HTTPClient: browser, HTTPHeader: http.Header{"Origin": {origin}}})
		// Without the cookie, no upgrade.
		anon := &http.Client{Transport: browser.Transport}
		if _, resp, err := websocket.Dial(ctx(t), "ws://"+link.Host+"/", &websocket.DialOptions{HTTPClient: anon}); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a WebSocket without the preview's cookie: %v %v", resp, err)
		}
	})
}
