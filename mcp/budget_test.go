package mcp

import (
	"log/slog"
	"strings"
	"testing"
)

// TestReplayBudgetTakesFromThePusher checks the process-wide replay budget
// on push streams: past it the stream pushed to gives up its own oldest
// events (counted as evicted when unread), the other streams keep theirs,
// the newest event always stays, and a closed stream gives everything back.
func TestReplayBudgetTakesFromThePusher(t *testing.T) {
	msg := []byte(`{"pad":"` + strings.Repeat("p", 80) + `"}`)
	event := len(appendEvent(nil, "10", msg)) // ids 1-9 frame one byte shorter
	tests := []struct {
		name   string
		budget int64
		// keptC is how many of 20 pushes the second stream keeps.
		keptC int
	}{
		{"no bound", 0, 20},
		{"room for 12", int64(12 * event), 4}, // the first stream keeps 8
		{"spent", int64(8 * event), 1},        // the newest stays, whatever the budget
		{"tiny", 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &replayBudget{log: slog.New(slog.DiscardHandler)}
			b.max.Store(tt.budget)
			a := newPushStream(true, 100, 0, b)
			c := newPushStream(true, 100, 0, b)
			lostA, lostC := 0, 0
			a.dropped = func(n int) { lostA += n }
			c.dropped = func(n int) { lostC += n }
			keptA := 8
			if tt.budget == 1 {
				keptA = 1 // a was the pusher then
			}
			for range 8 {
				a.push(msg)
			}
			for range 20 {
				c.push(msg)
			}
			if got := len(a.after(0, nil)); got != keptA || lostA != 8-keptA {
				t.Errorf("the first stream kept %d and lost %d, want %d kept: the second's pushes must not take its events", got, lostA, keptA)
			}
			evs := c.after(0, nil)
			if len(evs) != tt.keptC || lostC != 20-tt.keptC || evs[len(evs)-1].id != 20 {
				t.Errorf("the pusher kept %d (newest %d) and lost %d of 20, want %d kept, 20 newest", len(evs), evs[len(evs)-1].id, lostC, tt.keptC)
			}
			if n := b.n.Load(); n != int64(a.ring.bytes+c.ring.bytes) {
				t.Errorf("budget counts %d bytes, the rings keep %d", n, a.ring.bytes+c.ring.bytes)
			}
			c.close()
			a.close()
			if n := b.n.Load(); n != 0 {
				t.Errorf("closed streams still count %d bytes", n)
			}
			if c.push(msg) || b.n.Load() != 0 {
				t.Errorf("a closed stream took a push")
			}
		})
	}
}

// BenchmarkPushStream measures one push with a reader keeping up, charged
// to a replay budget or to none: the budget's cost on the push path.
func BenchmarkPushStream(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`)
	for _, bb := range []struct {
		name   string
		budget *replayBudget
	}{{"no budget", nil}, {"budget", &replayBudget{log: slog.New(slog.DiscardHandler)}}} {
		b.Run(bb.name, func(b *testing.B) {
			if bb.budget != nil {
				bb.budget.max.Store(DefaultReplayBudget)
			}
			p := newPushStream(true, DefaultSessionBufferMax, DefaultSessionBufferBytes, bb.budget)
			var evs []ringEvent
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				p.push(msg)
				evs = p.after(uint64(i), evs[:0])
			}
		})
	}
}
