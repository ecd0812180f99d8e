package e2b

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/wire"
)

// The Code Interpreter's endpoints. An E2B code context is a context of
// the session (a long-lived interpreter of its language: see
// api.ExecRequest.Context); a cell's output streams as lines of JSON, its
// display data comes as results, and an exception as the error.

// defaultContext is the context a cell of the sandbox's own language runs
// in when it names none; another language's is defaultContext-LANGUAGE.
const defaultContext = "default"

// maxContexts bounds the contexts E2B clients make in one sandbox.
const maxContexts = 32

// maxPartialLine is how much of a line without its end is held before it
// goes out anyway.
const maxPartialLine = 64 << 10

// cells are the code contexts of one sandbox.
type cells struct {
	mu       sync.Mutex
	contexts map[string]*codeContext // by id
	made     int                     // contexts made, for their order
}

func newCells() *cells { return &cells{contexts: map[string]*codeContext{}} }

// codeContext is a context as the Code Interpreter describes it.
type codeContext struct {
	ID       string `json:"id"`
	Language string `json:"language"` // E2B's name for it
	Cwd      string `json:"cwd"`
	language string // sandboxd's
	order    int
	runs     int
}

// add makes a context; c.mu is held.
func (c *cells) add(cc *codeContext) {
	c.made++
	cc.order = c.made
	c.contexts[cc.ID] = cc
}

// defaults adds the default context of each language, as E2B's template
// starts one of each (their interpreters start on first use here).
func (c *cells) defaults(languages []cellLanguage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, l := range languages {
		if id := l.defaultContext(i == 0); c.contexts[id] == nil {
			c.add(&codeContext{ID: id, Language: l.e2b, Cwd: e2bHome, language: l.name})
		}
	}
}

// cellLanguage is a language a sandbox's cells may be in: sandboxd's
// name for it (its block's) and E2B's (its plugin's language, as the
// Code Interpreter names it).
type cellLanguage struct{ name, e2b string }

// defaultContext is the context of l's cells that name none, in a sandbox
// of l (own) or of another language.
func (l cellLanguage) defaultContext(own bool) string {
	if own {
		return defaultContext
	}
	return defaultContext + "-" + l.e2b
}

// count notes one more execution in a context; it returns the number.
func (c *cells) count(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc := c.contexts[id]; cc != nil {
		cc.runs++
		return cc.runs
	}
	return 0
}

// codeLanguages maps the languages the Code Interpreter names to
// sandboxd's; another name is taken as sandboxd's own.
var codeLanguages = map[string]string{
	"python": "python", "js": "node", "javascript": "node", "node": "node",
	"ts": "typescript", "typescript": "typescript", "bash": "bash", "r": "r", "java": "java",
}

// e2bLanguage is E2B's name for a language sandboxd's plugins call l.
func e2bLanguage(l string) string {
	if l == "node" {
		return "javascript"
	}
	return l
}

func (s *Server) interpreterHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /execute", s.execute)
	mux.HandleFunc("POST /contexts", s.createContext)
	mux.HandleFunc("GET /contexts", s.listContexts)
	mux.HandleFunc("DELETE /contexts/{id}", s.removeContext)
	mux.HandleFunc("POST /contexts/{id}/restart", s.restartContext)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, "OK") })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, r.Method+" "+r.URL.Path+" is not part of the Code Interpreter's API served here")
	})
	return mux
}

// sandboxLanguages are the languages of a sandbox's cells: its own, then
// those its language's block lists in contexts. Their default contexts
// are listed from the start.
func (s *Server) sandboxLanguages(sb *sandbox) ([]cellLanguage, error) {
	sess, aerr := s.d.Sessions.Get(sb.rec.ID)
	if aerr != nil {
		return nil, aerr
	}
	all := []cellLanguage{{sess.Language, e2bLanguage(sess.Language)}}
	if own, aerr := s.d.Languages.Resolve(sess.Language); aerr == nil {
		all = all[:0]
		for _, name := range own.ContextLanguages() {
			l, _ := s.d.Languages.Resolve(name)
			all = append(all, cellLanguage{name, e2bLanguage(l.Info.Name)})
		}
	}
	sb.cells.defaults(all)
	return all, nil
}

// cellLanguage is the language a client asks a cell or context for (""
// is the sandbox's own), which the sandbox must run, and whether it is
// the sandbox's own.
func (s *Server) cellLanguage(sb *sandbox, asked string) (cellLanguage, bool, error) {
	all, aerr := s.sandboxLanguages(sb)
	if aerr != nil {
		return cellLanguage{}, false, aerr
	}
	if asked == "" {
		return all[0], true, nil
	}
	e2b := e2bLanguage(cmpOr(codeLanguages[strings.ToLower(asked)], asked))
	names := make([]string, len(all))
	for i, l := range all {
		if l.e2b == e2b || l.name == asked {
			return l, i == 0, nil
		}
		names[i] = l.e2b
	}
	return cellLanguage{}, false, api.Errorf(api.CodeInvalidRequest, "sandbox %s (template %s) runs %s code, not %s: create a sandbox from a template that runs it",
		sb.rec.ID, sb.rec.Template, strings.Join(names, ", "), asked)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (s *Server) createContext(w http.ResponseWriter, r *http.Request) {
	sb := sandboxOf(r.Context())
	var req struct {
		Language string `json:"language"`
		Cwd      string `json:"cwd"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxControlBody)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "malformed JSON: "+err.Error())
		return
	}
	lang, _, aerr := s.cellLanguage(sb, req.Language)
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	cwd := cmpOr(req.Cwd, e2bHome)
	if _, aerr := workspacePath(cwd); aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	sb.cells.mu.Lock()
	defer sb.cells.mu.Unlock()
	if len(sb.cells.contexts) >= maxContexts {
		writeError(w, http.StatusTooManyRequests, "this sandbox has as many code contexts as it may: remove one")
		return
	}
	cc := &codeContext{ID: "ctx-" + randomToken()[:12], Language: lang.e2b, Cwd: cwd, language: lang.name}
	sb.cells.add(cc)
	writeJSON(w, http.StatusOK, cc)
}

func (s *Server) listContexts(w http.ResponseWriter, r *http.Request) {
	sb := sandboxOf(r.Context())
	if _, aerr := s.sandboxLanguages(sb); aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	sb.cells.mu.Lock()
	out := append([]*codeContext{}, slices.Collect(maps.Values(sb.cells.contexts))...) // [] when none, not null
	sb.cells.mu.Unlock()
	slices.SortFunc(out, func(a, b *codeContext) int { return a.order - b.order }) // as they were made
	writeJSON(w, http.StatusOK, out)
}

// context returns a context the client made, writing 404 when there is
// none.
func (c *cells) context(w http.ResponseWriter, id string) *codeContext {
	c.mu.Lock()
	cc := c.contexts[id]
	c.mu.Unlock()
	if cc == nil {
		writeError(w, http.StatusNotFound, "context "+id+" not found")
	}
	return cc
}

func (s *Server) removeContext(w http.ResponseWriter, r *http.Request) {
	sb := sandboxOf(r.Context())
	cc := sb.cells.context(w, r.PathValue("id"))
	if cc == nil {
		return
	}
	if aerr := s.d.Sessions.EndContext(r.Context(), sb.rec.ID, cc.ID); aerr != nil && !errdefs.Is(aerr, errdefs.NotFound) {
		writeAPIError(w, aerr)
		return
	}
	sb.cells.mu.Lock()
	delete(sb.cells.contexts, cc.ID)
	sb.cells.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) restartContext(w http.ResponseWriter, r *http.Request) {
	sb := sandboxOf(r.Context())
	cc := sb.cells.context(w, r.PathValue("id"))
	if cc == nil {
		return
	}
	if _, aerr := s.d.RestartContext(r.Context(), sb.rec.ID, cc.ID, cc.language); aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// execute runs a cell, streaming its output as lines of JSON.
func (s *Server) execute(w http.ResponseWriter, r *http.Request) {
	sb := sandboxOf(r.Context())
	var req struct {
		Code      string            `json:"code"`
		ContextID string            `json:"context_id"`
		Language  string            `json:"language"`
		EnvVars   map[string]string `json:"env_vars"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxControlBody)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "malformed JSON: "+err.Error())
		return
	}
	var name, cwd, lang string
	if req.ContextID != "" {
		cc := sb.cells.context(w, req.ContextID)
		if cc == nil {
			return
		}
		name, cwd, lang = cc.ID, cc.Cwd, cc.language
	} else {
		l, own, aerr := s.cellLanguage(sb, req.Language)
		if aerr != nil {
			writeAPIError(w, aerr)
			return
		}
		name, lang = l.defaultContext(own), l.name
	}
	if cwd != "" {
		cwd, _ = workspacePath(cwd)
	}
	lines := &lineWriter{w: w}
	var mu sync.Mutex // the writer's; finished once the handler answers
	finished := false
	partial := map[string][]byte{}
	// Output goes out a line at a time, as Jupyter's streams do: a print
	// is one message, not its text and its newline.
	emit := func(stream string, whole bool) {
		b := partial[stream]
		n := len(b)
		if !whole {
			n = bytes.LastIndexByte(b, '\n') + 1
		}
		if n > 0 {
			lines.send(map[string]any{"type": stream, "text": string(b[:n])})
			partial[stream] = b[n:]
		}
	}
	exec, aerr := wire.ExecRequest(api.ExecRequest{Code: req.Code, Context: name, Language: lang, Cwd: cwd, Env: req.EnvVars})
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	// The SDKs start a cell's timeoutMs clock at the answer's headers,
	// and give up waiting for them after requestTimeoutMs: a cell that
	// prints nothing for long gets them once it has surely started. One
	// refused at once (a busy context, a policy) still gets its status.
	silent := time.AfterFunc(headersAfter, func() {
		mu.Lock()
		defer mu.Unlock()
		if !finished { // the answer may be an error status, written below
			lines.start()
		}
	})
	defer silent.Stop()
	ran, aerr := s.d.Exec(r.Context(), sb.rec.ID, exec, func(stream string, data []byte) {
		if stream != "stdout" && stream != "stderr" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		partial[stream] = append(partial[stream], data...)
		emit(stream, len(partial[stream]) > maxPartialLine)
	})
	silent.Stop()
	mu.Lock()
	defer mu.Unlock()
	finished = true
	emit("stdout", true)
	emit("stderr", true)
	if aerr != nil {
		s.abortIfGone(sb)
		if !lines.started {
			writeAPIError(w, aerr)
			return
		}
		lines.send(map[string]any{"type": "error", "name": "SandboxdError", "value": wire.ErrorOf(aerr).Message, "traceback": ""})
		return
	}
	res := wire.RunResult(*ran)
	for _, result := range results(res.Display) {
		lines.send(result)
	}
	if res.ExitCode != 0 {
		lines.send(cellError(&res))
	}
	lines.send(map[string]any{"type": "number_of_executions", "execution_count": sb.cells.count(name)})
}

// headersAfter is how long a cell runs silent before its answer's
// headers go out without a line (see execute).
const headersAfter = 250 * time.Millisecond

// lineWriter streams lines of JSON, the status (200) with the first, or
// before it (start).
type lineWriter struct {
	w       http.ResponseWriter
	started bool
}

// start sends the status and headers, once.
func (l *lineWriter) start() {
	if l.started {
		return
	}
	l.started = true
	l.w.Header().Set("Content-Type", "application/x-ndjson")
	l.w.WriteHeader(http.StatusOK)
	l.flush()
}

func (l *lineWriter) send(v any) {
	l.start()
	_ = json.NewEncoder(l.w).Encode(v)
	l.flush()
}

func (l *lineWriter) flush() {
	if f, ok := l.w.(http.Flusher); ok {
		f.Flush()
	}
}

// resultKeys are the Code Interpreter's names of display types.
var resultKeys = map[string]string{
	"text/plain": "text", "text/html": "html", "text/markdown": "markdown", "image/png": "png", "image/jpeg": "jpeg",
	"image/svg+xml": "svg", "application/json": "json", "application/pdf": "pdf", "text/latex": "latex", "application/javascript": "javascript",
	api.DataFrameMIME: "data", api.ChartMIME: "chart",
}

// results groups a cell's display data as the Code Interpreter does: the
// final expression's value (the kernel marks its representations Main)
// is one result, and each figure or display() before it another, its
// text (last) with it. Of a kernel that marks nothing, the final value is
// the run that ends the list with text/plain, each type once, unless
// that text is an image's.
func results(display []api.Display) []map[string]any {
	main := len(display)
	for main > 0 && display[main-1].Main {
		main--
	}
	if n := len(display); main == n && n > 0 && display[n-1].MIME == "text/plain" &&
		!api.IsCaption(display, n-1) && !slices.ContainsFunc(display, func(d api.Display) bool { return d.Main }) {
		seen := map[string]bool{}
		for main > 0 && !seen[display[main-1].MIME] {
			seen[display[main-1].MIME] = true
			main--
		}
	}
	var out []map[string]any
	for i := 0; i < main; {
		j := i + 1
		if display[i].MIME != "text/plain" { // a figure's text goes with it
			for j < main && display[j].MIME != "text/plain" && display[j].MIME != display[i].MIME {
				j++
			}
			if j < main && display[j].MIME == "text/plain" {
				j++
			} else {
				j = i + 1
			}
		}
		out = append(out, result(display[i:j], false))
		i = j
	}
	if main < len(display) {
		out = append(out, result(display[main:], true))
	}
	return out
}

func result(ds []api.Display, isMain bool) map[string]any {
	r := map[string]any{"type": "result", "is_main_result": isMain}
	for _, d := range ds {
		key, ok := resultKeys[d.MIME]
		if !ok {
			key = d.MIME
		}
		var data any = d.Data
		switch {
		case strings.HasSuffix(d.MIME, "json"):
			var v any
			if json.Unmarshal([]byte(d.Data), &v) == nil {
				data = v
			}
		case key == "text":
			data = unquoted(d.Data)
		}
		r[key] = data
	}
	return r
}

// unquoted is a value's text as the Code Interpreter gives it: a string's
// repr without its single quotes ('abc' is abc; "it's" stays).
func unquoted(text string) string {
	if len(text) >= 2 && text[0] == '\'' && text[len(text)-1] == '\'' {
		return text[1 : len(text)-1]
	}
	return text
}

// errorLine is the "Name: message" line an interpreter tells an exception
// by: Python's last, JavaScript's first before the indented frames.
var errorLine = regexp.MustCompile(`^(?:Uncaught )?([A-Za-z_][\w.]*)(?::\s?(.*))?$`)

// cellError is a failed cell's error: its exception's name and message
// from the traceback it printed, read from the end.
func cellError(res *api.RunResult) map[string]any {
	tb := strings.TrimRight(res.Stderr, "\n")
	name, value := "Error", "the cell ended with exit code "+strconv.Itoa(res.ExitCode)
	lines := strings.Split(tb, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if l == "" || l[0] == ' ' || l[0] == '\t' {
			continue
		}
		if m := errorLine.FindStringSubmatch(l); m != nil {
			name, value = m[1], m[2]
		} else {
			value = l
		}
		break
	}
	if res.TimedOut {
		name, value = "TimeoutError", "the cell ran past its time limit"
	}
	return map[string]any{"type": "error", "name": name, "value": value, "traceback": tb}
}
