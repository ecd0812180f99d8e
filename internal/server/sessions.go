package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/daemon"
	"github.com/sandboxd/sandboxd/internal/sessions"
	"github.com/sandboxd/sandboxd/internal/wire"
)

// Session, file and project endpoints. File bodies are raw bytes, not
// JSON: uploads with PUT, downloads as the file itself or, for a
// directory, a tar archive.

func (h *handler) createSession(w http.ResponseWriter, r *http.Request) {
	var req api.SessionRequest
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	sess, err := h.d.Sessions.Create(r.Context(), wire.SessionRequest(req))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, wire.Session(*sess))
}

func (h *handler) sessions(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, api.SessionList{Sessions: wire.All(h.d.Sessions.List(), wire.Session)})
}

func (h *handler) session(w http.ResponseWriter, r *http.Request) {
	sess, err := h.d.Sessions.Get(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.Session(*sess))
}

func (h *handler) deleteSession(w http.ResponseWriter, r *http.Request) {
	if err := h.d.Sessions.Delete(r.PathValue("id")); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) exec(w http.ResponseWriter, r *http.Request) {
	var req api.ExecRequest
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	respondExecution(w, r, func(out daemon.OutputFunc) (*daemon.Result, error) {
		exec, err := wire.ExecRequest(req)
		if err != nil {
			return nil, err
		}
		return h.d.Exec(r.Context(), r.PathValue("id"), exec, out)
	})
}

// sessionCall serves a call on the session the path names, answered
// with what it returns: reset, pause, resume, ports.
func sessionCall[T any](call func(*sessions.Sessions, context.Context, string) (T, error)) func(*handler, http.ResponseWriter, *http.Request) {
	return func(h *handler, w http.ResponseWriter, r *http.Request) {
		out, err := call(h.d.Sessions, r.Context(), r.PathValue("id"))
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}

// ports lists a session's listening ports.
func ports(m *sessions.Sessions, ctx context.Context, id string) (api.PortList, error) {
	list, err := m.Ports(ctx, id)
	return api.PortList{Ports: wire.All(list, wire.Port)}, err
}

// shown is a session call whose answer goes out as show maps it.
func shown[T, W any](call func(*sessions.Sessions, context.Context, string) (*T, error), show func(T) W) func(*sessions.Sessions, context.Context, string) (W, error) {
	return func(m *sessions.Sessions, ctx context.Context, id string) (W, error) {
		v, err := call(m, ctx, id)
		if err != nil {
			var none W
			return none, err
		}
		return show(*v), nil
	}
}

func (h *handler) setNetwork(w http.ResponseWriter, r *http.Request) {
	var req api.Network
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	sess, err := h.d.Sessions.SetNetwork(r.Context(), r.PathValue("id"), wire.Network(&req))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.Session(*sess))
}

func (h *handler) listFiles(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	recursive, _ := strconv.ParseBool(q.Get("recursive"))
	name, entries, err := h.d.Sessions.ListFiles(r.Context(), r.PathValue("id"), q.Get("path"), recursive)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.FileList{Path: name, Entries: wire.All(entries, wire.FileEntry)})
}

func (h *handler) putFile(w http.ResponseWriter, r *http.Request) {
	var mode uint64
	if m := r.URL.Query().Get("mode"); m != "" {
		var err error
		if mode, err = strconv.ParseUint(m, 8, 32); err != nil {
			writeError(w, &api.Error{Code: api.CodeInvalidRequest, Message: "mode is octal permission bits, e.g. 0755"})
			return
		}
	}
	res, err := h.d.PutFile(r.Context(), r.PathValue("id"), r.PathValue("path"), uint32(mode), nil, r.Body)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, wire.Written(*res))
}

func (h *handler) getFile(w http.ResponseWriter, r *http.Request) {
	body := &lazyBody{w: w}
	err := h.d.Sessions.Download(r.Context(), r.PathValue("id"), r.PathValue("path"), func(dir bool, name string) io.Writer {
		if name == "." {
			name = "workspace"
		}
		body.contentType = "application/octet-stream"
		if dir {
			body.contentType = api.ContentTypeTar
			name += ".tar"
		}
		body.name = name
		return body
	})
	switch {
	case err != nil && !body.started:
		writeError(w, err)
	case err != nil:
		// Too late for a status: break the response so the client sees a
		// truncated transfer, not a short file.
		panic(http.ErrAbortHandler)
	default:
		body.start()
	}
}

// lazyBody writes the response headers with the first byte, so that a
// download refused before any byte still gets a JSON error.
type lazyBody struct {
	w           http.ResponseWriter
	contentType string
	name        string
	started     bool
}

func (b *lazyBody) start() {
	if b.started {
		return
	}
	b.started = true
	b.w.Header().Set("Content-Type", b.contentType)
	b.w.Header().Set("Content-Disposition", "attachment; filename="+strconv.Quote(b.name))
	b.w.Header().Set("X-Content-Type-Options", "nosniff")
	b.w.WriteHeader(http.StatusOK)
}

func (b *lazyBody) Write(p []byte) (int, error) {
	b.start()
	return b.w.Write(p)
}

// watch streams what changes under a directory of a session's workspace:
// one FileEvent per line (NDJSON), or per server-sent event with Accept:
// text/event-stream; the first says the watch is set ("ready").
func (h *handler) watch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	recursive, _ := strconv.ParseBool(q.Get("recursive"))
	flusher, _ := w.(http.Flusher)
	sse := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	started := false
	aerr := h.d.Sessions.Watch(r.Context(), r.PathValue("id"), q.Get("path"), recursive, func(changes []sessions.FileEvent) {
		evs := wire.All(changes, wire.FileEvent)
		if !started {
			started = true
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("Content-Type", api.ContentTypeNDJSON)
			if sse {
				w.Header().Set("Content-Type", "text/event-stream")
			}
			w.WriteHeader(http.StatusOK)
			evs = append([]api.FileEvent{{Type: api.FileEventReady}}, evs...)
		}
		for _, ev := range evs {
			data, _ := json.Marshal(ev)
			if sse {
				fmt.Fprintf(w, "data: %s\n\n", data)
			} else {
				fmt.Fprintf(w, "%s\n", data)
			}
		}
		if flusher != nil {
			flusher.Flush()
		}
	})
	if aerr != nil && !started {
		writeError(w, aerr)
	}
}

func (h *handler) deleteFile(w http.ResponseWriter, r *http.Request) {
	if err := h.d.Sessions.DeleteFile(r.Context(), r.PathValue("id"), r.PathValue("path")); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) createProject(w http.ResponseWriter, r *http.Request) {
	var req api.ProjectRequest
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	p, err := h.d.Projects.Create(req.Name)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, wire.Project(*p))
}

func (h *handler) projects(w http.ResponseWriter, r *http.Request) {
	list, err := h.d.Projects.List()
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.ProjectList{Projects: append([]api.Project{}, wire.All(list, wire.Project)...)})
}

func (h *handler) project(w http.ResponseWriter, r *http.Request) {
	p, err := h.d.Projects.Get(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.Project(*p))
}

func (h *handler) deleteProject(w http.ResponseWriter, r *http.Request) {
	if err := h.d.Projects.Delete(r.PathValue("id")); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// addProjectFile takes the name as a query parameter: an uploaded name is
// raw input to sanitize, which a URL path would have cleaned already.
func (h *handler) addProjectFile(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	overwrite, _ := strconv.ParseBool(q.Get("overwrite"))
	f, err := h.d.Projects.AddFile(r.PathValue("id"), q.Get("name"), r.Body, overwrite)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, wire.ProjectFile(*f))
}

func (h *handler) getProjectFile(w http.ResponseWriter, r *http.Request) {
	fh, f, err := h.d.Projects.OpenFile(r.PathValue("id"), r.PathValue("name"))
	if err != nil {
		writeError(w, err)
		return
	}
	defer fh.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(f.Size, 10))
	w.Header().Set("X-Content-SHA256", f.SHA256)
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, fh)
}

func (h *handler) deleteProjectFile(w http.ResponseWriter, r *http.Request) {
	if err := h.d.Projects.DeleteFile(r.PathValue("id"), r.PathValue("name")); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) contexts(w http.ResponseWriter, r *http.Request) {
	list, err := h.d.Sessions.Contexts(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.ContextList{Contexts: wire.All(list, wire.Context)})
}

func (h *handler) endContext(w http.ResponseWriter, r *http.Request) {
	if err := h.d.Sessions.EndContext(r.Context(), r.PathValue("id"), r.PathValue("name")); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) restartContext(w http.ResponseWriter, r *http.Request) {
	c, err := h.d.RestartContext(r.Context(), r.PathValue("id"), r.PathValue("name"), "")
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.Context(*c))
}

func (h *handler) snapshot(w http.ResponseWriter, r *http.Request) {
	var req api.SnapshotRequest
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	sn, err := h.d.Sessions.Snapshot(r.Context(), r.PathValue("id"), req.Name)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, wire.Snapshot(*sn))
}

func (h *handler) fork(w http.ResponseWriter, r *http.Request) {
	var req api.ForkRequest
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	res, err := h.d.Sessions.Fork(r.Context(), r.PathValue("id"), wire.ForkRequest(req))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, wire.Forked(*res))
}

func (h *handler) snapshots(w http.ResponseWriter, r *http.Request) {
	list, err := h.d.Snapshots.List()
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.SnapshotList{Snapshots: append([]api.Snapshot{}, wire.All(list, wire.Snapshot)...)})
}

func (h *handler) getSnapshot(w http.ResponseWriter, r *http.Request) {
	sn, err := h.d.Snapshots.Get(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.Snapshot(*sn))
}

func (h *handler) deleteSnapshot(w http.ResponseWriter, r *http.Request) {
	if err := h.d.Snapshots.Delete(r.PathValue("id")); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// desktop reports a desktop session's screen.
func (h *handler) desktop(w http.ResponseWriter, r *http.Request) {
	screen, err := h.d.DesktopState(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.Desktop(*screen))
}

// desktopAction does one action on a desktop session's screen.
func (h *handler) desktopAction(w http.ResponseWriter, r *http.Request) {
	var req api.DesktopAction
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	screen, err := h.d.DesktopAction(r.Context(), r.PathValue("id"), wire.DesktopAction(req))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.Desktop(*screen))
}

// screenshot is a desktop session's screen as PNG.
func (h *handler) screenshot(w http.ResponseWriter, r *http.Request) {
	png, err := h.d.Screenshot(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(len(png)))
	_, _ = w.Write(png)
}
