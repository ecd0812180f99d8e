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
	"github.com/sandboxd/sandboxd/internal/sessions"
	"github.com/sandboxd/sandboxd/internal/wire"
)

// Watches: a session's watch (inotify in the sandbox, see
// sessions.Watch), its events named relative to the watched directory,
// streamed (WatchDir) or kept until fetched (CreateWatcher).

// Bounds of watches.
const (
	maxWatchers    = 16   // per sandbox, streams and pollers together
	maxPendingWait = 1000 // events a poller keeps until they are fetched
	watcherIdle    = 5 * time.Minute
	watchSetWait   = 30 * time.Second
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

// eventTypes maps sandboxd's kinds of change to envd's.
var eventTypes = map[string]envd.EventType{
	"create": envd.EventType_EVENT_TYPE_CREATE, "write": envd.EventType_EVENT_TYPE_WRITE, "remove": envd.EventType_EVENT_TYPE_REMOVE,
	"rename": envd.EventType_EVENT_TYPE_RENAME, "chmod": envd.EventType_EVENT_TYPE_CHMOD,
}

// watch runs a session's watch of a client's directory until ctx ends or
// the directory goes: set is called once it is set, emit with each
// batch's events, named relative to the directory. withEntry adds each
// event's entry, where its path is there to describe (not once removed).
// Network mounts, which envd may be told to watch, are none here.
func (s *Server) watch(ctx context.Context, p string, recursive, withEntry bool, set func(), emit func([]*envd.FilesystemEvent)) error {
	rel, root, err := resolve(p)
	if err != nil {
		return err
	}
	id := sandboxOf(ctx).rec.ID
	first := true
	aerr := s.d.Sessions.Watch(ctx, id, rel, recursive, func(evs []sessions.FileEvent) {
		if first {
			first = false
			set()
		}
		var out []*envd.FilesystemEvent
		for _, ev := range evs {
			if t, ok := eventTypes[ev.Type]; ok {
				name := ev.Path
				if rel != "" && rel != "." {
					name = strings.TrimPrefix(name, strings.TrimSuffix(rel, "/")+"/")
				}
				fe := &envd.FilesystemEvent{Name: name, Type: t}
				if withEntry && t != envd.EventType_EVENT_TYPE_REMOVE {
					// emit runs apart from the sandbox's reader: it may ask.
					if e, aerr := s.d.Sessions.Stat(ctx, id, ev.Path); aerr == nil {
						fe.Entry = entryInfo(root, wire.FileEntry(*e))
					}
				}
				out = append(out, fe)
			}
		}
		if len(out) > 0 {
			emit(out)
		}
	})
	if aerr != nil {
		return connectError(aerr)
	}
	return nil
}

func (f filesystemService) WatchDir(ctx context.Context, req *connect.Request[envd.WatchDirRequest], stream *connect.ServerStream[envd.WatchDirResponse]) error {
	wctx, stop, err := sandboxOf(ctx).watch.start(ctx)
	if err != nil {
		return err
	}
	defer stop()
	var mu sync.Mutex // the watch's deliveries and the keepalives both send
	var sendErr error
	send := func(r *envd.WatchDirResponse) {
		mu.Lock()
		defer mu.Unlock()
		if sendErr == nil {
			if sendErr = stream.Send(r); sendErr != nil {
				stop()
			}
		}
	}
	go func() {
		t := time.NewTicker(keepTick(req.Header()))
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
				send(&envd.WatchDirResponse{Event: &envd.WatchDirResponse_Keepalive{Keepalive: &envd.WatchDirResponse_KeepAlive{}}})
			}
		}
	}()
	err = f.s.watch(wctx, req.Msg.GetPath(), req.Msg.GetRecursive(), req.Msg.GetIncludeEntry(), func() {
		send(&envd.WatchDirResponse{Event: &envd.WatchDirResponse_Start{Start: &envd.WatchDirResponse_StartEvent{}}})
	}, func(evs []*envd.FilesystemEvent) {
		for _, ev := range evs {
			send(&envd.WatchDirResponse{Event: &envd.WatchDirResponse_Filesystem{Filesystem: ev}})
		}
	})
	mu.Lock()
	defer mu.Unlock()
	return errors.Join(err, sendErr)
}

// poller is a watch whose events are fetched (GetWatcherEvents) rather
// than streamed; one not fetched for watcherIdle ends.
type poller struct {
	stop    func()
	mu      sync.Mutex
	pending []*envd.FilesystemEvent
	dropped int
	err     error
	ended   bool
	fetched time.Time
}

func (f filesystemService) CreateWatcher(ctx context.Context, req *connect.Request[envd.CreateWatcherRequest]) (*connect.Response[envd.CreateWatcherResponse], error) {
	sb := sandboxOf(ctx)
	wctx, stop, err := sb.watch.start(context.WithValue(f.s.base, sandboxKey{}, sb))
	if err != nil {
		return nil, err
	}
	pl := &poller{stop: stop, fetched: time.Now()}
	set := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		defer stop()
		err := f.s.watch(wctx, req.Msg.GetPath(), req.Msg.GetRecursive(), req.Msg.GetIncludeEntry(), func() { close(set) }, func(evs []*envd.FilesystemEvent) {
			pl.mu.Lock()
			defer pl.mu.Unlock()
			room := max(maxPendingWait-len(pl.pending), 0)
			pl.dropped += max(len(evs)-room, 0)
			pl.pending = append(pl.pending, evs[:min(room, len(evs))]...)
		})
		pl.mu.Lock()
		pl.err, pl.ended = err, true
		pl.mu.Unlock()
	}()
	go pl.expire(wctx)
	select {
	case <-set:
	case <-ended:
		return nil, pl.err
	case <-time.After(watchSetWait):
		stop()
		return nil, connect.NewError(connect.CodeUnavailable, errors.New("the watch was not set in time"))
	}
	id := randomToken()[:16]
	sb.watch.mu.Lock()
	sb.watch.pollers[id] = pl
	sb.watch.mu.Unlock()
	return connect.NewResponse(&envd.CreateWatcherResponse{WatcherId: id}), nil
}

// expire ends a poller nobody fetches from.
func (pl *poller) expire(ctx context.Context) {
	t := time.NewTicker(watcherIdle / 10)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			pl.mu.Lock()
			idle := time.Since(pl.fetched) > watcherIdle
			pl.mu.Unlock()
			if idle {
				pl.stop()
				return
			}
		}
	}
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
	switch {
	case pl.dropped > 0:
		n := pl.dropped
		pl.dropped = 0
		return nil, connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("%d events were dropped: fetch them more often", n))
	case pl.ended && len(pl.pending) == 0:
		why := "its directory is gone, or it was not fetched from for " + watcherIdle.String()
		if pl.err != nil {
			why = pl.err.Error()
		}
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("the watcher ended: %s", why))
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
