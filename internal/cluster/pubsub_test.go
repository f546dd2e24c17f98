package cluster

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

func TestChannelSubjectRoundTrip(t *testing.T) {
	for _, ch := range []string{
		"", "c:/mcp/a#news", "r:/mcp/a#file:///x/y.txt", "c:/mcp/a#a.b*c>d e", "r:/p#mem://ü/{id}?q=1&r=2",
	} {
		sub := channelSubject(ch)
		tok := strings.TrimPrefix(sub, pubsubPrefix)
		if strings.ContainsAny(tok, ".*> \t") || tok == "" {
			t.Errorf("channel %q: token %q is not one safe subject token", ch, tok)
		}
		got, err := subjectChannel(sub)
		if err != nil || got != ch {
			t.Errorf("channel %q: round trip gave %q, %v", ch, got, err)
		}
	}
	if _, err := subjectChannel("luamcp.ps.b!!"); err == nil {
		t.Error("a bad token decoded")
	}
}

func TestValidNodeID(t *testing.T) {
	for id, ok := range map[string]bool{
		"a": true, "node-1_B": true, "": false, "a.b": false, "a b": false, "a*": false,
		strings.Repeat("x", 64): true, strings.Repeat("x", 65): false,
	} {
		if err := ValidNodeID(id); (err == nil) != ok {
			t.Errorf("ValidNodeID(%q) = %v, want ok=%v", id, err, ok)
		}
	}
	if a, b := DefaultNodeID(), DefaultNodeID(); a == b || ValidNodeID(a) != nil {
		t.Errorf("DefaultNodeID gave %q and %q", a, b)
	}
}

// recorder is a Subscriber that keeps what it was given.
type recorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *recorder) Deliver(msg []byte) {
	r.mu.Lock()
	r.msgs = append(r.msgs, string(msg))
	r.mu.Unlock()
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.msgs...)
}

func startNATS(t *testing.T) *Embedded {
	t.Helper()
	e, err := StartEmbedded("127.0.0.1", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	return e
}

func newNode(t *testing.T, url, id string) *PubSub {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	p, err := NewPubSub(nc, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if err := nc.Flush(); err != nil { // the subscription is in place
		t.Fatal(err)
	}
	return p
}

// TestPubSubAcrossNodes: a publish on one node reaches the subscribers of
// every node exactly once, whatever the channel name holds, and only the
// subscribers of that channel.
func TestPubSubAcrossNodes(t *testing.T) {
	e := startNATS(t)
	a, b := newNode(t, e.URL(), "a"), newNode(t, e.URL(), "b")
	const ch, other = "r:/mcp/x#file:///a b.*>", "r:/mcp/x#file:///a b"
	ra, rb, rother := &recorder{}, &recorder{}, &recorder{}
	a.Subscribe(ch, ra)
	b.Subscribe(ch, rb)
	b.Subscribe(other, rother)

	a.Publish(ch, []byte("one"))
	b.Publish(ch, []byte("two"))
	// A marker published after both, on the same connection as "two": once b
	// has it, a has had "two" (NATS keeps one publisher's order).
	marker := &recorder{}
	a.Subscribe("marker", marker)
	b.Publish("marker", []byte("m"))
	deadline := time.Now().Add(10 * time.Second)
	for len(marker.got()) == 0 || len(rb.got()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("not delivered: a %q, b %q", ra.got(), rb.got())
		}
		time.Sleep(5 * time.Millisecond)
	}
	a.nc.Flush()
	b.nc.Flush()
	want := map[string]bool{"one": true, "two": true}
	for name, r := range map[string]*recorder{"a": ra, "b": rb} {
		got := r.got()
		if len(got) != 2 || !want[got[0]] || !want[got[1]] || got[0] == got[1] {
			t.Errorf("node %s received %q, want one and two once each", name, got)
		}
	}
	if got := rother.got(); len(got) != 0 {
		t.Errorf("a subscriber of another channel received %q", got)
	}
	b.Unsubscribe(ch, rb)
	a.Publish(ch, []byte("three"))
	a.Publish("marker", []byte("m2"))
	bm := &recorder{}
	b.Subscribe("marker", bm)
	a.Publish("marker", []byte("m3"))
	for len(bm.got()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("marker not delivered")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := rb.got(); len(got) != 2 {
		t.Errorf("an unsubscribed subscriber received %q", got)
	}
}
