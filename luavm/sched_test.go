package luavm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// granted reports whether a wait started with wait has its slot.
func granted(t *testing.T, done <-chan error) bool {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		return true
	case <-time.After(20 * time.Millisecond):
		return false
	}
}

// wait starts an acquire on l in a goroutine; its result arrives on the
// channel. Tests check the order of grants, never durations.
func wait(l *lane, ctx context.Context) <-chan error {
	done := make(chan error, 1)
	go func() { done <- l.acquire(ctx, 0) }()
	return done
}

func mustAcquire(t *testing.T, l *lane) {
	t.Helper()
	if err := l.acquire(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
}

// queued waits until l has n calls waiting, so that the order of arrivals is
// known.
func queued(t *testing.T, l *lane, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d waiting calls", n), func() bool {
		l.s.mu.Lock()
		defer l.s.mu.Unlock()
		return len(l.queue) == n
	})
}

func TestSchedulerCap(t *testing.T) {
	s := NewScheduler(2)
	a := s.newLane()
	mustAcquire(t, a)
	mustAcquire(t, a)
	third := wait(a, context.Background())
	if granted(t, third) {
		t.Fatal("a third call of a lone lane ran past a cap of 2")
	}
	a.release()
	if !granted(t, third) {
		t.Fatal("the waiting call did not get the freed slot")
	}
	a.release()
	a.release()
	if s.Running() != 0 {
		t.Errorf("Running() = %d after every release", s.Running())
	}
	if s.active != 0 || len(s.ring) != 0 {
		t.Errorf("idle scheduler has active=%d ring=%d", s.active, len(s.ring))
	}
}

// A lane that holds every slot (calls that spin until their timeout) does
// not make another lane wait: the newcomer runs at once up to its share,
// past the cap, and only then queues.
func TestSchedulerFairShare(t *testing.T) {
	s := NewScheduler(4)
	spin, healthy := s.newLane(), s.newLane()
	for range 4 {
		mustAcquire(t, spin)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var spinners []<-chan error
	for i := range 28 { // 32 spinning sessions in all
		spinners = append(spinners, wait(spin, ctx))
		queued(t, spin, i+1)
	}
	// Two lanes active: a share is 2 slots.
	mustAcquire(t, healthy)
	mustAcquire(t, healthy)
	if got := s.Running(); got != 6 {
		t.Errorf("Running() = %d, want 4 spinning + 2 healthy", got)
	}
	third := wait(healthy, context.Background())
	if granted(t, third) {
		t.Fatal("a lane at its share ran past the cap")
	}
	// The spinners end one by one. Once their lane is below its share, its
	// slots go to its own waiting calls, oldest first: each lane keeps 2.
	for range 3 {
		spin.release()
	}
	if got := s.Running(); got != 4 {
		t.Fatalf("Running() = %d, want 2 + 2", got)
	}
	if !granted(t, spinners[0]) {
		t.Error("the oldest waiting spinner did not get its lane's slot")
	}
	for _, w := range spinners[1:] {
		if granted(t, w) {
			t.Error("a spinner beyond its lane's share got a slot")
		}
	}
	if granted(t, third) {
		t.Error("a lane at its share got a slot past the cap")
	}
	// A healthy call ends: its lane is below its share again.
	healthy.release()
	if !granted(t, third) {
		t.Fatal("the healthy lane's waiting call did not get its slot")
	}
	spinners = spinners[1:]
	cancel()
	for range 2 {
		healthy.release()
		spin.release()
	}
	eventually(t, "the cancelled waits to leave", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.running == 0 && s.active == 0 && len(s.ring) == 0
	})
}

// When a slot frees and every waiting lane holds its share, the slot goes
// to the waiting lanes in turn.
func TestSchedulerRoundRobin(t *testing.T) {
	s := NewScheduler(9)
	a, b, c := s.newLane(), s.newLane(), s.newLane()
	for _, l := range []*lane{a, b, c} { // three lanes: a share is 3
		for range 3 {
			mustAcquire(t, l)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var aw, bw []<-chan error
	for i := range 2 {
		aw = append(aw, wait(a, ctx))
		queued(t, a, i+1)
		bw = append(bw, wait(b, ctx))
		queued(t, b, i+1)
	}
	// c's calls end; c still runs some, so the shares stay at 3 and the
	// free slots go round robin: a, then b.
	c.release()
	if !granted(t, aw[0]) || granted(t, bw[0]) {
		t.Fatal("the first free slot did not go to a, the first lane in the ring")
	}
	c.release()
	if !granted(t, bw[0]) || granted(t, aw[1]) {
		t.Fatal("the second free slot did not go to b")
	}
	// c goes idle: two lanes share 9 slots, 5 each; a and b hold 4.
	c.release()
	if !granted(t, aw[1]) || !granted(t, bw[1]) {
		t.Fatal("a lane below its share still waits")
	}
	for range 5 {
		a.release()
		b.release()
	}
	if s.Running() != 0 || s.active != 0 {
		t.Errorf("running=%d active=%d at the end", s.Running(), s.active)
	}
}

// A call that waits honours its context and the longest wait it is given;
// either way it holds no slot and leaves nothing behind.
func TestSchedulerWaitEnds(t *testing.T) {
	s := NewScheduler(1)
	a := s.newLane()
	mustAcquire(t, a)

	ctx, cancel := context.WithCancel(context.Background())
	done := wait(a, ctx)
	queued(t, a, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled wait: %v", err)
	}
	err := a.acquire(context.Background(), 30*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("wait past maxWait: %v, want an error that is context.DeadlineExceeded", err)
	}
	contains(t, err.Error(), "no free Lua slot within request_timeout_ms (30ms)")
	a.release()
	if s.Running() != 0 || len(a.queue) != 0 || s.active != 0 {
		t.Errorf("after the waits: running=%d queue=%d active=%d", s.Running(), len(a.queue), s.active)
	}

	var none *Scheduler
	free := none.newLane()
	if err := free.acquire(ctx, 0); err != nil {
		t.Errorf("a lane without a scheduler waited: %v", err)
	}
	free.release()
}

// schedScript is a stateless server with a tool that spins until its call
// ends, one that answers at once, and one that asks the client.
const schedScript = `local mcp = require("mcp")
return {
  route = { call_timeout_ms = 30000 },
  init = function() return { name = "s", version = "1" }, { tools = {} }, {} end,
  tools = function() return { { name = "spin" }, { name = "ok" }, { name = "ask" }, { name = "nap" }, { name = "escape" } } end,
  handle_tool = function(name, args, ctx)
    if name == "spin" then while true do end end
    if name == "escape" then
      pcall(mcp.sleep, "not a number") -- raises, caught: the call runs on
      mcp.log(ctx, "info", "spinning")
      while true do end
    end
    if name == "nap" then mcp.log(ctx, "info", "napping") mcp.sleep(60000) return "woke" end
    if name == "ask" then return (mcp.elicit(ctx, { message = "?" })) and "answered" or "no" end
    return "ok"
  end,
}
`

func loadSched(t *testing.T, sched *Scheduler, name string) *Script {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, name+".lua")
	if err := os.WriteFile(file, []byte(schedScript), 0o644); err != nil {
		t.Fatal(err)
	}
	logger, _ := newLogger()
	s, err := Load(file, Config{Dir: dir, Logger: logger, Sched: sched, PoolSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		eventually(t, "the states to close", func() bool { return s.LiveStates() == 0 })
	})
	return s
}

func statelessCall(ctx context.Context, s *Script, call *mcp.Call, tool string) (string, error) {
	ss, _, err := s.Init(ctx, nil, "")
	if err != nil {
		return "", err
	}
	defer ss.Close("")
	res, err := ss.CallTool(ctx, call, tool, nil)
	return string(res), err
}

// 32 spinning calls of one script hold every slot; another script's calls
// still run, and the spinners' queued calls run no Lua once cancelled.
func TestSchedulerSpinnersDoNotStarve(t *testing.T) {
	sched := NewScheduler(4)
	bad, good := loadSched(t, sched, "bad"), loadSched(t, sched, "good")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Go(func() {
			_, err := statelessCall(ctx, bad, testCall(""), "spin")
			errs <- err
		})
	}
	eventually(t, "the spinners to fill the slots", func() bool {
		sched.mu.Lock()
		defer sched.mu.Unlock()
		return sched.running == 4 && len(bad.lane.queue) == 28
	})
	for i := range 20 {
		done := make(chan error, 1)
		go func() {
			out, err := statelessCall(context.Background(), good, testCall(""), "ok")
			if err == nil && text(t, out) != "ok" {
				err = fmt.Errorf("result %s", out)
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("healthy call %d: %v", i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("healthy call %d did not get a slot while the spinners held them", i)
		}
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("spinner: %v, want an interruption", err)
		}
	}
	if sched.Running() != 0 {
		t.Errorf("Running() = %d after every call ended", sched.Running())
	}
}

// blockingLine answers requests to the client when told to.
type blockingLine struct {
	out
	asked  chan struct{}
	answer chan struct{}
}

func (l *blockingLine) Ask(ctx context.Context, reqs []mcp.InputRequest) ([]mcp.InputAnswer, error) {
	close(l.asked)
	select {
	case <-l.answer:
		out := make([]mcp.InputAnswer, len(reqs))
		for i := range out {
			out[i].Result = json.RawMessage(`{"action":"accept","content":{}}`)
		}
		return out, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// A call waiting for the client's answer gives its slot back meanwhile.
func TestSchedulerElicitFreesSlot(t *testing.T) {
	sched := NewScheduler(1)
	s := loadSched(t, sched, "asker")
	line := &blockingLine{asked: make(chan struct{}), answer: make(chan struct{})}
	call := &mcp.Call{RequestID: json.RawMessage("1"), Out: line}
	done := make(chan string, 1)
	go func() {
		out, err := statelessCall(context.Background(), s, call, "ask")
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	select {
	case <-line.asked:
	case out := <-done:
		t.Fatalf("the tool did not ask the client: %s", out)
	}
	if n := sched.Running(); n != 0 {
		t.Errorf("Running() = %d while the only call waits for the client", n)
	}
	// Another call of the same script runs meanwhile (the cap is 1).
	out, err := statelessCall(context.Background(), s, testCall(""), "ok")
	if err != nil || text(t, out) != "ok" {
		t.Fatalf("a call while the other waits for the client: %s, %v", out, err)
	}
	close(line.answer)
	if got := text(t, <-done); got != "answered" {
		t.Errorf("ask = %q", got)
	}
	if n := sched.Running(); n != 0 {
		t.Errorf("Running() = %d at the end", n)
	}
}

// napLine tells when the call logs.
type napLine struct {
	out
	logged chan struct{}
}

func (l *napLine) Log(string, json.RawMessage) error {
	close(l.logged)
	return nil
}

// A sleeping call holds no slot either, and takes one again when it wakes.
func TestSchedulerSleepFreesSlot(t *testing.T) {
	sched := NewScheduler(1)
	s := loadSched(t, sched, "napper")
	line := &napLine{logged: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := statelessCall(ctx, s, &mcp.Call{RequestID: json.RawMessage("1"), Out: line}, "nap")
		done <- err
	}()
	<-line.logged
	eventually(t, "the sleeping call to give its slot back", func() bool { return sched.Running() == 0 })
	out, err := statelessCall(context.Background(), s, testCall(""), "ok")
	if err != nil || text(t, out) != "ok" {
		t.Fatalf("a call while the other sleeps: %s, %v", out, err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled nap: %v", err)
	}
	if n := sched.Running(); n != 0 {
		t.Errorf("Running() = %d at the end", n)
	}
}

// TestLaneCounts checks what Script.Calls reports: the lane's calls holding
// a slot, and those waiting for one.
func TestLaneCounts(t *testing.T) {
	s := NewScheduler(1)
	a := s.newLane()
	want := func(running, queued int) {
		t.Helper()
		if r, q := a.counts(); r != running || q != queued {
			t.Errorf("counts() = %d running, %d queued; want %d, %d", r, q, running, queued)
		}
	}
	want(0, 0)
	mustAcquire(t, a)
	second := wait(a, context.Background())
	queued(t, a, 1)
	want(1, 1)
	a.release()
	if !granted(t, second) {
		t.Fatal("the waiting call did not get the freed slot")
	}
	want(1, 0)
	a.release()
	want(0, 0)
	if r, q := (&lane{}).counts(); r != 0 || q != 0 {
		t.Errorf("a lane without a scheduler counts %d, %d", r, q)
	}
}

// logSignal is a call's line that signals each log message.
type logSignal struct {
	out
	ch chan struct{}
}

func (l *logSignal) Log(string, json.RawMessage) error { l.ch <- struct{}{}; return nil }

// A waiting function that raises (mcp.sleep with a bad argument, caught by
// pcall) gives the call its slot back before Lua runs on: three calls that
// then spin run one at a time under a cap of 1.
func TestSchedulerSlotAfterRaisedWait(t *testing.T) {
	sched := NewScheduler(1)
	s := loadSched(t, sched, "escape")
	ctx, cancel := context.WithCancel(context.Background())
	line := &logSignal{ch: make(chan struct{}, 8)}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			_, _ = statelessCall(ctx, s, &mcp.Call{RequestID: json.RawMessage("1"), Out: line}, "escape")
		})
	}
	<-line.ch // one spins
	select {
	case <-line.ch:
		t.Errorf("two calls run Lua at once under a cap of 1 (the scheduler counts %d)", sched.Running())
	case <-time.After(300 * time.Millisecond):
	}
	cancel()
	wg.Wait()
	if n := sched.Running(); n != 0 {
		t.Errorf("Running() = %d once the calls ended", n)
	}
}
