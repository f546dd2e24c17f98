package mcp

import (
	"testing"
	"time"
)

func TestLogThrottle(t *testing.T) {
	var th logThrottle
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
		ok, held := th.allow(t0.Add(step.at), 10*time.Second)
		if ok != step.ok || held != step.held {
			t.Errorf("at %v: allow = %v, %d; want %v, %d", step.at, ok, held, step.ok, step.held)
		}
	}
}
