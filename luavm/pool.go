package luavm

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// A pool keeps warm states of one script, so that initialize, a hibernated
// session's wake-up, snapshots and stateless requests do not build a state
// and run its chunk on the request's path.
//
// It has two lanes. fresh holds states that have only run the chunk, or are
// provably indistinguishable from such a state (recycle.go); filler
// goroutines keep it at its depth. A session takes a fresh state and owns it
// for life: at its end (or when it hibernates) the state comes back to the
// fresh lane if it is pristine, and is closed otherwise.
// spare holds states given back by short borrowers (stateless requests,
// snapshots, auth checks, Describe) whose work ended cleanly; they are warm
// but not pristine, so only other short borrowers take them.
//
// The fresh lane's depth follows demand: it starts at the configured size,
// grows to the size plus the takers found waiting on an empty lane (up to
// maxFreshFactor times the size, at least minFreshCap), and halves back
// towards the size after shrinkAfter without a take. The spare lane holds
// as many states as short borrowers ran at once (up to its capacity) while
// they keep coming; after shrinkAfter without one it gives back half of what
// it holds, and so on, down to none (a burst of stateless requests on a route
// then left alone does not keep its states, and their share of every garbage
// collection's marking, for the life of the process). A taker that finds it
// empty waits for the fillers rather than building a state itself (they build
// on up to fillers goroutines at once), unless they fail to deliver within
// freshWait: so steady churn never builds inline, and a chunk that now fails
// to run still reports its error.
type pool struct {
	s     *Version
	fresh chan *vm
	spare chan *vm
	size  int           // the configured depth of fresh: the least it is kept at
	depth atomic.Int32  // the fresh states the fillers keep: size..cap(fresh)
	want  chan struct{} // wakes a filler after a fresh state was taken
	// surplus tells the shrinker (the first filler) that recycled states
	// put the fresh lane past its depth.
	surplus chan struct{}
	stop    chan struct{}
	done    chan struct{}
	ctx     context.Context // cancelled by close: bounds the fillers' builds
	quit    context.CancelFunc

	// spareWanted is set when a short borrower asks for a spare, and cleared
	// by the shrinker each shrinkAfter (idleSpares).
	spareWanted atomic.Bool

	waiting atomic.Int32 // takers waiting for the fillers
	// lastTake is the clock() of the last take from the fresh lane: the
	// shrinker shrinks it only once shrinkAfter passed since (quiet).
	lastTake atomic.Int64
	// shrinkAfter is the package's shrinkAfter when the pool was made.
	shrinkAfter time.Duration
	inline      atomic.Int64 // fresh states built on a taker's path (tests, metrics)
	failing     atomic.Bool  // the fillers' last build failed: takers do not wait for them

	mu       sync.Mutex
	closed   bool
	building int // fresh states the fillers are building: with len(fresh), at most depth
}

// minSpares is the least number of spare states a pool keeps. Stateless
// requests borrow one each: the spare lane must hold as many as run at once,
// or a burst closes the states it gave back and builds new ones (a build
// costs ten calls). Spares exist only after that many requests ran at once.
// A pool of size 0 (pooling disabled) keeps none.
const minSpares = 64

// closeGrace is how long close waits for a build in progress to stop.
const closeGrace = time.Second

// The fresh lane's bounds and pace (see pool).
const (
	maxFreshFactor = 16
	minFreshCap    = 64
	freshWait      = 100 * time.Millisecond
	// surplusAfter is how long recycled states past the lane's depth wait
	// for a taker before trim closes them.
	surplusAfter = 2 * time.Second
)

// shrinkAfter is how long the fresh lane goes without a take before its
// depth halves, and the period of the spare lane's shrinking (a variable:
// tests shorten it).
var shrinkAfter = 30 * time.Second

// fillers is how many fresh states a pool builds at once: one per processor,
// as many as takers building their own would.
func fillers() int { return min(runtime.GOMAXPROCS(0), 8) }

func newPool(s *Version, size int) *pool {
	ctx, quit := context.WithCancel(context.Background())
	spares, depth := 0, 0
	if size > 0 {
		spares = max(size, minSpares)
		depth = max(size*maxFreshFactor, minFreshCap)
	}
	p := &pool{
		s:       s,
		fresh:   make(chan *vm, depth),
		spare:   make(chan *vm, spares),
		size:    size,
		want:    make(chan struct{}, fillers()),
		surplus: make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		ctx:     ctx,
		quit:    quit,

		shrinkAfter: shrinkAfter,
	}
	p.depth.Store(int32(size))
	p.lastTake.Store(clock())
	return p
}

// start launches the fillers, after seeding the pool with v (may be nil).
func (p *pool) start(v *vm) {
	if v != nil {
		v.record()
		p.put(p.fresh, v)
	}
	if p.size <= 0 {
		close(p.done)
		return
	}
	var wg sync.WaitGroup
	for i := range fillers() {
		wg.Go(func() { p.fill(i == 0) })
	}
	go func() {
		wg.Wait()
		close(p.done)
	}()
}

// fill builds fresh states until the lane is as deep as wanted, then waits
// for a taker. A failing build (a chunk that fails now but loaded before) is
// logged and retried with backoff. The first filler (shrinker) also brings
// the depth back down after shrinkAfter without a take.
func (p *pool) fill(shrinker bool) {
	backoff := 50 * time.Millisecond
	var idle, trim, spares <-chan time.Time
	var surplus <-chan struct{}
	var t, st *time.Timer
	if shrinker {
		// Armed once and re-armed only when it fires (quiet): had every
		// wake-up re-armed it, the spare lane's ticker and recycled states
		// would put the shrink off again and again.
		t = time.NewTimer(p.shrinkAfter)
		defer t.Stop()
		idle = t.C
		st = time.NewTimer(surplusAfter)
		st.Stop()
		defer st.Stop()
		surplus = p.surplus
		tk := time.NewTicker(p.shrinkAfter)
		defer tk.Stop()
		spares = tk.C
	}
	for {
		for p.claim() {
			v, err := p.build(p.ctx)
			if err != nil {
				p.unclaim()
				if p.ctx.Err() != nil {
					return
				}
				p.failing.Store(true)
				p.s.logger.Error("building a warm Lua state failed", "error", err)
				select {
				case <-p.stop:
					return
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, 5*time.Second)
				continue
			}
			backoff = 50 * time.Millisecond
			p.failing.Store(false)
			if !p.deliver(v) {
				return
			}
		}
		select {
		case <-p.want:
			if trim != nil { // a take: the surplus may be wanted after all
				st.Reset(surplusAfter)
			}
		case <-idle:
			t.Reset(p.quiet(clock()))
		case <-surplus:
			st.Reset(surplusAfter)
			trim = st.C
		case <-trim:
			trim = nil
			p.trim()
		case <-spares:
			p.idleSpares()
		case <-p.stop:
			return
		}
	}
}

// claim reserves the build of one fresh state, if the lane needs one.
func (p *pool) claim() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.fresh)+p.building >= int(p.depth.Load()) {
		return false
	}
	p.building++
	return true
}

func (p *pool) unclaim() {
	p.mu.Lock()
	p.building--
	p.mu.Unlock()
}

// grow deepens the fresh lane, up to its capacity, when a taker finds it
// empty: to size + the takers waiting for the fillers, so that as many find
// a state next time. Under load that outruns the fillers the depth follows
// the takers' concurrency, not the count of misses.
func (p *pool) grow(waiting int32) {
	want := min(int32(p.size)+waiting, int32(cap(p.fresh)))
	for {
		d := p.depth.Load()
		if d >= want || p.depth.CompareAndSwap(d, want) {
			return
		}
	}
}

// quiet is the shrinker's timer firing at now: when no taker came for
// shrinkAfter it shrinks the lane. It returns when to look again.
func (p *pool) quiet(now int64) time.Duration {
	if q := time.Duration(now - p.lastTake.Load()); q < p.shrinkAfter {
		return p.shrinkAfter - q
	}
	p.shrink()
	return p.shrinkAfter
}

// shrink halves the lane's depth towards its size and closes the states
// past it: no taker came for shrinkAfter.
func (p *pool) shrink() {
	p.depth.Store(int32(max(int(p.depth.Load())/2, p.size)))
	p.trim()
}

// deliver ends a claimed build: v joins the fresh lane, in one step with the
// end of the claim (so that no other filler claims the same place).
func (p *pool) deliver(v *vm) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.building--
	if len(p.fresh) >= int(p.depth.Load()) { // shrunk meanwhile
		v.close()
		return !p.closed
	}
	return p.putLocked(p.fresh, v)
}

// put adds v to lane, or closes it when the pool is closed or the lane full.
func (p *pool) put(lane chan *vm, v *vm) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.putLocked(lane, v)
}

func (p *pool) putLocked(lane chan *vm, v *vm) bool {
	if p.closed {
		v.close()
		return false
	}
	select {
	case lane <- v:
	default:
		v.close()
	}
	return true
}

// get returns a fresh state: a warm one, else the next one the fillers
// build, else (they take longer than freshWait, their last build failed, or
// the pool is closed or disabled) one built now.
func (p *pool) get(ctx context.Context) (*vm, error) {
	p.lastTake.Store(clock())
	select {
	case v := <-p.fresh:
		p.wake()
		return v, nil
	default:
	}
	if cap(p.fresh) > 0 && !p.failing.Load() && !p.isClosed() {
		p.grow(p.waiting.Add(1))
		defer p.waiting.Add(-1)
		p.wake()
		t := time.NewTimer(freshWait)
		select {
		case v := <-p.fresh:
			t.Stop()
			p.wake()
			return v, nil
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-p.stop:
			t.Stop()
		}
	}
	p.inline.Add(1)
	return p.build(ctx)
}

// build builds a fresh state and records its baseline (recycle.go).
func (p *pool) build(ctx context.Context) (*vm, error) {
	v, err := p.s.newVM(ctx)
	if err != nil {
		return nil, err
	}
	v.record()
	return v, nil
}

// recycle takes back the state of a session that ended (closed, reaped,
// hibernated, or a snapshot's): into the fresh lane if it is pristine
// (recycle.go) and the lane has room, else it is closed. The lane's room is
// its capacity, not its depth: while recycled states keep it at its depth
// the fillers build nothing (under churn, a bound at the depth made fillers
// and recycling race, and most recycled states were closed). The surplus
// past the depth is closed after surplusAfter without a take (trim), so a
// mass expiry of sessions leaves no more warm states behind than the
// fillers keep. Script.EndedStates counts both outcomes.
func (p *pool) recycle(v *vm) {
	if v.closed {
		return
	}
	if cap(p.fresh) == 0 || p.isClosed() {
		p.discard(v)
		return
	}
	if err := v.recycle(); err != nil {
		p.s.logger.Debug("Lua state not recycled", "reason", err)
		p.discard(v)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		p.discard(v)
		return
	}
	select {
	case p.fresh <- v:
		p.s.ended[recycledState].Add(1)
	default:
		p.discard(v)
		return
	}
	if len(p.fresh) > int(p.depth.Load()) {
		select {
		case p.surplus <- struct{}{}:
		default: // the shrinker has been told already
		}
	}
}

// trim closes the fresh states past the lane's depth: recycled states that
// no taker came for within surplusAfter, or all past a depth shrink lowered.
func (p *pool) trim() {
	d := int(p.depth.Load())
	for len(p.fresh) > d {
		select {
		case v := <-p.fresh:
			v.close()
		default:
			return
		}
	}
}

func (p *pool) discard(v *vm) {
	p.s.ended[closedState].Add(1)
	v.close()
}

func (p *pool) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// idleSpares closes half the spare lane's states (rounded up) when no short
// borrower asked for one since the last call; it runs every shrinkAfter.
func (p *pool) idleSpares() {
	if p.spareWanted.Swap(false) {
		return
	}
	for n := (len(p.spare) + 1) / 2; n > 0; n-- {
		select {
		case v := <-p.spare:
			v.close()
		default:
			return
		}
	}
}

// getSpare returns a state for a short borrower: a spare one if any, else a
// fresh one, whose globals are recorded first (isolate.go).
func (p *pool) getSpare(ctx context.Context) (*vm, error) {
	// Read before written: under load the flag is already set, and a store
	// on every request would bounce its cache line between processors.
	if !p.spareWanted.Load() {
		p.spareWanted.Store(true)
	}
	select {
	case v := <-p.spare:
		return v, nil
	default:
	}
	v, err := p.get(ctx)
	if err == nil {
		v.globals = v.snapshotGlobals()
	}
	return v, err
}

// release takes back a borrowed state: kept as a spare, with its globals
// put back as its snapshot has them, if its work ended cleanly; closed
// otherwise.
func (p *pool) release(v *vm) {
	v.hold(nil) // the request's state goes with it
	if v.broken || v.closed || !v.isolate() {
		v.close()
		return
	}
	p.put(p.spare, v)
}

func (p *pool) wake() {
	select {
	case p.want <- struct{}{}:
	default:
	}
}

// close stops the filler and closes every pooled state. States lent out are
// closed when they come back.
func (p *pool) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	close(p.stop)
	p.quit()
	// A build is interrupted by quit; one whose Lua does not stop in time
	// is abandoned: put closes what it builds.
	select {
	case <-p.done:
	case <-time.After(closeGrace):
		p.s.logger.Warn("a Lua state being built did not stop: abandoned")
	}
	for _, lane := range []chan *vm{p.fresh, p.spare} {
		for {
			select {
			case v := <-lane:
				v.close()
				continue
			default:
			}
			break
		}
	}
	p.s.lib.Close()
}
