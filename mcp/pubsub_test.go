package mcp

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"
)

// recorder is a Subscriber that keeps what it receives.
type recorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *recorder) Deliver(msg []byte) {
	r.mu.Lock()
	r.msgs = append(r.msgs, string(msg))
	r.mu.Unlock()
}

// recordingPubSub stands for a distributed PubSub: it sees every call.
type recordingPubSub struct {
	*LocalPubSub
	published []string
}

func (p *recordingPubSub) Publish(channel string, msg []byte) {
	p.published = append(p.published, channel+" "+string(msg))
	p.LocalPubSub.Publish(channel, msg)
}

func TestLocalPubSub(t *testing.T) {
	ps := NewLocalPubSub()
	a, b := &recorder{}, &recorder{}
	ps.Subscribe("x", a)
	ps.Subscribe("x", b)
	ps.Subscribe("y", b)
	ps.Publish("x", []byte("1"))
	ps.Unsubscribe("x", a)
	ps.Unsubscribe("x", a) // idempotent
	ps.Publish("x", []byte("2"))
	ps.Publish("y", []byte("3"))
	ps.Publish("nobody", []byte("4"))
	if want := []string{"1"}; !slices.Equal(a.msgs, want) {
		t.Errorf("a got %q, want %q", a.msgs, want)
	}
	if want := []string{"1", "2", "3"}; !slices.Equal(b.msgs, want) {
		t.Errorf("b got %q, want %q", b.msgs, want)
	}
}

func TestHubWithPubSub(t *testing.T) {
	ps := &recordingPubSub{LocalPubSub: NewLocalPubSub()}
	h := NewHubWith(ps, nil)
	h.Broadcast("news", "notifications/tools/list_changed", nil)
	h.ResourceUpdated("mem://a")
	h.Broadcast("news", "notifications/message", json.RawMessage(`{"level":"info","data":1}`))
	want := []string{
		`c:news {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`r:mem://a {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"mem://a"}}`,
		`c:news {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}}`,
	}
	if !slices.Equal(ps.published, want) {
		t.Errorf("published:\n%q\nwant:\n%q", ps.published, want)
	}
}
