// Package dashboard is sandboxd's web dashboard: its pages and assets
// (built from web/ by `make ui` and embedded), served at /ui/ on every
// listener, and the guard in front of the TCP listener: a login link's
// token becomes a session cookie, state-changing requests carry a CSRF
// value bound to it, and Host names that could be a rebinding attack are
// refused. The pages use the v1 API; the package owns no other state than
// its signing key (state_dir/dashboard.key).
package dashboard

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/principal"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/internal/wire"
)

// dist is what `make ui` builds from web/: index.html, app.js, app.css.
//
//go:embed all:dist
var dist embed.FS

// How long a login link and the browser session it starts are good for.
const (
	LoginTTL   = 10 * time.Minute
	SessionTTL = 12 * time.Hour
)

// The cookies the TCP listener sets, and the header that carries the
// CSRF value (the csrf cookie's, which the page's script reads).
const (
	sessionCookie = "sandboxd_session"
	csrfCookie    = "sandboxd_csrf"
	CSRFHeader    = "X-Sandboxd-CSRF"
)

// contentSecurityPolicy is the pages': their own scripts and styles only,
// connections to their own origin, no framing. xterm.js makes <style>
// elements: those carrying the page's nonce are admitted, never
// 'unsafe-inline'.
func contentSecurityPolicy(nonce string) string {
	style := "'self'"
	if nonce != "" {
		style += " 'nonce-" + nonce + "'"
	}
	return "default-src 'none'; script-src 'self'; style-src " + style + "; img-src 'self' data: blob:; " +
		"font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

// Dashboard serves the pages and guards the TCP listener.
type Dashboard struct {
	sign     *signer
	stateDir string

	mu      sync.Mutex
	revoked map[string]int // preview revocations by session (see preview.go)
	origin  string         // the TCP listener's, for login links; "" without one
	host    string         // the host the operator wrote, accepted in Host
}

// New loads (or makes) the signing key in stateDir.
func New(stateDir string) (*Dashboard, error) {
	s, err := loadKey(stateDir)
	if err != nil {
		return nil, err
	}
	revoked, err := loadRevoked(stateDir)
	if err != nil {
		return nil, err
	}
	return &Dashboard{sign: s, stateDir: stateDir, revoked: revoked}, nil
}

// Listening records the TCP listener's address (as bound) and the host
// the operator wrote, for login links and the Host check.
func (d *Dashboard) Listening(addr net.Addr, configured string) {
	host, port, _ := net.SplitHostPort(addr.String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1" // every interface: loopback is one of them
	}
	wrote, _, _ := net.SplitHostPort(configured)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.origin = "http://" + net.JoinHostPort(host, port)
	d.host = wrote
}

// Login makes a link that signs a browser in to the TCP listener, on
// behalf of by (the socket's peer that asked for it): the browser acts as
// the dashboard, signed in by that uid, which decides no approval that
// uid asked for.
func (d *Dashboard) Login(by *state.Requester) (*api.DashboardLogin, error) {
	d.mu.Lock()
	origin := d.origin
	d.mu.Unlock()
	if origin == "" {
		return nil, api.Errorf(api.CodeNotFound, `the dashboard has no TCP listener: add http { listen = "127.0.0.1:7070" } to sandboxd.hcl and restart sandboxd (on the socket, /ui/ needs no token)`)
	}
	uid := "-"
	if by != nil && by.UID != nil {
		uid = strconv.FormatUint(uint64(*by.UID), 10)
	}
	tok, expires := d.sign.issue(kindLogin, LoginTTL, "by:"+uid)
	return &api.DashboardLogin{URL: origin + "/ui/?token=" + url.QueryEscape(tok+"."+uid), ExpiresAt: expires.UTC()}, nil
}

// Pages serves /ui/ from the embedded build.
func (d *Dashboard) Pages() http.Handler {
	files, _ := fs.Sub(dist, "dist")
	if _, err := fs.Stat(files, "index.html"); err != nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "this sandboxd was built without the dashboard's pages: run `make` (which runs `make ui`) and restart it", http.StatusServiceUnavailable)
		})
	}
	index, _ := fs.ReadFile(files, "index.html")
	serve := http.StripPrefix("/ui/", http.FileServerFS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("Cache-Control", "no-cache")
		if r.URL.Path != "/ui/" && r.URL.Path != "/ui/index.html" {
			w.Header().Set("Content-Security-Policy", contentSecurityPolicy(""))
			serve.ServeHTTP(w, r)
			return
		}
		// The page, with a nonce of its own for the script's styles.
		b := make([]byte, 18)
		_, _ = rand.Read(b)
		nonce := base64.StdEncoding.EncodeToString(b)
		w.Header().Set("Content-Security-Policy", contentSecurityPolicy(nonce))
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(bytes.ReplaceAll(index, []byte("{{NONCE}}"), []byte(nonce)))
	})
}

// Guard is the TCP listener's front door: every request needs the
// session cookie a login link's token starts, state-changing ones the
// CSRF header too; a request for a preview's origin goes to preview,
// behind that preview's own token.
func (d *Dashboard) Guard(next http.Handler, preview PreviewHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if session, port, ok := parsePreviewHost(r.Host); ok {
			d.servePreview(w, r, session, port, preview)
			return
		}
		if !strings.HasPrefix(r.URL.Path, "/ui/") {
			// API answers are data, never a page: no script runs in them.
			w.Header().Set("Content-Security-Policy", "default-src 'none'; sandbox")
			w.Header().Set("X-Content-Type-Options", "nosniff")
		}
		if !d.hostAllowed(r.Host) {
			deny(w, r, errdefs.Forbidden, "the Host "+r.Host+" is not this listener's address: open the link `sandboxctl dashboard` prints")
			return
		}
		if tok := r.URL.Query().Get("token"); tok != "" {
			d.login(w, r, tok)
			return
		}
		c, err := r.Cookie(sessionCookie)
		var by state.Requester
		if err == nil {
			by, err = d.signedIn(c.Value, kindSession)
		}
		if err != nil {
			deny(w, r, errdefs.Unauthorized, "no valid token: run `sandboxctl dashboard` on the host and open the link it prints")
			return
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			origin := r.Header.Get("Origin")
			if origin != "" && origin != "http://"+r.Host || !sameValue(r.Header.Get(CSRFHeader), d.sign.csrf(c.Value)) {
				deny(w, r, errdefs.Forbidden, "a cross-site request, or one without the "+CSRFHeader+" header its page sends")
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(principal.With(r.Context(), by)))
	})
}

// signedIn checks a login or session token ("TOKEN.UID") and says whom
// it signs in: the dashboard, on behalf of the uid that asked for the
// login link.
func (d *Dashboard) signedIn(value string, kind byte) (state.Requester, error) {
	tok, uid, _ := strings.Cut(value, ".")
	if !d.sign.valid(tok, kind, "by:"+uid) {
		return state.Requester{}, errors.New("not a valid token")
	}
	by := state.Requester{Via: principal.ViaDashboard}
	if n, err := strconv.ParseUint(uid, 10, 32); err == nil {
		id := uint32(n)
		by.UID = &id
		if u, err := user.LookupId(uid); err == nil {
			by.User = u.Username
		}
	}
	return by, nil
}

// login turns a login link's token into the session's cookies and sends
// the browser on to the page without the token in its address.
func (d *Dashboard) login(w http.ResponseWriter, r *http.Request, tok string) {
	if _, err := d.signedIn(tok, kindLogin); err != nil {
		deny(w, r, errdefs.Unauthorized, "this link's token is wrong or expired: run `sandboxctl dashboard` for a fresh one")
		return
	}
	_, uid, _ := strings.Cut(tok, ".")
	session, expires := d.sign.issue(kindSession, SessionTTL, "by:"+uid)
	session += "." + uid
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: session, Path: "/", Expires: expires, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: d.sign.csrf(session), Path: "/", Expires: expires, SameSite: http.SameSiteStrictMode})
	u := *r.URL
	q := u.Query()
	q.Del("token")
	u.RawQuery = q.Encode()
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
}

// hostAllowed refuses Host names a DNS rebinding could bring here.
func (d *Dashboard) hostAllowed(hostport string) bool {
	d.mu.Lock()
	wrote := d.host
	d.mu.Unlock()
	return RebindingSafe(hostport, wrote)
}

// RebindingSafe tells whether a request's Host is one a DNS rebinding
// cannot bring to a listener on this machine: an IP address, localhost,
// or the host the operator wrote in its listen address.
func RebindingSafe(hostport, wrote string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	return net.ParseIP(strings.Trim(host, "[]")) != nil || host == "localhost" || host != "" && host == wrote
}

// deny answers a request the guard refuses: the API's error body, or a
// line of text for a page.
func deny(w http.ResponseWriter, r *http.Request, kind errdefs.Kind, msg string) {
	e := wire.ErrorOf(errdefs.New(kind, msg))
	status := wire.Status(e)
	if strings.HasPrefix(r.URL.Path, "/ui/") {
		w.Header().Set("Content-Security-Policy", "default-src 'none'")
		http.Error(w, "sandboxd dashboard: "+msg, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(api.ErrorBody{Error: *e})
}

// Describe says where the dashboard is, for sandboxd's start-up log, and
// whether that is loopback only.
func Describe(addr net.Addr) (where string, loopback bool) {
	host, _, _ := net.SplitHostPort(addr.String())
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return fmt.Sprintf("dashboard on http://%s/ui/ (loopback only; `sandboxctl dashboard` prints a login link)", addr), true
	}
	return fmt.Sprintf("the dashboard on http://%s/ui/ listens BEYOND LOOPBACK, as http.listen in sandboxd.hcl says: anyone who reaches it with a login link controls sandboxd", addr), false
}
