package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// dashboardDaemon starts sandboxd with its dashboard on a loopback port of
// its own and returns it with a fresh login link.
func dashboardDaemon(t *testing.T) (*testutil.Daemon, *url.URL) {
	t.Helper()
	d := testutil.StartDaemon(t, testutil.Options{Languages: pythonOnly, Defaults: `timeout = "60s"`, Extra: `
http { listen = "127.0.0.1:0" }
policy "patterns" { mode = "enforce" }
policy "review" {
  plugin  = "example"
  mode    = "ask"
  options = { words = "NEEDS_REVIEW", severity = "error" }
}`})
	// A person's login: another user's than the test's own, whose
	// requests the dashboard then may decide.
	link, errOut, code := d.CtlAs(testutil.Nobody, "", "dashboard")
	if code != 0 {
		t.Fatalf("sandboxctl dashboard as another user: %s", errOut)
	}
	u, err := url.Parse(strings.TrimSpace(link))
	if err != nil || u.Hostname() != "127.0.0.1" || u.Query().Get("token") == "" {
		t.Fatalf("login link %q: %v", link, err)
	}
	return d, u
}

// TestDashboardGuard knocks on the dashboard's TCP listener as a browser
// of another site, or one without a token, would.
func TestDashboardGuard(t *testing.T) {
	d, link := dashboardDaemon(t)
	origin := link.Scheme + "://" + link.Host
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	status := func(c *http.Client, method, path string, header map[string]string, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, origin+path, strings.NewReader(body))
		for k, v := range header {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/ui/", "/v1/health", "/v1/sessions", "/metrics"} {
		if code, body := status(plain, "GET", path, nil, ""); code != 401 {
			t.Errorf("GET %s without a token: %d %s", path, code, body)
		}
	}
	if code, body := status(plain, "GET", "/ui/?token=forged", nil, ""); code != 401 || !strings.Contains(body, "sandboxctl dashboard") {
		t.Errorf("a wrong token: %d %s", code, body)
	}
	tampered := link.Query().Get("token")
	tampered = tampered[:len(tampered)-2] + map[bool]string{true: "AA", false: "AB"}[!strings.HasSuffix(tampered, "AA")]
	if code, _ := status(plain, "GET", "/ui/?token="+url.QueryEscape(tampered), nil, ""); code != 401 {
		t.Errorf("a tampered token: %d", code)
	}
	// A name that resolves here by DNS rebinding is not this listener.
	if code, body := status(plain, "GET", link.RequestURI(), map[string]string{"Host": "attacker.example:80"}, ""); code != 403 {
		t.Errorf("a foreign Host: %d %s", code, body)
	}

	// The link's token becomes cookies; the page's address drops it.
	jar, _ := cookiejar.New(nil)
	browserish := &http.Client{Jar: jar}
	resp, err := browserish.Get(link.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.RawQuery != "" {
		t.Fatalf("after the login link: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "'nonce-") {
		t.Errorf("the page's CSP: %q", csp)
	}
	var csrf string
	for _, c := range jar.Cookies(link) {
		if c.Name == "sandboxd_csrf" {
			csrf = c.Value
		}
	}
	if code, _ := status(browserish, "GET", "/v1/health", nil, ""); code != 200 {
		t.Errorf("the API with the cookie: %d", code)
	}
	create := `{"language":"python"}`
	if code, body := status(browserish, "POST", "/v1/sessions", nil, create); code != 403 || !strings.Contains(body, "forbidden") {
		t.Errorf("a POST without the CSRF header: %d %s", code, body)
	}
	if code, _ := status(browserish, "POST", "/v1/sessions", map[string]string{"X-Sandboxd-CSRF": csrf, "Origin": "http://attacker.example"}, create); code != 403 {
		t.Errorf("a POST from another origin: %d", code)
	}
	if code, _ := status(browserish, "POST", "/v1/sessions", map[string]string{"X-Sandboxd-CSRF": "x" + csrf}, create); code != 403 {
		t.Errorf("a POST with a wrong CSRF value: %d", code)
	}
	code, body := status(browserish, "POST", "/v1/sessions", map[string]string{"X-Sandboxd-CSRF": csrf, "Origin": origin}, create)
	if code != 201 {
		t.Fatalf("a POST from the page: %d %s", code, body)
	}
	var s api.Session
	_ = json.Unmarshal([]byte(body), &s)
	t.Cleanup(func() { _ = d.Client().DeleteSession(context.Background(), s.ID) })

	// On the socket the pages need no token; / leads to them.
	sock := unixHTTP(d.Socket)
	sock.CheckRedirect = plain.CheckRedirect
	r, err := sock.Get("http://sandboxd/")
	if err != nil || r.StatusCode != 303 || r.Header.Get("Location") != "/ui/" {
		t.Errorf("/ on the socket: %v %v", r, err)
	}
	r, err = sock.Get("http://sandboxd/ui/")
	if err != nil || r.StatusCode != 200 {
		t.Fatalf("/ui/ on the socket: %v %v", r, err)
	}
	r.Body.Close()
	// The event stream starts with the figures.
	r, err = sock.Get("http://sandboxd/v1/events")
	if err != nil || r.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %v %v", r, err)
	}
	first := make([]byte, 12)
	_, _ = io.ReadFull(r.Body, first)
	r.Body.Close()
	if string(first) != "event: stats" {
		t.Errorf("the first event: %q", first)
	}
}

// headlessChromium starts Debian's Chromium, headless, for the test.
func headlessChromium(t *testing.T) context.Context {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		testutil.Missing(t, "Debian's chromium is not installed; run `make test-tools`")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc() })
	return bctx
}

// TestDashboardInChromium drives the dashboard in a real headless
// Chromium: the overview shows pools and executions live, code runs on the
// run page with its output shown as text, a session's terminal echoes what
// is typed, and a file goes up and comes back down.
func TestDashboardInChromium(t *testing.T) {
	d, link := dashboardDaemon(t)
	c := d.Client()
	shots := os.Getenv("SANDBOXD_SCREENSHOTS") // a directory: docs/dashboard.md's pictures
	if shots == "" {
		shots = t.TempDir()
	}
	downloads := t.TempDir()

	bctx := headlessChromium(t)
	if _, err := chromedp.CallBrowser(bctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: downloads}); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	// The page asks before it deletes: the test says yes, and counts.
	dialogs := make(chan struct{}, 4)
	var dialogsOpened atomic.Int32
	if err := chromedp.Listen(bctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			dialogsOpened.Add(1)
			select {
			case dialogs <- struct{}{}:
			default:
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	go func() {
		for range dialogs {
			_, _ = chromedp.Call(bctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	defer close(dialogs)
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		tctx, cancel := context.WithTimeout(bctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(tctx, steps...); err != nil {
			text, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector("main").innerText`))
			t.Fatalf("%s: %v\nthe page shows:\n%s", what, err, text)
		}
	}
	eval := func(expr string) any {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[any](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}
	// shot pictures the whole page: the viewport made as tall as the page
	// first, and time given for the frames that render apart from it (a
	// notebook's HTML output) to paint at the new size.
	shot := func(name string) {
		t.Helper()
		height := eval(`Math.ceil(Math.max(900, document.body.getBoundingClientRect().height))`).(float64)
		if _, err := chromedp.Run(bctx, chromedp.EmulateViewport(1280, int64(height))); err != nil {
			t.Fatal(err)
		}
		defer func() { _, _ = chromedp.Run(bctx, chromedp.EmulateReset()) }()
		time.Sleep(700 * time.Millisecond)
		png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// until waits for a JavaScript condition to hold.
	until := func(cond string) chromedp.Action[chromedp.Void] {
		poll := chromedp.Poll[bool](cond, chromedp.WithPollingInterval(100*time.Millisecond))
		return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
			_, err := poll(ctx, t)
			return chromedp.Void{}, err
		}
	}
	// waitText waits until the element's text contains want.
	waitText := func(sel, want string) chromedp.Action[chromedp.Void] {
		return until(fmt.Sprintf(`!!(document.querySelector(%q) || {innerText: ""}).innerText.includes(%q)`, sel, want))
	}
	// goTo moves to a page of the dashboard: a new hash, the same document.
	goTo := func(hash string) chromedp.Action[chromedp.Void] {
		set := chromedp.Evaluate[any](fmt.Sprintf("location.hash = %q", hash))
		return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
			_, err := set(ctx, t)
			return chromedp.Void{}, err
		}
	}

	// Overview, reached through the login link; a run elsewhere shows up
	// in its recent executions live.
	run("the overview", chromedp.Navigate(link.String()), waitText("main", "Recent executions"), waitText("main", "python"))
	res, err := c.Run(ctx(t), api.RunRequest{Language: "python", Code: "print('from the socket')"})
	if err != nil {
		t.Fatal(err)
	}
	run("the live execution", waitText("#recent", res.ID[len(res.ID)-8:]), waitText("#live", "live"))
	shot("overview")

	// The run page: output streams in, as text. The code is typed into
	// the editor (CodeMirror), which highlights it as the language's.
	code := `import time
print("<b>not bold</b>", flush=True)
time.sleep(0.3)
print("sum", sum(range(10)))
`
	setCode := func(sel, code string) chromedp.Action[chromedp.Void] {
		set := chromedp.Evaluate[any](fmt.Sprintf(`document.querySelector(%q).editor.value = %q`, sel, code))
		return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
			_, err := set(ctx, t)
			return chromedp.Void{}, err
		}
	}
	run("the run page", goTo("#/run"),
		chromedp.WaitVisible(`#code .cm-content`),
		setCode("#code", code),
		chromedp.Click(`form button[type=submit]`),
		waitText("#output", "sum 45"), waitText("#summary", "exit 0"), waitText("#output", "<b>not bold</b>"))
	if n := eval(`document.querySelectorAll("#output b").length`); n != float64(0) {
		t.Errorf("program output became HTML: %v", n)
	}
	// A keyword is drawn in a color of its own.
	highlighted := `(() => { const line = document.querySelector("#code .cm-line"); const kw = [...line.querySelectorAll("span")].find((s) => s.textContent === "import");
		return !!kw && getComputedStyle(kw).color !== getComputedStyle(line).color; })()`
	if eval(highlighted) != true {
		t.Errorf("the editor does not highlight python's keywords")
	}
	shot("run")

	// Findings are marked in the editor at their lines and listed: a
	// warning on a run that ran, and a run the policies refuse. Typing
	// (Ctrl-Enter) runs it too.
	markedLine := func(severity string) string {
		return fmt.Sprintf(`[...document.querySelectorAll("#code .cm-line")].filter((l) => l.querySelector(".cm-lintRange-%s")).map((l) => l.textContent).join("|")`, severity)
	}
	warned := "import os\nprint('listing')\nos.system('ls /')\n"
	run("a run with a warning", setCode("#code", warned), chromedp.Focus(`#code .cm-content`), chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		waitText("#summary", "exit 0"), waitText("#summary", "patterns/python.os_system line 3"),
		until(markedLine("warning")+` === "os.system('ls /')"`), chromedp.WaitVisible(`#code .cm-lint-marker-warning`))
	shot("run-finding")
	denied := "echo cleaning up\nrm -rf /\n"
	run("a denied run", chromedp.SetValue(`select[name=language]`, "bash"), setCode("#code", denied),
		chromedp.Click(`form button[type=submit]`),
		waitText("#summary .error", "policy"), waitText("#summary", "patterns/shell.rm_rf_root line 2"),
		until(markedLine("error")+` === "rm -rf /"`))
	if out := eval(`document.querySelector("#output").innerText`); out != "" {
		t.Errorf("a denied run printed %q", out)
	}
	shot("run-denied")

	// A session made on the sessions page; its terminal echoes keys.
	run("create a session", goTo("#/sessions"),
		chromedp.WaitVisible(`form select[name=language]`),
		chromedp.Click(`form button[type=submit]`),
		chromedp.WaitVisible(`#terminal .xterm`))
	id := strings.TrimPrefix(eval(`location.hash`).(string), "#/sessions/")
	t.Cleanup(func() { _ = c.DeleteSession(context.Background(), id) })
	screen := `(window.sandboxdTerminal ? (() => { const b = window.sandboxdTerminal.buffer.active; let s = "";
		for (let i = 0; i < b.length; i++) s += b.getLine(i).translateToString(true) + "\n"; return s; })() : "")`
	run("the terminal's prompt", until(screen+`.includes("$ ")`))
	run("typing in the terminal", chromedp.Focus(`#terminal textarea`), typeKeys("echo typed-$((6*7)) > out.txt; cat out.txt\r"),
		until(screen+`.includes("typed-42\n")`))
	// A server the session starts shows up under Ports; its preview link
	// opens it.
	serveSite(t, c, id, 8123, "served-in-the-session")
	run("the session's port", waitText("#ports", "8123"), chromedp.Click(`#ports button`), chromedp.WaitVisible(`#ports a.preview`))
	preview := eval(`document.querySelector("#ports a.preview").href`).(string)
	if !strings.Contains(preview, "8123-"+id+".localhost") {
		t.Errorf("the preview link: %s", preview)
	}
	// Upload: the file input on the session page.
	upload := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(upload, []byte("uploaded from chromium\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("upload", chromedp.SetUploadFiles(`#files input[name=upload]`, []string{upload}),
		waitText("#files", "notes.txt"), waitText("#files", "out.txt"))
	body, _, err := c.GetFile(ctx(t), id, "notes.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(body)
	body.Close()
	if string(got) != "uploaded from chromium\n" {
		t.Errorf("the uploaded file in the session: %q %v", got, err)
	}
	// Download: the file's link, saved by the browser.
	run("download", chromedp.Click(`#files a[download="out.txt"]`))
	waitFor(t, "the download", func() bool {
		b, err := os.ReadFile(filepath.Join(downloads, "out.txt"))
		return err == nil && string(b) == "typed-42\n"
	})
	// Delete (the page asks first; the test says yes).
	run("delete", chromedp.Click(`#files button[title="delete notes.txt"]`),
		until(`!document.querySelector("#files").innerText.includes("notes.txt")`))
	shot("session")
	run("the preview", chromedp.Navigate(preview), waitText("body", "served-in-the-session"))
	run("back to the dashboard", chromedp.Navigate(link.Scheme+"://"+link.Host+"/ui/#/sessions/"+id), chromedp.WaitVisible(`#terminal .xterm`))

	// History, filtered to this session: the terminal, recorded when the
	// page left it, is there.
	run("leave the session", goTo("#/"), waitText("main", "Pools"))
	waitFor(t, "the terminal's record", func() bool {
		list, err := c.Executions(ctx(t), 10, api.ExecutionFilter{Session: id, Kind: "terminal"})
		return err == nil && len(list) > 0
	})
	run("history of the session", goTo("#/history?session="+id), waitText("main", "terminal"))
	run("history", goTo("#/history"), waitText("main table", "denied"), waitText("main table", "line 2: deletes the whole filesystem"))
	shot("history")
	run("languages", goTo("#/languages"), waitText("main", "sandboxd/python"))

	// Approvals: a run the review policy asks about shows up on the page
	// live, with its code and the finding at its line; a person denies
	// one (a reason is required) and approves the other, and each run
	// ends as decided.
	ran := make(chan error, 2)
	reviewed := func(word string) {
		go func() {
			res, err := c.Run(context.Background(), api.RunRequest{Language: "python", Code: "NEEDS_REVIEW = '" + word + "'\nprint(NEEDS_REVIEW)\n"})
			if err == nil && res.Stdout != word+"\n" {
				err = fmt.Errorf("the approved run printed %q", res.Stdout)
			}
			ran <- err
		}()
	}
	run("the approvals page", goTo("#/approvals"), waitText("#pending", "Nothing waits"))
	reviewed("first")
	run("a pending approval, live", waitText("#pending", "example.word"), waitText("#pending .annotated", "NEEDS_REVIEW found in code"))
	// The dashboard decides as the uid that made its login link: a login
	// the test's own uid made may not approve the test's own run.
	if code, body := decideThroughOwnLogin(t, d); code != http.StatusForbidden || !strings.Contains(body, "nobody approves their own request") {
		t.Errorf("a dashboard login of the requester's own uid approving: %d %s", code, body)
	}
	shot("approvals")
	run("deny without a reason", chromedp.Click(`#pending .approval button.danger`), waitText("#pending", "Say why"))
	run("deny with one", chromedp.SendKeys(`#pending .approval input[name=reason]`, "not this one"),
		chromedp.Click(`#pending .approval button.danger`), waitText("#decided", "not this one"), waitText("#pending", "Nothing waits"))
	if err := <-ran; apiCode(err) != api.CodeApprovalDenied || !strings.Contains(err.Error(), "denied by the dashboard, signed in by ") || !strings.Contains(err.Error(), ": not this one") {
		t.Errorf("the denied run: %v", err)
	}
	reviewed("second")
	run("approve", waitText("#pending", "example.word"), chromedp.Click(`#pending .approval button:not(.danger)`),
		waitText("#decided", "approved"), waitText("#pending", "Nothing waits"))
	if err := <-ran; err != nil {
		t.Errorf("the approved run: %v", err)
	}
	shot("approvals-decided")

	// The notebook on a python session's contexts: the starter cells
	// show a DataFrame (a table, in a frame without script) and a
	// matplotlib figure (an image), and the file the figure was saved to
	// under outputs/, previewed.
	nb := newSession(t, c, api.SessionRequest{Language: "python"})
	cell := func(n int, sel string) string { return fmt.Sprintf(".cell:nth-child(%d) %s", n, sel) }
	run("the notebook", goTo("#/sessions/"+nb+"/notebook"), chromedp.WaitVisible(cell(2, ".cm-content")),
		waitText("#context-state", "not running"),
		chromedp.Click(`main .toolbar button`), // Run all
		until(`document.querySelector(".cell:nth-child(2) .cell-output").dataset.state === "done"`),
		waitText(cell(1, ".cell-meta"), "context started"),
		until(`(document.querySelector(".cell:nth-child(2) img.shown") || {}).naturalWidth > 100`),
		until(`(document.querySelector(".cell:nth-child(2) .output-file img.preview") || {}).naturalWidth > 100`),
		waitText("#context-state", "running"))
	frame := eval(`(() => { const f = document.querySelector(".cell:nth-child(1) iframe.html");
		return f ? [f.getAttribute("sandbox"), f.srcdoc.includes("<table"), f.srcdoc.includes("<td>16</td>"), f.offsetHeight] : null; })()`)
	if f, _ := frame.([]any); len(f) != 4 || f[0] != "" || f[1] != true || f[2] != true || f[3].(float64) < 100 {
		t.Errorf("the DataFrame's frame (sandbox, a table, its values, height): %v", frame)
	}
	// HTML that tries to run script, inline and as a handler, runs none.
	before := dialogsOpened.Load()
	hostile := "class Page:\n    def _repr_html_(self):\n        return '<p>shown</p><script>alert(1)</script><img src=x onerror=alert(2)>'\nPage()"
	run("hostile HTML", chromedp.Click(`main .toolbar button:nth-of-type(3)`), // Add cell
		chromedp.WaitVisible(cell(3, ".cm-content")), setCode(cell(3, ".cell-editor"), hostile), chromedp.Click(cell(3, ".cell-tools button")),
		until(`!!document.querySelector(".cell:nth-child(3) iframe.html")`))
	time.Sleep(time.Second) // time for a script to have run, if it could
	if n := dialogsOpened.Load(); n != before {
		t.Errorf("HTML a cell showed opened %d dialogs", n-before)
	}
	shot("notebook")
	pid := regexp.MustCompile(`pid \d+`).FindString(eval(`document.querySelector("#context-state").innerText`).(string))
	run("restart the context", chromedp.Click(`main .toolbar button:nth-of-type(2)`), waitText("#context-state", "restarted"))
	if state := eval(`document.querySelector("#context-state").innerText`).(string); pid == "" || strings.Contains(state, pid+",") || !strings.Contains(state, "running, pid") {
		t.Errorf("the context before a restart (%s), and after: %s", pid, state)
	}

	// What the session uses moves while a cell burns CPU.
	run("the session's usage", goTo("#/sessions/"+nb), chromedp.WaitVisible(`#usage .figure canvas`))
	burn := make(chan error, 1)
	go func() {
		_, err := c.Exec(context.Background(), nb, api.ExecRequest{Context: "main", Code: "import time\nend = time.time() + 8\nwhile time.time() < end: pass\n"})
		burn <- err
	}()
	run("the CPU sparkline", until(`Number(document.querySelector("#usage").dataset.cpuPercent) > 50`),
		until(`Number(document.querySelector("#usage").dataset.samples) > 3`))
	shot("session-usage")
	if err := <-burn; err != nil {
		t.Errorf("the cell that burned CPU: %v", err)
	}

	// The overview's charts: a burst of runs shows up in the next sample.
	run("the charts", goTo("#/"), until(`document.querySelectorAll("#charts canvas").length === 6`))
	for i := range 8 {
		if _, err := c.Run(ctx(t), api.RunRequest{Language: "python", Code: fmt.Sprintf("print(%d)", i)}); err != nil {
			t.Fatal(err)
		}
	}
	run("the burst charted", until(`Number(document.querySelector("#charts").dataset.executions) >= 8`))
	shot("overview-charts")

	if violations := eval(`window.cspViolations`).([]any); len(violations) > 0 {
		t.Errorf("the pages broke their Content Security Policy: %v", violations)
	}
}

// typeKeys types text as a person's keystrokes: a key down that carries
// the character, then the key up, each; \r is the Enter key.
func typeKeys(text string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, _ *chromedp.Target) (chromedp.Void, error) {
		for _, r := range text {
			down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Text: string(r), Key: string(r)}
			if r == '\r' {
				down.Key, down.Code, down.WindowsVirtualKeyCode = "Enter", "Enter", 13
			}
			up := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyUp, Key: down.Key, Code: down.Code, WindowsVirtualKeyCode: down.WindowsVirtualKeyCode}
			for _, ev := range []input.DispatchKeyEventParams{down, up} {
				if _, err := chromedp.Call(ctx, input.DispatchKeyEvent, ev); err != nil {
					return chromedp.Void{}, err
				}
			}
		}
		return chromedp.Void{}, nil
	}
}

// decideThroughOwnLogin signs in to the dashboard with a login link the
// test's own uid made, and approves the one pending approval there, as
// its page would.
func decideThroughOwnLogin(t *testing.T, d *testutil.Daemon) (int, string) {
	t.Helper()
	login, err := d.Client().DashboardLogin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	pending, err := d.Client().Approvals(ctx(t), api.ApprovalPending)
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending approvals: %v %v", pending, err)
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	resp, err := browser.Get(login.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	u, _ := url.Parse(login.URL)
	req, _ := http.NewRequest(http.MethodPost, u.Scheme+"://"+u.Host+"/v1/approvals/"+pending[0].ID+"/approve", nil)
	for _, c := range jar.Cookies(u) {
		if c.Name == "sandboxd_csrf" {
			req.Header.Set("X-Sandboxd-CSRF", c.Value)
		}
	}
	resp, err = browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
