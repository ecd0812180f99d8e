package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/sandboxd/sandboxd/client"
)

// pacedRate is the arrival rate of the paced section: runs per second of
// one language, started on the clock whether or not earlier ones ended.
const pacedRate = 4

// paced prints, for every language with a warm runtime, `sandboxctl run`'s
// p50 at rest (one run at a time, the pool refilled between runs) and at
// 4 runs/s arriving on the clock for long enough that the pool must
// recycle and grow: the latency a steady stream of one language sees.
func paced(c *client.Client, bin string, d *daemon, n int) error {
	fmt.Printf("\n## `sandboxctl run` at rest and at %d runs/s of one language (n=%d each)\n\n", pacedRate, n)
	fmt.Println("| language | at rest p50 ms | p95 | at 4 runs/s p50 | p95 | ratio of p50s (goal ≤ 1.5x) | failed |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, h := range hellos {
		if _, warm := coldTwin[h.name]; !warm {
			continue
		}
		prog := filepath.Join(d.dir, h.file)
		if err := os.WriteFile(prog, []byte(h.code+"\n"), 0o644); err != nil {
			return err
		}
		ctl := func() error {
			out, err := exec.Command(filepath.Join(bin, "sandboxctl"), "--socket", d.socket, "run", "--lang", h.name, prog).Output()
			return checkOut(out, err, "hello\n")
		}
		waitWarm(c, h.name)
		rest := measure(n, func() error { waitQuiet(c, h.name); return nil }, ctl)
		waitQuiet(c, h.name)
		var mu sync.Mutex
		var samples []float64
		failed := 0
		var wg sync.WaitGroup
		tick := time.NewTicker(time.Second / pacedRate)
		for range n {
			<-tick.C
			wg.Add(1)
			go func() {
				defer wg.Done()
				began := time.Now()
				err := ctl()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					if failed++; failed == 1 {
						fmt.Fprintf(os.Stderr, "bench: %s at %d runs/s: %v\n", h.name, pacedRate, err)
					}
					return
				}
				samples = append(samples, float64(time.Since(began).Microseconds())/1000)
			}()
		}
		tick.Stop()
		wg.Wait()
		load := summarize(samples)
		fmt.Printf("| %s | %.0f | %.0f | %.0f | %.0f | %s | %d |\n", h.name, rest.p50, rest.p95, load.p50, load.p95, ratio(load.p50, rest.p50), failed)
	}
	return nil
}
