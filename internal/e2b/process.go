package e2b

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/sandboxd/sandboxd/internal/daemon"
	"github.com/sandboxd/sandboxd/internal/e2b/envd"
	"github.com/sandboxd/sandboxd/internal/principal"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/internal/wire"
)

// Processes. A process an E2B client starts is a daemon Command in the
// sandbox's session, beside its other operations; it runs until it ends,
// is killed (SendSignal), the Start call's deadline passes (the SDKs'
// timeoutMs), or the session's time limit for one command does. A client
// that disconnects leaves it running (a background command), and any
// client may Connect to it again. Pids are sandboxd's handles, not the
// kernel's.

// Bounds of one sandbox's processes.
const (
	maxProcesses    = 64
	maxPendingInput = 1 << 20 // stdin bytes sent and not yet read
	subscriberQueue = 256     // events a slow client may fall behind
	defaultKeepTick = 50 * time.Second
)

type processes struct {
	mu    sync.Mutex
	next  uint32
	byPID map[uint32]*process
}

func newProcesses() *processes { return &processes{next: 1000, byPID: map[uint32]*process{}} }

// process is one command an E2B client started.
type process struct {
	pid    uint32
	tag    string
	config *envd.ProcessConfig
	stdin  *inbox                // nil: none asked for
	keys   chan daemon.TermInput // set for a process on a PTY
	cancel context.CancelFunc

	mu   sync.Mutex
	subs map[*subscriber]bool
	end  *envd.ProcessEvent_EndEvent // set once it ended
	done chan struct{}
}

// subscriber is one client's stream of a process's events.
type subscriber struct {
	events chan *envd.ProcessEvent
	lost   chan struct{} // closed when it fell too far behind
}

// add registers a new process, within maxProcesses.
func (ps *processes) add(p *process) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if len(ps.byPID) >= maxProcesses {
		return connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("this sandbox runs %d processes started through the E2B API already: kill one first", maxProcesses))
	}
	ps.next++
	p.pid = ps.next
	ps.byPID[p.pid] = p
	return nil
}

func (ps *processes) remove(p *process) {
	ps.mu.Lock()
	delete(ps.byPID, p.pid)
	ps.mu.Unlock()
}

// find returns the process a selector names.
func (ps *processes) find(sel *envd.ProcessSelector) (*process, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	switch {
	case sel == nil:
	case sel.GetTag() != "":
		for _, p := range ps.byPID {
			if p.tag == sel.GetTag() {
				return p, nil
			}
		}
	default:
		if p, ok := ps.byPID[sel.GetPid()]; ok {
			return p, nil
		}
	}
	return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("process %s not found: it ended, or was never started here", sel.String()))
}

func (ps *processes) list() []*envd.ProcessInfo {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := []*envd.ProcessInfo{}
	for _, p := range ps.byPID {
		info := &envd.ProcessInfo{Config: p.config, Pid: p.pid}
		if p.tag != "" {
			info.Tag = &p.tag
		}
		out = append(out, info)
	}
	return out
}

// killAll ends every process (the sandbox is going away).
func (ps *processes) killAll() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.byPID {
		p.cancel()
	}
}

func (p *process) subscribe() *subscriber {
	sub := &subscriber{events: make(chan *envd.ProcessEvent, subscriberQueue), lost: make(chan struct{})}
	p.mu.Lock()
	p.subs[sub] = true
	p.mu.Unlock()
	return sub
}

func (p *process) unsubscribe(sub *subscriber) {
	p.mu.Lock()
	delete(p.subs, sub)
	p.mu.Unlock()
}

// publish hands an event to every client following the process, never
// waiting for one: it is called from the sandbox's reader. A client that
// fell subscriberQueue events behind is dropped.
func (p *process) publish(ev *envd.ProcessEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for sub := range p.subs {
		select {
		case sub.events <- ev:
		default:
			close(sub.lost)
			delete(p.subs, sub)
		}
	}
}

// finish records how the process ended and tells its clients.
func (p *process) finish(end *envd.ProcessEvent_EndEvent) {
	p.mu.Lock()
	p.end = end
	p.mu.Unlock()
	if p.stdin != nil {
		p.stdin.close()
	}
	close(p.done)
}

// follow sends a process's events to one client until the process ends,
// the client falls behind, or its call ends; keepalives every tick.
func (p *process) follow(ctx context.Context, sub *subscriber, tick time.Duration, send func(*envd.ProcessEvent) error) error {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case ev := <-sub.events:
			if err := send(ev); err != nil {
				return err
			}
		case <-p.done:
			for {
				select {
				case ev := <-sub.events:
					if err := send(ev); err != nil {
						return err
					}
					continue
				default:
				}
				break
			}
			p.mu.Lock()
			end := p.end
			p.mu.Unlock()
			return send(&envd.ProcessEvent{Event: &envd.ProcessEvent_End{End: end}})
		case <-sub.lost:
			return connect.NewError(connect.CodeResourceExhausted, errors.New("this client read the process's output more slowly than it came: connect again to follow it"))
		case <-t.C:
			if err := send(&envd.ProcessEvent{Event: &envd.ProcessEvent_Keepalive{Keepalive: &envd.ProcessEvent_KeepAlive{}}}); err != nil {
				return err
			}
		case <-ctx.Done():
			return connect.NewError(connect.CodeDeadlineExceeded, fmt.Errorf("the call ended before the process: %w", ctx.Err()))
		}
	}
}

// keepTick is how often a stream sends keepalives: the interval, in
// seconds, the SDK asks for, within reason.
func keepTick(h interface{ Get(string) string }) time.Duration {
	if n, err := strconv.Atoi(h.Get("Keepalive-Ping-Interval")); err == nil && n >= 1 && n <= 600 {
		return time.Duration(n) * time.Second
	}
	return defaultKeepTick
}

type processService struct{ s *Server }

func (ps processService) Start(ctx context.Context, req *connect.Request[envd.StartRequest], stream *connect.ServerStream[envd.StartResponse]) error {
	// The process outlives this call, but not its deadline.
	deadline, _ := ctx.Deadline()
	p, sub, err := ps.s.spawn(sandboxOf(ctx), req.Msg, deadline)
	if err != nil {
		return err
	}
	defer p.unsubscribe(sub)
	if err := stream.Send(&envd.StartResponse{Event: &envd.ProcessEvent{Event: &envd.ProcessEvent_Start{Start: &envd.ProcessEvent_StartEvent{Pid: p.pid}}}}); err != nil {
		return err
	}
	return p.follow(ctx, sub, keepTick(req.Header()), func(ev *envd.ProcessEvent) error {
		if ev.GetEnd() != nil {
			ps.s.abortIfGone(sandboxOf(ctx))
		}
		return stream.Send(&envd.StartResponse{Event: ev})
	})
}

// spawn starts a process in a sandbox, ended at deadline unless it is
// zero, and returns it once the policies let it start, with a
// subscription to its events taken before the first.
func (s *Server) spawn(sb *sandbox, req *envd.StartRequest, deadline time.Time) (*process, *subscriber, error) {
	cfg := req.GetProcess()
	if cfg.GetCmd() == "" {
		return nil, nil, connect.NewError(connect.CodeInvalidArgument, errors.New("process.cmd is missing"))
	}
	cmd := daemon.Command{Kind: "process", Argv: append([]string{cfg.GetCmd()}, cfg.GetArgs()...), Env: maps.Clone(cfg.GetEnvs())}
	if cfg.Cwd != nil {
		rel, aerr := workspacePath(cfg.GetCwd())
		if aerr != nil {
			return nil, nil, connectError(aerr)
		}
		cmd.Cwd = rel
	}
	// E2B's home by name: a shell's pwd says /home/user (a link to the
	// workspace), as on E2B, where the directory is the same.
	if _, set := cmd.Env["PWD"]; !set {
		if cmd.Env == nil {
			cmd.Env = map[string]string{}
		}
		cmd.Env["PWD"] = clientPath(e2bHome, cmd.Cwd)
	}
	p := &process{tag: req.GetTag(), config: cfg, subs: map[*subscriber]bool{}, done: make(chan struct{})}
	switch {
	case req.Pty != nil:
		size := req.GetPty().GetSize()
		p.keys = make(chan daemon.TermInput, 64)
		cmd.TTY = &daemon.TTY{
			Size: daemon.WinSize{Rows: uint16(size.GetRows()), Cols: uint16(size.GetCols())}, In: p.keys,
			Out: func(b []byte) { p.publish(output(ptyStream, b)) },
		}
	default:
		cmd.Out = func(stream string, b []byte) { p.publish(output(stream, b)) }
		if req.GetStdin() {
			p.stdin = newInbox()
			cmd.Stdin = p.stdin
		}
	}
	// The process outlives its call, not its key: the records say whose
	// it is.
	base := principal.With(s.base, state.Requester{Via: principal.ViaE2B, Key: sb.rec.Key})
	pctx, cancel := context.WithCancel(base)
	if !deadline.IsZero() {
		pctx, cancel = context.WithDeadline(base, deadline)
	}
	p.cancel = cancel
	if err := sb.procs.add(p); err != nil {
		cancel()
		return nil, nil, err
	}
	sub := p.subscribe()
	started := make(chan struct{})
	refused := make(chan error, 1)
	cmd.Started = func() { close(started) }
	go func() {
		defer cancel()
		defer sb.procs.remove(p)
		res, aerr := s.d.Command(pctx, sb.rec.ID, cmd)
		select {
		case <-started:
		default:
			refused <- aerr
			p.finish(&envd.ProcessEvent_EndEvent{ExitCode: -1, Status: "not started"})
			return
		}
		p.finish(endEvent(res, aerr))
	}()
	select {
	case <-started:
		return p, sub, nil
	case aerr := <-refused:
		p.unsubscribe(sub)
		return nil, nil, connectError(aerr)
	}
}

// ptyStream names a PTY's output beside stdout and stderr.
const ptyStream = "pty"

// output is a data event of a stream's bytes (copied: they are queued).
func output(stream string, b []byte) *envd.ProcessEvent {
	b = bytes.Clone(b)
	d := &envd.ProcessEvent_DataEvent{}
	switch stream {
	case ptyStream:
		d.Output = &envd.ProcessEvent_DataEvent_Pty{Pty: b}
	case daemon.Stderr:
		d.Output = &envd.ProcessEvent_DataEvent_Stderr{Stderr: b}
	default:
		d.Output = &envd.ProcessEvent_DataEvent_Stdout{Stdout: b}
	}
	return &envd.ProcessEvent{Event: &envd.ProcessEvent_Data{Data: d}}
}

// endEvent says how a process ended, as envd would.
func endEvent(res *daemon.Result, aerr error) *envd.ProcessEvent_EndEvent {
	switch {
	case aerr != nil:
		msg := wire.ErrorOf(aerr).Message
		return &envd.ProcessEvent_EndEvent{ExitCode: -1, Status: "error", Error: &msg}
	case res.Error != "":
		return &envd.ProcessEvent_EndEvent{ExitCode: int32(res.ExitCode), Status: "error", Error: &res.Error}
	case res.TimedOut:
		msg := "killed at the session's time limit for one command"
		return &envd.ProcessEvent_EndEvent{ExitCode: int32(res.ExitCode), Status: "signal: killed", Error: &msg}
	case res.Signal != "":
		return &envd.ProcessEvent_EndEvent{ExitCode: int32(res.ExitCode), Status: "signal: " + res.Signal}
	}
	return &envd.ProcessEvent_EndEvent{ExitCode: int32(res.ExitCode), Exited: true, Status: "exit status " + strconv.Itoa(res.ExitCode)}
}

func (ps processService) Connect(ctx context.Context, req *connect.Request[envd.ConnectRequest], stream *connect.ServerStream[envd.ConnectResponse]) error {
	p, err := sandboxOf(ctx).procs.find(req.Msg.GetProcess())
	if err != nil {
		return err
	}
	sub := p.subscribe()
	defer p.unsubscribe(sub)
	if err := stream.Send(&envd.ConnectResponse{Event: &envd.ProcessEvent{Event: &envd.ProcessEvent_Start{Start: &envd.ProcessEvent_StartEvent{Pid: p.pid}}}}); err != nil {
		return err
	}
	return p.follow(ctx, sub, keepTick(req.Header()), func(ev *envd.ProcessEvent) error {
		if ev.GetEnd() != nil {
			ps.s.abortIfGone(sandboxOf(ctx))
		}
		return stream.Send(&envd.ConnectResponse{Event: ev})
	})
}

func (ps processService) List(ctx context.Context, _ *connect.Request[envd.ListRequest]) (*connect.Response[envd.ListResponse], error) {
	return connect.NewResponse(&envd.ListResponse{Processes: sandboxOf(ctx).procs.list()}), nil
}

func (ps processService) Update(ctx context.Context, req *connect.Request[envd.UpdateRequest]) (*connect.Response[envd.UpdateResponse], error) {
	p, err := sandboxOf(ctx).procs.find(req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if size := req.Msg.GetPty().GetSize(); size != nil {
		if p.keys == nil {
			return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New("the process has no PTY to resize"))
		}
		if err := p.key(ctx, daemon.TermInput{Size: &daemon.WinSize{Rows: uint16(size.GetRows()), Cols: uint16(size.GetCols())}}); err != nil {
			return nil, err
		}
	}
	return connect.NewResponse(&envd.UpdateResponse{}), nil
}

// key hands a PTY's process keys or a new size, in order.
func (p *process) key(ctx context.Context, in daemon.TermInput) error {
	select {
	case p.keys <- in:
		return nil
	case <-p.done:
		return connect.NewError(connect.CodeNotFound, errors.New("the process ended"))
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (ps processService) SendInput(ctx context.Context, req *connect.Request[envd.SendInputRequest]) (*connect.Response[envd.SendInputResponse], error) {
	p, err := sandboxOf(ctx).procs.find(req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	in := req.Msg.GetInput()
	switch {
	case in.GetPty() != nil:
		if p.keys == nil {
			return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New("the process has no PTY: send stdin"))
		}
		err = p.key(ctx, daemon.TermInput{Keys: in.GetPty()})
	case p.keys != nil:
		err = p.key(ctx, daemon.TermInput{Keys: in.GetStdin()})
	case p.stdin == nil:
		err = connect.NewError(connect.CodeFailedPrecondition, errors.New("the process was started without stdin: start it with stdin: true"))
	default:
		err = p.stdin.write(in.GetStdin())
	}
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&envd.SendInputResponse{}), nil
}

func (ps processService) CloseStdin(ctx context.Context, req *connect.Request[envd.CloseStdinRequest]) (*connect.Response[envd.CloseStdinResponse], error) {
	p, err := sandboxOf(ctx).procs.find(req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if p.stdin == nil {
		return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New("the process has no stdin to close (a PTY's ends with Ctrl-D)"))
	}
	p.stdin.close()
	return connect.NewResponse(&envd.CloseStdinResponse{}), nil
}

// SendSignal ends the process: SIGTERM and SIGKILL both kill it (and what
// it started) at once.
func (ps processService) SendSignal(ctx context.Context, req *connect.Request[envd.SendSignalRequest]) (*connect.Response[envd.SendSignalResponse], error) {
	p, err := sandboxOf(ctx).procs.find(req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	p.cancel()
	// The answer waits for the end, as envd's does: a command the client
	// starts next is not caught in this one's kill.
	select {
	case <-p.done:
	case <-time.After(killWait):
	case <-ctx.Done():
	}
	return connect.NewResponse(&envd.SendSignalResponse{}), nil
}

// killWait bounds how long a kill's answer waits for the process's end.
const killWait = 10 * time.Second

func (ps processService) StreamInput(context.Context, *connect.ClientStream[envd.StreamInputRequest]) (*connect.Response[envd.StreamInputResponse], error) {
	return nil, connect.NewError(connect.CodeUnimplemented, errors.New("StreamInput is not served: send input with SendInput"))
}

// inbox is a process's stdin as clients send it: bounded, so that a
// command that never reads costs at most maxPendingInput.
type inbox struct {
	mu     sync.Mutex
	more   *sync.Cond
	buf    []byte
	closed bool
}

func newInbox() *inbox {
	in := &inbox{}
	in.more = sync.NewCond(&in.mu)
	return in
}

func (in *inbox) Read(p []byte) (int, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for len(in.buf) == 0 && !in.closed {
		in.more.Wait()
	}
	if len(in.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, in.buf)
	in.buf = in.buf[n:]
	return n, nil
}

func (in *inbox) write(b []byte) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	switch {
	case in.closed:
		return connect.NewError(connect.CodeFailedPrecondition, errors.New("the process's stdin is closed"))
	case len(in.buf)+len(b) > maxPendingInput:
		return connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("the process has %d bytes of stdin it has not read yet: wait for it to read", len(in.buf)))
	}
	in.buf = append(in.buf, b...)
	in.more.Signal()
	return nil
}

func (in *inbox) close() {
	in.mu.Lock()
	in.closed = true
	in.more.Broadcast()
	in.mu.Unlock()
}

// connectError is a daemon error as the SDKs' Connect clients read it: the
// Connect code of the HTTP status the API answers it with.
func connectError(err error) error {
	e := wire.ErrorOf(err)
	code, ok := connectCodeOf[wire.Status(e)]
	if !ok {
		code = connect.CodeInternal
	}
	return connect.NewError(code, fmt.Errorf("[%s] %s", e.Code, e.Message))
}

// connectCodeOf is the Connect code of each HTTP status the API answers
// with (wire's table).
var connectCodeOf = map[int]connect.Code{
	http.StatusBadRequest:            connect.CodeInvalidArgument,
	http.StatusNotFound:              connect.CodeNotFound,
	http.StatusForbidden:             connect.CodePermissionDenied,
	http.StatusUnauthorized:          connect.CodeUnauthenticated,
	http.StatusTooManyRequests:       connect.CodeResourceExhausted,
	http.StatusRequestEntityTooLarge: connect.CodeResourceExhausted,
	http.StatusInsufficientStorage:   connect.CodeResourceExhausted,
	http.StatusServiceUnavailable:    connect.CodeUnavailable,
	http.StatusGone:                  connect.CodeUnavailable,
	http.StatusConflict:              connect.CodeFailedPrecondition,
}
