package logcap

import (
	"testing"
	"time"
)

func TestThrottleAllow(t *testing.T) {
	var th Throttle
	t0 := time.Unix(1_000_000, 0)
	for _, step := range []struct {
		at   time.Duration // since t0
		ok   bool
		held int
	}{
		{0, true, 0},                // the first line goes at once
		{time.Second, false, 0},     // then lines are held back...
		{9 * time.Second, false, 0}, // ...for the whole interval
		{10 * time.Second, true, 2}, // the next one reports them
		{11 * time.Second, false, 0},
		{30 * time.Second, true, 1}, // however late it comes
		{41 * time.Second, true, 0}, // nothing held back
	} {
		ok, held := th.Allow(t0.Add(step.at), 10*time.Second)
		if ok != step.ok || held != step.held {
			t.Errorf("at %v: Allow = %v, %d; want %v, %d", step.at, ok, held, step.ok, step.held)
		}
	}
}

// TestThrottleQuiet: a throttle is quiet, and may be forgotten, only when
// its window has passed with no line held back.
func TestThrottleQuiet(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	var th Throttle
	if !th.Quiet(t0) {
		t.Error("a new throttle is not quiet")
	}
	th.Allow(t0, 10*time.Second)
	if th.Quiet(t0.Add(5 * time.Second)) {
		t.Error("quiet within its window")
	}
	if !th.Quiet(t0.Add(10 * time.Second)) {
		t.Error("not quiet once its window passed with nothing held back")
	}
	th.Allow(t0.Add(5*time.Second), 10*time.Second) // held back
	if th.Quiet(t0.Add(20 * time.Second)) {
		t.Error("quiet while it holds a line's count")
	}
}
