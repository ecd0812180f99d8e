// Package pool keeps warm sandboxes for one language: it creates them ahead
// of demand in the background, hands them out, and after a run either
// takes one back, once its owner has recycled it, or destroys it.
//
// An item that served a run is "used": it goes only to Acquire (one-shot
// runs, each in a fresh sandbox the owner's recycle made), never to Take
// (a session keeps only an item that never ran anything). How many items
// to keep follows demand: the pool aims to hold as many idle as were in
// use (or, for sessions, asked for) at once at the recent peak (at least
// MinIdle), so a steady stream finds one ready and a burst of sessions
// finds the next burst's, and destroys idle items beyond that after
// IdleTimeout. While the host is low on memory (Options.Pressure), and
// for IdleTimeout after, it forgets that demand, keeps MinIdle at most,
// and destroys the idle items past it at once.
//
// The pool owns the count of its items (idle + busy + recycling +
// starting + being destroyed never exceeds Max) and the goroutines that
// create, recycle and destroy them. It is generic over the item so its
// bookkeeping is tested without Docker; it knows nothing of what the items
// run.
package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/sandboxd/sandboxd/internal/errdefs"
)

// ErrExhausted means every container is busy and none freed up within the
// queue timeout.
var ErrExhausted = errdefs.New(errdefs.PoolExhausted, "pool exhausted")

// recycleWait bounds how long a caller waits for an item being recycled
// before it creates one (where there is room).
const recycleWait = 2 * time.Second

// ErrClosed means the pool is shutting down.
var ErrClosed = errdefs.New(errdefs.ShuttingDown, "sandboxd is shutting down; retry against the next instance")

// ErrNotReady is a Create that waits on something under way elsewhere
// (an image being built): retried as any failure, but no fault to log.
var ErrNotReady = errors.New("not ready")

// Hooks are how a pool makes, checks and ends its items. Create may call
// waiting, while it waits on something outside the pool (a node pulling
// an image), with what: callers queued for an item are told (WaitingFor).
type Hooks[T any] struct {
	Create  func(ctx context.Context, waiting func(why string)) (T, error)
	Destroy func(item T)
	Alive   func(item T) bool
}

// Options size a pool.
type Options struct {
	Name         string
	MinIdle      int
	Max          int
	QueueTimeout time.Duration
	// IdleTimeout is how long an idle item above the target is kept, and
	// how long a peak of demand is remembered (default 60 s).
	IdleTimeout time.Duration
	// Starts bounds container creations across all pools sharing it.
	Starts chan struct{}
	// Pressure, checked every second, says the host is low on memory.
	Pressure func() bool
	Logger   hclog.Logger
}

// Pool is a warm pool of T.
type Pool[T any] struct {
	opts  Options
	hooks Hooks[T]
	log   hclog.Logger

	mu        sync.Mutex
	idle      []idleItem[T] // newest last
	busy      int
	recycling int
	starting  int
	creating  int // of starting: made on a caller's request path
	removing  int
	// Demand: the most items busy at once in this window of IdleTimeout
	// and in the one before, sessions asking within a second included.
	peak, lastPeak int
	asks           []time.Time // when sessions asked, this last second
	// pressed: the host was low on memory within IdleTimeout (at
	// pressedAt), so that a pool that shed does not grow back and shed
	// again every second.
	pressed   bool
	pressedAt time.Time

	waiting int // callers queued in Acquire for room
	// Callers waiting for an item, in the order they came: an item goes
	// to the first of them that can take it, never to a caller that came
	// later (with 8 clients some waited past the queue timeout while
	// later ones were served).
	queue      []waiter
	lastTicket uint64
	// What the creations in flight wait on, by creation, as they last said.
	waits    map[uint64]string
	lastWait uint64
	changed  chan struct{} // closed and replaced on every change
	closed   bool
	closing  context.Context // done at Close: refills in flight give up
	cancel   context.CancelFunc
	failures int // consecutive create failures, for backoff
	retryAt  time.Time
	stats    Stats
	wg       sync.WaitGroup
	retryTmr *time.Timer
}

// waiter is a caller waiting for an item.
type waiter struct {
	ticket uint64
	fresh  bool
}

// idleItem is an item waiting in the pool.
type idleItem[T any] struct {
	item  T
	used  bool      // it served a run: one-shot runs only
	since time.Time // idle since
}

// New starts a pool and begins filling it.
func New[T any](opts Options, hooks Hooks[T]) *Pool[T] {
	if opts.Starts == nil {
		opts.Starts = make(chan struct{}, 2)
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = time.Minute
	}
	p := &Pool[T]{opts: opts, hooks: hooks, log: opts.Logger.Named("pool").With("language", opts.Name), changed: make(chan struct{}),
		waits: map[uint64]string{}}
	p.closing, p.cancel = context.WithCancel(context.Background())
	if opts.Pressure != nil && opts.Pressure() {
		p.pressed, p.pressedAt = true, time.Now()
	}
	p.mu.Lock()
	p.fillLocked()
	p.mu.Unlock()
	p.wg.Add(1)
	go p.trim()
	return p
}

func (p *Pool[T]) totalLocked() int {
	return len(p.idle) + p.busy + p.recycling + p.starting + p.removing
}

// targetLocked is how many items the pool wants ready (idle, or on their
// way back from recycling): what the recent peak of demand would take
// beyond the items busy now, and MinIdle at least, within Max.
func (p *Pool[T]) targetLocked() int {
	if p.pressed {
		return min(p.opts.Max, p.opts.MinIdle)
	}
	return min(p.opts.Max, max(p.opts.MinIdle, max(p.peak, p.lastPeak)-p.busy))
}

// freshReserveLocked is how many never-used items the pool keeps ready
// for sessions (Take) whatever runs use: runs prefer used items, but take
// a fresh one when every used one is busy or being recycled, and a pool
// left with used items alone made each session pay for a creation (on
// this machine a session's create went from 2 ms to 140 ms after a stream
// of runs).
func (p *Pool[T]) freshReserveLocked() int { return min(p.opts.MinIdle, 1) }

// freshIdleLocked counts the idle items that never served a run.
func (p *Pool[T]) freshIdleLocked() int {
	n := 0
	for _, it := range p.idle {
		if !it.used {
			n++
		}
	}
	return n
}

// usedLocked notes an item going into use, for the peak of demand.
func (p *Pool[T]) usedLocked() {
	p.busy++
	p.peak = max(p.peak, p.busy)
}

// Asked notes a session asked for, whose item Take will be asked for
// soon, for the peak of demand: a session's item never comes back, so a
// burst of sessions needs as many items as were asked for within a
// second, though none stays busy. The pool holds as many for the next
// burst. (Noted as the request comes: in a burst past sessions.max the
// Takes come later, as other sessions freeze to make room.)
func (p *Pool[T]) Asked() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pressed {
		return // no growing ahead of demand while memory is low
	}
	now := time.Now()
	recent := p.asks[:0]
	for _, at := range p.asks {
		if now.Sub(at) < time.Second {
			recent = append(recent, at)
		}
	}
	if len(recent) < p.opts.Max { // past Max, demand is the same
		recent = append(recent, now)
	}
	p.asks = recent
	p.peak = max(p.peak, p.busy+len(p.asks))
	p.fillLocked()
}

func (p *Pool[T]) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Acquire takes a warm item, used or fresh, or creates one when none is
// idle and there is room, or waits up to the queue timeout for room. The
// item is the caller's until Release or Recycle.
func (p *Pool[T]) Acquire(ctx context.Context) (T, error) { return p.acquire(ctx, false) }

// acquire is Acquire; fresh takes only an item that never served a run.
func (p *Pool[T]) acquire(ctx context.Context, fresh bool) (T, error) {
	var zero T
	began := time.Now()
	timeout := p.opts.QueueTimeout
	if fresh {
		timeout = max(timeout, sessionQueueTimeout)
	}
	queue := time.NewTimer(timeout)
	defer queue.Stop()
	queued, expired := queue.C, false
	recycleWaited := time.NewTimer(recycleWait)
	defer recycleWaited.Stop()
	var made chan error // this caller's creation, while in flight
	missed := false     // the caller found none idle and made one
	ticket := uint64(0) // its place in the queue, once it waits
	defer func() {
		p.mu.Lock()
		p.leaveLocked(ticket)
		p.mu.Unlock()
	}()
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return zero, ErrClosed
		}
		for i := p.pickLocked(fresh); i >= 0 && p.turnLocked(ticket, fresh); i = p.pickLocked(fresh) {
			it := p.idle[i]
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			if p.hooks.Alive != nil && !p.hooks.Alive(it.item) {
				p.destroyLocked(it.item)
				continue
			}
			p.usedLocked()
			if !missed {
				p.stats.Hits++
			}
			if it.used {
				p.stats.Reused++
			}
			// Refill after the run, so that creating a replacement does
			// not compete for CPU with the run it serves; at once only
			// when the pool has run dry.
			if len(p.idle) == 0 {
				p.fillLocked()
			}
			p.leaveLocked(ticket)
			ticket = 0
			p.mu.Unlock()
			return it.item, nil
		}
		if expired && made == nil {
			// Past the timeout, the caller waited only for its own
			// creation, and it went to another caller.
			p.mu.Unlock()
			return zero, p.exhausted(timeout)
		}
		if fresh && p.totalLocked() >= p.opts.Max && p.starting == 0 && p.removing == 0 {
			// Room for a fresh item is taken by used ones waiting idle:
			// one goes, unless a fresh one is on its way or room is being
			// made already (else each wake-up took another).
			if i := p.oldestLocked(); i >= 0 {
				it := p.idle[i]
				p.idle = append(p.idle[:i], p.idle[i+1:]...)
				p.destroyLocked(it.item)
			}
		}
		// An item on its way (back from a recycle, or being made for the
		// pool or another caller) serves a caller sooner than a creation
		// of its own, and without its cost: wait for one while there are
		// more idle or on their way than callers waiting (the ones queued
		// first take the idle ones), for a while (a
		// recycle slowed by a loaded machine). While the pool has items
		// (busy, being recycled, or idle and taken by the callers queued
		// first), one caller at a time makes one. On a loaded machine creations compete
		// for the CPU with the runs and recycles that would free an item
		// sooner, and callers each creating are a spiral (python at 4
		// clients from a pool of 2: 14 creations at once, no run served for
		// 3 s; node at 4 runs/s: runs of 80 ms waiting 5-12 s). And as
		// many callers make theirs at once as the start limit lets
		// refills run, the rest waiting for them: the engine makes no more
		// a second with more at once (about 8 here from 2 on), and 30 at
		// once took each 3.6 s where 2 at a time served the first in
		// tenths of a second.
		idle, _ := p.forCallerLocked(ticket, fresh)
		coming := idle + p.starting
		if !fresh {
			coming += p.recycling
		}
		held := p.busy + p.recycling + len(p.idle)
		wait := time.Since(began) < recycleWait && (coming > p.waiting || (held > 0 && p.creating > 0))
		if !wait && made == nil && p.totalLocked() < p.opts.Max && p.creating < cap(p.opts.Starts) {
			// A miss: make one for this caller, outside the start limit
			// (the caller is waiting; refills are not). It joins the idle
			// items, and the caller takes the first one free, its own or
			// one back from a run sooner: a creation that stalls (a pod
			// the cluster cannot place yet) holds up no caller while
			// others free up.
			p.starting++
			p.creating++
			if !missed {
				p.stats.Misses++
			}
			missed = true
			made = make(chan error, 1)
			p.wg.Add(1)
			go p.createForCaller(made)
		}
		if ticket == 0 {
			p.lastTicket++
			ticket = p.lastTicket
			p.queue = append(p.queue, waiter{ticket: ticket, fresh: fresh})
		}
		changed := p.changed
		p.waiting++
		p.mu.Unlock()
		select {
		case <-changed:
			p.unwait()
		case <-recycleWaited.C:
			p.unwait() // and create one, if there is room
		case err := <-made:
			p.unwait()
			if err != nil {
				return zero, err
			}
			made = nil // take it, unless another caller did first
		case <-queued:
			p.unwait()
			if made == nil {
				return zero, p.exhausted(timeout)
			}
			// Its own creation is under way, bounded by its own timeout.
			queued, expired = nil, true
		case <-ctx.Done():
			p.unwait()
			return zero, ctx.Err()
		}
	}
}

// turnLocked says whether a caller (ticket 0: one not queued yet) may
// take an idle item: the callers queued before it for items of its kind
// take theirs first, as many as there are.
func (p *Pool[T]) turnLocked(ticket uint64, fresh bool) bool {
	idle, ahead := p.forCallerLocked(ticket, fresh)
	return idle > ahead
}

// forCallerLocked counts the idle items a caller (ticket 0: one not
// queued yet) may take, and the callers queued before it for items of its
// kind. The fresh items that sessions queued before a run wait for are
// theirs (the withheld reserve among them).
func (p *Pool[T]) forCallerLocked(ticket uint64, fresh bool) (idle, ahead int) {
	sessionsAhead := 0
	for _, q := range p.queue {
		if q.ticket == ticket {
			break
		}
		switch {
		case q.fresh == fresh:
			ahead++
		case q.fresh:
			sessionsAhead++
		}
	}
	idle = p.idleForLocked(fresh)
	if !fresh && sessionsAhead > 0 {
		idle = len(p.idle) - max(p.withheldLocked(), min(sessionsAhead, p.freshIdleLocked()))
	}
	return idle, ahead
}

// idleForLocked counts the idle items a caller may take: fresh ones for a
// fresh caller, any but the withheld reserve for another.
func (p *Pool[T]) idleForLocked(fresh bool) int {
	if fresh {
		return p.freshIdleLocked()
	}
	return len(p.idle) - p.withheldLocked()
}

// withheldLocked is how many fresh idle items runs leave alone now: the
// fresh reserve, while a used item is on its way back from a recycle and
// there is room to make the reserve again. A run waits for the recycle
// (as it does where there is no reserve) rather than take the reserve
// and have the pool create one for each run that comes during a recycle.
func (p *Pool[T]) withheldLocked() int {
	if p.recycling == 0 || p.totalLocked() >= p.opts.Max {
		return 0
	}
	return min(p.freshIdleLocked(), p.freshReserveLocked())
}

// leaveLocked takes a caller out of the queue; those after it may take
// an item that is idle now.
func (p *Pool[T]) leaveLocked(ticket uint64) {
	for i, q := range p.queue {
		if q.ticket == ticket {
			p.queue = append(p.queue[:i], p.queue[i+1:]...)
			if len(p.idle) > 0 {
				p.notifyLocked()
			}
			return
		}
	}
}

// pickLocked is the index of the idle item to hand out next, -1 for none:
// the newest used one (fresh ones are kept for sessions), else the newest.
func (p *Pool[T]) pickLocked(fresh bool) int {
	if !fresh && p.idleForLocked(false) <= 0 {
		return -1
	}
	pick := -1
	for i, it := range p.idle {
		switch {
		case it.used && !fresh:
			pick = i
		case !it.used && (pick < 0 || !p.idle[pick].used):
			pick = i
		}
	}
	return pick
}

// oldestLocked is the index of the used idle item idle the longest, -1
// for none.
func (p *Pool[T]) oldestLocked() int {
	for i, it := range p.idle {
		if it.used {
			return i
		}
	}
	return -1
}

// exhausted says what held the pool's containers when a caller gave up:
// runs (raise max), or creations and cleanups the engine is slow to finish
// (a loaded host; raise queue_timeout).
func (p *Pool[T]) exhausted(waited time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Errorf("%w: no %s container free for %s: of at most %d, %d running programs, %d being started, %d being cleaned, %d being removed; retry later, or raise the pool's max or queue_timeout",
		ErrExhausted, p.opts.Name, waited, p.opts.Max, p.busy, p.starting, p.recycling, p.removing)
}

// sessionQueueTimeout is how long a session (Take) waits at least: a
// burst of sessions past the pool waits for the engine to make their
// containers, about ten a second on two cores, and one that gave up
// after queue_timeout's 5 s with containers on their way failed for
// nothing.
const sessionQueueTimeout = 30 * time.Second

func (p *Pool[T]) unwait() {
	p.mu.Lock()
	p.waiting--
	p.mu.Unlock()
}

// Take is Acquire for an item that never comes back (a session's
// container): a fresh one, never used. The pool stops counting it,
// refills at once, and the caller destroys it when done.
func (p *Pool[T]) Take(ctx context.Context) (T, error) {
	item, err := p.acquire(ctx, true)
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
	p.stats.Retired++
	p.destroyLocked(item)
}

// Recycle ends an item's use and gives it to clean in the background:
// when clean says it is as fresh as a new one, it goes back to the pool
// as used; otherwise, or when the pool closes meanwhile, it is destroyed.
// clean's context ends when the pool closes.
func (p *Pool[T]) Recycle(item T, clean func(ctx context.Context, item T) bool) {
	p.mu.Lock()
	p.busy--
	p.recycling++
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		ok := clean(p.closing, item)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.recycling--
		if !ok || p.closed {
			p.stats.Retired++
			p.destroyLocked(item)
			return
		}
		p.stats.Recycled++
		p.idle = append(p.idle, idleItem[T]{item: item, used: true, since: time.Now()})
		p.notifyLocked()
	}()
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

// fillLocked starts background creations until the target is idle or
// starting, within Max, after any backoff from failures; as many at once
// as the pools' shared start limit lets run, the next as each ends. A
// pool that queued its whole target on the limit at once (32 after a
// burst) held every place up to Max for creations that waited behind
// other pools' refills, and a session asking for one gave up after its
// queue timeout, none made.
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
	for (len(p.idle)+p.recycling+p.starting < p.targetLocked() || p.freshIdleLocked()+p.starting < p.freshReserveLocked()) &&
		p.totalLocked() < p.opts.Max && p.starting-p.creating < cap(p.opts.Starts) {
		p.starting++
		p.wg.Add(1)
		go p.createIdle()
	}
}

// createForCaller makes an item for a caller that found none idle and
// puts it among the idle ones; made says how it went.
func (p *Pool[T]) createForCaller(made chan<- error) {
	defer p.wg.Done()
	item, err := p.create()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.starting--
	p.creating--
	defer p.notifyLocked() // waiters may make one now
	made <- err
	if err != nil {
		p.stats.Failures++
		p.stats.LastError = err.Error()
		// It counted toward the target while it ran: refills left it
		// room, which is now empty.
		p.fillLocked()
		return
	}
	p.stats.Created++
	if p.closed {
		p.destroyLocked(item)
		return
	}
	p.idle = append(p.idle, idleItem[T]{item: item, since: time.Now()})
}

// create is one call of the Create hook, with what it waits on kept
// while it runs.
func (p *Pool[T]) create() (T, error) {
	p.mu.Lock()
	p.lastWait++
	id := p.lastWait
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.waits, id)
		p.mu.Unlock()
	}()
	return p.hooks.Create(p.closing, func(why string) {
		p.mu.Lock()
		p.waits[id] = why
		p.mu.Unlock()
	})
}

// WaitingFor says what a caller queued now waits on, "" when nothing in
// particular: the latest word of a creation in flight, or that every
// item is busy.
func (p *Pool[T]) WaitingFor() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waitingForLocked()
}

func (p *Pool[T]) waitingForLocked() string {
	if why := p.startingForLocked(); why != "" {
		return why
	}
	if p.busy >= p.opts.Max {
		return fmt.Sprintf("all %d %s containers are busy", p.opts.Max, p.opts.Name)
	}
	return ""
}

// startingForLocked is what the newest creation that said so waits on.
func (p *Pool[T]) startingForLocked() string {
	var newest uint64
	for id, why := range p.waits {
		if why != "" {
			newest = max(newest, id)
		}
	}
	return p.waits[newest]
}

func (p *Pool[T]) createIdle() {
	defer p.wg.Done()
	var item T
	var err error
	select {
	case p.opts.Starts <- struct{}{}:
		item, err = p.create()
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
		if errors.Is(err, ErrNotReady) {
			p.log.Debug("a warm container waits", "error", err, "retry_in", backoff)
		} else {
			p.log.Warn("creating a warm container failed", "error", err, "retry_in", backoff)
		}
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
	p.idle = append(p.idle, idleItem[T]{item: item, since: time.Now()})
	p.fillLocked() // the next of a refill
}

// trim ends each window of IdleTimeout: the peak of demand moves on, and
// idle items beyond the target that waited a whole window are destroyed,
// the longest idle first. Every second it also destroys idle items that
// died (a container removed, a pod evicted from a drained node), so that
// the pool makes their replacements before a request finds them dead,
// and sheds idle items while the host is low on memory.
func (p *Pool[T]) trim() {
	defer p.wg.Done()
	tick := time.NewTicker(p.opts.IdleTimeout)
	defer tick.Stop()
	check := time.NewTicker(deadCheck)
	defer check.Stop()
	for {
		select {
		case <-p.closing.Done():
			return
		case now := <-check.C:
			pressed := p.opts.Pressure != nil && p.opts.Pressure()
			p.mu.Lock()
			p.destroyDeadLocked()
			switch {
			case pressed:
				p.shedLocked(now)
			case p.pressed && now.Sub(p.pressedAt) >= p.opts.IdleTimeout:
				p.pressed = false
				p.log.Info("host memory available again: the pool follows demand")
			}
			p.mu.Unlock()
		case now := <-tick.C:
			p.mu.Lock()
			p.lastPeak, p.peak = p.peak, p.busy
			p.trimLocked(now, p.opts.IdleTimeout, p.targetLocked())
			p.mu.Unlock()
		}
	}
}

// shedLocked is trim while the host is low on memory: the demand seen is
// forgotten, so that the pool does not grow back to it when memory comes
// back, and the idle items past MinIdle go now, however briefly idle, but
// those the callers waiting now will take.
func (p *Pool[T]) shedLocked(now time.Time) {
	if !p.pressed {
		p.log.Warn("host memory low (sessions.memory_low): the pool keeps min_idle at most", "idle", len(p.idle), "min_idle", p.opts.MinIdle)
	}
	p.pressed, p.pressedAt = true, now
	p.peak, p.lastPeak, p.asks = p.busy, 0, nil
	p.trimLocked(now, 0, p.targetLocked()+len(p.queue))
}

// trimLocked destroys idle items beyond keep that were idle at least
// idleFor at now, the longest idle first.
func (p *Pool[T]) trimLocked(now time.Time, idleFor time.Duration, keep int) {
	for len(p.idle) > keep {
		i := p.trimmableLocked(now, idleFor)
		if i < 0 {
			return
		}
		it := p.idle[i]
		p.idle = append(p.idle[:i], p.idle[i+1:]...)
		p.stats.Trimmed++
		p.destroyLocked(it.item)
	}
}

// trimmableLocked is the index of the idle item to trim at now, -1 for
// none: the longest idle of those idle at least idleFor, but the fresh
// reserve.
func (p *Pool[T]) trimmableLocked(now time.Time, idleFor time.Duration) int {
	spare := p.freshIdleLocked() > p.freshReserveLocked()
	for i, it := range p.idle {
		if now.Sub(it.since) >= idleFor && (it.used || spare) {
			return i
		}
	}
	return -1
}

// deadCheck is how often idle items are checked for life.
const deadCheck = time.Second

// destroyDeadLocked destroys the idle items that died.
func (p *Pool[T]) destroyDeadLocked() {
	if p.hooks.Alive == nil {
		return
	}
	live := p.idle[:0]
	for _, it := range p.idle {
		if p.hooks.Alive(it.item) {
			live = append(live, it)
		} else {
			p.destroyLocked(it.item)
		}
	}
	clear(p.idle[len(live):])
	p.idle = live
}

// Stats are a pool's figures: its items by state now (StartingFor: what
// the ones being made wait on outside sandboxd, when they said), the
// targets it keeps, and counts since it began.
type Stats struct {
	Idle, IdleUsed, Busy, Recycling, Starting, Removing, Waiting int
	StartingFor                                                  string
	Target, MinIdle, Max                                         int
	Hits, Reused, Misses, Created, Recycled                      uint64
	Retired, Trimmed, Destroyed, Failures                        uint64
	LastError                                                    string
}

// Stats reports the pool's figures.
func (p *Pool[T]) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Idle, s.Busy, s.Recycling, s.Starting, s.Removing, s.Waiting = len(p.idle), p.busy, p.recycling, p.starting, p.removing, p.waiting
	s.Target, s.MinIdle, s.Max = p.targetLocked(), p.opts.MinIdle, p.opts.Max
	s.StartingFor = p.startingForLocked()
	for _, it := range p.idle {
		if it.used {
			s.IdleUsed++
		}
	}
	return s
}

// Close stops refilling, destroys idle items and waits until every
// creation, recycling and destruction in flight has finished, or ctx
// ends. Busy items are the callers' to Release or Recycle (which destroy
// them now) before Close returns.
func (p *Pool[T]) Close(ctx context.Context) {
	p.mu.Lock()
	p.closed = true
	p.cancel()
	if p.retryTmr != nil {
		p.retryTmr.Stop()
	}
	for _, it := range p.idle {
		p.destroyLocked(it.item)
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
			p.waitDestroys(ctx)
			return
		}
	}
	p.waitDestroys(ctx)
}

// waitDestroys waits for the removals under way, until ctx ends: an engine
// that does not answer holds each for its call's bound, and a shutdown
// leaves them to the next start's reconcile rather than wait that long.
func (p *Pool[T]) waitDestroys(ctx context.Context) {
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Renew replaces the idle items (their image was rebuilt) and forgets past
// failures, so the pool fills again at once.
func (p *Pool[T]) Renew() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, it := range p.idle {
		p.destroyLocked(it.item)
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
