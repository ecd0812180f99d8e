package e2b

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/e2b/envd"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/sessions"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/internal/wire"
)

// seconds is n seconds, as the control API gives timeouts; past what a
// Duration holds, the longest (or shortest) one, which every bound refuses.
func seconds(n int64) time.Duration {
	const most = math.MaxInt64 / int64(time.Second)
	return time.Duration(max(min(n, most), -most)) * time.Second
}

// defaultTimeout is a sandbox's life when its creator names none, as
// E2B's.
const defaultTimeout = 300 * time.Second

// control is the control API for the API key whose fingerprint is key.
func (s *Server) control(key string) http.Handler {
	c := &controller{s: s, key: key}
	mux := http.NewServeMux()
	for _, p := range []string{"POST /v2/sandboxes", "POST /sandboxes"} {
		mux.HandleFunc(p, c.create)
	}
	for _, p := range []string{"GET /v2/sandboxes", "GET /sandboxes"} {
		mux.HandleFunc(p, c.list)
	}
	mux.HandleFunc("GET /sandboxes/{id}", c.own(c.get))
	mux.HandleFunc("DELETE /sandboxes/{id}", c.own(c.kill))
	mux.HandleFunc("POST /sandboxes/{id}/timeout", c.own(c.timeout))
	mux.HandleFunc("POST /sandboxes/{id}/refreshes", c.own(c.timeout))
	mux.HandleFunc("POST /sandboxes/{id}/pause", c.own(c.pause))
	for _, p := range []string{"POST /v2/sandboxes/{id}/connect", "POST /sandboxes/{id}/connect", "POST /sandboxes/{id}/resume"} {
		mux.HandleFunc(p, c.own(c.connect))
	}
	mux.HandleFunc("GET /sandboxes/{id}/metrics", c.own(c.metrics))
	mux.HandleFunc("PUT /sandboxes/{id}/network", c.own(c.network))
	mux.HandleFunc("POST /sandboxes/{id}/fork", c.own(c.fork))
	mux.HandleFunc("POST /sandboxes/{id}/snapshots", c.own(c.createSnapshot))
	mux.HandleFunc("GET /snapshots", c.listSnapshots)
	mux.HandleFunc("DELETE /templates/{id}", c.deleteTemplate)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, r.Method+" "+r.URL.Path+" is not served by sandboxd's E2B API: it serves sandboxes (create, list, get, kill, timeout, pause, connect, metrics, network, fork) and their snapshots, not templates, volumes or secrets (see docs/e2b.md)")
	})
	return mux
}

type controller struct {
	s   *Server
	key string
}

// own serves a call on one of the key's sandboxes; another key's is as
// unknown as one that never was.
func (c *controller) own(serve func(http.ResponseWriter, *http.Request, *sandbox)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		sb := c.s.sandbox(id)
		if sb == nil || sb.rec.Key != c.key {
			writeError(w, http.StatusNotFound, "sandbox "+id+" not found")
			return
		}
		serve(w, r, sb)
	}
}

// newSandbox is the body of a create call: what sandboxd uses of it.
type newSandbox struct {
	TemplateID          string            `json:"templateID"`
	Timeout             *int64            `json:"timeout"` // seconds
	Metadata            map[string]string `json:"metadata"`
	EnvVars             map[string]string `json:"envVars"`
	AllowInternetAccess *bool             `json:"allow_internet_access"`
	Network             networkBody       `json:"network"`
	lifecycleBody
}

// sandboxInfo is a sandbox as the control API describes it.
type sandboxInfo struct {
	SandboxID          string            `json:"sandboxID"`
	TemplateID         string            `json:"templateID"`
	Alias              string            `json:"alias,omitempty"`
	ClientID           string            `json:"clientID"`
	EnvdVersion        string            `json:"envdVersion"`
	EnvdAccessToken    string            `json:"envdAccessToken,omitempty"`
	TrafficAccessToken string            `json:"trafficAccessToken,omitempty"`
	Domain             *string           `json:"domain"`
	StartedAt          time.Time         `json:"startedAt"`
	EndAt              time.Time         `json:"endAt"`
	CPUCount           int               `json:"cpuCount"`
	MemoryMB           int64             `json:"memoryMB"`
	Metadata           map[string]string `json:"metadata"`
	State              string            `json:"state"`
	Network            *networkInfo      `json:"network,omitempty"`
	Lifecycle          lifecycleInfo     `json:"lifecycle"`
}

// networkInfo is a sandbox's network as E2B's getInfo shows it: its
// proxy without the password.
type networkInfo struct {
	AllowOut    []string   `json:"allowOut,omitempty"`
	DenyOut     []string   `json:"denyOut,omitempty"`
	EgressProxy *api.Proxy `json:"egressProxy,omitempty"`
}

// decodeBody reads a control call's JSON body; fields sandboxd does not
// use are ignored, as the SDKs send many.
func decodeBody(r *http.Request, v any) error {
	err := json.NewDecoder(r.Body).Decode(v)
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

func (c *controller) create(w http.ResponseWriter, r *http.Request) {
	var req newSandbox
	if err := decodeBody(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "malformed JSON: "+err.Error())
		return
	}
	tmpl, ok := c.s.cfg.Templates[req.TemplateID]
	fromSnapshot := ""
	if !ok {
		if sn := c.ownSnapshot(req.TemplateID); sn != nil {
			// A snapshot of the key's: its files, in a sandbox of its language.
			tmpl, ok = c.s.cfg.Templates[sn.Language]
			fromSnapshot = sn.ID
		}
	}
	if !ok {
		writeError(w, http.StatusNotFound, "template '"+req.TemplateID+"' not found: the templates here are "+strings.Join(slices.Sorted(maps.Keys(c.s.cfg.Templates)), ", ")+" (template blocks in the e2b block of sandboxd.hcl), and this key's snapshots")
		return
	}
	ttl := defaultTimeout
	if req.Timeout != nil {
		ttl = seconds(*req.Timeout)
	}
	env := maps.Clone(tmpl.Env)
	if env == nil {
		env = map[string]string{}
	}
	for _, k := range []string{"HOME", "PWD"} {
		// A link to the workspace in sandboxd's images; the shell of a
		// bash context started there takes PWD as the path it is at.
		if _, set := env[k]; !set {
			env[k] = e2bHome
		}
	}
	maps.Copy(env, req.EnvVars)
	life, err := req.lifecycle(ttl)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	sessionTTL := ttl
	if life.Pause {
		if ttl < time.Second || ttl > c.s.d.Sessions.MaxTTL() {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("timeout %s: from 1s to max_ttl %s", ttl, c.s.d.Sessions.MaxTTL()))
			return
		}
		sessionTTL = c.s.d.Sessions.MaxTTL() // paused at ttl, and kept
	}
	sreq := api.SessionRequest{Language: tmpl.Language, Env: env, TTL: api.Duration(sessionTTL), IdleTimeout: api.Duration(sessionTTL), FromSnapshot: fromSnapshot}
	if tmpl.Limits != nil {
		l := wire.APILimits(*tmpl.Limits)
		sreq.Limits = &l
	}
	req.Network.AllowInternetAccess = req.AllowInternetAccess
	network, err := c.e2bNetwork(tmpl.Language, req.Network)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	sreq.Network = network
	create := wire.SessionRequest(sreq)
	create.ClientStartsDesktop = true // E2B Desktop's SDK starts the screen, at the size it asks for
	sess, aerr := c.s.d.Sessions.Create(r.Context(), create)
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	rec, sb, err := c.register(state.E2BSandbox{ID: sess.ID, Template: req.TemplateID, Metadata: req.Metadata, StartedAt: sess.CreatedAt, Lifecycle: life})
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if len(tmpl.Start) > 0 {
		tag := startTag
		start := &envd.StartRequest{Process: &envd.ProcessConfig{Cmd: tmpl.Start[0], Args: tmpl.Start[1:]}, Tag: &tag}
		p, sub, err := c.s.spawn(sb, start, time.Time{})
		if err != nil {
			_ = c.s.d.Sessions.Delete(sess.ID)
			c.s.forget(sess.ID)
			writeError(w, http.StatusForbidden, "template "+req.TemplateID+"'s start command did not start: "+err.Error())
			return
		}
		p.unsubscribe(sub)
	}
	c.s.log.Info("sandbox created", "sandbox", rec.ID, "template", rec.Template, "language", tmpl.Language, "key", c.key)
	writeJSON(w, http.StatusCreated, c.info(sb, *sess, true))
}

// register makes rec's session the key's sandbox, with a token of its
// own; on failure the session is deleted.
func (c *controller) register(rec state.E2BSandbox) (state.E2BSandbox, *sandbox, error) {
	rec.Key, rec.Token = c.key, randomToken()
	if err := c.s.store.PutE2BSandbox(rec); err != nil {
		_ = c.s.d.Sessions.Delete(rec.ID)
		return rec, nil, fmt.Errorf("storing the sandbox: %v", err)
	}
	sb := c.s.newSandbox(rec)
	c.s.mu.Lock()
	c.s.sandboxes[rec.ID] = sb
	c.s.mu.Unlock()
	return rec, sb, nil
}

// fork starts count sandboxes (1 by default) from the sandbox's files, as
// a sandboxd fork does: its workspace as it is now, its template,
// metadata and limits; each with a token of its own. Processes and
// memory are not carried over.
func (c *controller) fork(w http.ResponseWriter, r *http.Request, sb *sandbox) {
	var req struct {
		Timeout *int64 `json:"timeout"`
		Count   int    `json:"count"`
	}
	if err := decodeBody(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "malformed JSON: "+err.Error())
		return
	}
	ttl := time.Duration(0)
	if req.Timeout != nil {
		ttl = seconds(*req.Timeout)
	}
	// A fork of a sandbox that pauses at its timeout pauses at its own.
	life, sessionTTL := sb.lifecycle(), ttl
	if life.Pause {
		life.Timeout = cmp.Or(ttl, life.Timeout)
		if life.Timeout < time.Second || life.Timeout > c.s.d.Sessions.MaxTTL() {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("timeout %s: from 1s to max_ttl %s", life.Timeout, c.s.d.Sessions.MaxTTL()))
			return
		}
		sessionTTL = c.s.d.Sessions.MaxTTL()
	}
	var forked *sessions.Forked
	aerr := c.s.keepPaused(r.Context(), sb, func() (aerr error) {
		forked, aerr = c.s.d.Sessions.Fork(r.Context(), sb.rec.ID, sessions.ForkRequest{Count: req.Count, TTL: sessionTTL})
		return aerr
	})
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	// The forks are made: the snapshot they came from is no key's to
	// list or delete, and would take the host's room for snapshots.
	if err := c.s.d.Snapshots.Delete(forked.Snapshot.ID); err != nil {
		c.s.log.Warn("removing a fork's snapshot failed", "snapshot", forked.Snapshot.ID, "error", err)
	}
	type result struct {
		Sandbox *sandboxInfo `json:"sandbox,omitempty"`
		Error   *errorBody   `json:"error,omitempty"`
	}
	out := []result{}
	for _, sess := range forked.Sessions {
		if life.Pause {
			life.EndsAt = time.Now().UTC().Add(life.Timeout)
		}
		_, fsb, err := c.register(state.E2BSandbox{ID: sess.ID, Template: sb.rec.Template, Metadata: maps.Clone(sb.rec.Metadata), StartedAt: sess.CreatedAt, Lifecycle: life})
		if err != nil {
			out = append(out, result{Error: &errorBody{Code: http.StatusInternalServerError, Message: err.Error()}})
			continue
		}
		in := c.info(fsb, sess, true)
		out = append(out, result{Sandbox: &in})
	}
	c.s.log.Info("sandbox forked", "sandbox", sb.rec.ID, "into", len(out), "snapshot", forked.Snapshot.ID, "key", c.key)
	writeJSON(w, http.StatusCreated, out)
}

// network replaces what the sandbox may reach, as E2B's updateNetwork
// asks (see e2bNetwork); what the update leaves out is cleared.
func (c *controller) network(w http.ResponseWriter, r *http.Request, sb *sandbox) {
	var req networkBody
	if err := decodeBody(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "malformed JSON: "+err.Error())
		return
	}
	sess, aerr := c.s.d.Sessions.Get(sb.rec.ID)
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	asked, err := c.e2bNetwork(sess.Language, req)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if aerr := c.s.keepPaused(r.Context(), sb, func() error {
		_, aerr := c.s.d.Sessions.SetNetwork(r.Context(), sb.rec.ID, wire.Network(asked))
		return aerr
	}); aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// networkBody is E2B's network, as create (its network, with the body's
// allow_internet_access) and updateNetwork send it.
type networkBody struct {
	AllowOut            []string        `json:"allowOut"`
	DenyOut             []string        `json:"denyOut"`
	AllowInternetAccess *bool           `json:"allow_internet_access"`
	EgressProxy         *api.Proxy      `json:"egressProxy"`
	Rules               json.RawMessage `json:"rules"`
}

// templateAllow is the allow-list of language's sandboxes in sandboxd.hcl.
func (c *controller) templateAllow(language string) []string {
	if l, aerr := c.s.d.Languages.Resolve(language); aerr == nil {
		return l.Egress().Strings()
	}
	return nil
}

// e2bNetwork maps E2B's network onto a session's of language, within its
// template's network.allow in sandboxd.hcl. allow_internet_access false,
// or a denyOut of all traffic, leaves allowOut alone; otherwise denyOut is
// a deny list that allowOut excepts, as on E2B (allowOut wins); allowOut
// alone narrows the allow-list to it; egressProxy is the SOCKS5 proxy.
// nil: all the template allows, directly.
func (c *controller) e2bNetwork(language string, n networkBody) (*api.Network, error) {
	if len(n.Rules) > 0 && string(n.Rules) != "null" && string(n.Rules) != "{}" {
		return nil, errors.New("network rules (request transforms) are not served by sandboxd: a secret block in sandboxd.hcl puts a credential on the requests to its host (see docs/e2b.md)")
	}
	template := c.templateAllow(language)
	allTraffic := func(e string) bool { return e == "0.0.0.0/0" || e == "::/0" }
	var out *api.Network
	switch {
	case n.AllowInternetAccess != nil && !*n.AllowInternetAccess || slices.ContainsFunc(n.DenyOut, allTraffic):
		out = &api.Network{Allow: append([]string{}, n.AllowOut...)}
	case len(n.DenyOut) > 0:
		out = &api.Network{Allow: template, Deny: n.DenyOut, Except: n.AllowOut}
	case len(n.AllowOut) > 0:
		out = &api.Network{Allow: n.AllowOut}
	case n.EgressProxy != nil:
		out = &api.Network{Allow: template}
	}
	if out != nil {
		out.Proxy = n.EgressProxy
	}
	return out, nil
}

// startTag is the tag of a template's start command among a sandbox's
// processes.
const startTag = "start"

// info describes a sandbox, its session sess; withToken adds what its
// clients reach it with. A session sandboxd froze or hibernated when idle
// is running to E2B's clients unless hibernated: any call thaws a frozen
// one in milliseconds.
func (c *controller) info(sb *sandbox, sess state.Session, withToken bool) sandboxInfo {
	c.s.trySettle(sb)
	rec := sb.rec
	st := "running"
	if sb.paused.Load() || sess.State == state.SessionHibernated {
		st = "paused"
	}
	end := sess.ExpiresAt
	if sb.life.Pause && !sb.paused.Load() {
		end = sb.endsAt()
	}
	in := sandboxInfo{
		SandboxID: rec.ID, TemplateID: rec.Template, Alias: rec.Template, ClientID: "sandboxd", EnvdVersion: EnvdVersion,
		StartedAt: rec.StartedAt, EndAt: end, CPUCount: max(int(sess.Limits.CPUs+0.999), 1),
		MemoryMB: int64(sess.Limits.Memory) >> 20, Metadata: rec.Metadata, State: st, Lifecycle: lifecycleOf(sb.lifecycle()),
	}
	if in.Metadata == nil {
		in.Metadata = map[string]string{}
	}
	if n := sess.Network; len(n.Deny) > 0 || n.Proxy != nil || !slices.Equal(n.Allow, c.templateAllow(sess.Language)) {
		info := &networkInfo{AllowOut: n.Except, DenyOut: n.Deny}
		if len(n.Deny) == 0 && !slices.Equal(n.Allow, c.templateAllow(sess.Language)) {
			info.AllowOut, info.DenyOut = n.Allow, []string{"0.0.0.0/0"}
		}
		if p := n.Proxy; p != nil {
			info.EgressProxy = &api.Proxy{Address: p.Address, Username: p.Username}
		}
		in.Network = info
	}
	if withToken {
		in.EnvdAccessToken, in.TrafficAccessToken = rec.Token, rec.Token
	}
	return in
}

// listQuery is what a list call asks for, as E2B's API takes it.
type listQuery struct {
	states       map[string]bool
	metadata     url.Values
	template     string
	startedAfter time.Time
	descending   bool // newest first, unless asked for "asc", as E2B's service lists
	limit        int
	after        *cursor // nextToken: where the page starts
}

// cursor is a place in a list's order: a sandbox's start and id. A page
// starts at the first sandbox at or after it, whether or not that one
// is still there.
type cursor struct {
	startedAt time.Time
	id        string
}

func (c cursor) String() string { return strconv.FormatInt(c.startedAt.UnixNano(), 10) + "." + c.id }

func parseCursor(s string) (*cursor, error) {
	at, id, ok := strings.Cut(s, ".")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || id == "" {
		return nil, fmt.Errorf("nextToken %q is not one a list gave", s)
	}
	return &cursor{time.Unix(0, n), id}, nil
}

// before says whether a comes before b in l's order.
func (l listQuery) before(a, b cursor) bool {
	if !a.startedAt.Equal(b.startedAt) {
		return a.startedAt.Before(b.startedAt) != l.descending
	}
	return a.id < b.id
}

// maxListLimit is the most sandboxes a page holds, as E2B's API bounds it.
const maxListLimit = 100

// parseListQuery reads a list call's query. metadata is a query string
// whose keys and values the SDKs also encode each: decoded three times,
// as E2B's service does, a value with "/", a space or ":" matches.
func parseListQuery(q url.Values) (listQuery, error) {
	l := listQuery{states: map[string]bool{}, template: q.Get("template"), descending: q.Get("order") != "asc", limit: maxListLimit}
	if v := q.Get("nextToken"); v != "" {
		var err error
		if l.after, err = parseCursor(v); err != nil {
			return l, err
		}
	}
	for _, v := range q["state"] {
		for _, st := range strings.Split(v, ",") {
			l.states[st] = true
		}
	}
	pairs, err := url.ParseQuery(q.Get("metadata"))
	if err != nil {
		return l, fmt.Errorf("metadata is a query string of key=value pairs: %v", err)
	}
	l.metadata = url.Values{}
	for k, vs := range pairs {
		key, err := url.PathUnescape(k)
		if err != nil {
			return l, fmt.Errorf("metadata key %q: %v", k, err)
		}
		for _, v := range vs {
			value, err := url.PathUnescape(v)
			if err != nil {
				return l, fmt.Errorf("metadata value %q: %v", v, err)
			}
			l.metadata.Add(key, value)
		}
	}
	if v := q.Get("startedAfter"); v != "" {
		if l.startedAfter, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return l, fmt.Errorf("startedAfter is a time as RFC 3339 writes it: %v", err)
		}
	}
	if v := q.Get("limit"); v != "" {
		if l.limit, err = strconv.Atoi(v); err != nil || l.limit < 1 || l.limit > maxListLimit {
			return l, fmt.Errorf("limit is a number from 1 to %d, not %q", maxListLimit, v)
		}
	}
	return l, nil
}

// wants says whether in is one of the sandboxes l asks for.
func (l listQuery) wants(in sandboxInfo, metadata map[string]string) bool {
	return (len(l.states) == 0 || l.states[in.State]) && matches(metadata, l.metadata) &&
		(l.template == "" || l.template == in.TemplateID || l.template == in.Alias) &&
		(l.startedAfter.IsZero() || !in.StartedAt.Before(l.startedAfter))
}

func (c *controller) list(w http.ResponseWriter, r *http.Request) {
	l, err := parseListQuery(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !strings.HasPrefix(r.URL.Path, "/v2/") && r.URL.Query().Get("limit") == "" {
		l.limit = math.MaxInt // the first API's list has no pages
	}
	c.s.mu.Lock()
	var recs []state.E2BSandbox
	for _, sb := range c.s.sandboxes {
		if sb.rec.Key == c.key {
			recs = append(recs, sb.rec)
		}
	}
	c.s.mu.Unlock()
	at := func(rec state.E2BSandbox) cursor { return cursor{rec.StartedAt, rec.ID} }
	sort.Slice(recs, func(i, j int) bool { return l.before(at(recs[i]), at(recs[j])) })
	out := []sandboxInfo{}
	for _, rec := range recs {
		if l.after != nil && l.before(at(rec), *l.after) {
			continue
		}
		sb := c.s.sandbox(rec.ID)
		if sb == nil {
			continue
		}
		sess, aerr := c.s.d.Sessions.Get(rec.ID)
		if aerr != nil {
			continue
		}
		in := c.info(sb, *sess, false)
		if !l.wants(in, rec.Metadata) {
			continue
		}
		if len(out) == l.limit {
			w.Header().Set("X-Next-Token", at(rec).String())
			break
		}
		out = append(out, in)
	}
	writeJSON(w, http.StatusOK, out)
}

// matches tells whether metadata has every key and value want asks for.
func matches(metadata map[string]string, want url.Values) bool {
	for k, vs := range want {
		if v, ok := metadata[k]; !ok || !slices.Contains(vs, v) {
			return false
		}
	}
	return true
}

// metric is one sample of a sandbox's use, as E2B's API gives it.
type metric struct {
	Timestamp     time.Time `json:"timestamp"`
	TimestampUnix int64     `json:"timestampUnix"`
	CPUCount      float64   `json:"cpuCount"`
	CPUUsedPct    float64   `json:"cpuUsedPct"`
	MemUsed       int64     `json:"memUsed"`
	MemTotal      int64     `json:"memTotal"`
	MemCache      int64     `json:"memCache"`
	DiskUsed      int64     `json:"diskUsed"`
	DiskTotal     int64     `json:"diskTotal"`
}

// metrics is the session's samples (the last minutes, one every few
// seconds, and one taken now) between start and end (Unix seconds, both
// optional), oldest first.
func (c *controller) metrics(w http.ResponseWriter, r *http.Request, sb *sandbox) {
	bound := func(name string) (time.Time, bool) {
		v := r.URL.Query().Get(name)
		if v == "" {
			return time.Time{}, true
		}
		n, err := strconv.ParseInt(v, 10, 64)
		return time.Unix(n, 0), err == nil
	}
	start, ok1 := bound("start")
	end, ok2 := bound("end")
	if !ok1 || !ok2 {
		writeError(w, http.StatusBadRequest, "start and end are Unix times in seconds")
		return
	}
	u, err := c.s.d.Sessions.Metrics(r.Context(), sb.rec.ID)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	samples := u.Series
	if u.Now != nil {
		samples = append(samples, *u.Now)
	}
	out := []metric{}
	for _, s := range samples {
		if !start.IsZero() && s.At.Before(start) || !end.IsZero() && s.At.After(end) {
			continue
		}
		out = append(out, metric{Timestamp: s.At, TimestampUnix: s.At.Unix(), CPUCount: u.Limits.CPUs, CPUUsedPct: s.CPUPercent / max(u.Limits.CPUs, 1e-9),
			MemUsed: s.MemoryBytes, MemTotal: u.Limits.Memory, DiskUsed: s.WorkspaceBytes + s.TmpBytes, DiskTotal: 2 * u.Limits.Disk})
	}
	writeJSON(w, http.StatusOK, out)
}

func (c *controller) get(w http.ResponseWriter, r *http.Request, sb *sandbox) {
	sess, aerr := c.s.d.Sessions.Get(sb.rec.ID)
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	writeJSON(w, http.StatusOK, c.info(sb, *sess, true))
}

func (c *controller) kill(w http.ResponseWriter, r *http.Request, sb *sandbox) {
	aerr := c.s.d.Sessions.Delete(sb.rec.ID)
	c.s.forget(sb.rec.ID)
	if aerr != nil && !errdefs.Is(aerr, errdefs.NotFound) {
		writeAPIError(w, aerr)
		return
	}
	c.s.log.Info("sandbox killed", "sandbox", sb.rec.ID, "key", c.key)
	w.WriteHeader(http.StatusNoContent)
}

// timeout sets the sandbox to end that many seconds from now.
func (c *controller) timeout(w http.ResponseWriter, r *http.Request, sb *sandbox) {
	var req struct {
		Timeout  *int64 `json:"timeout"`
		Duration *int64 `json:"duration"` // the older refreshes call's
	}
	if err := decodeBody(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "malformed JSON: "+err.Error())
		return
	}
	secs := req.Timeout
	if secs == nil {
		secs = req.Duration
	}
	if secs == nil {
		writeError(w, http.StatusBadRequest, "timeout (seconds) is missing")
		return
	}
	d := seconds(*secs)
	var aerr error
	if sb.life.Pause {
		if err := sb.takeTurn(r.Context()); err != nil {
			return // the client went
		}
		defer sb.giveTurn()
		switch {
		case d < time.Second || d > c.s.d.Sessions.MaxTTL():
			aerr = errdefs.Errorf(errdefs.Invalid, "a sandbox's timeout must be from 1s to max_ttl %s, not %s", c.s.d.Sessions.MaxTTL(), d)
		case sb.paused.Load():
			aerr = errdefs.Errorf(errdefs.Conflict, "sandbox %s is paused (at its timeout, or by its client): connect to it, with a timeout, to resume it", sb.rec.ID)
		default:
			aerr = c.s.setTimeout(sb, d)
		}
	} else {
		_, aerr = c.s.d.Sessions.Expire(sb.rec.ID, d)
	}
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// pause pauses the sandbox (see pauseSandbox) until its client connects.
func (c *controller) pause(w http.ResponseWriter, r *http.Request, sb *sandbox) {
	var req struct {
		Memory *bool `json:"memory"`
	}
	if err := decodeBody(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "malformed JSON: "+err.Error())
		return
	}
	if err := sb.takeTurn(r.Context()); err != nil {
		return // the client went
	}
	defer sb.giveTurn()
	if sb.paused.Load() {
		writeError(w, http.StatusConflict, "sandbox "+sb.rec.ID+" is paused already")
		return
	}
	if aerr := c.s.pauseSandbox(r.Context(), sb, req.Memory != nil && !*req.Memory); aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// connect resumes a paused sandbox and, given a timeout, sets its end.
func (c *controller) connect(w http.ResponseWriter, r *http.Request, sb *sandbox) {
	var req struct {
		Timeout *int64 `json:"timeout"`
	}
	if err := decodeBody(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "malformed JSON: "+err.Error())
		return
	}
	before, aerr := c.s.d.Sessions.Get(sb.rec.ID)
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	var life time.Duration
	if req.Timeout != nil {
		if life = seconds(*req.Timeout); life < time.Second || life > c.s.d.Sessions.MaxTTL() {
			writeAPIError(w, errdefs.Errorf(errdefs.Invalid, "a sandbox's timeout must be from 1s to max_ttl %s, not %s", c.s.d.Sessions.MaxTTL(), life))
			return
		}
	}
	if err := sb.takeTurn(r.Context()); err != nil {
		return // the client went
	}
	defer sb.giveTurn()
	wasPaused := sb.paused.Load()
	sess, aerr := c.s.resume(r.Context(), sb, life)
	if aerr == nil && !sb.life.Pause && life > 0 && time.Until(sess.ExpiresAt) < life {
		sess, aerr = c.s.d.Sessions.Expire(sb.rec.ID, life)
	}
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	status := http.StatusOK
	if before.State == state.SessionHibernated || wasPaused {
		status = http.StatusCreated
	}
	writeJSON(w, status, c.info(sb, *sess, true))
}
