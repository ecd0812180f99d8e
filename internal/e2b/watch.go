package e2b

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/sandboxd/sandboxd/internal/e2b/envd"
)

// Watches. The workspace lives in the container, where sandboxd has no
// inotify of its own: a watch lists the directory every pollEvery and
// reports what appeared (create), changed size or time (write) and went
// (remove) since the last look. Changes between two looks that undo each
// other are not seen; a rename is a remove and a create.

// Bounds of watches.
const (
	pollEvery      = 300 * time.Millisecond
	maxWatchers    = 16    // per sandbox, streams and pollers together
	maxWatched     = 10000 // entries one watch may look at
	maxPendingWait = 1000  // events a poller keeps until they are fetched
	watcherIdle    = 5 * time.Minute
)

type watchers struct {
	mu      sync.Mutex
	n       int                // watches running
	pollers map[string]*poller // CreateWatcher's, by id
	cancels map[*context.CancelFunc]bool
}

func newWatchers() *watchers {
	return &watchers{pollers: map[string]*poller{}, cancels: map[*context.CancelFunc]bool{}}
}

// start reserves a watch and derives its context, ended by stopAll.
func (ws *watchers) start(ctx context.Context) (context.Context, func(), error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.n >= maxWatchers {
		return nil, nil, connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("this sandbox has %d watches already: stop one first", maxWatchers))
	}
	ws.n++
	wctx, cancel := context.WithCancel(ctx)
	ws.cancels[&cancel] = true
	return wctx, func() {
		cancel()
		ws.mu.Lock()
		if ws.cancels[&cancel] {
			delete(ws.cancels, &cancel)
			ws.n--
		}
		ws.mu.Unlock()
	}, nil
}

// stopAll ends every watch (the sandbox is going away or pausing).
func (ws *watchers) stopAll() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for c := range ws.cancels {
		(*c)()
	}
}

// snapshot is what a watch saw of a directory: path -> size and time.
type snapshot map[string]string

// look lists the watched directory.
func (s *Server) look(ctx context.Context, id, rel string, recursive bool) (snapshot, error) {
	list, aerr := s.d.Sessions.ListFiles(ctx, id, rel, recursive)
	if aerr != nil {
		return nil, connectError(aerr)
	}
	if len(list.Entries) > maxWatched {
		return nil, connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("%s holds %d entries, more than a watch looks at (%d): watch a smaller directory", rel, len(list.Entries), maxWatched))
	}
	snap := snapshot{}
	for _, e := range list.Entries {
		snap[e.Path] = fmt.Sprint(e.Type, e.Size, e.ModTime.UnixNano(), e.Mode)
	}
	return snap, nil
}

// changes are the events from one look to the next, names relative to
// the watched directory.
func changes(rel string, before, now snapshot) []*envd.FilesystemEvent {
	var out []*envd.FilesystemEvent
	name := func(p string) string {
		if rel == "." || rel == "" {
			return p
		}
		return strings.TrimPrefix(p, rel+"/")
	}
	for p, v := range now {
		switch old, ok := before[p]; {
		case !ok:
			out = append(out, &envd.FilesystemEvent{Name: name(p), Type: envd.EventType_EVENT_TYPE_CREATE})
		case old != v:
			out = append(out, &envd.FilesystemEvent{Name: name(p), Type: envd.EventType_EVENT_TYPE_WRITE})
		}
	}
	for p := range before {
		if _, ok := now[p]; !ok {
			out = append(out, &envd.FilesystemEvent{Name: name(p), Type: envd.EventType_EVENT_TYPE_REMOVE})
		}
	}
	return out
}

// watch looks at a directory until ctx ends, handing each look's events
// (none, often) to emit.
func (s *Server) watch(ctx context.Context, id, rel string, recursive bool, before snapshot, emit func([]*envd.FilesystemEvent) error) error {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		now, err := s.look(ctx, id, rel, recursive)
		if err != nil {
			return err
		}
		if err := emit(changes(rel, before, now)); err != nil {
			return err
		}
		before = now
	}
}

// watchTarget checks a directory to watch and takes its first look.
func (s *Server) watchTarget(ctx context.Context, p string, recursive bool) (string, snapshot, error) {
	rel, _, err := resolve(p)
	if err != nil {
		return "", nil, err
	}
	id := sandboxOf(ctx).rec.ID
	e, aerr := s.d.Sessions.Stat(ctx, id, rel)
	if aerr != nil {
		return "", nil, connectError(aerr)
	}
	if e.Type != "dir" {
		return "", nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("%s is not a directory", p))
	}
	snap, err := s.look(ctx, id, rel, recursive)
	return rel, snap, err
}

func (f filesystemService) WatchDir(ctx context.Context, req *connect.Request[envd.WatchDirRequest], stream *connect.ServerStream[envd.WatchDirResponse]) error {
	sb := sandboxOf(ctx)
	wctx, stop, err := sb.watch.start(ctx)
	if err != nil {
		return err
	}
	defer stop()
	rel, snap, err := f.s.watchTarget(wctx, req.Msg.GetPath(), req.Msg.GetRecursive())
	if err != nil {
		return err
	}
	if err := stream.Send(&envd.WatchDirResponse{Event: &envd.WatchDirResponse_Start{Start: &envd.WatchDirResponse_StartEvent{}}}); err != nil {
		return err
	}
	keep := time.Now()
	tick := keepTick(req.Header())
	return f.s.watch(wctx, sb.rec.ID, rel, req.Msg.GetRecursive(), snap, func(evs []*envd.FilesystemEvent) error {
		for _, ev := range evs {
			if err := stream.Send(&envd.WatchDirResponse{Event: &envd.WatchDirResponse_Filesystem{Filesystem: ev}}); err != nil {
				return err
			}
		}
		if time.Since(keep) > tick {
			keep = time.Now()
			return stream.Send(&envd.WatchDirResponse{Event: &envd.WatchDirResponse_Keepalive{Keepalive: &envd.WatchDirResponse_KeepAlive{}}})
		}
		return nil
	})
}

// poller is a watch whose events are fetched (GetWatcherEvents) rather
// than streamed; one not fetched for watcherIdle ends.
type poller struct {
	stop    func()
	mu      sync.Mutex
	pending []*envd.FilesystemEvent
	dropped int
	err     error
	fetched time.Time
}

func (f filesystemService) CreateWatcher(ctx context.Context, req *connect.Request[envd.CreateWatcherRequest]) (*connect.Response[envd.CreateWatcherResponse], error) {
	sb := sandboxOf(ctx)
	wctx, stop, err := sb.watch.start(f.s.base)
	if err != nil {
		return nil, err
	}
	rel, snap, err := f.s.watchTarget(context.WithValue(wctx, sandboxKey{}, sb), req.Msg.GetPath(), req.Msg.GetRecursive())
	if err != nil {
		stop()
		return nil, err
	}
	pl := &poller{stop: stop, fetched: time.Now()}
	id := randomToken()[:16]
	sb.watch.mu.Lock()
	sb.watch.pollers[id] = pl
	sb.watch.mu.Unlock()
	go func() {
		defer stop()
		err := f.s.watch(wctx, sb.rec.ID, rel, req.Msg.GetRecursive(), snap, func(evs []*envd.FilesystemEvent) error {
			pl.mu.Lock()
			defer pl.mu.Unlock()
			if time.Since(pl.fetched) > watcherIdle {
				return errors.New("its events were not fetched for " + watcherIdle.String())
			}
			room := max(maxPendingWait-len(pl.pending), 0)
			pl.dropped += max(len(evs)-room, 0)
			pl.pending = append(pl.pending, evs[:min(room, len(evs))]...)
			return nil
		})
		pl.mu.Lock()
		pl.err = err
		pl.mu.Unlock()
	}()
	return connect.NewResponse(&envd.CreateWatcherResponse{WatcherId: id}), nil
}

func (ws *watchers) poller(id string) (*poller, error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if pl, ok := ws.pollers[id]; ok {
		return pl, nil
	}
	return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("watcher %q not found", id))
}

func (f filesystemService) GetWatcherEvents(ctx context.Context, req *connect.Request[envd.GetWatcherEventsRequest]) (*connect.Response[envd.GetWatcherEventsResponse], error) {
	pl, err := sandboxOf(ctx).watch.poller(req.Msg.GetWatcherId())
	if err != nil {
		return nil, err
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.fetched = time.Now()
	if pl.err != nil && len(pl.pending) == 0 {
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("the watcher ended: %w", pl.err))
	}
	if pl.dropped > 0 {
		return nil, connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("%d events were dropped: fetch them more often", pl.dropped))
	}
	out := &envd.GetWatcherEventsResponse{Events: pl.pending}
	pl.pending = nil
	return connect.NewResponse(out), nil
}

func (f filesystemService) RemoveWatcher(ctx context.Context, req *connect.Request[envd.RemoveWatcherRequest]) (*connect.Response[envd.RemoveWatcherResponse], error) {
	ws := sandboxOf(ctx).watch
	pl, err := ws.poller(req.Msg.GetWatcherId())
	if err != nil {
		return nil, err
	}
	pl.stop()
	ws.mu.Lock()
	delete(ws.pollers, req.Msg.GetWatcherId())
	ws.mu.Unlock()
	return connect.NewResponse(&envd.RemoveWatcherResponse{}), nil
}
