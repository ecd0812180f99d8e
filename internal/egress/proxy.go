package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/net/http/httpproxy"
	"golang.org/x/net/proxy"

	"github.com/sandboxd/sandboxd/internal/redact"
	"github.com/sandboxd/sandboxd/internal/units"
)

// Socket is the proxy socket's name in a sandbox's egress directory.
const Socket = "proxy.sock"

// HostName is the name sandboxes reach a service on the host's own
// loopback by (a local model server, a database), on the ports an
// allow-list entry of this name lists: "host.sandboxd.internal:11434".
// The sandbox's own loopback (NO_PROXY) keeps 127.0.0.1 and localhost.
const HostName = "host.sandboxd.internal"

// hostLoopback are the addresses HostName leads to, in order.
var hostLoopback = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}

// Limits bound one sandbox's egress.
type Limits struct {
	MaxConnections int           // open at once
	MaxBytes       int64         // sent and received together, per execution
	ConnectTimeout time.Duration // resolving and connecting, per connection
}

// MaxRecords is how many connections an execution's result lists; the
// rest are counted.
const MaxRecords = 256

// Events receives every connection's outcome, for metrics.
type Events interface {
	EgressConnection(language, host, decision string)
	EgressBytes(language string, sent, received int64)
}

// Options configure a Proxy.
type Options struct {
	Dir    string // where the sandboxes' directories are made
	Events Events
	Log    hclog.Logger
	// Upstream picks the proxy through which a destination is reached:
	// nil (and a nil result) is direct. By default, sandboxd's own
	// HTTPS_PROXY and NO_PROXY.
	Upstream func(hostport string) (*url.URL, error)
	// Resolve finds a name's addresses; by default the host's resolver.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// CAFile is the CA bundle sandboxes trust besides their own
	// authority, copied into each one's Bundle ("" none).
	CAFile string
	// Roots verify the hosts the proxy itself speaks TLS to (where it
	// writes secrets); nil, the host's.
	Roots *x509.CertPool
}

// Proxy is every sandbox's egress gate.
type Proxy struct {
	opts      Options
	transport *http.Transport
	mu        sync.Mutex
	gates     map[string]*Gate
}

// New returns a proxy that makes its sandboxes' directories under
// opts.Dir.
func New(opts Options) (*Proxy, error) {
	// Only sandboxd enters it; each sandbox has its own directory
	// mounted, which it enters there.
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	if err := os.Chmod(opts.Dir, 0o700); err != nil { // made by an older sandboxd
		return nil, fmt.Errorf("egress: %w", err)
	}
	if opts.Upstream == nil {
		fromEnv := httpproxy.FromEnvironment().ProxyFunc()
		opts.Upstream = func(hostport string) (*url.URL, error) {
			// Every connection is a tunnel, so HTTPS_PROXY is the one.
			return fromEnv(&url.URL{Scheme: "https", Host: hostport})
		}
	}
	if opts.Resolve == nil {
		opts.Resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	p := &Proxy{opts: opts, gates: map[string]*Gate{}}
	p.transport = p.newTransport()
	p.transport.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		return ctx.Value(dialKey{}).(func() (net.Conn, error))()
	}
	p.transport.DisableKeepAlives = true // one connection, one record
	return p, nil
}

// newTransport is how the proxy speaks to servers: HTTP/1.1 only, no
// compression of its own asking, one connection at a time, bounded
// headers; the caller says how it dials.
func (p *Proxy) newTransport() *http.Transport {
	return &http.Transport{
		DisableCompression:     true,
		MaxResponseHeaderBytes: 1 << 20,
		MaxConnsPerHost:        1,
		ExpectContinueTimeout:  time.Second,
		TLSNextProto:           map[string]func(string, *tls.Conn) http.RoundTripper{}, // no HTTP/2
	}
}

// Dir is where the sandbox key's socket lives, to mount into it.
func (p *Proxy) Dir(key string) string { return filepath.Join(p.opts.Dir, key) }

// Open listens for the sandbox key (of language), allowing nothing until
// Allow; opened again after a restart, it listens on the same path, so
// that a container made before finds it.
func (p *Proxy) Open(key, language string, limits Limits) (*Gate, error) {
	if !validKey(key) {
		return nil, fmt.Errorf("egress: bad sandbox key %q", key)
	}
	dir := p.Dir(key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	sock := filepath.Join(dir, Socket)
	_ = os.Remove(sock) // a previous sandboxd's
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	// Sandboxes run as uids of their own: anyone may connect; the
	// directory is theirs alone, as each gets its own mounted.
	if err := os.Chmod(sock, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("egress: %w", err)
	}
	ca, err := newAuthority()
	if err == nil {
		err = p.writeBundle(dir, ca)
	}
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("egress: the sandbox's CA bundle: %w", err)
	}
	g := &Gate{p: p, key: key, language: language, limits: limits, open: map[io.Closer]bool{}, ca: ca}
	g.srv = &http.Server{
		Handler:           g,
		ReadHeaderTimeout: 10 * time.Second, // a slowloris client holds a slot this long at most
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	p.mu.Lock()
	if old := p.gates[key]; old != nil {
		old.close()
	}
	p.gates[key] = g
	p.mu.Unlock()
	go g.srv.Serve(&gateListener{Listener: ln, g: g})
	return g, nil
}

func validKey(k string) bool {
	return k != "" && len(k) <= 64 && strings.Trim(k, "abcdefghijklmnopqrstuvwxyz0123456789") == ""
}

// Gate is the sandbox key's gate; nil when it has none.
func (p *Proxy) Gate(key string) *Gate {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gates[key]
}

// Close ends the sandbox key's gate and its connections and removes its
// directory.
func (p *Proxy) Close(key string) {
	p.mu.Lock()
	g := p.gates[key]
	delete(p.gates, key)
	p.mu.Unlock()
	if g != nil {
		g.close()
	}
	if validKey(key) {
		_ = os.RemoveAll(p.Dir(key))
	}
}

// Prune removes the directories of sandboxes that have no gate: what a
// previous sandboxd left for containers that are gone.
func (p *Proxy) Prune() {
	entries, _ := os.ReadDir(p.opts.Dir)
	for _, e := range entries {
		if p.Gate(e.Name()) == nil && validKey(e.Name()) {
			_ = os.RemoveAll(p.Dir(e.Name()))
		}
	}
}

// Gate is one sandbox's egress: its allow-list, what its connections did
// in the current execution, and its limits.
type Gate struct {
	p        *Proxy
	key      string
	language string
	limits   Limits
	srv      *http.Server

	mu         sync.Mutex
	pol        *policy // replaced whole, never changed
	records    []*record
	unrecorded int
	conns      int                // open client connections
	open       map[io.Closer]bool // hijacked tunnels, closed with the gate
	closed     bool
	secrets    []Secret
	scrubber   *redact.Replacer // every form of the secrets' values, to their placeholders
	// intercepted are the servers of connections read for secrets.
	intercepted map[*http.Server]bool
	ca          *authority
	spent       atomic.Int64 // bytes this execution
	// Bytes since the gate opened, each way, and what they were when
	// the execution began.
	sent, received     atomic.Int64
	sentAt, receivedAt atomic.Int64
}

// policy is what a gate lets through. Each connection is judged, resolved
// and dialled under the one it began with; a change replaces it whole.
type policy struct {
	allow List
	// deny refuses what it covers though allow lets it through, unless
	// except covers it too (E2B's denyOut and allowOut).
	deny, except List
	socks        *Socks // every connection but the host's services goes through it, when set
}

// Allow sets what the sandbox may reach from now on: allow alone.
func (g *Gate) Allow(l List) { g.SetPolicy(l, nil, nil, nil) }

// SetPolicy sets, from now on and at once, what the sandbox may reach:
// what allow covers, less what deny covers (a name by its name and by
// each address it resolves to) unless except covers it too, through the
// SOCKS5 proxy socks when set. Tunnels it opened before under a deny list
// or a proxy, or opens now under one, are closed: what it may reach now
// is all it reaches.
func (g *Gate) SetPolicy(allow, deny, except List, socks *Socks) {
	g.mu.Lock()
	before := g.pol
	g.pol = &policy{allow: allow, deny: deny, except: except, socks: socks}
	var open []io.Closer
	if before != nil && (len(before.deny) > 0 || before.socks != nil || len(deny) > 0 || socks != nil) {
		for c := range g.open {
			open = append(open, c)
		}
	}
	g.mu.Unlock()
	for _, c := range open {
		_ = c.Close()
	}
}

// policy is the gate's policy now.
func (g *Gate) policy() *policy {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pol == nil {
		return &policy{}
	}
	return g.pol
}

// Socks is a SOCKS5 proxy (RFC 1928, with RFC 1929's user and password
// when Username is set) that a sandbox's connections go through.
type Socks struct {
	Address            string // host:port
	Username, Password string
}

// denied is the deny entry that refuses host (at address a, when valid)
// at port, or "".
func (p *policy) denied(host string, a netip.Addr, port uint16) string {
	if p.except.Entry(host, port) != "" || a.IsValid() && p.except.AddrEntry(a, port) != "" {
		return ""
	}
	if d := p.deny.Entry(host, port); d != "" || !a.IsValid() {
		return d
	}
	return p.deny.AddrEntry(a, port)
}

// toProxy says whether host:port (at address a, when valid) is the
// session's SOCKS5 proxy, which the sandbox may not use itself: it would
// route around the gate's deny list.
func (p *policy) toProxy(host string, a netip.Addr, port uint16) bool {
	if p.socks == nil {
		return false
	}
	ph, pp, err := net.SplitHostPort(p.socks.Address)
	if err != nil || pp != strconv.Itoa(int(port)) {
		return false
	}
	if pa, err := netip.ParseAddr(ph); err == nil {
		return a.IsValid() && pa.Unmap() == a.Unmap() || host == pa.Unmap().String()
	}
	return strings.TrimSuffix(strings.ToLower(ph), ".") == host
}

// Allowed is the current allow-list.
func (g *Gate) Allowed() List { return g.policy().allow }

// Begin starts an execution: a fresh byte budget and record.
func (g *Gate) Begin() {
	g.mu.Lock()
	g.records, g.unrecorded = nil, 0
	g.mu.Unlock()
	g.spent.Store(0)
	g.sentAt.Store(g.sent.Load())
	g.receivedAt.Store(g.received.Load())
}

// Transferred is the bytes sent and received since the gate opened.
func (g *Gate) Transferred() (sent, received int64) {
	return g.sent.Load(), g.received.Load()
}

// ExecutionTransferred is the bytes sent and received since Begin.
func (g *Gate) ExecutionTransferred() (sent, received int64) {
	return g.sent.Load() - g.sentAt.Load(), g.received.Load() - g.receivedAt.Load()
}

// Connection is what one connection of an execution did.
type Connection struct {
	Host                     string
	Port                     int
	Allowed                  bool
	BytesSent, BytesReceived int64
	Error                    string // why it was refused or ended
}

// Records is what the execution's connections did so far, and how many
// more there were than a result lists.
func (g *Gate) Records() ([]Connection, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]Connection, len(g.records))
	for i, r := range g.records {
		out[i] = r.snapshot()
	}
	return out, g.unrecorded
}

func (g *Gate) close() {
	g.mu.Lock()
	g.closed = true
	open := g.open
	g.open = map[io.Closer]bool{}
	g.mu.Unlock()
	_ = g.srv.Close()
	for c := range open {
		c.Close()
	}
}

// record is one connection's outcome.
type record struct {
	host     string
	port     uint16
	entry    string  // the allow-list entry that lets it through, if any
	pol      *policy // the gate's when it was judged
	counted  sync.Once
	mu       sync.Mutex
	allowed  bool
	err      string
	sent     atomic.Int64
	received atomic.Int64
}

func (r *record) snapshot() Connection {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Connection{Host: r.host, Port: int(r.port), Allowed: r.allowed, BytesSent: r.sent.Load(), BytesReceived: r.received.Load(), Error: r.err}
}

// fail notes why the connection ended, keeping the first reason.
func (r *record) fail(msg string) {
	r.mu.Lock()
	if r.err == "" {
		r.err = msg
	}
	r.mu.Unlock()
}

// refuse notes that the connection was refused after all: a request
// inside it was.
func (r *record) refuse(msg string) {
	r.mu.Lock()
	r.allowed, r.err = false, msg
	r.mu.Unlock()
}

// newRecord notes a connection attempt: refused when denied says why,
// else allowed (so far) by the allow-list's entry.
func (g *Gate) newRecord(host string, port uint16, entry, denied string, pol *policy) *record {
	r := &record{host: host, port: port, entry: entry, allowed: denied == "", err: denied, pol: pol}
	g.mu.Lock()
	if len(g.records) < MaxRecords {
		g.records = append(g.records, r)
	} else {
		g.unrecorded++
	}
	g.mu.Unlock()
	if denied != "" {
		g.decided(r)
	}
	return r
}

// decided counts a connection's final decision, once. The host label is
// the allow-list entry that matched, as the operator wrote it, or
// "(unlisted)": names and addresses a program makes up would grow the
// metric without bound.
func (g *Gate) decided(r *record) {
	r.counted.Do(func() {
		r.mu.Lock()
		decision := "allowed"
		if !r.allowed {
			decision = "denied"
		}
		r.mu.Unlock()
		label := r.entry
		if label == "" {
			label = "(unlisted)"
		}
		if g.p.opts.Events != nil {
			g.p.opts.Events.EgressConnection(g.language, label, decision)
		}
	})
}

// ServeHTTP proxies one request: CONNECT as a tunnel, an absolute http://
// URI forwarded.
func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodConnect:
		g.tunnel(w, r)
	case r.URL.IsAbs() && r.URL.Scheme == "http":
		g.forward(w, r)
	case r.URL.IsAbs():
		refuse(w, http.StatusBadRequest, "sandboxd egress: "+r.URL.Scheme+" URLs go through CONNECT")
	default:
		refuse(w, http.StatusBadRequest, "sandboxd egress: this is a proxy: send an absolute http:// URI, or CONNECT host:port")
	}
}

func refuse(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Connection", "close")
	w.WriteHeader(code)
	fmt.Fprintln(w, msg)
}

// splitTarget reads host and port from a request's target.
func splitTarget(hostport string, defaultPort uint16) (string, uint16, error) {
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		if defaultPort == 0 {
			return "", 0, err
		}
		host, portText = strings.Trim(hostport, "[]"), strconv.Itoa(int(defaultPort))
	}
	port, err := parsePort(portText)
	if err != nil {
		return "", 0, err
	}
	return strings.TrimSuffix(strings.ToLower(host), "."), port, nil
}

func (g *Gate) tunnel(w http.ResponseWriter, r *http.Request) {
	host, port, err := splitTarget(r.Host, 0)
	if err != nil {
		refuse(w, http.StatusBadRequest, "sandboxd egress: CONNECT needs host:port")
		return
	}
	entry, denied, pol := g.check(host, port)
	rec := g.newRecord(host, port, entry, denied, pol)
	if !rec.allowed {
		refuse(w, http.StatusForbidden, "sandboxd egress: "+rec.err)
		return
	}
	up, err := g.connect(r.Context(), rec)
	if err != nil {
		refuse(w, http.StatusBadGateway, "sandboxd egress: "+err.Error())
		return
	}
	client, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		return
	}
	if !g.track(client, up) {
		return
	}
	defer g.untrack(client, up)
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	if len(g.secretsFor(host, port)) > 0 {
		// What the client sent behind its CONNECT (a TLS hello) is in buf.
		g.intercept(&bufferedConn{Conn: client, r: buf.Reader}, up, host, port, rec)
		return
	}
	// What the client sent behind its CONNECT (a TLS hello) is in buf.
	if n := buf.Reader.Buffered(); n > 0 {
		early, _ := buf.Reader.Peek(n)
		if _, err := up.Write(early); err != nil {
			return
		}
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(up, client)
		closeWrite(up)
		close(done)
	}()
	_, _ = io.Copy(client, up)
	closeWrite(client)
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	c.Close()
}

// track keeps tunnels (and intercepted connections' servers) to close
// with the gate; false if it closed already.
func (g *Gate) track(cs ...io.Closer) bool {
	g.mu.Lock()
	closed := g.closed
	if !closed {
		for _, c := range cs {
			g.open[c] = true
		}
	}
	g.mu.Unlock()
	if closed {
		for _, c := range cs {
			c.Close() // a metered one takes g.mu to give its slot back
		}
	}
	return !closed
}

func (g *Gate) untrack(cs ...io.Closer) {
	g.mu.Lock()
	for _, c := range cs {
		delete(g.open, c)
	}
	g.mu.Unlock()
	for _, c := range cs {
		c.Close() // a metered one takes g.mu to give its slot back
	}
}

type dialKey struct{}

func (g *Gate) forward(w http.ResponseWriter, r *http.Request) {
	host, port, err := splitTarget(r.URL.Host, 80)
	if err != nil {
		refuse(w, http.StatusBadRequest, "sandboxd egress: bad host in URL")
		return
	}
	secrets, scrubber := g.secretList()
	entry, denied, pol := g.check(host, port)
	if denied == "" {
		denied = writeSecrets(r, exchange{host: host, port: port, inClear: true, foreign: foreignName(r, "", host, port, 80), tunnelled: pol.tunnels(host)}, secrets)
	}
	rec := g.newRecord(host, port, entry, denied, pol)
	if !rec.allowed {
		refuse(w, http.StatusForbidden, "sandboxd egress: "+rec.err)
		return
	}
	ctx := context.WithValue(r.Context(), dialKey{}, func() (net.Conn, error) { return g.connect(r.Context(), rec) })
	g.reverseProxy(rec, g.p.transport, secrets, scrubber).ServeHTTP(finalOnly{w}, r.WithContext(ctx))
}

// reverseProxy relays one request through transport, its answer made
// fit for a sandbox that holds secrets (those the request was judged
// with, so that a change of the gate's secrets meanwhile scrubs nothing
// less), its errors in the proxy's own words.
func (g *Gate) reverseProxy(rec *record, transport http.RoundTripper, secrets []Secret, scrubber *redact.Replacer) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		// Rewrite, not Director: no X-Forwarded-For naming the sandbox.
		// The outgoing request is written afresh from what Go parsed, so
		// a smuggled second request in the body stays body.
		Rewrite:        func(*httputil.ProxyRequest) {},
		ModifyResponse: func(resp *http.Response) error { return g.prepare(resp, secrets, scrubber) },
		Transport:      transport,
		ErrorLog:       log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			msg := upstreamFault(err, rec)
			rec.fail(msg)
			refuse(w, http.StatusBadGateway, "sandboxd egress: "+msg)
		},
	}
}

// finalOnly passes on a server's final answer, not its interim (1xx)
// ones, whose headers no one scrubs; a switch of protocols is final.
type finalOnly struct{ http.ResponseWriter }

func (f finalOnly) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		f.ResponseWriter.WriteHeader(code)
	}
}

// Unwrap lets the reverse proxy flush and hijack the connection.
func (f finalOnly) Unwrap() http.ResponseWriter { return f.ResponseWriter }

// check finds the allow-list entry that lets host:port through under the
// gate's policy now, or says why none does; the connection is made under
// that policy.
func (g *Gate) check(host string, port uint16) (entry, denied string, pol *policy) {
	pol = g.policy()
	if entry = pol.allow.Entry(host, port); entry == "" {
		return "", fmt.Sprintf("%s port %d is not in the sandbox's allow-list", host, port), pol
	}
	if d := pol.denied(host, netip.Addr{}, port); d != "" {
		return "", fmt.Sprintf("%s port %d is in the sandbox's deny list (%s)", host, port, d), pol
	}
	if pol.toProxy(host, netip.Addr{}, port) {
		return "", fmt.Sprintf("%s port %d is the session's own egress proxy", host, port), pol
	}
	return entry, "", pol
}

// errBudget ends a connection over the execution's byte limit.
var errBudget = errors.New("over the execution's egress byte limit")

// connect resolves rec's host (the sandbox never does), keeps the
// addresses a name may lead to, and connects to the first that answers,
// directly or through the upstream proxy. Each connection resolves
// afresh and connects to the address it checked, so a name that
// re-resolves elsewhere (DNS rebinding) gains nothing.
func (g *Gate) connect(ctx context.Context, rec *record) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, g.limits.ConnectTimeout)
	defer cancel()
	defer g.decided(rec)
	fail := func(allowed bool, msg string) (net.Conn, error) {
		rec.mu.Lock()
		rec.allowed, rec.err = allowed, msg
		rec.mu.Unlock()
		return nil, fault(msg)
	}
	if !g.claim() {
		return fail(false, fmt.Sprintf("too many connections at once (limit %d)", g.limits.MaxConnections))
	}
	pol := rec.pol
	var candidates, addrs []netip.Addr
	var refused, denied []string
	if a, err := netip.ParseAddr(rec.host); err == nil {
		candidates = []netip.Addr{a.Unmap()}
	} else if rec.host == HostName {
		// The entry that let it through names the host's services.
		candidates = hostLoopback
	} else {
		found, err := g.p.opts.Resolve(ctx, rec.host)
		if err != nil {
			g.release()
			return fail(true, "resolving "+rec.host+": "+err.Error())
		}
		for _, a := range found {
			if a = a.Unmap(); Special(a) && pol.allow.AddrEntry(a, rec.port) == "" {
				refused = append(refused, a.String())
				continue
			}
			candidates = append(candidates, a)
		}
	}
	for _, a := range candidates {
		if d := pol.denied(rec.host, a, rec.port); d != "" || pol.toProxy(rec.host, a, rec.port) {
			denied = append(denied, a.String())
			continue
		}
		addrs = append(addrs, a)
	}
	switch {
	case len(addrs) > 0:
	case len(denied) > 0:
		g.release()
		return fail(false, fmt.Sprintf("%s port %d leads to %s, which the sandbox's deny list refuses", rec.host, rec.port, strings.Join(denied, ", ")))
	default:
		g.release()
		return fail(false, fmt.Sprintf("%s resolves to %s: loopback, private, link-local or metadata addresses need an address entry of their own",
			rec.host, strings.Join(refused, ", ")))
	}
	var errs []string
	for _, a := range addrs {
		c, err := g.dial(ctx, netip.AddrPortFrom(a, rec.port), pol, rec.host)
		if err == nil {
			return &meteredConn{Conn: c, g: g, rec: rec}, nil
		}
		errs = append(errs, err.Error())
	}
	g.release()
	if ctx.Err() != nil {
		return fail(true, fmt.Sprintf("connecting to %s took longer than %s", rec.host, g.limits.ConnectTimeout))
	}
	return fail(true, strings.Join(errs, "; "))
}

// dialSocks connects to ap through s. The proxy's own name is resolved
// as a sandbox's names are, its special addresses refused unless the
// allow-list has an address entry for them: the proxy cannot lead to the
// host's loopback, the private network or a metadata service that way.
// Errors do not name the proxy: the sandbox is not told where it is.
func (g *Gate) dialSocks(ctx context.Context, ap netip.AddrPort, s *Socks) (net.Conn, error) {
	host, port, err := net.SplitHostPort(s.Address)
	if err != nil {
		return nil, errors.New("the session's SOCKS5 proxy has no host:port")
	}
	n, _ := strconv.ParseUint(port, 10, 16)
	var found []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		found = []netip.Addr{a}
	} else if found, err = g.p.opts.Resolve(ctx, host); err != nil {
		return nil, errors.New("the session's SOCKS5 proxy does not resolve")
	}
	allow := g.Allowed()
	var at netip.Addr
	for _, a := range found {
		if a = a.Unmap(); !Special(a) || allow.AddrEntry(a, uint16(n)) != "" {
			at = a
			break
		}
	}
	if !at.IsValid() {
		return nil, errors.New("the session's SOCKS5 proxy resolves only to special addresses the allow-list has no address entry for")
	}
	var auth *proxy.Auth
	if s.Username != "" {
		auth = &proxy.Auth{User: s.Username, Password: s.Password}
	}
	var raw net.Conn // the proxy's TCP connection, which the SOCKS one hides
	forward := dialFunc(func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		raw = c
		return c, err
	})
	via, err := proxy.SOCKS5("tcp", netip.AddrPortFrom(at, uint16(n)).String(), auth, forward)
	if err != nil {
		return nil, errors.New("the session's SOCKS5 proxy: " + err.Error())
	}
	c, err := via.(proxy.ContextDialer).DialContext(ctx, "tcp", ap.String())
	if err != nil {
		return nil, errors.New("through the session's SOCKS5 proxy: it refused or could not be reached")
	}
	return halfClosable{Conn: c, raw: raw}, nil
}

// dialFunc is a function as the SOCKS5 dialer's forward dialer.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

func (f dialFunc) Dial(network, addr string) (net.Conn, error) {
	return f(context.Background(), network, addr)
}

func (f dialFunc) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return f(ctx, network, addr)
}

// halfClosable is a connection through a SOCKS5 proxy whose write side
// can be closed alone, as a direct one's can: a client's half-close goes
// on to the server.
type halfClosable struct {
	net.Conn
	raw net.Conn
}

func (c halfClosable) CloseWrite() error {
	if cw, ok := c.raw.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// claim takes one of the sandbox's connections at once.
func (g *Gate) claim() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.conns >= g.limits.MaxConnections {
		return false
	}
	g.conns++
	return true
}

func (g *Gate) release() {
	g.mu.Lock()
	g.conns--
	g.mu.Unlock()
}

// tunnels says whether a connection to host goes through the session's
// SOCKS5 proxy: every one but to the host's own services by name, which
// are this host's, not the proxy's.
func (p *policy) tunnels(host string) bool { return p.socks != nil && host != HostName }

// dial connects to ap (the address host led to), through the session's
// SOCKS5 proxy when the policy has one, else through the upstream proxy
// when one serves it (never for loopback: the host's own services are not
// behind it).
func (g *Gate) dial(ctx context.Context, ap netip.AddrPort, pol *policy, host string) (net.Conn, error) {
	var d net.Dialer
	if pol.tunnels(host) {
		return g.dialSocks(ctx, ap, pol.socks)
	}
	var up *url.URL
	if !ap.Addr().IsLoopback() {
		var err error
		if up, err = g.p.opts.Upstream(ap.String()); err != nil {
			return nil, fmt.Errorf("upstream proxy: %w", err)
		}
	}
	if up == nil {
		return d.DialContext(ctx, "tcp", ap.String())
	}
	c, err := d.DialContext(ctx, "tcp", canonicalAddr(up))
	if err != nil {
		return nil, fmt.Errorf("upstream proxy %s: %w", up.Host, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: ap.String()}, Host: ap.String(), Header: http.Header{}}
	if u := up.User; u != nil {
		pw, _ := u.Password()
		req.SetBasicAuth(u.Username(), pw)
		req.Header["Proxy-Authorization"], req.Header["Authorization"] = req.Header["Authorization"], nil
	}
	br := bufio.NewReader(c)
	var resp *http.Response
	if err = req.Write(c); err == nil {
		if resp, err = http.ReadResponse(br, req); err != nil {
			err = errors.New("its answer is not valid HTTP") // Go's error would quote it
		}
	}
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("answered %d", resp.StatusCode) // its reason phrase is its own text
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("upstream proxy %s: CONNECT %s: %w", up.Host, ap, err)
	}
	_ = c.SetDeadline(time.Time{})
	if br.Buffered() > 0 {
		return &bufferedConn{Conn: c, r: br}, nil
	}
	return c, nil
}

func canonicalAddr(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// meteredConn counts a connection's bytes into its record and the
// execution's budget, and gives back its slot when closed.
type meteredConn struct {
	net.Conn
	g      *Gate
	rec    *record
	closed sync.Once
}

func (c *meteredConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.rec.received.Add(int64(n))
	c.g.received.Add(int64(n))
	return n, c.spend(n, err)
}

func (c *meteredConn) Write(b []byte) (int, error) {
	// Counted before the bytes can reach the server, so that a record
	// read once the answer is back holds them (the transport writes from
	// a goroutine of its own); what was not written is taken back.
	c.rec.sent.Add(int64(len(b)))
	n, err := c.Conn.Write(b)
	c.rec.sent.Add(int64(n - len(b)))
	c.g.sent.Add(int64(n))
	return n, c.spend(n, err)
}

func (c *meteredConn) spend(n int, err error) error {
	if c.g.spent.Add(int64(n)) > c.g.limits.MaxBytes {
		c.rec.fail(fmt.Sprintf("closed: over the execution's limit of %s", units.ByteSize(c.g.limits.MaxBytes)))
		c.Close()
		return errBudget
	}
	return err
}

func (c *meteredConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *meteredConn) Close() error {
	err := c.Conn.Close()
	c.closed.Do(func() {
		c.g.release()
		if e := c.g.p.opts.Events; e != nil {
			e.EgressBytes(c.g.language, c.rec.sent.Load(), c.rec.received.Load())
		}
	})
	return err
}

// gateListener bounds the client connections a sandbox holds open
// (idle ones included) at twice its connection limit and a few more,
// answering the others 503 and recording them.
type gateListener struct {
	net.Listener
	g       *Gate
	clients atomic.Int64
}

func (l *gateListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.clients.Add(1) <= int64(2*l.g.limits.MaxConnections+8) {
			return &clientConn{Conn: c, l: l}, nil
		}
		l.clients.Add(-1)
		l.g.newRecord("", 0, "", fmt.Sprintf("too many connections at once (limit %d)", l.g.limits.MaxConnections), nil)
		go func() {
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
			c.Close()
		}()
	}
}

type clientConn struct {
	net.Conn
	l    *gateListener
	once sync.Once
}

func (c *clientConn) Close() error {
	c.once.Do(func() { c.l.clients.Add(-1) })
	return c.Conn.Close()
}
