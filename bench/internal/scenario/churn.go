package scenario

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/luamcp/luamcp/bench/internal/client"
	"github.com/luamcp/luamcp/bench/internal/load"
	"github.com/luamcp/luamcp/bench/internal/spec"
)

// churn runs whole session lives: initialize, notifications/initialized,
// one call, DELETE. It also reports how much the server's live heap grew
// per thousand lives (nothing should stay behind a deleted session).
func churn(ctx context.Context, t *Target, s Scale, r *Result) {
	// A few lives first, so that pools and caches that fill once do not
	// count as growth.
	err := load.FirstError(load.Parallel(s.Conc, s.Conc, func(i int) error {
		c := client.New(t.Addr, spec.PathChurn, s.Timeout)
		defer c.Close()
		for range 20 {
			if err := c.Initialize(true); err != nil {
				return err
			}
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	}))
	if err != nil {
		r.fail(err)
		return
	}
	before, err := settled(ctx, t, s, nil, 0)
	if err != nil {
		r.fail(err)
		return
	}
	ops := make([]load.Op, s.Conc)
	clients := make([]*client.Client, s.Conc)
	for i := range ops {
		c := client.New(t.Addr, spec.PathChurn, s.Timeout)
		clients[i] = c
		text := []byte("churn-" + strconv.Itoa(i))
		ops[i] = func() error {
			if err := c.Initialize(true); err != nil {
				return err
			}
			if err := c.Echo(text); err != nil {
				return err
			}
			return c.Delete()
		}
	}
	m := &cpuMeter{pid: t.PID}
	lr := load.Run(ctx, load.Config{Concurrency: s.Conc, Warmup: s.Warmup, Duration: s.Duration, Probe: m.probe}, ops)
	timed(r, lr, m, "lives/s")
	// Closed connections take their server goroutines with them.
	for _, c := range clients {
		c.Close()
	}
	if lr.Errors > 0 {
		// Failed lives leave sessions behind, to be reaped: no leak figure.
		return
	}
	after, err := settled(ctx, t, s, &before, 256<<10)
	if err != nil {
		r.fail(err)
		return
	}
	growth := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(lr.Done)
	r.add("heap/life", "B", growth, true)
	if after.ChurnSessions > 0 {
		r.finding(t, "%d sessions still live after DELETE", after.ChurnSessions)
	}
	if after.Goroutines > before.Goroutines+2 {
		r.finding(t, "goroutines %d -> %d after the lives ended", before.Goroutines, after.Goroutines)
	}
	if growth > 64 && after.HeapAlloc > before.HeapAlloc+256<<10 {
		r.finding(t, "live heap grew %.0f B per deleted session", growth)
	}
}

// settled waits until the churn route has no live sessions and, when
// base is given, the server is back to base: at most two more goroutines
// and at most heapSlack more live heap. After twice the TTL plus a margin it
// returns what it has.
func settled(ctx context.Context, t *Target, s Scale, base *snapshot, heapSlack uint64) (snapshot, error) {
	deadline := time.Now().Add(2*s.TTL + 10*time.Second)
	for {
		st, err := stats(t, s.Timeout)
		if err != nil {
			return st, err
		}
		done := st.ChurnSessions <= 0
		if base != nil {
			done = done && st.Goroutines <= base.Goroutines+2 && st.HeapAlloc <= base.HeapAlloc+heapSlack
		}
		if done || time.Now().After(deadline) || ctx.Err() != nil {
			return st, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// abandon opens n sessions and leaves them: no DELETE, connections closed.
// Once they have sat idle for s.IdleWait it reports their cost (RSS, live
// heap and goroutines per session), then waits for the idle TTL to reap them
// and checks that everything they held is gone and that their ids are
// refused. The wait lets a server that slims its idle sessions down
// (luamcp's hibernation, session_hibernate_ms) do so; the RSS right after
// opening is reported too.
func abandon(n int) func(context.Context, *Target, Scale, *Result) {
	return func(ctx context.Context, t *Target, s Scale, r *Result) { abandonN(ctx, t, s, r, n) }
}

func abandonN(ctx context.Context, t *Target, s Scale, r *Result, n int) {
	before, err := settled(ctx, t, s, nil, 0)
	if err != nil {
		r.fail(err)
		return
	}
	ids := make([]string, n)
	workers := make([]*client.Client, s.Conc)
	for i := range workers {
		workers[i] = client.New(t.Addr, spec.PathChurn, s.Timeout)
	}
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	start := time.Now()
	errs := load.Parallel(s.Conc, s.Conc, func(w int) error {
		c := workers[w]
		defer c.Close()
		for i := range next {
			if err := c.Initialize(true); err != nil {
				return err
			}
			ids[i] = c.SessionID
		}
		return nil
	})
	opened := time.Now()
	if err := load.FirstError(errs); err != nil {
		r.fail(err)
		return
	}
	atOpen, err := stats(t, s.Timeout)
	if err != nil {
		r.fail(err)
		return
	}
	select {
	case <-time.After(s.IdleWait):
	case <-ctx.Done():
	}
	open, err := stats(t, s.Timeout)
	if err != nil {
		r.fail(err)
		return
	}
	openTime := opened.Sub(start)
	if openTime+s.IdleWait > s.TTL/2 {
		r.Notes = append(r.Notes, fmt.Sprintf("opening took %v (then %v idle), over half the TTL: early sessions may be reaped before the count", openTime.Round(time.Millisecond), s.IdleWait))
	}
	if open.ChurnSessions >= 0 && open.ChurnSessions < n {
		r.Notes = append(r.Notes, fmt.Sprintf("%d of %d sessions live after opening", open.ChurnSessions, n))
	}

	per := func(a, b uint64) float64 { return (float64(a) - float64(b)) / float64(n) / 1024 }
	r.add("rss/session", "KiB", per(open.RSS, before.RSS), true)
	r.add("rss/session at open", "KiB", per(atOpen.RSS, before.RSS), true)
	r.add("heap/session", "KiB", per(open.HeapAlloc, before.HeapAlloc), true)
	r.add("goroutines/session", "", float64(open.Goroutines-before.Goroutines)/float64(n), true)
	r.add("opens/s", "/s", float64(n)/openTime.Seconds(), false)

	// Maps and runtime structures that grew for N sessions keep their
	// capacity after the sessions go (a second round returns to the same
	// level): only more than 1 KiB per session counts as held memory.
	slack := uint64(n)<<10 + 256<<10
	after, err := settled(ctx, t, s, &before, slack)
	if err != nil {
		r.fail(err)
		return
	}
	reaped := time.Since(opened)
	r.add("reaped after", "s", reaped.Seconds(), true)
	r.add("heap after reap", "KiB", (float64(after.HeapAlloc)-float64(before.HeapAlloc))/1024, true)
	switch {
	case after.ChurnSessions > 0:
		r.finding(t, "%d of %d sessions not reaped after %v (TTL %v)", after.ChurnSessions, n, reaped.Round(time.Second), s.TTL)
	case after.Goroutines > before.Goroutines+2:
		r.finding(t, "goroutines %d -> %d after reaping", before.Goroutines, after.Goroutines)
	case after.HeapAlloc > before.HeapAlloc+slack:
		r.finding(t, "live heap %d KiB -> %d KiB after reaping", before.HeapAlloc>>10, after.HeapAlloc>>10)
	}

	// A reaped session is gone: its id must get 404.
	c := client.New(t.Addr, spec.PathChurn, s.Timeout)
	defer c.Close()
	c.SessionID, c.Version = ids[0], client.ProtocolVersion
	if status, err := c.Status(); err != nil {
		r.fail(err)
	} else if status != 404 {
		r.finding(t, "a reaped session's id got HTTP %d, want 404", status)
	}
}
