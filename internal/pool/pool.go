// Package pool keeps warm sandboxes for one language: it creates them ahead
// of demand in the background, hands each out once, and destroys it after
// use. A container that ran untrusted code is never handed out again.
//
// The pool owns the count of its containers (idle + busy + starting +
// being destroyed never exceeds Max) and the goroutines that create and
// destroy them. It is generic over the item so its bookkeeping is tested
// without Docker; it knows nothing of what the items run.
package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sandboxd/sandboxd/api"
)

// ErrExhausted means every container is busy and none freed up within the
// queue timeout.
var ErrExhausted = errors.New("pool exhausted")

// ErrClosed means the pool is shutting down.
var ErrClosed = errors.New("pool closed")

// Hooks are how a pool makes, checks and ends its items.
type Hooks[T any] struct {
	Create  func(ctx context.Context) (T, error)
	Destroy func(item T)
	Alive   func(item T) bool
}

// Options size a pool.
type Options struct {
	Name         string
	MinIdle      int
	Max          int
	QueueTimeout time.Duration
	// Starts bounds container creations across all pools sharing it.
	Starts chan struct{}
	Logger hclog.Logger
}

// Pool is a warm pool of T.
type Pool[T any] struct {
	opts  Options
	hooks Hooks[T]
	log   hclog.Logger

	mu       sync.Mutex
	idle     []T
	busy     int
	starting int
	removing int
	waiting  int           // callers queued in Acquire for room
	changed  chan struct{} // closed and replaced on every change
	closed   bool
	closing  context.Context // done at Close: refills in flight give up
	cancel   context.CancelFunc
	failures int // consecutive create failures, for backoff
	retryAt  time.Time
	stats    api.PoolStats
	wg       sync.WaitGroup
	retryTmr *time.Timer
}

// New starts a pool and begins filling it.
func New[T any](opts Options, hooks Hooks[T]) *Pool[T] {
	if opts.Starts == nil {
		opts.Starts = make(chan struct{}, 2)
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	p := &Pool[T]{opts: opts, hooks: hooks, log: opts.Logger.Named("pool").With("language", opts.Name), changed: make(chan struct{})}
	p.closing, p.cancel = context.WithCancel(context.Background())
	p.mu.Lock()
	p.fillLocked()
	p.mu.Unlock()
	return p
}

func (p *Pool[T]) totalLocked() int { return len(p.idle) + p.busy + p.starting + p.removing }

func (p *Pool[T]) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Acquire takes a warm item, or creates one when none is idle and there is
// room, or waits up to the queue timeout for room. The item is the caller's
// until Release.
func (p *Pool[T]) Acquire(ctx context.Context) (T, error) {
	var zero T
	queue := time.NewTimer(p.opts.QueueTimeout)
	defer queue.Stop()
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return zero, ErrClosed
		}
		for len(p.idle) > 0 {
			item := p.idle[len(p.idle)-1]
			p.idle = p.idle[:len(p.idle)-1]
			if p.hooks.Alive != nil && !p.hooks.Alive(item) {
				p.destroyLocked(item)
				continue
			}
			p.busy++
			p.stats.Hits++
			// Refill when the item is released, so that creating its
			// replacement does not compete for CPU with the run it serves;
			// at once only when the pool has run dry.
			if len(p.idle) == 0 {
				p.fillLocked()
			}
			p.mu.Unlock()
			return item, nil
		}
		if p.totalLocked() < p.opts.Max {
			// A miss: create one for this caller, outside the start limit
			// (the caller is waiting; refills are not).
			p.starting++
			p.stats.Misses++
			p.mu.Unlock()
			item, err := p.hooks.Create(ctx)
			p.mu.Lock()
			p.starting--
			if err != nil {
				p.stats.Failures++
				p.stats.LastError = err.Error()
				p.notifyLocked()
				p.mu.Unlock()
				return zero, err
			}
			p.stats.Created++
			p.busy++
			p.fillLocked()
			p.mu.Unlock()
			return item, nil
		}
		changed := p.changed
		p.waiting++
		p.mu.Unlock()
		select {
		case <-changed:
			p.unwait()
		case <-queue.C:
			p.unwait()
			return zero, fmt.Errorf("%w: all %d %s containers busy for %s; retry later or raise pool max", ErrExhausted, p.opts.Max, p.opts.Name, p.opts.QueueTimeout)
		case <-ctx.Done():
			p.unwait()
			return zero, ctx.Err()
		}
	}
}

func (p *Pool[T]) unwait() {
	p.mu.Lock()
	p.waiting--
	p.mu.Unlock()
}

// Take is Acquire for an item that never comes back (a session's
// container): the pool stops counting it, refills at once, and the caller
// destroys it when done.
func (p *Pool[T]) Take(ctx context.Context) (T, error) {
	item, err := p.Acquire(ctx)
	if err != nil {
		return item, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.busy--
	p.fillLocked()
	p.notifyLocked()
	return item, nil
}

// Release ends an item's use: it is destroyed, never reused, and the pool
// refills.
func (p *Pool[T]) Release(item T) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.busy--
	p.destroyLocked(item)
}

// destroyLocked removes an item in the background; it still counts toward
// Max until it is gone.
func (p *Pool[T]) destroyLocked(item T) {
	p.removing++
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.hooks.Destroy(item)
		p.mu.Lock()
		p.removing--
		p.stats.Destroyed++
		p.fillLocked()
		p.notifyLocked()
		p.mu.Unlock()
	}()
}

// fillLocked starts background creations until MinIdle are idle or starting,
// within Max, after any backoff from failures.
func (p *Pool[T]) fillLocked() {
	if p.closed {
		return
	}
	if wait := time.Until(p.retryAt); wait > 0 {
		if p.retryTmr == nil {
			p.retryTmr = time.AfterFunc(wait, func() {
				p.mu.Lock()
				p.retryTmr = nil
				p.fillLocked()
				p.mu.Unlock()
			})
		}
		return
	}
	for len(p.idle)+p.starting < p.opts.MinIdle && p.totalLocked() < p.opts.Max {
		p.starting++
		p.wg.Add(1)
		go p.createIdle()
	}
}

func (p *Pool[T]) createIdle() {
	defer p.wg.Done()
	var item T
	var err error
	select {
	case p.opts.Starts <- struct{}{}:
		item, err = p.hooks.Create(p.closing)
		<-p.opts.Starts
	case <-p.closing.Done():
		err = p.closing.Err() // closed while waiting for a turn: no item
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	p.starting--
	defer p.notifyLocked()
	if err != nil && p.closed {
		return
	}
	if err != nil {
		p.failures++
		p.stats.Failures++
		p.stats.LastError = err.Error()
		backoff := min(time.Second<<min(p.failures-1, 5), 30*time.Second)
		p.retryAt = time.Now().Add(backoff)
		p.log.Warn("creating a warm container failed", "error", err, "retry_in", backoff)
		p.fillLocked()
		return
	}
	p.failures = 0
	p.stats.Created++
	if p.closed {
		p.destroyLocked(item)
		return
	}
	p.stats.LastError = ""
	p.idle = append(p.idle, item)
}

// Stats reports the pool's figures.
func (p *Pool[T]) Stats() api.PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Idle, s.Busy, s.Starting, s.Removing, s.Waiting = len(p.idle), p.busy, p.starting, p.removing, p.waiting
	s.Target, s.Max = p.opts.MinIdle, p.opts.Max
	return s
}

// Close stops refilling, destroys idle items and waits until every
// creation and destruction in flight has finished. Busy items are the
// callers' to Release (which destroys them) before Close returns.
func (p *Pool[T]) Close(ctx context.Context) {
	p.mu.Lock()
	p.closed = true
	p.cancel()
	if p.retryTmr != nil {
		p.retryTmr.Stop()
	}
	for _, item := range p.idle {
		p.destroyLocked(item)
	}
	p.idle = nil
	p.notifyLocked()
	p.mu.Unlock()
	for {
		p.mu.Lock()
		busy := p.busy
		changed := p.changed
		p.mu.Unlock()
		if busy == 0 {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			p.wg.Wait()
			return
		}
	}
	p.wg.Wait()
}

// Renew replaces the idle items (their image was rebuilt) and forgets past
// failures, so the pool fills again at once.
func (p *Pool[T]) Renew() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, item := range p.idle {
		p.destroyLocked(item)
	}
	p.idle = nil
	p.failures, p.retryAt = 0, time.Time{}
	if p.retryTmr != nil {
		p.retryTmr.Stop()
		p.retryTmr = nil
	}
	p.fillLocked()
	p.notifyLocked()
}
