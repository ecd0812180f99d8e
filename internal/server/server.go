// Package server is sandboxd's HTTP/JSON API (v1) on its Unix socket. It
// decodes requests strictly, maps service errors to statuses and the
// stable error body, and streams NDJSON events. It owns no state: all of it
// lives in internal/daemon and the packages it wires.
package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/images"
	"github.com/sandboxd/sandboxd/internal/daemon"
	"github.com/sandboxd/sandboxd/internal/dashboard"
	"github.com/sandboxd/sandboxd/internal/principal"
	"github.com/sandboxd/sandboxd/internal/sessions"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/internal/wire"
)

// maxBody bounds a request body: code, files and stdin together (64 MiB of
// stdin must fit, with room for JSON escaping).
const maxBody = 128 << 20

// New returns the API handler, with the dashboard's pages at /ui/.
func New(d *daemon.Daemon, dash *dashboard.Dashboard, log hclog.Logger) http.Handler {
	h := &handler{d: d, dash: dash, log: log.Named("api")}
	mux := http.NewServeMux()
	for _, rt := range routes() {
		mux.HandleFunc(rt.pattern, func(w http.ResponseWriter, r *http.Request) {
			// Any call that wakes a hibernated session says so, and how long
			// that took, in a header (an exec also in its result).
			r = r.WithContext(sessions.OnResume(r.Context(), func(took time.Duration) {
				w.Header().Set(api.HeaderResumedMS, strconv.FormatFloat(float64(took.Microseconds())/1000, 'f', 1, 64))
			}))
			rt.serve(h, w, r)
		})
	}
	mux.Handle("GET /ui/", dash.Pages())
	mux.Handle("GET /{$}", http.RedirectHandler("/ui/", http.StatusSeeOther))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no endpoint %s %s; see /v1/openapi.json", r.Method, r.URL.Path)})
	})
	return h.recover(clientNamed(mux))
}

// clientNamed notes the name a client gives itself (HeaderClient: an MCP
// client's, an agent framework's) on the requester, as it says.
func clientNamed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name := r.Header.Get(api.HeaderClient); name != "" {
			if by, ok := principal.From(r.Context()); ok {
				by.Client = strings.Map(func(c rune) rune {
					if c < 0x20 || c == 0x7f {
						return -1
					}
					return c
				}, name[:min(len(name), 64)])
				r = r.WithContext(principal.With(r.Context(), by))
			}
		}
		next.ServeHTTP(w, r)
	})
}

type handler struct {
	d    *daemon.Daemon
	dash *dashboard.Dashboard
	log  hclog.Logger
}

// recover turns a panic in a handler into a 500 for that request only.
func (h *handler) recover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				h.log.Error("handler panicked", "method", r.Method, "path", r.URL.Path, "panic", v)
				writeError(w, &api.Error{Code: api.CodeInternal, Message: "internal error; see sandboxd's log"})
			}
		}()
		next.ServeHTTP(w, r)
	})
}

func (h *handler) health(w http.ResponseWriter, r *http.Request) {
	hl := h.d.Health(r.Context())
	status := http.StatusOK
	if hl.Status != "ok" {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, wire.Health(hl))
}

func (h *handler) languages(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, api.LanguageList{Languages: wire.All(h.d.Sandboxes.List(r.Context()), wire.Language)})
}

func (h *handler) pools(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, wire.Stats(h.d.Stats()).Pools)
}

func (h *handler) plugins(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, api.PluginList{Plugins: wire.All(h.d.Plugins(), wire.Plugin)})
}

func (h *handler) dashboardLogin(w http.ResponseWriter, r *http.Request) {
	login, err := h.dash.Login(principal.Of(r.Context()))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, login)
}

func (h *handler) stats(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, wire.Stats(h.d.Stats()))
}

func (h *handler) secrets(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, wire.Secrets(h.d.Secrets()))
}

func (h *handler) statsHistory(w http.ResponseWriter, r *http.Request) {
	tl := h.d.Timeline()
	writeJSON(w, http.StatusOK, api.StatsHistory{Every: api.Duration(tl.Every()), Samples: wire.All(tl.History(), wire.Sample)})
}

func (h *handler) executions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 100
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, &api.Error{Code: api.CodeInvalidRequest, Message: "limit is a number from 1 to 1000"})
			return
		}
		limit = n
	}
	filter := state.ExecutionFilter{Language: q.Get("language"), Session: q.Get("session"), Kind: q.Get("kind"), Outcome: q.Get("outcome")}
	list, err := h.d.Executions(limit, filter, q.Get("before"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.ExecutionList{Executions: wire.All(list, wire.Execution)})
}

func (h *handler) run(w http.ResponseWriter, r *http.Request) {
	var req api.RunRequest
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	respondExecution(w, r, func(out daemon.OutputFunc) (*daemon.Result, error) {
		run, err := wire.RunRequest(req)
		if err != nil {
			return nil, err
		}
		return h.d.Run(r.Context(), run, out)
	})
}

func (h *handler) validate(w http.ResponseWriter, r *http.Request) {
	var req api.ValidateRequest
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	v, err := wire.ValidateRequest(req)
	if err != nil {
		writeError(w, err)
		return
	}
	res, err := h.d.Validate(r.Context(), v)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.Validation(*res))
}

// buildImages answers with the result, or streams the builds' output
// lines as progress events and then the result when the client accepts
// NDJSON.
func (h *handler) buildImages(w http.ResponseWriter, r *http.Request) {
	var req api.ImageBuildRequest
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if !wantsStream(r) {
		built, err := h.d.BuildImages(r.Context(), req.Languages, func(_, _ string) {})
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, imageBuildResult(built))
		return
	}
	st := newStream(w)
	built, err := h.d.BuildImages(r.Context(), req.Languages, func(image, line string) {
		st.event(api.ImageBuildEvent{Type: "progress", Image: image, Line: line})
	})
	if err != nil {
		st.finish(api.ImageBuildEvent{Type: api.EventError, Error: wire.ErrorOf(err)})
		return
	}
	st.finish(api.ImageBuildEvent{Type: api.EventResult, Result: imageBuildResult(built)})
}

// imageBuildResult is a build's outcome on the wire.
func imageBuildResult(built []images.Built) *api.ImageBuildResult {
	res := &api.ImageBuildResult{Images: make([]api.ImageBuilt, len(built))}
	for i, b := range built {
		res.Images[i] = api.ImageBuilt{Language: b.Language, Image: b.Image, Packages: b.Packages, Note: b.Note, PulledBy: b.PulledBy, Error: b.Error,
			DurationMS: float64(b.Took.Microseconds()) / 1000}
	}
	return res
}

// respondExecution answers with the result as one JSON body, or streams
// output events and then the result when the client accepts NDJSON.
func respondExecution(w http.ResponseWriter, r *http.Request, execute func(daemon.OutputFunc) (*daemon.Result, error)) {
	if !wantsStream(r) {
		res, err := execute(nil)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, wire.RunResult(*res))
		return
	}
	st := newStream(w)
	res, err := execute(st.output)
	if err != nil {
		st.finish(api.Event{Type: api.EventError, Error: wire.ErrorOf(err)})
		return
	}
	result := wire.RunResult(*res)
	st.finish(api.Event{Type: api.EventResult, Result: &result})
}

func wantsStream(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), api.ContentTypeNDJSON)
}

// decode reads a JSON body strictly: unknown fields and trailing data are
// errors that say which.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return &api.Error{Code: api.CodeTooLarge, Message: fmt.Sprintf("request body over %d bytes: send large data as session files (PUT) or project files", maxBody)}
		case errors.Is(err, io.EOF):
			return &api.Error{Code: api.CodeInvalidRequest, Message: "empty body: send a JSON object"}
		}
		return &api.Error{Code: api.CodeInvalidRequest, Message: "malformed JSON: " + err.Error()}
	}
	if dec.More() {
		return &api.Error{Code: api.CodeInvalidRequest, Message: "malformed JSON: data after the object"}
	}
	return nil
}

// writeError answers with err as the wire has it (see wire.ErrorOf).
// apiPackage is the package that declares every body sandboxd sends.
var apiPackage = reflect.TypeFor[api.Error]().PkgPath()

// onWire refuses a body that is not one of the API's types (or a
// pointer, slice or map of them): sandboxd's own types (its records, its
// figures) go out only as internal/wire maps them, so that nothing
// renamed inside ever changes what clients read.
func onWire(v any) error {
	t := reflect.TypeOf(v)
	for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map) {
		t = t.Elem()
	}
	if t == nil || t.PkgPath() == "" || t.PkgPath() == apiPackage {
		return nil
	}
	return fmt.Errorf("sandboxd answered with its own type %s, which internal/wire should have mapped: a bug, please report it", t)
}

func writeError(w http.ResponseWriter, err error) {
	e := wire.ErrorOf(err)
	status := wire.Status(e)
	if e.Code == api.CodeImageBuilding {
		w.Header().Set("Retry-After", strconv.Itoa(int(images.RetryAfter.Seconds())))
	}
	writeJSON(w, status, api.ErrorBody{Error: *e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	if err := onWire(v); err != nil {
		status, v = http.StatusInternalServerError, api.ErrorBody{Error: *api.Errorf(api.CodeInternal, "%v", err)}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
