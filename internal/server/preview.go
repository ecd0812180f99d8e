package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/daemon"
	"github.com/sandboxd/sandboxd/internal/dashboard"
	"github.com/sandboxd/sandboxd/internal/desktop"
	"github.com/sandboxd/sandboxd/internal/sessions"
)

// preview makes a link that opens a port of a session to a browser.
func (h *handler) preview(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	port, aerr := portOf(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	var req api.PreviewRequest
	if r.ContentLength != 0 {
		if err := decode(w, r, &req); err != nil {
			writeError(w, err)
			return
		}
	}
	if _, aerr := h.d.Sessions.Get(id); aerr != nil {
		writeError(w, aerr)
		return
	}
	p, aerr := h.dash.Preview(id, port, time.Duration(req.TTL))
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, http.StatusCreated, p)
}

// desktopPreview makes a link that opens a desktop session's live view,
// view-only, to a browser: noVNC's page, served in the session.
func (h *handler) desktopPreview(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req api.PreviewRequest
	if r.ContentLength != 0 {
		if err := decode(w, r, &req); err != nil {
			writeError(w, err)
			return
		}
	}
	if _, aerr := h.d.DesktopLiveView(r.Context(), id, false); aerr != nil {
		writeError(w, aerr)
		return
	}
	p, aerr := h.dash.Preview(id, desktop.PagePort, time.Duration(req.TTL))
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	link, err := url.Parse(p.URL)
	if err != nil {
		writeError(w, err)
		return
	}
	q := link.Query()
	for k, v := range map[string]string{"autoconnect": "true", "view_only": "true", "resize": "scale", "reconnect": "true", "path": "websockify"} {
		q.Set(k, v)
	}
	link.Path, link.RawQuery = "/vnc.html", q.Encode()
	p.URL = link.String()
	writeJSON(w, http.StatusCreated, p)
}

// revokePreviews ends every preview link of a session made so far.
func (h *handler) revokePreviews(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, aerr := h.d.Sessions.Get(id); aerr != nil {
		writeError(w, aerr)
		return
	}
	if aerr := h.dash.RevokePreviews(id); aerr != nil {
		writeError(w, aerr)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// portOf reads the request's port as an integer before anything else
// (03000 is 3000).
func portOf(r *http.Request) (int, error) {
	port, err := strconv.Atoi(r.PathValue("port"))
	if err != nil || port < 1 || port > 65535 {
		return 0, api.Errorf(api.CodeInvalidRequest, "port %q: a number from 1 to 65535", r.PathValue("port"))
	}
	return port, nil
}

// Bounds of a preview's connections: how many go to one session's port at
// once (each is a relay process in the sandbox, which counts toward its
// pids), and how long a write may wait for the browser's side.
const (
	maxPreviewConns     = 32
	previewWriteTimeout = 30 * time.Second
	previewBacklog      = 64 // chunks of a relay's output, up to 64 KiB each
)

// sandboxHost is the host a preview's connections are pooled under: the
// session names it, the dial reads it back.
const sandboxHost = ".sandbox"

// PreviewProxy serves previews from sessions' ports: each request goes
// over a connection the supervisor relays to the port on the session's
// own loopback (as sandboxctl port-forward's do), HTTP and WebSocket
// upgrades alike.
func PreviewProxy(d *daemon.Daemon, log hclog.Logger) dashboard.PreviewHandler {
	transport := &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			host, p, _ := net.SplitHostPort(addr)
			port, _ := strconv.Atoi(p)
			return dialSession(ctx, d, strings.TrimSuffix(host, sandboxHost), port)
		},
		MaxIdleConnsPerHost:   4,
		MaxConnsPerHost:       maxPreviewConns, // the rest wait their turn
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: time.Minute,
	}
	log = log.Named("preview")
	return func(w http.ResponseWriter, r *http.Request, session string, port int) {
		proxy := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.Out.URL.Scheme = "http"
				pr.Out.URL.Host = session + sandboxHost + ":" + strconv.Itoa(port)
				pr.Out.Host = r.Host // the app sees the address the browser used
				withoutPreviewCookie(pr.Out)
			},
			Transport: transport,
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				log.Debug("a preview's request failed", "session", session, "port", port, "error", err)
				w.Header().Set("Content-Security-Policy", "default-src 'none'")
				http.Error(w, fmt.Sprintf("sandboxd preview: session %s, port %d: %v", session, port, err), http.StatusBadGateway)
			},
		}
		proxy.ServeHTTP(w, r)
	}
}

// withoutPreviewCookie keeps the preview's token from the sandbox.
func withoutPreviewCookie(r *http.Request) {
	cookies := r.Cookies()
	r.Header.Del("Cookie")
	for _, c := range cookies {
		if c.Name != "sandboxd_preview" {
			r.AddCookie(c)
		}
	}
}

// errNotListening is a dial to a port nothing in the session listens on.
var errNotListening = errors.New("nothing listens there in the sandbox: start the server in the session first")

// dialSession opens a connection to port on session's loopback.
func dialSession(ctx context.Context, d *daemon.Daemon, session string, port int) (net.Conn, error) {
	list, aerr := d.Sessions.Ports(ctx, session)
	if aerr != nil {
		return nil, aerr
	}
	if !slices.ContainsFunc(list, func(p sessions.Port) bool { return p.Port == port }) {
		return nil, errNotListening
	}
	client, relay := net.Pipe()
	go func() {
		defer relay.Close()
		// A browser that stops reading loses its connection, and holds up
		// nothing else of the session's.
		send, flush := decoupled(func(b []byte) error {
			_ = relay.SetWriteDeadline(time.Now().Add(previewWriteTimeout))
			_, err := relay.Write(b)
			return err
		}, func() { relay.Close() }, previewBacklog)
		_, _ = d.Forward(context.WithoutCancel(ctx), session, port, relay, send)
		flush()
	}()
	return client, nil
}
