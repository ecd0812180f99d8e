package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

// egressProbe fetches /small n times, a new connection each, then /bulk
// once, and prints the latencies' p50 and p95 in ms and the download's
// rate in MB/s: through the proxy HTTP_PROXY names, or directly without.
const egressProbe = `
import http.client, os, sys, time
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
proxy = os.environ.get('HTTP_PROXY', '')
def get(path):
    if proxy:
        ph, pp = proxy.split('//')[1].split(':')
        c, target = http.client.HTTPConnection(ph, int(pp)), 'http://%s:%d%s' % (host, port, path)
    else:
        c, target = http.client.HTTPConnection(host, port), path
    c.request('GET', target)
    return c, c.getresponse()
lat = []
for i in range(n):
    t = time.perf_counter()
    c, r = get('/small'); r.read(); c.close()
    lat.append((time.perf_counter() - t) * 1000)
lat.sort()
t = time.perf_counter()
c, r = get('/bulk')
got = 0
while True:
    b = r.read(1 << 20)
    if not b: break
    got += len(b)
print(lat[len(lat) // 2], lat[int(len(lat) * 0.95)], got / (time.perf_counter() - t) / 1e6)
`

// bulkBytes is the size of the bulk download.
const bulkBytes = 256 << 20

// egressPath prints a request's latency and a bulk download's rate
// through the egress path (a session's python, the supervisor's relay,
// sandboxd's proxy) beside the same program on the host, straight to the
// server: both against a server on 127.0.0.1.
func egressPath(bin string, n int) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	chunk := make([]byte, 1<<20)
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/bulk" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(bulkBytes))
		for sent := 0; sent < bulkBytes; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	d, err := startDaemon(bin, fmt.Sprintf("sandbox_uids = \"1000102000-1000103999\"\nnetwork {\n  allow = [\"127.0.0.1:%s\"]\n}\n", port))
	if err != nil {
		return err
	}
	defer d.stop()
	c := client.New(d.socket)
	ctx := context.Background()
	s, err := c.CreateSession(ctx, api.SessionRequest{Language: "python"})
	if err != nil {
		return err
	}
	defer c.DeleteSession(ctx, s.ID)
	args := []string{"127.0.0.1", port, strconv.Itoa(n * 5)}
	res, err := c.Exec(ctx, s.ID, api.ExecRequest{Argv: append([]string{"python3", "-c", egressProbe}, args...)})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("egress probe in the sandbox: %s", res.Stderr)
	}
	host, err := exec.Command("python3", append([]string{"-c", egressProbe}, args...)...).Output()
	if err != nil {
		return fmt.Errorf("egress probe on the host: %v", err)
	}
	var in, out [3]float64
	if _, err := fmt.Sscan(strings.TrimSpace(res.Stdout), &in[0], &in[1], &in[2]); err != nil {
		return fmt.Errorf("egress probe: %q", res.Stdout)
	}
	if _, err := fmt.Sscan(strings.TrimSpace(string(host)), &out[0], &out[1], &out[2]); err != nil {
		return fmt.Errorf("egress probe on the host: %q", host)
	}
	fmt.Printf("\n| HTTP to 127.0.0.1, python http.client | through the egress path | on the host, direct | ratio |\n|---|---|---|---|\n")
	fmt.Printf("| GET, new connection each, p50 ms | %.2f | %.2f | %s |\n", in[0], out[0], ratio(in[0], out[0]))
	fmt.Printf("| GET, new connection each, p95 ms | %.2f | %.2f | %s |\n", in[1], out[1], ratio(in[1], out[1]))
	fmt.Printf("| %d MiB download, MB/s | %.0f | %.0f | %s |\n", bulkBytes>>20, in[2], out[2], ratio(in[2], out[2]))
	return nil
}
