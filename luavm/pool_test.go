package luavm

import (
	"context"
	"encoding/json"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

func TestPoolKeepsFreshStates(t *testing.T) {
	s, _ := load(t, "globals.lua", func(c *Config) { c.PoolSize = 3 })
	eventually(t, "the pool to fill", func() bool { return len(s.current().pool.fresh) == 3 })
	if n := s.LiveStates(); n != 3 {
		t.Errorf("%d states open with a full pool of 3", n)
	}

	// Sessions take fresh states: init's global counter starts from zero in
	// each.
	var sessions []interface{ Close(string) }
	for i := range 5 {
		ss, _, err := s.Init(context.Background(), json.RawMessage(initParams), "sid")
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, ss)
		if got := text(t, mustCall(t, ss, "inits", `{}`)); got != "1" {
			t.Errorf("session %d: init ran %s times on its state", i, got)
		}
	}
	// The fillers refill the lane behind them (deeper if a session found
	// it empty).
	p := s.current().pool
	depth := func() int { return int(p.depth.Load()) }
	eventually(t, "the pool to refill", func() bool { return len(p.fresh) == depth() })
	if n := s.LiveStates(); n != depth()+5 {
		t.Errorf("%d states open, want %d fresh + 5", n, depth())
	}
	// A session's state is closed with it: init wrote a global, so it is not
	// pristine (recycle.go), and it never becomes a spare.
	for _, ss := range sessions {
		ss.Close("normal")
	}
	if n := len(s.current().pool.spare); n != 0 {
		t.Errorf("%d session states went back to the pool", n)
	}
	if n := s.LiveStates(); n != depth() {
		t.Errorf("%d states open after closing the sessions, want the %d fresh", n, depth())
	}
	if recycled, closed := s.EndedStates(); recycled != 0 || closed != 5 {
		t.Errorf("%d states recycled and %d closed, want 0 and 5", recycled, closed)
	}
}

// Stateless requests borrow states and give clean ones back as spares.
func TestPoolLendsSpares(t *testing.T) {
	s, _ := load(t, "stateless.lua", func(c *Config) { c.PoolSize = 2 })
	eventually(t, "the pool to fill", func() bool { return len(s.current().pool.fresh) == 2 })
	for range 10 {
		ss, _, err := s.Init(context.Background(), nil, "")
		if err != nil {
			t.Fatal(err)
		}
		mustCall(t, ss, "hit", `{}`)
		ss.Close("")
	}
	if n := len(s.current().pool.spare); n != 1 {
		t.Errorf("%d spare states, want the one reused throughout", n)
	}
	eventually(t, "the pool to refill", func() bool { return len(s.current().pool.fresh) == 2 })
	if n := s.LiveStates(); n != 3 {
		t.Errorf("%d states open, want 2 fresh + 1 spare", n)
	}
}

// The spare lane keeps what a burst of stateless requests gave back while
// borrowers keep coming, and gives it back, half at a time, once none came for
// a whole period.
func TestPoolIdleSpares(t *testing.T) {
	s, _ := load(t, "stateless.lua", func(c *Config) { c.PoolSize = 2 })
	p := s.current().pool
	eventually(t, "the pool to fill", func() bool { return len(p.fresh) == 2 })
	burst := func(n int) {
		t.Helper()
		var held []interface{ Close(string) }
		for range n {
			ss, _, err := s.Init(context.Background(), nil, "")
			if err != nil {
				t.Fatal(err)
			}
			mustCall(t, ss, "hit", `{}`)
			held = append(held, ss)
		}
		for _, ss := range held {
			ss.Close("")
		}
	}
	burst(5)
	if n := len(p.spare); n != 5 {
		t.Fatalf("%d spare states after 5 concurrent borrowers, want 5", n)
	}
	// Each step is what the shrinker does every shrinkAfter.
	for i, want := range []int{
		5, // borrowers came during this period: nothing given back
		2, // none since: half (rounded up) given back
		1,
		0,
		0,
	} {
		p.idleSpares()
		if n := len(p.spare); n != want {
			t.Fatalf("step %d: %d spare states, want %d", i, n, want)
		}
	}
	eventually(t, "only the fresh lane's states open", func() bool { return s.LiveStates() == len(p.fresh) })

	// A borrower in a period keeps the lane whole through that period.
	burst(3)
	p.idleSpares()
	burst(1)
	p.idleSpares()
	if n := len(p.spare); n != 3 {
		t.Errorf("%d spare states after a period with a borrower, want the 3 kept", n)
	}
}

// With no warm states, every state is built when needed.
func TestPoolDisabled(t *testing.T) {
	s, _ := load(t, "stateless.lua", func(c *Config) { c.PoolSize = -1 })
	ss, _ := open(t, s, "")
	if got := text(t, mustCall(t, ss, "hit", `{}`)); got != "params=0 hits=1" {
		t.Errorf("hit = %s", got)
	}
	ss.Close("")
	if n := s.LiveStates(); n != 0 {
		t.Errorf("%d states kept with PoolSize -1", n)
	}
}

// Everything a script opened is closed once its sessions and the script are,
// and its goroutines are gone.
func TestNoLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	logger, _ := newLogger()
	s, err := Load("testdata/full.lua", Config{Dir: "testdata", Logger: logger, PoolSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ss, _, err := s.Init(context.Background(), json.RawMessage(initParams), "sid")
			if err != nil {
				t.Error(err)
				return
			}
			mustCall(t, ss, "inc", `{}`)
			call(t, ss, "crash", `{}`)
			snap, err := ss.Snapshot(context.Background())
			if err != nil {
				t.Error(err)
			} else {
				mustCall(t, snap, "inc", `{}`)
				snap.Close("")
			}
			if i%2 == 0 {
				ss.Close("normal")
			} else {
				ss.Close("")
			}
			st, _, err := s.Init(context.Background(), nil, "")
			if err != nil {
				t.Error(err)
				return
			}
			mustCall(t, st, "echo", `{"text":"x"}`)
			st.Close("")
		}()
	}
	wg.Wait()
	s.Close()
	if n := s.LiveStates(); n != 0 {
		t.Errorf("%d states open after Close", n)
	}
	eventually(t, "the goroutines to end", func() bool { return runtime.NumGoroutine() <= before })

	// A session that outlives its script still closes its state.
	s2, err := Load("testdata/full.lua", Config{Dir: "testdata", Logger: logger, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	ss, _, err := s2.Init(context.Background(), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
	mustCall(t, ss, "echo", `{"text":"still here"}`)
	ss.Close("")
	if n := s2.LiveStates(); n != 0 {
		t.Errorf("%d states open after the late Close", n)
	}
}

// Under steady churn (initialize, call, close) the fillers keep the fresh
// lane ahead: once its depth has followed the demand, no session start
// builds a state inline. Without takers the depth goes back down. The script
// writes a global in init, so that no state is recycled (recycle.go) and the
// fillers build every one.
func TestPoolChurnBuildsNoneInline(t *testing.T) {
	s, _ := load(t, "globals.lua", func(c *Config) { c.PoolSize = 2 })
	p := s.current().pool
	churn := func(lives int) {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range lives {
					ss, _, err := s.Init(context.Background(), json.RawMessage(initParams), "sid")
					if err != nil {
						t.Error(err)
						return
					}
					mustCall(t, ss, "inits", `{}`)
					ss.Close("normal")
				}
			})
		}
		wg.Wait()
	}
	churn(20)
	if d := int(p.depth.Load()); d <= 2 || d > 2+8 {
		t.Errorf("depth %d after bursts of 8 concurrent starts, want it grown past the size 2, to at most 2 + 8", d)
	}
	inline := p.inline.Load()
	churn(50)
	if n := p.inline.Load() - inline; n != 0 {
		t.Errorf("%d of 400 session starts built their state inline under steady churn", n)
	}

	for range 8 {
		p.shrink() // what the first filler does after shrinkAfter without a take
	}
	if d := int(p.depth.Load()); d != 2 {
		t.Errorf("depth %d after the lane went unused, want the size 2", d)
	}
	// A build under way when the depth shrank is closed on delivery.
	eventually(t, "the lane at its depth, and no other state open", func() bool {
		return len(p.fresh) == 2 && s.LiveStates() == 2
	})
}

// The fresh lane's depth halves once shrinkAfter passed without a take,
// whatever else wakes the shrinker meanwhile: here sessions ending one by one,
// whose recycled states overfill the lane (each tells the shrinker), for
// about seven times shrinkAfter after the last take (two halvings take two).
func TestPoolShrinksAfterLastTake(t *testing.T) {
	defer func(d time.Duration) { shrinkAfter = d }(shrinkAfter)
	shrinkAfter = 300 * time.Millisecond
	s, _ := load(t, "echo.lua", func(c *Config) { c.PoolSize = 2 })
	p := s.current().pool
	p.grow(6) // as six takers waiting on an empty lane would
	var held []mcp.Session
	for range 40 {
		ss, _, err := s.Init(context.Background(), json.RawMessage(initParams), "sid")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, ss)
	}
	if d := p.depth.Load(); d != 8 {
		t.Fatalf("depth %d after grow, want 8", d)
	}
	const every = 50 * time.Millisecond
	ends := time.NewTicker(every)
	defer ends.Stop()
	for _, ss := range held {
		<-ends.C
		ss.Close("normal")
	}
	if d := p.depth.Load(); d != 2 {
		t.Errorf("depth %d, %v after the last take (shrinkAfter %v), want the size 2", d, time.Duration(len(held))*every, shrinkAfter)
	}
}

// Under churn of a script that leaves no mark (echo.lua), ended sessions'
// states go back to the fresh lane: most are recycled (a state that finds
// the lane at its bound is closed), and each is counted once.
func TestPoolChurnRecycles(t *testing.T) {
	s, _ := load(t, "echo.lua", func(c *Config) { c.PoolSize = 2 })
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 30 {
				ss, _, err := s.Init(context.Background(), json.RawMessage(initParams), "sid")
				if err != nil {
					t.Error(err)
					return
				}
				mustCall(t, ss, "echo", `{"text":"x"}`)
				ss.Close("normal")
			}
		})
	}
	wg.Wait()
	if recycled, closed := s.EndedStates(); recycled+closed != 8*30 || recycled < 8*30/2 {
		t.Errorf("%d states recycled and %d closed, want 240 in all, most of them recycled", recycled, closed)
	}
}

// BenchmarkPoolGet is the hand-out of a warm fresh state (the fillers refill
// the lane between iterations, off the clock).
func BenchmarkPoolGet(b *testing.B) {
	s, _ := load(b, "echo.lua", func(c *Config) { c.PoolSize = 4 })
	p := s.current().pool
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		v, err := p.get(ctx)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		v.close()
		for len(p.fresh) < int(p.depth.Load()) {
			runtime.Gosched()
		}
		b.StartTimer()
	}
	if n := p.inline.Load(); n != 0 {
		b.Errorf("%d states built inline", n)
	}
}
