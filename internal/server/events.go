package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/sandboxd/sandboxd/internal/timeline"
	"github.com/sandboxd/sandboxd/internal/wire"
)

// statsEvery is how often the event stream sends the daemon's figures.
const statsEvery = 2 * time.Second

// events streams server-sent events (text/event-stream, so a browser's
// EventSource reads them): "stats" (the body of GET /v1/stats) at once
// and every statsEvery, "execution" (a history record) as each execution
// is recorded, and "sample" as the timeline takes one (GET
// /v1/stats/history has those before). It ends when sandboxd drains.
func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported on this connection", http.StatusInternalServerError)
		return
	}
	executions, stop := h.d.WatchExecutions()
	defer stop()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	send := func(event string, v any) bool {
		if err := onWire(v); err != nil {
			h.log.Error("an event not sent", "event", event, "error", err)
			return false
		}
		data, _ := json.Marshal(v)
		_, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data)
		flusher.Flush()
		return err == nil
	}
	tick := time.NewTicker(statsEvery)
	defer tick.Stop()
	tl := h.d.Timeline()
	seq := tl.Seq()
	for ok := send("stats", wire.Stats(h.d.Stats())); ok && !h.d.Draining(); {
		select {
		case <-r.Context().Done():
			return
		case e := <-executions:
			ok = send("execution", wire.Execution(e))
		case <-tick.C:
			ok = send("stats", wire.Stats(h.d.Stats()))
			var samples []timeline.Sample
			samples, seq = tl.Since(seq)
			for _, s := range samples {
				ok = ok && send("sample", wire.Sample(s))
			}
		}
	}
}
