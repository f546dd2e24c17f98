package luavm

import (
	"context"
	"encoding/json"
	"runtime"
	"sync"
	"testing"
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
	// The filler refills the lane behind them.
	eventually(t, "the pool to refill", func() bool { return len(s.current().pool.fresh) == 3 })
	if n := s.LiveStates(); n != 3+5 {
		t.Errorf("%d states open, want 8", n)
	}
	// A session's state is closed with it, never given back.
	for _, ss := range sessions {
		ss.Close("normal")
	}
	if n := len(s.current().pool.spare); n != 0 {
		t.Errorf("%d session states went back to the pool", n)
	}
	if n := s.LiveStates(); n != 3 {
		t.Errorf("%d states open after closing the sessions, want 3", n)
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
