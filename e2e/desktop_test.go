package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// desktopLanguage is the shipped config's desktop block, with a pool for
// the tests' sessions.
const desktopLanguage = `
language "desktop" {
  plugin          = "generic"
  image           = "sandboxd/desktop:latest"
  display_name    = "Desktop"
  main_file       = "main.sh"
  run             = ["bash", "{entry}"]
  desktop {
    screen = "1024x768"
  }
  limits {
    memory       = "2GiB"
    pids         = 512
    output_limit = "16MiB"
  }
  pool {
    min_idle = 0
    max      = 3
  }
}
`

// desktopPage is a page whose button turns from red to blue when clicked,
// and whose title says what its text field holds.
const desktopPage = `<!doctype html><html><head><title>desktop test</title>
<style>body{margin:0}#b{position:fixed;left:0;top:0;width:400px;height:300px;border:0;background:rgb(255,0,0)}</style></head>
<body><button id=b onclick="this.style.background='rgb(0,0,255)'">press</button>
<input id=t oninput="document.title='typed:'+this.value"></body></html>`

// TestDesktop drives a desktop session as a computer-use agent does: it
// serves a page in the session, opens it in the session's Chromium, finds
// the red button in a screenshot, clicks it through the API and reads the
// blue back from the next screenshot's pixels; it types into the focused
// text field and presses chords. Two desktop sessions do not see each
// other's screens, and what an agent types is never shell text.
func TestDesktop(t *testing.T) {
	t.Parallel() // at the end, beside the tests that mostly wait: a screen mostly waits too
	// A site on the host the desktop's allow-list names, reached through
	// the egress proxy (host.sandboxd.internal is the host's loopback).
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "<!doctype html><title>from the host</title>hello")
	}))
	t.Cleanup(site.Close)
	sitePort := site.Listener.Addr().(*net.TCPAddr).Port
	withEgress := strings.Replace(desktopLanguage, "  desktop {", fmt.Sprintf("  network {\n    allow = [\"host.sandboxd.internal:%d\"]\n  }\n  desktop {", sitePort), 1)
	d := testutil.StartDaemon(t, testutil.Options{Languages: withEgress + pythonOnly})
	c := d.Client()
	created := time.Now()
	id := newSession(t, c, api.SessionRequest{Language: "desktop"})
	screen, err := c.Desktop(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a desktop session and its screen in %s", time.Since(created).Round(time.Millisecond))
	if screen.Width != 1024 || screen.Height != 768 {
		t.Fatalf("the screen: %+v", screen)
	}

	if _, err := c.PutFile(ctx(t), id, "site/index.html", strings.NewReader(desktopPage), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := sh(t, c, id, "cd site && setsid -f python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1"); res.ExitCode != 0 {
		t.Fatalf("serving the page: %+v", res)
	}
	waitFor(t, "the page's server", func() bool {
		ports, err := c.Ports(ctx(t), id)
		return err == nil && len(ports) > 0
	})
	act(t, c, id, api.DesktopAction{Action: "open", Target: "http://127.0.0.1:8000/"})
	waitForWithin(t, "the page in Chromium", 60*time.Second, func() bool { return windowTitled(t, c, id, "desktop test") != "" })

	var red image.Point
	waitForWithin(t, "the red button on the screen", 30*time.Second, func() bool {
		var ok bool
		red, ok = centreOf(screenshot(t, c, id), 255, 0, 0)
		return ok
	})
	after := act(t, c, id, api.DesktopAction{Action: "click", X: &red.X, Y: &red.Y})
	if after.Cursor.X != red.X || after.Cursor.Y != red.Y {
		t.Fatalf("the pointer after the click: %+v, want %v", after.Cursor, red)
	}
	waitFor(t, "the button blue after the click", func() bool {
		img := screenshot(t, c, id)
		blue, ok := centreOf(img, 0, 0, 255)
		_, stillRed := centreOf(img, 255, 0, 0)
		return ok && !stillRed && blue.Sub(red).X*blue.Sub(red).X+blue.Sub(red).Y*blue.Sub(red).Y < 100
	})

	// The button has the focus; Tab moves it to the text field.
	act(t, c, id, api.DesktopAction{Action: "key", Keys: "Tab"})
	typed := `hello $(touch /workspace/pwned) ; "q" 'r' ` + strings.Repeat("the quick brown fox jumps over the lazy dog ", 6)
	act(t, c, id, api.DesktopAction{Action: "type", Text: typed})
	waitFor(t, "the typed text in the page's title", func() bool { return windowTitled(t, c, id, "typed:"+typed) != "" })
	act(t, c, id, api.DesktopAction{Action: "key", Keys: "ctrl+a BackSpace"})
	act(t, c, id, api.DesktopAction{Action: "type", Text: "x"})
	waitFor(t, "a chord and a key", func() bool { return windowTitled(t, c, id, "typed:x") != "" })
	if res := sh(t, c, id, "test -e /workspace/pwned && echo yes || echo no"); res.Stdout != "no\n" {
		t.Fatalf("typed text ran as a shell command: %q", res.Stdout)
	}
	// A .desktop file's Exec line is a command no policy sees: open shows
	// the file, it never runs it (helper-23).
	if _, err := c.PutFile(ctx(t), id, "evil.desktop", strings.NewReader("[Desktop Entry]\nType=Application\nName=evil\nExec=touch /workspace/pwned_open\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	act(t, c, id, api.DesktopAction{Action: "open", Target: "/workspace/evil.desktop"})
	time.Sleep(3 * time.Second)
	if res := sh(t, c, id, "test -e /workspace/pwned_open && echo yes || echo no"); res.Stdout != "no\n" {
		t.Fatal("open ran a .desktop file's Exec line")
	}
	if _, err := c.DesktopAction(ctx(t), id, api.DesktopAction{Action: "click", X: ptrTo(1024), Y: ptrTo(0)}); apiCode(err) != api.CodeInvalidRequest || !strings.Contains(err.Error(), "off the 1024x768 screen") {
		t.Errorf("a click off the screen: %v", err)
	}
	if _, err := c.DesktopAction(ctx(t), id, api.DesktopAction{Action: "key", Keys: "Retrun"}); apiCode(err) != api.CodeInvalidRequest || !strings.Contains(err.Error(), `no key "Retrun"`) {
		t.Errorf("a key X has no name for: %v", err)
	}
	if _, err := c.DesktopAction(ctx(t), id, api.DesktopAction{Action: "focus", Window: "12345"}); apiCode(err) != api.CodeNotFound {
		t.Errorf("focus on a window that is not there: %v", err)
	}
	if s, err := c.Desktop(ctx(t), id); err != nil || windowTitled(t, c, id, "xfce4-panel") != "" || len(s.Windows) == 0 {
		t.Errorf("the windows should be the applications' alone: %+v %v", s, err)
	}
	for _, bad := range []api.DesktopAction{
		{Action: "click", X: ptrTo(-1), Y: ptrTo(0)},
		{Action: "key", Keys: "--help"},
		{Action: "key", Keys: "a;id"},
		{Action: "key", Keys: "shift EXEC touch pwned"}, // xdotool would run it (helper-23)
		{Action: "launch"},
	} {
		if _, err := c.DesktopAction(ctx(t), id, bad); apiCode(err) != api.CodeInvalidRequest {
			t.Errorf("%+v: %v, want invalid_request", bad, err)
		}
	}

	t.Run("Chromium through the egress proxy", func(t *testing.T) {
		act(t, c, id, api.DesktopAction{Action: "open", Target: fmt.Sprintf("http://host.sandboxd.internal:%d/", sitePort)})
		waitForWithin(t, "the host's page, through the egress proxy", 30*time.Second, func() bool { return windowTitled(t, c, id, "from the host") != "" })
	})

	t.Run("MCP", func(t *testing.T) {
		inspector := testutil.NPMTool(t, "node_modules/.bin/mcp-inspector")
		a := mcpCall(t, inspector, d, "tools/call", "--tool-name", "desktop_action", "--tool-arg", "session_id="+id,
			"--tool-arg", "action=move", "--tool-arg", "x=40", "--tool-arg", "y=50", "--tool-arg", "screenshot=true")
		var s struct {
			Width int `json:"width"`
		}
		var moved struct {
			CursorX int `json:"cursor_x"`
			CursorY int `json:"cursor_y"`
		}
		if a.IsError || json.Unmarshal(a.Structured, &moved) != nil || moved.CursorX != 40 || moved.CursorY != 50 || len(a.Content) != 2 || a.Content[1].Type != "image" || a.Content[1].MIMEType != "image/png" {
			t.Fatalf("desktop_action: %s %+v", a.Structured, a.Content)
		}
		a = mcpCall(t, inspector, d, "tools/call", "--tool-name", "desktop_screenshot", "--tool-arg", "session_id="+id)
		if a.IsError || json.Unmarshal(a.Structured, &s) != nil || s.Width != 1024 || len(a.Content) != 2 || a.Content[1].Type != "image" {
			t.Fatalf("desktop_screenshot: %s", a.Structured)
		}
		if png, err := base64.StdEncoding.DecodeString(a.Content[1].Data); err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
			t.Fatalf("the screenshot's image content is no PNG: %v", err)
		}
	})

	t.Run("screens apart", func(t *testing.T) {
		other := newSession(t, c, api.SessionRequest{Language: "desktop"})
		theirs, err := c.Desktop(ctx(t), other)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range theirs.Windows {
			if strings.Contains(w.Title, "typed:") {
				t.Fatalf("another session's window shows on this screen: %+v", theirs.Windows)
			}
		}
		// Its X server is its own (an abstract socket in its own network
		// namespace): nothing there knows the first session's window.
		res := sh(t, c, other, "xdotool search --name typed: ; echo end; DISPLAY=:1 xdpyinfo >/dev/null 2>&1 && echo display-1")
		if res.Stdout != "end\n" {
			t.Fatalf("another screen is reachable from this session: %q", res.Stdout)
		}
		a, b := screenshot(t, c, id), screenshot(t, c, other)
		if _, ok := centreOf(b, 0, 0, 255); ok || bytes.Equal(encode(t, a), encode(t, b)) {
			t.Fatal("the second session's screenshot shows the first's screen")
		}
	})

	t.Run("a session without a desktop", func(t *testing.T) {
		py := newSession(t, c, api.SessionRequest{Language: "python"})
		_, err := c.Screenshot(ctx(t), py)
		if apiCode(err) != api.CodeInvalidRequest || !strings.Contains(err.Error(), "has no desktop") {
			t.Fatalf("%v", err)
		}
	})

	t.Run("the screen comes back after a reset", func(t *testing.T) {
		if _, err := c.ResetSession(ctx(t), id); err != nil {
			t.Fatal(err)
		}
		if _, ok := centreOf(screenshot(t, c, id), 0, 0, 255); ok {
			t.Fatal("the page survived the reset")
		}
	})
}

func act(t *testing.T, c *client.Client, id string, a api.DesktopAction) *api.Desktop {
	t.Helper()
	s, err := c.DesktopAction(ctx(t), id, a)
	if err != nil {
		t.Fatalf("%+v: %v", a, err)
	}
	return s
}

// windowTitled is the id of the first window whose title starts with
// title, or "".
func windowTitled(t *testing.T, c *client.Client, id, title string) string {
	t.Helper()
	s, err := c.Desktop(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range s.Windows {
		if strings.HasPrefix(w.Title, title) {
			return w.ID
		}
	}
	return ""
}

func screenshot(t *testing.T, c *client.Client, id string) image.Image {
	t.Helper()
	b, err := c.Screenshot(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the screenshot is no PNG: %v", err)
	}
	return img
}

func encode(t *testing.T, img image.Image) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func pixel(img image.Image, p image.Point) (r, g, b uint8) {
	r32, g32, b32, _ := img.At(p.X, p.Y).RGBA()
	return uint8(r32 >> 8), uint8(g32 >> 8), uint8(b32 >> 8)
}

// centreOf is the centre of the pixels of exactly that colour, if there
// are more than a few thousand of them (a button, not a glyph).
func centreOf(img image.Image, r, g, b uint8) (image.Point, bool) {
	var sum image.Point
	n := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			if pr, pg, pb := pixel(img, image.Pt(x, y)); pr == r && pg == g && pb == b {
				sum = sum.Add(image.Pt(x, y))
				n++
			}
		}
	}
	if n < 5000 {
		return image.Point{}, false
	}
	return image.Pt(sum.X/n, sum.Y/n), true
}

// TestE2BDesktopSDK runs E2B Desktop's own SDK (e2e/npm/e2b-desktop.test.mjs)
// against the E2B listener's desktop template.
func TestE2BDesktopSDK(t *testing.T) {
	t.Parallel()
	testutil.NPMTool(t, "node_modules/@e2b/desktop/package.json")
	node, err := exec.LookPath("node")
	if err != nil {
		testutil.Missing(t, "node is not installed")
	}
	d, url := e2bDaemon(t, desktopLanguage, `http { listen = "127.0.0.1:0" }`)
	cmd := exec.Command(node, "--test", "--test-force-exit", "--test-reporter=spec", filepath.Join(filepath.Dir(testutil.NPMTool(t, "package.json")), "e2b-desktop.test.mjs"))
	cmd.Env = append(os.Environ(), "E2B_API_KEY="+e2bKey, "E2B_API_URL="+url, "E2B_SANDBOX_URL="+url,
		"SANDBOXCTL="+filepath.Join(d.Bin, "sandboxctl"), "SANDBOXD_SOCKET="+d.Socket)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test e2b-desktop.test.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("E2B Desktop's SDK failed against sandboxd: %v\nsandboxd's log:\n%s", err, d.Logs())
	}
}

// TestDesktopLiveView watches a desktop session's screen in the dashboard
// (noVNC on the session's VNC WebSocket) in a real Chromium: view-only, the
// page's clicks do not reach the screen; once the person takes control,
// they do. A preview link opens the same view. Neither opens without the
// login or the link's token.
func TestDesktopLiveView(t *testing.T) {
	t.Parallel()
	d := testutil.StartDaemon(t, testutil.Options{Languages: desktopLanguage + pythonOnly, Extra: `http { listen = "127.0.0.1:0" }`})
	c := d.Client()
	out, errOut, code := d.CtlAs(testutil.Nobody, "", "dashboard")
	if code != 0 {
		t.Fatalf("sandboxctl dashboard: %s", errOut)
	}
	link, err := url.Parse(strings.TrimSpace(out))
	if err != nil {
		t.Fatal(err)
	}
	id := newSession(t, c, api.SessionRequest{Language: "desktop"})
	act(t, c, id, api.DesktopAction{Action: "move", X: ptrTo(10), Y: ptrTo(10)})

	bctx := headlessChromium(t)
	eval := func(expr string) any {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[any](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}
	until := func(what, cond string) {
		t.Helper()
		waitForWithin(t, what, 30*time.Second, func() bool { return eval(cond) == true })
	}
	// clickScreen clicks the page where the live view shows the screen's
	// point (x, y).
	clickScreen := func(canvas string, x, y float64) {
		t.Helper()
		r := eval(fmt.Sprintf(`(() => { const c = document.querySelector(%q); c.scrollIntoView(); const r = c.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })()`, canvas)).([]any)
		px, py := r[0].(float64)+x*r[2].(float64)/1024, r[1].(float64)+y*r[3].(float64)/768
		if _, err := chromedp.Run(bctx, chromedp.MouseClickXY(px, py)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := chromedp.Run(bctx, chromedp.Navigate(link.String())); err != nil {
		t.Fatal(err)
	}
	eval(fmt.Sprintf("location.hash = %q", "#/sessions/"+id))
	until("the live view connected", `!!window.sandboxdLiveView && window.sandboxdLiveView.connected && !window.sandboxdLiveView.control`)
	until("the screen on the page", `(document.querySelector("#screen canvas") || {}).width === 1024`)
	if v := eval(`window.cspViolations.length`); v != float64(0) {
		t.Fatalf("the page broke its Content Security Policy: %v", eval(`window.cspViolations`))
	}
	if dir := os.Getenv("SANDBOXD_SCREENSHOTS"); dir != "" { // docs/desktop.md's picture
		if _, err := c.PutFile(ctx(t), id, "site/index.html", strings.NewReader(desktopPage), 0o644); err != nil {
			t.Fatal(err)
		}
		sh(t, c, id, "cd site && setsid -f python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1; sleep 1")
		act(t, c, id, api.DesktopAction{Action: "open", Target: "http://127.0.0.1:8000/"})
		waitForWithin(t, "the page in Chromium", 60*time.Second, func() bool { return windowTitled(t, c, id, "desktop test") != "" })
		act(t, c, id, api.DesktopAction{Action: "move", X: ptrTo(10), Y: ptrTo(10)})
		time.Sleep(2 * time.Second)
		eval(`document.querySelector("#screen").parentElement.scrollIntoView()`)
		time.Sleep(time.Second)
		if png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot()); err == nil {
			_ = os.WriteFile(filepath.Join(dir, "desktop.png"), png, 0o644)
		}
	}

	clickScreen("#screen canvas", 700, 500)
	time.Sleep(time.Second)
	if s, err := c.Desktop(ctx(t), id); err != nil || s.Cursor.X != 10 || s.Cursor.Y != 10 {
		t.Fatalf("a click on the view-only screen moved the pointer: %+v %v", s, err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Click("#take-control")); err != nil {
		t.Fatal(err)
	}
	until("in control", `window.sandboxdLiveView.connected && window.sandboxdLiveView.control`)
	clickScreen("#screen canvas", 700, 500)
	waitFor(t, "the person's click on the screen", func() bool {
		s, err := c.Desktop(ctx(t), id)
		return err == nil && abs(s.Cursor.X-700) <= 3 && abs(s.Cursor.Y-500) <= 3
	})

	// The view's WebSocket on the TCP listener, without the login.
	req, _ := http.NewRequest("GET", link.Scheme+"://"+link.Host+"/v1/sessions/"+id+"/desktop/vnc?control=true", nil)
	for k, v := range map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="} {
		req.Header.Set(k, v)
	}
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode == http.StatusSwitchingProtocols || resp.StatusCode < 400 {
		t.Fatalf("the live view without the login: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// A preview link: noVNC's own page, view-only, at the link's origin.
	p, err := c.DesktopPreview(ctx(t), id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	preview, err := url.Parse(p.URL)
	if err != nil || preview.Path != "/vnc.html" || preview.Query().Get("view_only") != "true" {
		t.Fatalf("the desktop's preview link: %q %v", p.URL, err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Navigate(p.URL)); err != nil {
		t.Fatal(err)
	}
	until("the screen through the preview link", `(document.querySelector("#noVNC_container canvas") || {}).width === 1024`)
	act(t, c, id, api.DesktopAction{Action: "move", X: ptrTo(20), Y: ptrTo(20)})
	clickScreen("#noVNC_container canvas", 300, 300)
	time.Sleep(time.Second)
	if s, err := c.Desktop(ctx(t), id); err != nil || s.Cursor.X != 20 {
		t.Fatalf("a click through the view-only preview moved the pointer: %+v %v", s, err)
	}
	if dir := os.Getenv("SANDBOXD_SCREENSHOTS"); dir != "" {
		if png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot()); err == nil {
			_ = os.WriteFile(filepath.Join(dir, "desktop-preview.png"), png, 0o644)
		}
	}
	// Without the link's token, at the link's origin.
	bare := *preview
	bare.RawQuery = ""
	plain := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, "127.0.0.1:"+preview.Port())
	}}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if resp, err := plain.Get(bare.String()); err != nil || resp.StatusCode == http.StatusOK {
		t.Fatalf("the preview without its token: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
