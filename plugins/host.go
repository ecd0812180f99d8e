package plugins

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/plugins/language"
	"github.com/sandboxd/sandboxd/plugins/policy"
)

// ErrUnavailable means a plugin could not be started or did not answer; the
// request that hit it fails, and the plugin is restarted with backoff.
var ErrUnavailable = errdefs.New(errdefs.PluginUnavailable, "plugin unavailable")

// Backoff bounds between restarts of a failing plugin.
const (
	minBackoff = 200 * time.Millisecond
	maxBackoff = 30 * time.Second
)

// Health is a plugin's state as the daemon sees it.
type Health struct {
	Kind      Kind      `json:"kind"`
	Name      string    `json:"name"`
	Path      string    `json:"path"`
	Running   bool      `json:"running"`
	Restarts  int       `json:"restarts"`
	LastError string    `json:"last_error,omitempty"`
	RetryAt   time.Time `json:"retry_at,omitempty"`
}

// Process is one plugin binary: started on first use, restarted with backoff
// after it crashes or hangs. Safe for concurrent use.
type Process struct {
	kind        Kind
	name        string
	path        string
	env         []string // KEY=VALUE added to the plugin's environment
	callTimeout time.Duration
	logger      hclog.Logger

	mu       sync.Mutex
	client   *plugin.Client
	raw      interface{}
	starts   int
	failures int
	retryAt  time.Time
	lastErr  string
}

// NewProcess describes the plugin binary of kind and name in dir, started
// with env (KEY=VALUE) added to its environment. Nothing is started until
// the first call. The binary must exist.
func NewProcess(dir string, kind Kind, name string, callTimeout time.Duration, logger hclog.Logger, env ...string) (*Process, error) {
	path := filepath.Join(dir, kind.BinaryName(name))
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: %w (build it with `make`, or check plugin_dir)", name, err)
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("plugin %q: %s is not an executable file", name, path)
	}
	return &Process{
		kind: kind, name: name, path: path, env: env, callTimeout: callTimeout,
		logger: logger.Named("plugin").With("plugin", kind.BinaryName(name)),
	}, nil
}

// dispense returns the live plugin interface, starting the process if needed.
func (p *Process) dispense() (interface{}, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client != nil && !p.client.Exited() {
		return p.raw, nil
	}
	if p.client != nil {
		p.client.Kill()
		p.client = nil
		p.noteFailureLocked("plugin process exited")
	}
	if wait := time.Until(p.retryAt); wait > 0 {
		return nil, fmt.Errorf("%w: %s %q is restarting after %q; next try in %s",
			ErrUnavailable, p.kind, p.name, p.lastErr, wait.Round(time.Millisecond))
	}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  Handshake,
		Plugins:          hostSet,
		Cmd:              p.command(),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           p.logger,
		StartTimeout:     10 * time.Second,
		AutoMTLS:         true,
		GRPCDialOptions:  []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessage), grpc.MaxCallSendMsgSize(MaxMessage))},
	})
	rpc, err := client.Client()
	if err == nil {
		var raw interface{}
		raw, err = rpc.Dispense(p.kind.dispenseName())
		if err == nil {
			if p.starts > 0 {
				p.logger.Info("plugin restarted", "restarts", p.starts)
			}
			p.starts++
			p.client, p.raw = client, raw
			return raw, nil
		}
	}
	client.Kill()
	p.noteFailureLocked(err.Error())
	return nil, fmt.Errorf("%w: starting %s: %v", ErrUnavailable, p.path, err)
}

func (p *Process) command() *exec.Cmd {
	cmd := exec.Command(p.path)
	// A plugin dies with sandboxd however sandboxd dies (a SIGKILL or a
	// crash included), never left running with init as its parent. The
	// signal follows the forking thread: sandboxd locks no thread to a
	// goroutine, so the runtime's threads live as long as it does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if len(p.env) > 0 {
		cmd.Env = append(os.Environ(), p.env...)
	}
	return cmd
}

// noteFailureLocked records a failure and schedules the next start.
func (p *Process) noteFailureLocked(reason string) {
	p.failures++
	backoff := minBackoff << min(p.failures-1, 8)
	p.retryAt = time.Now().Add(min(backoff, maxBackoff))
	p.lastErr = reason
	p.logger.Warn("plugin failed", "error", reason, "retry_in", time.Until(p.retryAt).Round(time.Millisecond))
}

// call runs fn against the plugin with the call deadline. A call that hits
// its deadline, or finds the process gone, kills the plugin so the next call
// starts a fresh one (after backoff). Errors are classified by their gRPC
// status, as Nomad does: Unavailable (the connection broke: the process
// crashed or is going) is ErrUnavailable even when the process has not
// been seen to exit yet.
func (p *Process) call(ctx context.Context, fn func(ctx context.Context, raw interface{}) error) error {
	raw, err := p.dispense()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, p.callTimeout)
	defer cancel()
	err = fn(ctx, raw)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err == nil:
		p.failures = 0
		return nil
	case ctx.Err() == context.DeadlineExceeded || status.Code(err) == codes.DeadlineExceeded:
		// gRPC may see the deadline (the plugin's side resets the stream
		// at it) a moment before the context reports it.
		p.killLocked(fmt.Sprintf("no answer within %s", p.callTimeout))
		return fmt.Errorf("%w: %s %q did not answer within %s", ErrUnavailable, p.kind, p.name, p.callTimeout)
	case status.Code(err) == codes.Unavailable || (p.client != nil && p.client.Exited()):
		p.killLocked("plugin process exited")
		return fmt.Errorf("%w: %s %q crashed during the call", ErrUnavailable, p.kind, p.name)
	}
	return err
}

func (p *Process) killLocked(reason string) {
	if p.client != nil {
		p.client.Kill()
		p.client = nil
	}
	p.noteFailureLocked(reason)
}

// Health reports the plugin's state without starting it.
func (p *Process) Health() Health {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := Health{
		Kind: p.kind, Name: p.name, Path: p.path,
		Running:   p.client != nil && !p.client.Exited(),
		Restarts:  max(p.starts-1, 0),
		LastError: p.lastErr,
	}
	if time.Now().Before(p.retryAt) {
		h.RetryAt = p.retryAt
	}
	return h
}

// Close stops the plugin process.
func (p *Process) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client != nil {
		p.client.Kill()
		p.client = nil
	}
}

// Language is a language plugin behind a Process: every call has a deadline
// and survives plugin crashes.
type Language struct{ *Process }

var _ language.Language = Language{}

// Info implements language.Language.
func (l Language) Info(ctx context.Context) (info language.Info, err error) {
	err = l.call(ctx, func(ctx context.Context, raw interface{}) error {
		info, err = raw.(language.Language).Info(ctx)
		return err
	})
	return info, err
}

// Plan implements language.Language.
func (l Language) Plan(ctx context.Context, req language.PlanRequest) (plan language.Plan, err error) {
	err = l.call(ctx, func(ctx context.Context, raw interface{}) error {
		plan, err = raw.(language.Language).Plan(ctx, req)
		return err
	})
	return plan, err
}

// Policy is a policy plugin behind a Process, as Language is.
type Policy struct{ *Process }

var _ policy.Policy = Policy{}

// Info implements policy.Policy.
func (p Policy) Info(ctx context.Context) (info policy.Info, err error) {
	err = p.call(ctx, func(ctx context.Context, raw interface{}) error {
		info, err = raw.(policy.Policy).Info(ctx)
		return err
	})
	return info, err
}

// Check implements policy.Policy.
func (p Policy) Check(ctx context.Context, req policy.Request) (v policy.Verdict, err error) {
	err = p.call(ctx, func(ctx context.Context, raw interface{}) error {
		v, err = raw.(policy.Policy).Check(ctx, req)
		return err
	})
	return v, err
}
