package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

// desktopPage is what each desktop session's Chromium shows while its
// memory is measured: a page its own server serves.
const desktopPage = `<!doctype html><title>bench</title><h1>sandboxd</h1><p>` + "a desktop session's page" + `</p>`

// desktopSessions prints what a desktop session costs with the shipped
// desktop language (which keeps no warm containers: each session's
// container is made as it is asked for): the time from asking for a
// session to its first screenshot, one at a time and four at once; a
// screenshot and a click on a live one; and the memory each of four open
// sessions holds, idle and with Chromium showing a page.
func desktopSessions(c *client.Client, n int) error {
	ctx := context.Background()
	firstShot := func() (string, error) {
		s, err := c.CreateSession(ctx, api.SessionRequest{Language: "desktop"})
		if err != nil {
			return "", err
		}
		png, err := c.Screenshot(ctx, s.ID)
		if err == nil && len(png) < 1000 {
			err = fmt.Errorf("a screenshot of %d bytes", len(png))
		}
		return s.ID, err
	}
	var made []string
	defer func() {
		for _, id := range made {
			_ = c.DeleteSession(ctx, id)
		}
	}()
	one := measure(n, nil, func() error {
		id, err := firstShot()
		if id != "" {
			_ = c.DeleteSession(ctx, id)
		}
		return err
	})
	var mu sync.Mutex
	var burst []float64
	for round := 0; round < max(n/4, 2); round++ {
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				id, err := firstShot()
				took := float64(time.Since(start).Microseconds()) / 1000
				mu.Lock()
				defer mu.Unlock()
				if id != "" {
					made = append(made, id)
				}
				if err == nil {
					burst = append(burst, took)
				}
			}()
		}
		wg.Wait()
		if round < max(n/4, 2)-1 {
			for _, id := range made {
				_ = c.DeleteSession(ctx, id)
			}
			made = nil
		}
	}
	if len(made) == 0 {
		return fmt.Errorf("no desktop session was made")
	}
	live := made[0]
	shot := measure(n, nil, func() error { _, err := c.Screenshot(ctx, live); return err })
	x, y := 200, 200
	click := measure(n, nil, func() error {
		_, err := c.DesktopAction(ctx, live, api.DesktopAction{Action: "click", X: &x, Y: &y})
		return err
	})
	fmt.Println("\n| desktop session (shipped desktop language: XFCE, Chromium) | p50 ms | p95 ms | p99 ms |\n|---|---|---|---|")
	fmt.Printf("| ask → first screenshot, one at a time | %.0f | %.0f | %.0f |\n", one.p50, one.p95, one.p99)
	b := summarize(burst)
	fmt.Printf("| ask → first screenshot, 4 at once (%d) | %.0f | %.0f | %.0f |\n", len(burst), b.p50, b.p95, b.p99)
	fmt.Printf("| screenshot of a live session | %.1f | %.1f | %.1f |\n", shot.p50, shot.p95, shot.p99)
	fmt.Printf("| click (and the screen after it) | %.1f | %.1f | %.1f |\n", click.p50, click.p95, click.p99)

	idle := desktopMemory(c, made)
	for _, id := range made {
		if _, err := c.PutFile(ctx, id, "site/index.html", strings.NewReader(desktopPage), 0o644); err != nil {
			return err
		}
		if _, err := c.Exec(ctx, id, api.ExecRequest{Argv: []string{"sh", "-c", "cd site && setsid -f python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1"}}); err != nil {
			return err
		}
		time.Sleep(500 * time.Millisecond)
		if _, err := c.DesktopAction(ctx, id, api.DesktopAction{Action: "open", Target: "http://127.0.0.1:8000/"}); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, id := range made {
		for time.Now().Before(deadline) && !showing(c, id, "bench") {
			time.Sleep(500 * time.Millisecond)
		}
	}
	browsing := desktopMemory(c, made)
	fmt.Printf("\n%d desktop sessions open: %.0f MiB each idle (XFCE on its screen), %.0f MiB each with Chromium showing a page (memory less the page cache it could drop, from the sessions' metrics, after 5 s).\n",
		len(made), idle, browsing)
	return nil
}

// desktopMemory is the mean memory of the sessions, in MiB, 5 s on.
func desktopMemory(c *client.Client, ids []string) float64 {
	time.Sleep(5 * time.Second)
	var sum int64
	for _, id := range ids {
		if m, err := c.Metrics(context.Background(), id); err == nil && m.Now != nil {
			sum += m.Now.MemoryBytes
		}
	}
	return float64(sum) / float64(len(ids)) / (1 << 20)
}

// showing says whether a window of the session's screen has a title that
// starts with title.
func showing(c *client.Client, id, title string) bool {
	s, err := c.Desktop(context.Background(), id)
	if err != nil {
		return false
	}
	for _, w := range s.Windows {
		if strings.HasPrefix(w.Title, title) {
			return true
		}
	}
	return false
}
