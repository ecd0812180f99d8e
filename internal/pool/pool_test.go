package pool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fake items: ints, with counters of creations and destructions.
type fake struct {
	created, destroyed atomic.Int64
	fail               atomic.Bool
	dead               sync.Map
}

func (f *fake) hooks() Hooks[int] {
	return Hooks[int]{
		Create: func(context.Context, func(string)) (int, error) {
			if f.fail.Load() {
				return 0, errors.New("engine down")
			}
			return int(f.created.Add(1)), nil
		},
		Destroy: func(int) { f.destroyed.Add(1) },
		Alive: func(i int) bool {
			_, dead := f.dead.Load(i)
			return !dead
		},
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("never: %s", what)
}

func TestFillsToMinIdleAndNeverReuses(t *testing.T) {
	f := &fake{}
	p := New(Options{Name: "x", MinIdle: 2, Max: 4, QueueTimeout: time.Second}, f.hooks())
	eventually(t, "2 idle", func() bool { return p.Stats().Idle == 2 })

	a, err := p.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.Hits != 1 || s.Busy != 1 || s.Idle != 1 || s.Starting != 0 {
		t.Fatalf("after acquire: %+v (refill waits for the release)", s)
	}
	p.Release(a)
	eventually(t, "refilled after release", func() bool { s := p.Stats(); return s.Idle == 2 && s.Destroyed == 1 })
	b, _ := p.Acquire(context.Background())
	if b == a {
		t.Fatal("an item was handed out twice")
	}
	p.Release(b)
	p.Close(context.Background())
	if f.created.Load() != f.destroyed.Load() {
		t.Fatalf("created %d, destroyed %d after Close", f.created.Load(), f.destroyed.Load())
	}
}

func TestRefillsAtOnceWhenDry(t *testing.T) {
	f := &fake{}
	p := New(Options{Name: "x", MinIdle: 1, Max: 4, QueueTimeout: time.Second}, f.hooks())
	eventually(t, "1 idle", func() bool { return p.Stats().Idle == 1 })
	a, _ := p.Acquire(context.Background())
	eventually(t, "refill while busy", func() bool { return p.Stats().Idle == 1 })
	p.Release(a)
	p.Close(context.Background())
}

func TestExhaustedAfterQueueTimeoutAndQueuedCallerServed(t *testing.T) {
	f := &fake{}
	p := New(Options{Name: "x", MinIdle: 0, Max: 1, QueueTimeout: 50 * time.Millisecond}, f.hooks())
	a, err := p.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Acquire(context.Background()); !errors.Is(err, ErrExhausted) {
		t.Fatalf("want ErrExhausted, got %v", err)
	}
	// A caller that queues gets a container once the busy one is released.
	p2 := New(Options{Name: "y", MinIdle: 0, Max: 1, QueueTimeout: 2 * time.Second}, f.hooks())
	b, _ := p2.Acquire(context.Background())
	got := make(chan error, 1)
	go func() {
		c, err := p2.Acquire(context.Background())
		if err == nil {
			p2.Release(c)
		}
		got <- err
	}()
	eventually(t, "the caller queued", func() bool { return p2.Stats().Waiting == 1 })
	p2.Release(b)
	if err := <-got; err != nil {
		t.Fatalf("queued caller: %v", err)
	}
	p.Release(a)
	p.Close(context.Background())
	p2.Close(context.Background())
}

func TestDeadIdleItemsAreSkipped(t *testing.T) {
	f := &fake{}
	p := New(Options{Name: "x", MinIdle: 1, Max: 2, QueueTimeout: time.Second}, f.hooks())
	eventually(t, "1 idle", func() bool { return p.Stats().Idle == 1 })
	f.dead.Store(1, true)
	a, err := p.Acquire(context.Background())
	if err != nil || a == 1 {
		t.Fatalf("got %d, %v: a dead item was handed out", a, err)
	}
	p.Release(a)
	p.Close(context.Background())
}

func TestCreateFailuresBackOffAndReport(t *testing.T) {
	f := &fake{}
	f.fail.Store(true)
	p := New(Options{Name: "x", MinIdle: 2, Max: 2, QueueTimeout: time.Second}, f.hooks())
	eventually(t, "both creates failed", func() bool { return p.Stats().Failures == 2 })
	p.mu.Lock()
	retryIn, retrying := time.Until(p.retryAt), p.retryTmr != nil
	p.mu.Unlock()
	if retryIn < 500*time.Millisecond || !retrying {
		t.Fatalf("no backoff: next try in %s, timer set %v", retryIn, retrying)
	}
	if s := p.Stats(); s.LastError != "engine down" {
		t.Fatalf("no error reported: %+v", s)
	}
	if _, err := p.Acquire(context.Background()); err == nil {
		t.Fatal("acquire succeeded with a failing engine")
	}
	p.Close(context.Background())
}

func TestTakenItemsLeaveThePoolAndAreReplaced(t *testing.T) {
	f := &fake{}
	p := New(Options{Name: "x", MinIdle: 2, Max: 2, QueueTimeout: time.Second}, f.hooks())
	eventually(t, "2 idle", func() bool { return p.Stats().Idle == 2 })
	a, err := p.Take(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Max counts only what the pool owns: the replacement fits.
	eventually(t, "refilled at once", func() bool { s := p.Stats(); return s.Idle == 2 && s.Busy == 0 })
	p.Close(context.Background())
	if f.destroyed.Load() != 2 || a == 0 {
		t.Fatalf("destroyed %d: the taken item is the caller's, not the pool's", f.destroyed.Load())
	}
}

// A pool closed while its creations wait for a turn (the daemon's limit on
// concurrent starts) destroys nothing it never made.
func TestClosedWhileWaitingForATurn(t *testing.T) {
	f := &fake{}
	starts := make(chan struct{}, 1)
	starts <- struct{}{} // every turn taken
	hooks := f.hooks()
	var destroyedZero atomic.Bool
	hooks.Destroy = func(i int) { destroyedZero.Store(destroyedZero.Load() || i == 0) }
	p := New(Options{Name: "x", MinIdle: 3, Max: 3, QueueTimeout: time.Second, Starts: starts}, hooks)
	eventually(t, "1 starting (the limit's one place)", func() bool { return p.Stats().Starting == 1 })
	time.Sleep(20 * time.Millisecond) // until they wait for a turn
	p.Close(context.Background())
	if destroyedZero.Load() || f.created.Load() != 0 {
		t.Fatalf("destroyed an item never made: %v, created %d", destroyedZero.Load(), f.created.Load())
	}
}

// A recycled item comes back to one-shot runs only; one its owner could
// not make fresh is destroyed.
func TestRecycledItemsServeRunsNotSessions(t *testing.T) {
	f := &fake{}
	p := New(Options{Name: "x", MinIdle: 1, Max: 3, QueueTimeout: time.Second}, f.hooks())
	eventually(t, "1 idle", func() bool { return p.Stats().Idle == 1 })
	a, _ := p.Acquire(context.Background())
	p.Recycle(a, func(context.Context, int) bool { return true })
	eventually(t, "recycled", func() bool { s := p.Stats(); return s.Recycled == 1 && s.IdleUsed == 1 })

	b, _ := p.Acquire(context.Background())
	if b != a {
		t.Fatalf("got %d: a run should get the recycled item %d first", b, a)
	}
	if s := p.Stats(); s.Reused != 1 {
		t.Fatalf("reuse not counted: %+v", s)
	}
	p.Recycle(b, func(context.Context, int) bool { return true })
	eventually(t, "recycled again", func() bool { return p.Stats().Recycled == 2 })
	taken, err := p.Take(context.Background())
	if err != nil || taken == a {
		t.Fatalf("a session took %d (%v): used item %d must never go to a session", taken, err, a)
	}
	c, _ := p.Acquire(context.Background())
	p.Recycle(c, func(context.Context, int) bool { return false })
	eventually(t, "retired", func() bool { return p.Stats().Retired == 1 })
	p.Close(context.Background())
	if f.created.Load()-1 != f.destroyed.Load() { // the taken one is the caller's
		t.Fatalf("created %d, destroyed %d", f.created.Load(), f.destroyed.Load())
	}
}

// A stream of runs at two clients, each container taking a while to
// recycle, leaves the pool with a fresh item for a session: runs wait for
// the recycles rather than take it (and have the pool make one per run),
// and the pool makes one again when runs took it.
func TestKeepsAFreshItemForSessions(t *testing.T) {
	f := &fake{}
	p := New(Options{Name: "x", MinIdle: 1, Max: 6, QueueTimeout: time.Second, IdleTimeout: 100 * time.Millisecond}, f.hooks())
	eventually(t, "1 idle", func() bool { return p.Stats().Idle == 1 })
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 30 {
				it, err := p.Acquire(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				p.Recycle(it, func(context.Context, int) bool { time.Sleep(5 * time.Millisecond); return true })
			}
		}()
	}
	wg.Wait()
	eventually(t, "recycles done", func() bool { s := p.Stats(); return s.Recycling == 0 && s.Starting == 0 })
	if created := f.created.Load(); created > 4 {
		t.Errorf("%d containers made for 2 clients: runs took the fresh one instead of waiting for a recycle", created)
	}
	time.Sleep(300 * time.Millisecond) // trims pass; the fresh one stays
	if s := p.Stats(); s.Idle-s.IdleUsed != 1 {
		t.Fatalf("no fresh item kept for a session: %+v", s)
	}
	misses := p.Stats().Misses
	if _, err := p.Take(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.Misses != misses {
		t.Fatalf("the session's take was a miss: %+v", s)
	}
	p.Close(context.Background())
}

// A run that comes after a queued session leaves it the fresh item it
// waits for.
func TestARunLeavesAQueuedSessionItsFreshItem(t *testing.T) {
	f := &fake{}
	p := New(Options{Name: "x", MinIdle: 0, Max: 4, QueueTimeout: time.Second}, f.hooks())
	p.mu.Lock()
	p.lastTicket++
	p.queue = append(p.queue, waiter{ticket: p.lastTicket, fresh: true}) // a session, queued first
	p.idle = append(p.idle, idleItem[int]{item: 99, since: time.Now()})  // the fresh item it waits for comes
	p.mu.Unlock()
	got, err := p.Acquire(context.Background()) // a run that came later
	if err != nil || got == 99 {
		t.Fatalf("the run got %d (%v): the fresh item was the queued session's", got, err)
	}
	p.mu.Lock()
	p.queue = nil
	p.mu.Unlock()
	p.Release(got)
	p.Close(context.Background())
}

// A session that finds a full pool of used items makes room by one.
func TestTakeAtMaxRemovesOneUsedItem(t *testing.T) {
	f := &fake{}
	p := New(Options{Name: "x", MinIdle: 1, Max: 2, QueueTimeout: 2 * time.Second}, f.hooks())
	eventually(t, "idle", func() bool { return p.Stats().Idle == 1 })
	a, _ := p.Acquire(context.Background())
	eventually(t, "refilled", func() bool { return p.Stats().Idle == 1 })
	b, _ := p.Acquire(context.Background())
	p.Recycle(a, func(context.Context, int) bool { return true })
	p.Recycle(b, func(context.Context, int) bool { return true })
	eventually(t, "both used idle", func() bool { return p.Stats().IdleUsed == 2 })
	if _, err := p.Take(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if d := f.destroyed.Load(); d != 1 {
		t.Fatalf("%d used items destroyed for one session: want 1", d)
	}
	p.Close(context.Background())
}

// A session finds the pool full of used items: one is destroyed to make
// room for a fresh one.
func TestTakeMakesRoomForAFreshItem(t *testing.T) {
	f := &fake{}
	p := New(Options{Name: "x", MinIdle: 0, Max: 1, QueueTimeout: time.Second}, f.hooks())
	a, _ := p.Acquire(context.Background())
	p.Recycle(a, func(context.Context, int) bool { return true })
	eventually(t, "recycled", func() bool { return p.Stats().IdleUsed == 1 })
	b, err := p.Take(context.Background())
	if err != nil || b == a {
		t.Fatalf("took %d, %v", b, err)
	}
	p.Close(context.Background())
}

// The target follows demand: after 3 runs at once the pool keeps 3 idle,
// and after a quiet window it trims back to MinIdle.
func TestTargetFollowsDemand(t *testing.T) {
	f := &fake{}
	p := New(Options{Name: "x", MinIdle: 1, Max: 8, QueueTimeout: time.Second, IdleTimeout: 150 * time.Millisecond}, f.hooks())
	eventually(t, "1 idle", func() bool { return p.Stats().Idle == 1 })
	var items []int
	for range 3 {
		it, err := p.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, it)
	}
	for _, it := range items {
		p.Release(it)
	}
	eventually(t, "3 idle after a peak of 3", func() bool { s := p.Stats(); return s.Idle == 3 && s.Target == 3 })
	eventually(t, "trimmed to min_idle when demand fell", func() bool {
		s := p.Stats()
		return s.Idle == 1 && s.Target == 1 && s.Trimmed == 2
	})
	p.Close(context.Background())
}

// A burst of sessions is demand though none stays busy: after 8 at once
// the pool holds about as many for the next burst, within Max.
func TestBurstOfSessionsGrowsThePool(t *testing.T) {
	f := &fake{}
	hooks := f.hooks()
	create := hooks.Create
	hooks.Create = func(ctx context.Context, waiting func(string)) (int, error) {
		time.Sleep(20 * time.Millisecond) // a container's start: the burst queues
		return create(ctx, waiting)
	}
	p := New(Options{Name: "x", MinIdle: 1, Max: 6, QueueTimeout: 5 * time.Second, IdleTimeout: time.Minute}, hooks)
	eventually(t, "1 idle", func() bool { return p.Stats().Idle == 1 })
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			p.Asked()
			if _, err := p.Take(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if s := p.Stats(); s.Target < 4 || s.Target > 6 {
		t.Fatalf("after a burst of 8 sessions: target %d; want most of the burst, within max 6", s.Target)
	}
	eventually(t, "the pool grown for the next burst", func() bool { s := p.Stats(); return s.Idle == s.Target })
	p.Close(context.Background())
}

// While the host is low on memory the pool sheds what it grew for a
// burst, down to MinIdle, at once, and does not grow for the demand it
// saw (or sees then) once memory comes back.
func TestMemoryPressureShedsThePool(t *testing.T) {
	f := &fake{}
	var low atomic.Bool
	p := New(Options{Name: "x", MinIdle: 2, Max: 8, QueueTimeout: time.Second, IdleTimeout: time.Minute, Pressure: low.Load}, f.hooks())
	for range 6 {
		p.Asked()
	}
	eventually(t, "the pool grown for the next burst", func() bool { s := p.Stats(); return s.Idle == 6 && s.Target == 6 })
	low.Store(true)
	within(t, 3*time.Second, "the pool shed to min_idle", func() bool { s := p.Stats(); return s.Idle == 2 && s.Trimmed == 4 })
	p.Asked()
	p.Asked()
	p.Asked()
	if s := p.Stats(); s.Target != 2 {
		t.Fatalf("sessions asked for under pressure grew the target to %d", s.Target)
	}
	low.Store(false)
	time.Sleep(1500 * time.Millisecond) // a check or two without pressure
	if s := p.Stats(); s.Idle != 2 || s.Target != 2 {
		t.Fatalf("after the pressure: %+v; want min_idle, the demand seen before forgotten", s)
	}
	p.Close(context.Background())
	if f.created.Load() != f.destroyed.Load() {
		t.Fatalf("created %d, destroyed %d after Close", f.created.Load(), f.destroyed.Load())
	}
}

// within is eventually for conditions checked on the pool's one-second
// ticks.
func within(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", limit, what)
		}
	}
}

// A run that finds no idle item while one is being recycled waits for it
// rather than paying for a new one.
func TestWaitsForARecyclingItem(t *testing.T) {
	f := &fake{}
	p := New(Options{Name: "x", MinIdle: 0, Max: 4, QueueTimeout: time.Second}, f.hooks())
	a, _ := p.Acquire(context.Background())
	release := make(chan struct{})
	p.Recycle(a, func(context.Context, int) bool { <-release; return true })
	got := make(chan int, 1)
	go func() { b, _ := p.Acquire(context.Background()); got <- b }()
	eventually(t, "the caller waits", func() bool { return p.Stats().Waiting == 1 })
	close(release)
	if b := <-got; b != a || f.created.Load() != 1 {
		t.Fatalf("got %d after %d creations: want the recycled %d and no new one", b, f.created.Load(), a)
	}
	p.Release(a)
	p.Close(context.Background())
}

// While an item is busy and one caller is making another, the callers
// after it wait for an item to come back instead of each making one.
func TestOneCreationAtATimeWhileItemsAreBusy(t *testing.T) {
	f := &fake{}
	hooks := f.hooks()
	slow := make(chan struct{})
	create := hooks.Create
	hooks.Create = func(ctx context.Context, waiting func(string)) (int, error) {
		if f.created.Load() > 0 {
			<-slow // a loaded machine: creation takes long
		}
		return create(ctx, waiting)
	}
	p := New(Options{Name: "x", MinIdle: 0, Max: 8, QueueTimeout: 5 * time.Second}, hooks)
	a, _ := p.Acquire(context.Background())
	got := make(chan int, 3)
	for range 3 {
		go func() { b, _ := p.Acquire(context.Background()); got <- b }()
	}
	eventually(t, "one caller creates, all three wait", func() bool { st := p.Stats(); return st.Waiting == 3 && st.Starting == 1 })
	p.Recycle(a, func(context.Context, int) bool { return true })
	if b := <-got; b != a {
		t.Fatalf("got %d: want the recycled %d", b, a)
	}
	if st := p.Stats(); st.Misses != 2 {
		t.Errorf("%d misses for 4 callers while one was making an item: want 2 (the first's and that one's)", st.Misses)
	}
	close(slow)
	p.Release(a)
	for range 2 {
		p.Release(<-got)
	}
	p.Close(context.Background())
}

// Callers that find the pool empty while its refill is under way wait for
// the items on their way instead of each making one more: on a loaded
// machine creations at once slow each other and the runs that wait on
// them (python at 4 clients from a pool of 2 made 14 at once).
func TestCallersWaitForItemsOnTheirWay(t *testing.T) {
	f := &fake{}
	hooks := f.hooks()
	slow := make(chan struct{})
	create := hooks.Create
	hooks.Create = func(ctx context.Context, waiting func(string)) (int, error) {
		if f.created.Load() >= 2 {
			<-slow
		}
		return create(ctx, waiting)
	}
	p := New(Options{Name: "x", MinIdle: 2, Max: 16, QueueTimeout: 5 * time.Second}, hooks)
	eventually(t, "two idle", func() bool { return p.Stats().Idle == 2 })
	ctx := context.Background()
	a, _ := p.Acquire(ctx)
	b, _ := p.Acquire(ctx)
	got := make(chan int, 2)
	for range 2 {
		go func() { c, _ := p.Acquire(ctx); got <- c }()
	}
	eventually(t, "two callers wait on the refill of two", func() bool { st := p.Stats(); return st.Waiting == 2 && st.Starting == 2 })
	time.Sleep(100 * time.Millisecond)
	if st := p.Stats(); st.Misses != 0 || st.Starting != 2 {
		t.Errorf("%d misses, %d starting: want the refill's two alone", st.Misses, st.Starting)
	}
	close(slow)
	c, d := <-got, <-got
	if st := p.Stats(); st.Misses != 0 || c == d || c <= b || d <= b {
		t.Errorf("got %d and %d, %d misses: want the two the refill made", c, d, st.Misses)
	}
	for _, it := range []int{a, b, c, d} {
		p.Release(it)
	}
	p.Close(ctx)
}

// Callers are served in the order they came: an item back from a run goes
// to the one that has waited longest, and a caller that comes while others
// wait takes its place behind them, idle item or not.
func TestCallersAreServedInTheOrderTheyCame(t *testing.T) {
	f := &fake{}
	p := New(Options{Name: "x", MinIdle: 0, Max: 2, QueueTimeout: 5 * time.Second}, f.hooks())
	ctx := context.Background()
	a, _ := p.Acquire(ctx)
	b, _ := p.Acquire(ctx)
	served := make(chan int, 3)
	for i := range 3 {
		go func() {
			it, _ := p.Acquire(ctx)
			served <- i
			p.Recycle(it, func(context.Context, int) bool { return true })
		}()
		eventually(t, "the caller queued", func() bool { return p.Stats().Waiting == i+1 })
	}
	p.mu.Lock()
	p.idle = append(p.idle, idleItem[int]{item: 99, used: true}) // as a recycle would
	if p.turnLocked(0, false) {
		t.Error("a caller that came after three others may take the one idle item")
	}
	p.idle = p.idle[:len(p.idle)-1]
	p.mu.Unlock()
	p.Recycle(a, func(context.Context, int) bool { return true }) // each caller passes it on
	for want := range 3 {
		if got := <-served; got != want {
			t.Fatalf("caller %d served before caller %d", got, want)
		}
	}
	p.Release(b)
	p.Close(ctx)
}

// A caller whose creation stalls (a pod the cluster cannot place) takes
// an item that comes back from a run meanwhile; the stalled one joins the
// idle items when it is made.
func TestAStalledCreationHoldsUpNoCaller(t *testing.T) {
	f := &fake{}
	hooks := f.hooks()
	stalled := make(chan struct{})
	create := hooks.Create
	hooks.Create = func(ctx context.Context, waiting func(string)) (int, error) {
		if f.created.Load() > 0 {
			<-stalled
		}
		return create(ctx, waiting)
	}
	p := New(Options{Name: "x", MinIdle: 0, Max: 4, QueueTimeout: 5 * time.Second}, hooks)
	a, _ := p.Acquire(context.Background())
	got := make(chan int, 1)
	go func() { b, _ := p.Acquire(context.Background()); got <- b }()
	eventually(t, "the caller makes one, which stalls", func() bool { st := p.Stats(); return st.Misses == 2 && st.Starting == 1 })
	p.Recycle(a, func(context.Context, int) bool { return true })
	if b := <-got; b != a {
		t.Fatalf("got %d: want the recycled %d", b, a)
	}
	close(stalled)
	eventually(t, "the stalled one idle", func() bool { st := p.Stats(); return st.Idle == 1 && st.Starting == 0 })
	if st := p.Stats(); st.Hits != 0 || st.Misses != 2 {
		t.Errorf("hits %d misses %d: want two misses (an empty pool, then one busy item)", st.Hits, st.Misses)
	}
	p.Release(a)
	p.Close(context.Background())
}

// A caller's own creation that outlasts its queue timeout (a loaded
// engine) is still its: it gets the item rather than an error beside an
// idle one.
func TestASlowCreationServesItsCallerPastTheTimeout(t *testing.T) {
	f := &fake{}
	hooks := f.hooks()
	create := hooks.Create
	hooks.Create = func(ctx context.Context, waiting func(string)) (int, error) {
		time.Sleep(100 * time.Millisecond)
		return create(ctx, waiting)
	}
	p := New(Options{Name: "x", MinIdle: 0, Max: 2, QueueTimeout: 20 * time.Millisecond}, hooks)
	a, err := p.Acquire(context.Background())
	if err != nil {
		t.Fatalf("a caller whose creation took longer than its timeout: %v", err)
	}
	if _, err := p.Take(context.Background()); err != nil {
		t.Fatalf("a session's caller whose creation took longer than its timeout: %v", err)
	}
	p.Release(a)
	p.Close(context.Background())
}

// An idle item that dies is destroyed and replaced without a request
// finding it dead.
func TestDeadIdleItemsAreReplaced(t *testing.T) {
	f := &fake{}
	p := New(Options{Name: "x", MinIdle: 2, Max: 4, QueueTimeout: time.Second}, f.hooks())
	eventually(t, "two idle", func() bool { return p.Stats().Idle == 2 })
	f.dead.Store(1, true)
	f.dead.Store(2, true)
	for deadline := time.Now().Add(3 * deadCheck); ; time.Sleep(10 * time.Millisecond) {
		st := p.Stats()
		if st.Idle == 2 && st.Destroyed == 2 && st.Created == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dead idle items were not replaced: %+v", st)
		}
	}
	p.Close(context.Background())
}

// What a creation in flight says it waits on is what a queued caller is
// told, until it ends; a pool whose every item is busy says so.
func TestQueuedCallersAreToldWhatTheyWaitOn(t *testing.T) {
	f := &fake{}
	hooks := f.hooks()
	pulled := make(chan struct{})
	create := hooks.Create
	hooks.Create = func(ctx context.Context, waiting func(string)) (int, error) {
		waiting("node a pulls the image")
		<-pulled
		return create(ctx, waiting)
	}
	p := New(Options{Name: "x", MinIdle: 0, Max: 1, QueueTimeout: 5 * time.Second}, hooks)
	got := make(chan int)
	go func() { a, _ := p.Acquire(context.Background()); got <- a }()
	eventually(t, "the caller is told of the pull", func() bool {
		return p.WaitingFor() == "node a pulls the image" && p.Stats().StartingFor == "node a pulls the image"
	})
	close(pulled)
	a := <-got
	if why := p.WaitingFor(); why != "all 1 x containers are busy" {
		t.Errorf("with its one item busy the pool says %q", why)
	}
	if st := p.Stats(); st.StartingFor != "" {
		t.Errorf("nothing starts, yet starting_for is %q", st.StartingFor)
	}
	p.Release(a)
	p.Close(context.Background())
}

// A caller's creation counts toward the target while it runs (refills
// leave room for it): when it fails, the pool makes up for it at once.
func TestACallersFailedCreationIsMadeUp(t *testing.T) {
	f := &fake{}
	hooks := f.hooks()
	var failNext atomic.Bool
	create := hooks.Create
	hooks.Create = func(ctx context.Context, waiting func(string)) (int, error) {
		if failNext.Swap(false) {
			return 0, errors.New("a pod that could not be placed")
		}
		return create(ctx, waiting)
	}
	p := New(Options{Name: "x", MinIdle: 0, Max: 4, QueueTimeout: time.Second}, hooks)
	// The state a miss leaves: the pool owes MinIdle, and the caller's
	// creation is what stands for it.
	failNext.Store(true)
	made := make(chan error, 1)
	p.mu.Lock()
	p.opts.MinIdle = 1
	p.starting++
	p.creating++
	p.wg.Add(1)
	p.mu.Unlock()
	go p.createForCaller(made)
	if err := <-made; err == nil {
		t.Fatal("the caller's creation did not fail")
	}
	eventually(t, "refilled after the caller's creation failed", func() bool { s := p.Stats(); return s.Idle == 1 && s.Failures == 1 })
	p.Close(context.Background())
}
