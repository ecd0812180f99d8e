package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// Previews: a server a session runs on a port of its own loopback, opened
// to a browser on the TCP listener at http://PORT-SESSION.localhost:LISTEN/.
// Each session's port is an origin of its own, apart from the dashboard's
// and every other preview's, so a page the sandbox serves can read no
// cookie and call no API of theirs. A preview opens with a token for that
// port of that session only (its signature covers both), which expires
// and which RevokePreviews ends with every other token of the session.

// How long a preview token is good for, unless asked otherwise, and at most.
const (
	PreviewTTL    = time.Hour
	MaxPreviewTTL = 7 * 24 * time.Hour
)

// The query parameter a preview link carries its token in, and the cookie
// the token becomes.
const (
	previewParam  = "sandboxd_preview"
	previewCookie = "sandboxd_preview"
)

// previewDomain is what preview hosts end in: browsers and curl resolve
// every name under localhost to loopback.
const previewDomain = ".localhost"

// PreviewHandler serves a preview's request from the session's port.
type PreviewHandler func(w http.ResponseWriter, r *http.Request, session string, port int)

// Preview makes a link that opens port of session for ttl (0: PreviewTTL).
func (d *Dashboard) Preview(session string, port int, ttl time.Duration) (*api.Preview, error) {
	d.mu.Lock()
	origin := d.origin
	d.mu.Unlock()
	if origin == "" {
		return nil, api.Errorf(api.CodeNotFound, `previews are served on the TCP listener, and there is none: add http { listen = "127.0.0.1:7070" } to sandboxd.hcl and restart sandboxd`)
	}
	if ttl == 0 {
		ttl = PreviewTTL
	}
	if ttl < 0 || ttl > MaxPreviewTTL {
		return nil, api.Errorf(api.CodeInvalidRequest, "ttl %s: from 1s to %s", ttl, MaxPreviewTTL)
	}
	_, listen, _ := net.SplitHostPort(strings.TrimPrefix(origin, "http://"))
	tok, expires := d.sign.issue(kindPreview, ttl, d.previewScope(session, port)...)
	host := previewHost(session, port) + ":" + listen
	return &api.Preview{URL: "http://" + host + "/?" + previewParam + "=" + tok, Host: host, Token: tok,
		Session: session, Port: port, ExpiresAt: expires}, nil
}

// previewHost is the host name of a session's port.
func previewHost(session string, port int) string {
	return strconv.Itoa(port) + "-" + session + previewDomain
}

// parsePreviewHost reads a preview's session and port from its Host. The
// port is read as an integer before anything else: 03000 is 3000.
func parsePreviewHost(hostport string) (session string, port int, ok bool) {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	label, found := strings.CutSuffix(strings.ToLower(host), previewDomain)
	if !found {
		return "", 0, false
	}
	p, session, found := strings.Cut(label, "-")
	if !found || session == "" || strings.ContainsAny(session, ".-") {
		return "", 0, false
	}
	port, err = strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, false
	}
	return session, port, true
}

// previewScope is what a preview token of session's port is signed for:
// the port, the session, and the session's revocations so far.
func (d *Dashboard) previewScope(session string, port int) []string {
	d.mu.Lock()
	revoked := d.revoked[session]
	d.mu.Unlock()
	return []string{"preview", session, strconv.Itoa(port), strconv.Itoa(revoked)}
}

// RevokePreviews ends every preview token of session made so far.
func (d *Dashboard) RevokePreviews(session string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.revoked[session]++
	if err := writeJSON(filepath.Join(d.stateDir, revokedFile), d.revoked); err != nil {
		d.revoked[session]--
		return api.Errorf(api.CodeInternal, "recording the revocation: %v", err)
	}
	return nil
}

// revokedFile counts each session's preview revocations, in state_dir.
const revokedFile = "previews-revoked.json"

func loadRevoked(stateDir string) (map[string]int, error) {
	revoked := map[string]int{}
	b, err := os.ReadFile(filepath.Join(stateDir, revokedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return revoked, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &revoked)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s (remove it to revoke nothing): %w", revokedFile, err)
	}
	return revoked, nil
}

// writeJSON replaces path with v, whole or not at all.
func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// servePreview is the guard of a preview's origin: a link's token becomes
// a cookie of that origin alone, and the browser goes on to the address
// without it; a request with neither is refused.
func (d *Dashboard) servePreview(w http.ResponseWriter, r *http.Request, session string, port int, serve PreviewHandler) {
	canonical := previewHost(session, port)
	if _, listen, err := net.SplitHostPort(r.Host); err == nil {
		canonical += ":" + listen
	}
	if r.Host != canonical {
		// Another spelling of the port (03000): the cookie is to be the
		// canonical host's, so the token goes there first.
		http.Redirect(w, r, "http://"+canonical+r.URL.RequestURI(), http.StatusMovedPermanently)
		return
	}
	if tok := r.URL.Query().Get(previewParam); tok != "" {
		if !d.sign.valid(tok, kindPreview, d.previewScope(session, port)...) {
			previewDenied(w, "this preview link's token is wrong, expired, revoked, or for another port or session: ask for a new one (sandboxctl session preview)")
			return
		}
		http.SetCookie(w, &http.Cookie{Name: previewCookie, Value: tok, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
		u := *r.URL
		q := u.Query()
		q.Del(previewParam)
		u.RawQuery = q.Encode()
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, "http://"+canonical+u.RequestURI(), http.StatusSeeOther)
		return
	}
	c, err := r.Cookie(previewCookie)
	if err != nil || !d.sign.valid(c.Value, kindPreview, d.previewScope(session, port)...) {
		previewDenied(w, "no valid preview token: open the preview's link (sandboxctl session preview SESSION PORT prints one)")
		return
	}
	serve(w, r, session, port)
}

func previewDenied(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	http.Error(w, "sandboxd preview: "+msg, http.StatusUnauthorized)
}
