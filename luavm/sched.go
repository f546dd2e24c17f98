package luavm

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// A Scheduler caps the Lua calls that run at once across the scripts that
// share it (Config.Sched; `serve --max-running`), and shares the slots fairly
// among them, so that one script's runaway calls cannot starve another's.
//
// Every callback takes a slot before it runs and gives it back when it ends
// (vm.begin, run.end); so do auth and the list callbacks a reload runs. The
// main chunk does not: it runs while a script loads, under its own bound
// (loadTimeout). A call that waits (for the client: mcp.elicit, mcp.sample,
// mcp.list_roots; or mcp.sleep) gives its slot back while it waits, and
// takes one again as a new call would (callLine, withoutSlot): slots bound
// the Lua that runs, not the calls that are open.
//
// A call goes through these states:
//
//	       acquire                 grant                     release
//	idle ──────────► waiting ────────────────► running ──────────────► idle
//	  │  (slot at     in its lane's FIFO queue    holds a slot
//	  │   once)          │
//	  │                  └── ctx ends, or request_timeout_ms passes ──► idle
//	  └──────────────────────────────────────────► running              (no Lua ran)
//
// Shares. Each script has a lane: its running count and its FIFO queue. A
// lane is active while it has a call running or waiting; a lane's fair share
// is the cap divided among the active lanes, rounded up (at least 1). A call
// starts at once when its lane has no call waiting and either a slot is free
// or its lane holds fewer slots than its share. The second rule may take the
// count past the cap: a running Lua call cannot be preempted, so slots that a
// script took while it was alone cannot be taken back when another script
// arrives, and that script must not wait for them (32 spinning calls hold
// their slots until their call timeout). Only lanes below their share go past
// the cap, so at most twice the cap plus one call per lane run at once.
//
// When a slot frees, or a lane goes idle (the shares grow), waiting calls are
// granted: first in every lane below its share, then one lane after the
// other, round robin, while a slot is free. So these hold between operations:
// no call waits in a lane below its share, and none waits while a slot is
// free.
type Scheduler struct {
	limit int

	mu      sync.Mutex
	running int     // slots held, every lane's
	active  int     // lanes with a call running or waiting
	ring    []*lane // lanes with waiting calls, in round-robin order
	next    int     // index in ring of the lane served next
}

// DefaultMaxRunning is the cap NewScheduler(0) sets: four calls per CPU the
// Go runtime uses.
func DefaultMaxRunning() int { return 4 * runtime.GOMAXPROCS(0) }

// NewScheduler returns a scheduler that lets limit calls run at once (see
// Scheduler for the exceptions); limit <= 0 means DefaultMaxRunning().
func NewScheduler(limit int) *Scheduler {
	if limit <= 0 {
		limit = DefaultMaxRunning()
	}
	return &Scheduler{limit: limit}
}

// Limit returns the cap.
func (s *Scheduler) Limit() int { return s.limit }

// Running returns the slots held now.
func (s *Scheduler) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// lane is one script's share of a Scheduler. Its counts are guarded by the
// scheduler's mu.
type lane struct {
	s       *Scheduler // nil: calls never wait
	running int        // slots this lane holds
	queue   []*waiter  // calls waiting for a slot, oldest first
}

// waiter is one call waiting for a slot.
type waiter struct {
	ready   chan struct{} // closed by grant
	granted bool          // set by grant, under mu: the slot is the call's
}

// newLane returns a lane of s; a nil s gives a lane whose calls never wait.
func (s *Scheduler) newLane() *lane { return &lane{s: s} }

// errNoSlot is the cause of a call that waited a whole request_timeout_ms for
// a slot: its buffered caller has given up on it by then.
type errNoSlot time.Duration

func (e errNoSlot) Error() string {
	return fmt.Sprintf("no free Lua slot within request_timeout_ms (%s)", time.Duration(e))
}

// Is makes a slot wait that timed out count as a context deadline: the call
// was interrupted before Lua ran, it did not crash.
func (e errNoSlot) Is(target error) bool { return target == context.DeadlineExceeded }

// acquire takes a slot, waiting for one as long as ctx lives and at most
// maxWait (0: no bound). It fails only when the wait ends without a slot.
func (l *lane) acquire(ctx context.Context, maxWait time.Duration) error {
	s := l.s
	if s == nil {
		return nil
	}
	s.mu.Lock()
	if l.idle() {
		s.active++
	}
	if len(l.queue) == 0 && (s.running < s.limit || l.running < s.share()) {
		l.running++
		s.running++
		s.mu.Unlock()
		return nil
	}
	w := &waiter{ready: make(chan struct{})}
	l.queue = append(l.queue, w)
	if len(l.queue) == 1 {
		s.ring = append(s.ring, l)
	}
	s.mu.Unlock()

	var expired <-chan time.Time
	if maxWait > 0 {
		t := time.NewTimer(maxWait)
		defer t.Stop()
		expired = t.C
	}
	var err error
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		err = fmt.Errorf("waiting for a free Lua slot: %w", ctx.Err())
	case <-expired:
		err = errNoSlot(maxWait)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.granted { // granted as the wait ended: give the slot back
		l.running--
		s.running--
	} else {
		l.remove(w)
	}
	if l.idle() {
		s.active--
	}
	s.dispatchLocked()
	return err
}

// release gives back a slot taken by acquire.
func (l *lane) release() {
	s := l.s
	if s == nil {
		return
	}
	s.mu.Lock()
	l.running--
	s.running--
	if l.idle() {
		s.active--
	}
	s.dispatchLocked()
	s.mu.Unlock()
}

// idle reports whether the lane has no call running or waiting.
func (l *lane) idle() bool { return l.running == 0 && len(l.queue) == 0 }

// remove takes w out of the queue, and the lane out of the ring when its
// queue empties.
func (l *lane) remove(w *waiter) {
	for i, q := range l.queue {
		if q == w {
			l.queue = append(l.queue[:i], l.queue[i+1:]...)
			break
		}
	}
	if len(l.queue) == 0 {
		l.s.leaveRing(l)
	}
}

// share is a lane's fair share of the slots.
func (s *Scheduler) share() int {
	return max(1, (s.limit+s.active-1)/max(s.active, 1))
}

// dispatchLocked grants waiting calls until the invariants hold again: none
// waits in a lane below its share, none while a slot is free.
func (s *Scheduler) dispatchLocked() {
	if len(s.ring) == 0 {
		return
	}
	share := s.share()
	for i := 0; i < len(s.ring); {
		l := s.ring[i]
		for len(l.queue) > 0 && l.running < share {
			s.grantLocked(l)
		}
		if len(l.queue) == 0 {
			s.leaveRing(l)
			continue
		}
		i++
	}
	for s.running < s.limit && len(s.ring) > 0 {
		if s.next >= len(s.ring) {
			s.next = 0
		}
		l := s.ring[s.next]
		s.grantLocked(l)
		if len(l.queue) == 0 {
			s.leaveRing(l) // the next lane slides into s.next
		} else {
			s.next++
		}
	}
}

// grantLocked gives a slot to the oldest waiting call of l.
func (s *Scheduler) grantLocked(l *lane) {
	w := l.queue[0]
	l.queue[0] = nil
	l.queue = l.queue[1:]
	w.granted = true
	close(w.ready)
	l.running++
	s.running++
}

// leaveRing takes l out of the ring, keeping the round-robin position.
func (s *Scheduler) leaveRing(l *lane) {
	for i, r := range s.ring {
		if r == l {
			s.ring = append(s.ring[:i], s.ring[i+1:]...)
			if i < s.next {
				s.next--
			}
			return
		}
	}
}

// yield gives the run's slot back while it waits for something other than
// Lua; it reports whether it had one.
func (r *run) yield() bool {
	if !r.slot {
		return false
	}
	r.v.s.lane.release()
	r.slot = false
	return true
}

// resume takes a slot again after yield, as a new call of the script would.
// When none comes (the call's context ended) the call is cancelled: Lua
// does not go on without a slot.
func (r *run) resume() error {
	if err := r.v.s.lane.acquire(r.ctx, 0); err != nil {
		r.cancel(err)
		return err
	}
	r.slot = true
	return nil
}

// withoutSlot wraps a Go function of the sandbox that waits without running
// Lua (mcp.sleep): the running call holds no slot while it waits. When fn
// raises, the error goes on once the call holds a slot again (a script may
// catch a bad argument with pcall and run on: never without a slot), or at
// once when none comes (the call is ending).
func (v *vm) withoutSlot(fn lua.LGFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		r := &v.run
		if !r.yield() {
			return fn(L)
		}
		resumed := false
		defer func() {
			if !resumed {
				_ = r.resume() // fn raised: its error unwinds on
			}
		}()
		n := fn(L)
		resumed = true
		if err := r.resume(); err != nil {
			L.RaiseError("%s", err.Error())
		}
		return n
	}
}

// Calls reports the script's Lua calls that hold a slot of the scheduler now,
// and those waiting for one (metrics). Without a scheduler (Config.Sched nil)
// nothing is counted: both are 0.
func (s *Script) Calls() (running, queued int) { return s.lane.counts() }

// counts returns the lane's running and waiting calls.
func (l *lane) counts() (running, queued int) {
	if l.s == nil {
		return 0, 0
	}
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	return l.running, len(l.queue)
}
