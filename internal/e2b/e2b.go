// Package e2b answers E2B's SDKs: the control API they call to create,
// list, time and kill sandboxes, the in-sandbox agent's API (envd: processes
// and files, over the Connect protocol, see envd/*.proto) and the Code
// Interpreter's execution endpoints, all on one TCP listener (the e2b
// block of sandboxd.hcl). An E2B sandbox is a sandboxd session; what runs
// in it goes through the daemon's request path, so the policies, limits,
// egress and history apply as they do to native calls.
//
// Routing: the SDKs address one URL for the control API (E2B_API_URL) and
// one for every sandbox (E2B_SANDBOX_URL), naming the sandbox and the
// port of its agent in the E2b-Sandbox-Id and E2b-Sandbox-Port headers;
// both URLs are this listener. Control calls carry an API key
// (X-API-KEY), sandbox calls the sandbox's own access token, which only
// the key that made the sandbox receives: a key sees and reaches its own
// sandboxes only.
package e2b

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/internal/daemon"
	"github.com/sandboxd/sandboxd/internal/dashboard"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/principal"
	"github.com/sandboxd/sandboxd/internal/sessions"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/internal/wire"
)

// EnvdVersion is the agent version sandboxes report: the SDKs turn on
// what that version of envd has (octet-stream uploads, closing stdin,
// file metadata, entries in watch events, watching network mounts).
const EnvdVersion = "0.6.4"

// The ports of a sandbox's agents as the SDKs name them.
const (
	envdPort        = "49983"
	interpreterPort = "49999"
)

// maxControlBody bounds a control call's JSON body.
const maxControlBody = 1 << 20

// maxEnvdMessage bounds one message of an agent's RPC (process and
// filesystem: commands, paths, stdin pieces), decompressed: over it, the
// call ends resource_exhausted with the limit in its message.
const maxEnvdMessage = 4 << 20

// Server is the E2B-compatible listener's handler.
type Server struct {
	d     *daemon.Daemon
	store *state.Store
	cfg   config.E2B
	keys  [][sha256.Size]byte // the API keys' digests
	host  string              // the host the operator wrote in listen
	log   hclog.Logger
	// base outlives requests: processes started by one run on after it.
	base context.Context
	stop context.CancelFunc

	envd        http.Handler
	interpreter http.Handler

	mu        sync.Mutex
	sandboxes map[string]*sandbox
}

// sandbox is an E2B sandbox: a session and what E2B's clients keep in it.
type sandbox struct {
	rec    state.E2BSandbox // its Paused and Lifecycle are as they were at start
	paused atomic.Bool      // see state.E2BSandbox.Paused
	procs  *processes
	cells  *cells
	watch  *watchers
	gone   chan struct{} // closed when it is forgotten: killed, ended

	// turn is held while it pauses or resumes, and while its timeout
	// moves or an operation that would wake it runs: one at a time, in
	// order (see takeTurn).
	turn  chan struct{}
	mu    sync.Mutex
	life  state.E2BLifecycle // its EndsAt moves; the rest is as made
	timer *time.Timer        // pauses it at life.EndsAt
}

// abortIfGone drops the connection of a call that outlived its sandbox,
// as E2B's does when a sandbox's VM goes: the SDKs then ask /health (502
// now) and tell their caller the sandbox was killed, instead of passing
// on an exit or an error of sandboxd's. The session goes from the daemon's
// sessions before its container does, so a kill is seen before forget.
func (s *Server) abortIfGone(sb *sandbox) {
	select {
	case <-sb.gone:
		panic(http.ErrAbortHandler)
	default:
	}
	if _, aerr := s.d.Sessions.Get(sb.rec.ID); errdefs.Is(aerr, errdefs.NotFound) {
		panic(http.ErrAbortHandler)
	}
}

// New returns the handler, with the sandboxes the store keeps whose
// sessions still live.
func New(d *daemon.Daemon, cfg config.E2B, log hclog.Logger) (*Server, error) {
	store := d.Store()
	base, stop := context.WithCancel(context.Background())
	s := &Server{d: d, store: store, cfg: cfg, log: log.Named("e2b"), base: base, stop: stop, sandboxes: map[string]*sandbox{}}
	for _, k := range cfg.APIKeys {
		s.keys = append(s.keys, sha256.Sum256([]byte(k)))
	}
	s.host, _, _ = net.SplitHostPort(cfg.Listen)
	recs, bad, err := store.E2BSandboxes()
	if err != nil {
		stop()
		return nil, err
	}
	for _, c := range bad {
		s.log.Warn("an E2B sandbox record does not decode; it is skipped", "key", c.Key, "error", c.Err)
	}
	for _, rec := range recs {
		if _, aerr := d.Sessions.Get(rec.ID); aerr != nil {
			_ = store.DeleteE2BSandbox(rec.ID)
			continue
		}
		s.sandboxes[rec.ID] = s.newSandbox(rec)
	}
	s.envd = s.envdHandler()
	s.interpreter = s.interpreterHandler()
	return s, nil
}

func (s *Server) newSandbox(rec state.E2BSandbox) *sandbox {
	sb := &sandbox{rec: rec, procs: newProcesses(), cells: newCells(), watch: newWatchers(), gone: make(chan struct{}), life: rec.Lifecycle,
		turn: make(chan struct{}, 1)}
	sb.paused.Store(rec.Paused)
	s.arm(sb)
	return sb
}

// Close ends the processes and watches E2B clients started.
func (s *Server) Close() { s.stop() }

// ServeHTTP checks where a request comes from and whose it is, then
// serves it as a control call or as a call to a sandbox's agent.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if !dashboard.RebindingSafe(r.Host, s.host) {
		writeError(w, http.StatusForbidden, "the Host "+r.Host+" is not this listener's address: use http://127.0.0.1:PORT as E2B_API_URL and E2B_SANDBOX_URL")
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && origin != "http://"+r.Host {
		writeError(w, http.StatusForbidden, "a cross-site request: this API is for SDKs, not pages of other sites")
		return
	}
	if id := r.Header.Get("E2b-Sandbox-Id"); id != "" {
		s.serveSandbox(w, r, id)
		return
	}
	if r.URL.Path == "/files" && r.URL.Query().Has("signature") {
		s.serveSigned(w, r)
		return
	}
	key, ok := s.keyOf(r.Header.Get("X-API-KEY"))
	if !ok {
		writeError(w, http.StatusUnauthorized, "invalid API key: set E2B_API_KEY to one of the api_keys of the e2b block in sandboxd.hcl")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxControlBody)
	r = r.WithContext(principal.With(r.Context(), state.Requester{Via: principal.ViaE2B, Key: key}))
	s.control(key).ServeHTTP(w, r)
}

// keyOf is the fingerprint of a configured API key, if k is one.
func (s *Server) keyOf(k string) (string, bool) {
	if k == "" {
		return "", false
	}
	sum := sha256.Sum256([]byte(k))
	found := 0
	for _, want := range s.keys {
		found |= subtle.ConstantTimeCompare(sum[:], want[:])
	}
	return hex.EncodeToString(sum[:8]), found == 1
}

// serveSandbox serves a call to a sandbox's agent: envd, or the Code
// Interpreter's. A sandbox that is not there (never was, killed, timed
// out) answers 502, as E2B's proxy does, which the SDKs report as a
// sandbox that is gone.
func (s *Server) serveSandbox(w http.ResponseWriter, r *http.Request, id string) {
	sb := s.sandbox(id)
	if sb == nil {
		writeError(w, http.StatusBadGateway, "sandbox "+id+" was not found: it was killed, timed out, or never existed")
		return
	}
	tok := r.Header.Get("X-Access-Token")
	if tok == "" {
		tok = r.Header.Get("E2B-Traffic-Access-Token")
	}
	if subtle.ConstantTimeCompare([]byte(tok), []byte(sb.rec.Token)) != 1 && !(tok == "" && len(r.URL.RawQuery) <= maxSignedQuery && signedFor(r, sb.rec.Token) && !signatureExpired(r)) {
		writeError(w, http.StatusUnauthorized, "this sandbox's access token is missing or wrong: connect to it with the API key that created it")
		return
	}
	s.serveAgent(w, r, sb)
}

// serveSigned serves a file URL the SDK signed (downloadUrl, uploadUrl)
// with no header: the sandbox is the one whose token the signature was
// made with.
func (s *Server) serveSigned(w http.ResponseWriter, r *http.Request) {
	if len(r.URL.RawQuery) > maxSignedQuery {
		writeError(w, http.StatusRequestURITooLong, "a file URL's query is at most 8 KiB")
		return
	}
	if signatureExpired(r) {
		writeError(w, http.StatusUnauthorized, "signature is already expired") // envd's words, which clients compare
		return
	}
	s.mu.Lock()
	candidates := make([]*sandbox, 0, len(s.sandboxes))
	for _, sb := range s.sandboxes {
		candidates = append(candidates, sb)
	}
	s.mu.Unlock()
	q := r.URL.Query()
	var found *sandbox
	for _, sb := range candidates {
		if signedQuery(r, q, sb.rec.Token) {
			found = sb
		}
	}
	if found == nil || s.sandbox(found.rec.ID) == nil {
		writeError(w, http.StatusUnauthorized, "the file URL's signature is not valid for this path and operation, or its sandbox is gone")
		return
	}
	if !s.wake(r.Context(), found) {
		writeError(w, http.StatusBadGateway, "the file's sandbox is paused: its client resumes it by connecting to it")
		return
	}
	s.serveAgent(w, r, found)
}

// maxSignedQuery bounds the query of a signed file URL: a path, a user,
// a signature and an expiration.
const maxSignedQuery = 8 << 10

// serveAgent serves a call to sandbox sb's agent, its caller checked.
func (s *Server) serveAgent(w http.ResponseWriter, r *http.Request, sb *sandbox) {
	id := sb.rec.ID
	if !s.wake(r.Context(), sb) {
		// As E2B's proxy: a paused sandbox's agent is not there until
		// the client connects to it (Sandbox.connect resumes it), or,
		// made to resume on traffic, this call resumed it.
		writeError(w, http.StatusBadGateway, "sandbox "+id+" is paused: connect to it (Sandbox.connect) to resume it")
		return
	}
	r = r.WithContext(principal.With(context.WithValue(r.Context(), sandboxKey{}, sb), state.Requester{Via: principal.ViaE2B, Key: sb.rec.Key}))
	switch r.Header.Get("E2b-Sandbox-Port") {
	case envdPort, "":
		s.envd.ServeHTTP(w, r)
	case interpreterPort:
		s.interpreter.ServeHTTP(w, r)
	default:
		writeError(w, http.StatusBadGateway, "port "+r.Header.Get("E2b-Sandbox-Port")+" of a sandbox is not served here: only its agents' (49983 and 49999); use sandboxctl port-forward for a server of its own")
	}
}

// signedFor says whether r's signature is the one E2B's SDKs make for
// its file URL with a sandbox's token: "v1_" and the unpadded base64 of
// the SHA-256 of path:operation:user:token, and :expiration when it has
// one, operation read for a download (GET) and write for an upload
// (POST). It does not check the expiration (signatureExpired does).
func signedFor(r *http.Request, token string) bool {
	return signedQuery(r, r.URL.Query(), token)
}

// signedQuery is signedFor with r's query parsed: a signature opens the
// files endpoint of the sandbox's agent, nothing else of it.
func signedQuery(r *http.Request, q url.Values, token string) bool {
	op := map[string]string{http.MethodGet: "read", http.MethodPost: "write"}[r.Method]
	port := r.Header.Get("E2b-Sandbox-Port")
	if op == "" || r.URL.Path != "/files" || (port != "" && port != envdPort) || !q.Has("signature") {
		return false
	}
	raw := q.Get("path") + ":" + op + ":" + q.Get("username") + ":" + token
	if exp := q.Get("signature_expiration"); exp != "" {
		raw += ":" + exp
	}
	sum := sha256.Sum256([]byte(raw))
	want := "v1_" + base64.RawStdEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(q.Get("signature")), []byte(want)) == 1
}

// signatureExpired says whether r's signature has an expiration (Unix
// seconds) that has passed, or one that is not a number.
func signatureExpired(r *http.Request) bool {
	exp := r.URL.Query().Get("signature_expiration")
	if exp == "" {
		return false
	}
	at, err := strconv.ParseInt(exp, 10, 64)
	return err != nil || time.Now().Unix() > at
}

type sandboxKey struct{}

// sandboxOf is the sandbox a request to its agent was checked for.
func sandboxOf(ctx context.Context) *sandbox {
	sb, _ := ctx.Value(sandboxKey{}).(*sandbox)
	return sb
}

// sandbox returns a sandbox whose session lives, forgetting one whose
// session ended (expired, deleted with sandboxctl).
func (s *Server) sandbox(id string) *sandbox {
	s.mu.Lock()
	sb := s.sandboxes[id]
	s.mu.Unlock()
	if sb == nil {
		return nil
	}
	if rec, aerr := s.d.Sessions.Get(id); aerr != nil || rec.State == state.SessionLost {
		s.forget(id)
		return nil
	}
	return sb
}

// forget drops a sandbox whose session is gone, ending what ran for it.
func (s *Server) forget(id string) {
	s.mu.Lock()
	sb := s.sandboxes[id]
	delete(s.sandboxes, id)
	s.mu.Unlock()
	if sb != nil {
		sb.mu.Lock()
		if sb.timer != nil {
			sb.timer.Stop()
		}
		sb.mu.Unlock()
		close(sb.gone)
		sb.procs.killAll()
		sb.watch.stopAll()
	}
	if err := s.store.DeleteE2BSandbox(id); err != nil {
		s.log.Error("forgetting an E2B sandbox failed", "sandbox", id, "error", err)
	}
}

// randomToken is a sandbox's access token.
func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// errorBody is the control API's error, as the SDKs read it.
type errorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody{Code: status, Message: msg})
}

// writeAPIError answers a daemon error with its HTTP status.
func writeAPIError(w http.ResponseWriter, err error) {
	e := wire.ErrorOf(err)
	writeError(w, wire.Status(e), e.Message)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// e2bHome is E2B's home directory, a link to /workspace in sandboxd's
// images.
const e2bHome = "/home/user"

// workspacePath turns a path as E2B clients write it into one relative to
// the workspace: the sandbox's home directory (/home/user in E2B's
// templates) is the workspace here, by either name, and relative paths
// start there. Paths elsewhere are refused: the workspace is what a
// session has of its own.
func workspacePath(p string) (string, error) {
	for _, home := range []string{"/home/user", "/workspace"} {
		if p == home || strings.HasPrefix(p, home+"/") {
			return strings.TrimPrefix(strings.TrimPrefix(p, home), "/"), nil
		}
	}
	if p == sessions.TmpDir || strings.HasPrefix(p, sessions.TmpDir+"/") {
		return p, nil // the sessions' files reach /tmp by its name
	}
	if strings.HasPrefix(p, "/") {
		return "", api.Errorf(api.CodeInvalidRequest, "%s is outside the sandbox's home and /tmp: files are reached in /home/user (the session's /workspace) and /tmp, and below", p)
	}
	return p, nil
}

// clientPath is a workspace path as the client wrote its root; a path
// under /tmp is its own.
func clientPath(root, rel string) string {
	switch {
	case path.IsAbs(rel):
		return rel
	case rel == "" || rel == ".":
		return root
	}
	return strings.TrimSuffix(root, "/") + "/" + rel
}

// rootOf is the home directory as a client path names it.
func rootOf(p string) string {
	if p == "/workspace" || strings.HasPrefix(p, "/workspace/") {
		return "/workspace"
	}
	return "/home/user"
}
