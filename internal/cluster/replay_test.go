package cluster

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestReplayWindow runs a guard through sequences of numbers: each number
// of a signer is accepted once, in any order within the window; one below
// the window is refused; a new boot id has a window of its own; a signer
// silent past msgMaxSkew is forgotten and accepted again when it resumes.
func TestReplayWindow(t *testing.T) {
	type step struct {
		boot string
		seq  uint64
		at   time.Duration // signed and received this long after t0
		want string        // "" accepted, else the refusal
	}
	// run yields steps for the numbers from..to of boot "a", each accepted.
	run := func(from, to uint64) []step {
		var s []step
		for n := from; n <= to; n++ {
			s = append(s, step{"a", n, 0, ""})
		}
		return s
	}
	cat := func(parts ...[]step) []step {
		var s []step
		for _, p := range parts {
			s = append(s, p...)
		}
		return s
	}
	top := uint64(100 + replayWindow)
	tests := []struct {
		name  string
		steps []step
	}{
		{"the same number twice", []step{{"a", 1, 0, ""}, {"a", 1, 0, replaySeen}}},
		{"a first number anywhere", []step{{"a", 1 << 40, 0, ""}, {"a", 1<<40 - 1, 0, ""}, {"a", 1 << 40, 0, replaySeen}}},
		{"reordered within the window", []step{
			{"a", 5, 0, ""}, {"a", 3, 0, ""}, {"a", 4, 0, ""}, {"a", 1, 0, ""}, {"a", 2, 0, ""},
			{"a", 3, 0, replaySeen}, {"a", 5, 0, replaySeen}, {"a", 6, 0, ""},
		}},
		{"holes, filled late", []step{
			{"a", 10, 0, ""}, {"a", 500, 0, ""}, {"a", 11, 0, ""}, {"a", 499, 0, ""}, {"a", 10, 0, replaySeen},
		}},
		{"the window's bottom edge", []step{
			{"a", 1, 0, ""}, {"a", replayWindow, 0, ""}, {"a", 1, 0, replaySeen},
			{"a", replayWindow + 1, 0, ""}, {"a", 1, 0, replayTooOld}, {"a", 2, 0, ""},
		}},
		{"older than the window", []step{
			{"a", 1, 0, ""}, {"a", 2, 0, ""}, {"a", 2 + replayWindow, 0, ""},
			{"a", 1, 0, replayTooOld}, {"a", 2, 0, replayTooOld},
		}},
		{"a jump past the window forgets every number", []step{
			{"a", 7, 0, ""}, {"a", 7 + 3*replayWindow, 0, ""}, {"a", 7 + 2*replayWindow, 0, replayTooOld},
			{"a", 8 + 2*replayWindow, 0, ""}, {"a", 7 + 3*replayWindow, 0, replaySeen},
		}},
		// 1..200 set the bits that 1+replayWindow.. reuse: the jump to
		// top must clear those now out of the window, and only those.
		{"bits reused after a jump", cat(run(1, 200), []step{
			{"a", top, 0, ""},
			{"a", 100, 0, replayTooOld},
			{"a", 101, 0, replaySeen},
			{"a", 200, 0, replaySeen},
			{"a", 201, 0, ""},
			{"a", 1 + replayWindow, 0, ""},
			{"a", 64 + replayWindow, 0, ""},
			{"a", 99 + replayWindow, 0, ""},
			{"a", 64 + replayWindow, 0, replaySeen},
		})},
		{"a new boot starts a window of its own", []step{
			{"a", 1000, 0, ""}, {"b", 1, 0, ""}, {"b", 2, 0, ""}, {"a", 1000, 0, replaySeen},
			{"b", 1, 0, replaySeen}, {"a", 1, 0, ""}, {"a", 999, 0, ""}, {"b", 3, 0, ""},
		}},
		{"silent past msgMaxSkew, then resuming", []step{
			{"a", 1, 0, ""}, {"a", 2, 0, ""},
			{"a", 3, msgMaxSkew + replaySlack + replaySweep + time.Second, ""},
			{"a", 4, msgMaxSkew + replaySlack + replaySweep + 2*time.Second, ""},
			{"a", 3, msgMaxSkew + replaySlack + replaySweep + 3*time.Second, replaySeen},
		}},
		{"silent for a while, kept", []step{
			{"a", 1, 0, ""}, {"a", 2, msgMaxSkew, ""}, {"a", 1, msgMaxSkew, replaySeen},
		}},
	}
	t0 := time.Unix(1_800_000_000, 0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var g replayGuard
			for i, s := range tt.steps {
				now := t0.Add(s.at)
				if got := g.admit(replayKey{"n1", s.boot}, s.seq, now.Unix(), now); got != s.want {
					t.Fatalf("step %d (boot %s, number %d): %q, want %q", i, s.boot, s.seq, got, s.want)
				}
			}
		})
	}
}

// TestReplayGuardBounded: a guard keeps one state per live signer. Those
// silent past msgMaxSkew are forgotten; past replayPairs live ones the
// stalest goes.
func TestReplayGuardBounded(t *testing.T) {
	var g replayGuard
	t0 := time.Unix(1_800_000_000, 0)
	early := t0.Add(-time.Minute)
	g.admit(replayKey{"n0", "early"}, 1, early.Unix(), early)
	for i := range replayPairs {
		g.admit(replayKey{"n1", strconv.Itoa(i)}, 1, t0.Unix(), t0)
	}
	if n := g.pairs(); n != replayPairs {
		t.Fatalf("%d signers tracked, want %d", n, replayPairs)
	}
	for i := range replayPairs { // the stalest went, none of these
		if got := g.admit(replayKey{"n1", strconv.Itoa(i)}, 1, t0.Unix(), t0); got != replaySeen {
			t.Fatalf("signer %d was dropped rather than the stalest: %q", i, got)
		}
	}
	for i := range 2 * replayPairs {
		g.admit(replayKey{"n2", strconv.Itoa(i)}, 1, t0.Unix(), t0)
		if n := g.pairs(); n > replayPairs {
			t.Fatalf("after %d more signers: %d tracked, want at most %d", i+1, n, replayPairs)
		}
	}
	// Silence: only the signer still talking is kept.
	later := t0.Add(msgMaxSkew + replaySlack + replaySweep + time.Second)
	for seq := uint64(1); seq <= 3; seq++ {
		if got := g.admit(replayKey{"live", "x"}, seq, later.Unix(), later); got != "" {
			t.Fatalf("the live signer's number %d: %q", seq, got)
		}
	}
	if n := g.pairs(); n != 1 {
		t.Errorf("%d signers tracked after the others were silent past msgMaxSkew, want 1", n)
	}
}

// TestSignerRefusesReplays checks signed messages as a node receives them:
// each is accepted once, in any order within the window; a node restarting
// (another boot id) is accepted from its first number; a node silent past
// msgMaxSkew is accepted when it resumes; an older node's messages (version
// 1) are refused, as they cannot be told from their replays.
func TestSignerRefusesReplays(t *testing.T) {
	key := []byte("the cluster's key")
	t0 := time.Now()
	msg := func(s *signer, data string, at time.Duration) *nats.Msg {
		m := &nats.Msg{Subject: nodePrefix + "r", Data: []byte(data)}
		s.signAt(m, t0.Add(at))
		return m
	}
	type delivery struct {
		m    int           // index of the message
		at   time.Duration // received this long after t0
		want bool
	}
	tests := []struct {
		name  string
		msgs  func(a, a2 *signer) []*nats.Msg // a2: a restarted
		order []delivery
	}{
		{"the same message twice", func(a, _ *signer) []*nats.Msg {
			return []*nats.Msg{msg(a, "push", 0)}
		}, []delivery{{0, 0, true}, {0, 0, false}, {0, time.Minute, false}}},
		{"reordered distinct messages", func(a, _ *signer) []*nats.Msg {
			return []*nats.Msg{msg(a, "1", 0), msg(a, "2", 0), msg(a, "3", 0), msg(a, "4", 0), msg(a, "5", 0)}
		}, []delivery{{4, 0, true}, {1, 0, true}, {3, 0, true}, {0, 0, true}, {2, 0, true}, {2, 0, false}, {4, 0, false}}},
		{"older than the window", func(a, _ *signer) []*nats.Msg {
			first := msg(a, "first", 0)
			for range replayWindow - 1 {
				msg(a, "to others", 0) // numbers this receiver never sees
			}
			return []*nats.Msg{first, msg(a, "last in", 0), msg(a, "first out", 0)}
		}, []delivery{{1, 0, true}, {2, 0, true}, {0, 0, false}}},
		{"a restarted node", func(a, a2 *signer) []*nats.Msg {
			for range 50 {
				msg(a, "before", 0)
			}
			return []*nats.Msg{msg(a, "old", 0), msg(a2, "new", time.Second), msg(a2, "new 2", time.Second)}
		}, []delivery{{0, 0, true}, {1, time.Second, true}, {2, time.Second, true}, {0, time.Second, false}, {1, time.Second, false}}},
		{"silent past msgMaxSkew, then resuming", func(a, _ *signer) []*nats.Msg {
			return []*nats.Msg{msg(a, "before", 0), msg(a, "after", 3*msgMaxSkew)}
		}, []delivery{{0, 0, true}, {1, 3 * msgMaxSkew, true}, {0, 3 * msgMaxSkew, false}, {1, 3 * msgMaxSkew, false}}},
		{"an older node", func(a, _ *signer) []*nats.Msg {
			m := &nats.Msg{Subject: nodePrefix + "r", Data: []byte("v1"), Header: nats.Header{originHeader: {"a"}}}
			signV1(a, m, t0)
			return []*nats.Msg{m}
		}, []delivery{{0, 0, false}}},
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, a2, r := newSigner(key, "a"), newSigner(key, "a"), newSigner(key, "r")
			var g replayGuard
			msgs := tt.msgs(a, a2)
			for i, d := range tt.order {
				if got := r.checkedAt(msgs[d.m], &g, log, "r", t0.Add(d.at)); got != d.want {
					t.Fatalf("delivery %d (message %d, %s): accepted %v, want %v", i, d.m, msgs[d.m].Header.Get(sigHeader), got, d.want)
				}
			}
		})
	}
}

// TestReplayedNATSMessages: a NATS client that is not a node captures what
// the nodes publish and publishes it again, byte for byte, at once: a push
// to a session, a broadcast and the `left` of a node since restarted. None
// takes effect twice.
func TestReplayedNATSMessages(t *testing.T) {
	e := startNATS(t)
	key := []byte("0123456789abcdef0123456789abcdef")
	a := joinKeyed(t, e.URL(), "a", "http://127.0.0.1:1", key)
	b := joinKeyed(t, e.URL(), "b", "http://127.0.0.1:2", key)
	var mu sync.Mutex
	var delivered []string
	b.Attach(func(push []byte) {
		mu.Lock()
		delivered = append(delivered, string(push))
		mu.Unlock()
	})
	pushes := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), delivered...)
	}
	rec := &recorder{}
	b.PubSub().Subscribe("ch", rec)

	// The intruder listens to the nodes' subjects.
	nc, err := nats.Connect(e.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	captured := make(chan *nats.Msg, 64)
	for _, subject := range []string{nodePrefix + ">", pubsubPrefix + ">", leftSubject} {
		if _, err := nc.ChanSubscribe(subject, captured); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	capture := func(subject string) *nats.Msg {
		t.Helper()
		timeout := time.After(5 * time.Second)
		for {
			select {
			case m := <-captured:
				if m.Subject == subject {
					return m
				}
			case <-timeout:
				t.Fatalf("no message on %s captured", subject)
			}
		}
	}
	// waitReplays waits until node n has dropped want replays in all.
	waitReplays := func(n *Node, want int64) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for n.sig.replays.Load() < want {
			if time.Now().After(deadline) {
				t.Fatalf("node %s dropped %d replays, want %d (pushes %q, broadcasts %q)", n.id, n.sig.replays.Load(), want, pushes(), rec.got())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	a.Send("b", []byte("push"))
	push := capture(nodePrefix + "b")
	waitFor(t, 5*time.Second, "the push", func() bool { return len(pushes()) == 1 })
	a.PubSub().Publish("ch", []byte("broadcast"))
	broadcast := capture(channelSubject("ch"))
	waitFor(t, 5*time.Second, "the broadcast", func() bool { return len(rec.got()) == 1 })

	for _, m := range []*nats.Msg{push, push, broadcast} {
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	nc.Flush()
	waitReplays(b, 3)
	// Messages sent since still arrive, and once.
	a.Send("b", []byte("push 2"))
	a.PubSub().Publish("ch", []byte("broadcast 2"))
	waitFor(t, 5*time.Second, "the second push", func() bool { return len(pushes()) == 2 })
	waitFor(t, 5*time.Second, "the second broadcast", func() bool { return len(rec.got()) == 2 })
	if got := strings.Join(pushes(), ","); got != "push,push 2" {
		t.Errorf("pushes delivered: %q, want each once", got)
	}
	if got := strings.Join(rec.got(), ","); got != "broadcast,broadcast 2" {
		t.Errorf("broadcasts delivered: %q, want each once", got)
	}

	// Node c leaves and comes back (a new process: a new boot id); its
	// `left`, replayed, must not make a forget it again.
	c := joinKeyed(t, e.URL(), "c", "http://127.0.0.1:3", key)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if p, err := a.peerTo(ctx, "c"); p == nil || err != nil {
		t.Fatalf("a does not know c: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	left := capture(leftSubject)
	known := func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		_, ok := a.known["c"]
		return ok
	}
	waitFor(t, 5*time.Second, "c's left", func() bool { return !known() })
	joinKeyed(t, e.URL(), "c", "http://127.0.0.1:3", key)
	if p, err := a.peerTo(ctx, "c"); p == nil || err != nil {
		t.Fatalf("a does not know c back: %v", err)
	}
	before := a.sig.replays.Load()
	if err := nc.PublishMsg(left); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	waitReplays(a, before+1)
	if !known() {
		t.Errorf("a replayed `left` of c made a forget c, back since")
	}
}

// BenchmarkSignCheck measures one push signed by a node and checked by
// another: the work signing and replay protection add to each push.
func BenchmarkSignCheck(b *testing.B) {
	key := []byte("0123456789abcdef0123456789abcdef")
	s, r := newSigner(key, "a"), newSigner(key, "b")
	var g replayGuard
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	data := []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hello"}}`)
	var refused atomic.Int64
	b.ReportAllocs()
	for b.Loop() {
		m := &nats.Msg{Subject: nodePrefix + "b", Data: data}
		s.sign(m)
		if !r.checked(m, &g, log, "b") {
			refused.Add(1)
		}
	}
	if refused.Load() != 0 {
		b.Fatalf("%d refused", refused.Load())
	}
}
