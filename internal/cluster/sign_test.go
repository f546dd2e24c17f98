package cluster

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func joinKeyed(t *testing.T, url, id, advertise string, key []byte) *Node {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := Join(ctx, Config{Conn: nc, NodeID: id, Advertise: advertise, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// TestUntrustedNATSClient: a NATS client that is not a node (it has NATS
// access, not the cluster's key) can neither make a node forward its
// clients' requests (bearer tokens included) to an address of its own by
// writing the bucket, nor push to a session, nor broadcast, nor make a node
// forget another.
func TestUntrustedNATSClient(t *testing.T) {
	e := startNATS(t)
	key := []byte("0123456789abcdef0123456789abcdef")
	var ownerGot atomic.Int32
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ownerGot.Add(1)
		io.WriteString(w, "owner")
	}))
	defer owner.Close()
	var stolen atomic.Value
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Store(r.Header.Get("Authorization"))
		io.WriteString(w, "attacker")
	}))
	defer attacker.Close()

	a := joinKeyed(t, e.URL(), "a", "http://127.0.0.1:1", key)
	b := joinKeyed(t, e.URL(), "b", owner.URL, key)
	var delivered atomic.Value
	delivered.Store([]string{})
	b.Attach(func(push []byte) {
		delivered.Store(append(delivered.Load().([]string), string(push)))
	})
	rec := &recorder{}
	b.PubSub().Subscribe("ch", rec)

	entry := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.Forward(w, r, "b", nil)
	}))
	defer entry.Close()
	get := func() (int, string) {
		req, _ := http.NewRequest(http.MethodGet, entry.URL+"/mcp", nil)
		req.Header.Set("Authorization", "Bearer client-secret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if s, body := get(); s != 200 || body != "owner" {
		t.Fatalf("forward to the owner: %d %q", s, body)
	}

	// The intruder: a plain NATS client.
	nc, err := nats.Connect(e.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, nodesBucket)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{attacker.URL, attacker.URL + " AAAA"} {
		if _, err := kv.Put(ctx, "b", []byte(v)); err != nil {
			t.Fatal(err)
		}
		a.forget("b") // rather than wait out the address cache
		s, body := get()
		if got, _ := stolen.Load().(string); got != "" || body == "attacker" {
			t.Errorf("bucket value %q written by a NATS client: the node forwarded its client's request there (Authorization %q)", v, got)
		} else if s != http.StatusNotFound {
			t.Errorf("bucket value %q written by a NATS client: %d %q, want 404", v, s, body)
		}
	}
	// A node's heartbeat puts its signed entry back.
	if err := b.renew(); err != nil {
		t.Fatal(err)
	}
	a.forget("b")
	if s, body := get(); s != 200 || body != "owner" {
		t.Fatalf("forward after the owner renewed its entry: %d %q", s, body)
	}

	// Forged pushes, broadcasts and a forged `left`.
	nc.Publish(nodePrefix+"b", []byte("forged push"))
	nc.PublishMsg(&nats.Msg{Subject: channelSubject("ch"), Data: []byte("forged broadcast"), Header: nats.Header{originHeader: []string{"a"}}})
	nc.Publish(leftSubject, []byte("b"))
	nc.Flush()
	time.Sleep(200 * time.Millisecond)
	a.Send("b", []byte("push"))
	a.PubSub().Publish("ch", []byte("broadcast"))
	deadline := time.Now().Add(5 * time.Second)
	for len(delivered.Load().([]string)) == 0 || len(rec.got()) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the nodes' own push and broadcast did not arrive: %q %q", delivered.Load(), rec.got())
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if got := delivered.Load().([]string); strings.Join(got, ",") != "push" {
		t.Errorf("pushes delivered to the owner's hub: %q, want only the node's", got)
	}
	if got := rec.got(); strings.Join(got, ",") != "broadcast" {
		t.Errorf("broadcasts delivered: %q, want only the node's", got)
	}
	a.mu.Lock()
	_, known := a.known["b"]
	a.mu.Unlock()
	if !known {
		t.Errorf("a forged `left` made the node forget another")
	}
}

// TestSignerVerify pins what a message's signature covers and when it
// holds: the key, the subject, the origin header, the boot id, the sequence
// number, the data and a time within msgMaxSkew either way.
// TestUntrustedNATSClient sends unsigned messages only, which a verify that
// checked no more than the header's form, or no time, would drop as well; a
// forged or replayed one it would take.
func TestSignerVerify(t *testing.T) {
	key := []byte("the cluster's key")
	s := newSigner(key, "n2")
	signed := func() *nats.Msg {
		m := &nats.Msg{Subject: "luamcp.push.n1", Data: []byte("payload"), Header: nats.Header{}}
		s.sign(m)
		return m
	}
	// field replaces field i of the signature ("v2", unix, boot, seq, MAC).
	field := func(m *nats.Msg, i int, v string) {
		f := strings.Split(m.Header.Get(sigHeader), ".")
		f[i] = v
		m.Header.Set(sigHeader, strings.Join(f, "."))
	}
	tests := []struct {
		name   string
		change func(m *nats.Msg)
		ok     bool
	}{
		{"as signed", func(*nats.Msg) {}, true},
		{"unsigned", func(m *nats.Msg) { m.Header.Del(sigHeader) }, false},
		{"forged signature", func(m *nats.Msg) { field(m, 4, base64.RawURLEncoding.EncodeToString(make([]byte, 32))) }, false},
		{"another key", func(m *nats.Msg) { newSigner([]byte("another key"), "n2").sign(m) }, false},
		{"other data", func(m *nats.Msg) { m.Data = []byte("payloaD") }, false},
		{"another subject", func(m *nats.Msg) { m.Subject = "luamcp.push.n3" }, false},
		{"another origin", func(m *nats.Msg) { m.Header.Set(originHeader, "n3") }, false},
		{"no origin", func(m *nats.Msg) { m.Header.Del(originHeader) }, false},
		{"another time", func(m *nats.Msg) { field(m, 1, strconv.FormatInt(time.Now().Unix()-5, 10)) }, false},
		{"another boot", func(m *nats.Msg) { field(m, 2, "AAAAAAAAAAAAAAAA") }, false},
		{"another number", func(m *nats.Msg) { field(m, 3, "12345") }, false},
		{"the number spelled otherwise", func(m *nats.Msg) { field(m, 3, "0"+strings.Split(m.Header.Get(sigHeader), ".")[3]) }, false},
		{"another version", func(m *nats.Msg) { field(m, 0, "v3") }, false},
		{"within the skew", func(m *nats.Msg) { s.signAt(m, time.Now().Add(-msgMaxSkew+10*time.Second)) }, true},
		{"too old", func(m *nats.Msg) { s.signAt(m, time.Now().Add(-msgMaxSkew-10*time.Second)) }, false},
		{"too far ahead", func(m *nats.Msg) { s.signAt(m, time.Now().Add(msgMaxSkew+10*time.Second)) }, false},
		{"version 1", func(m *nats.Msg) { signV1(s, m, time.Now()) }, false},
		{"version 2 fields, version 1 MAC", func(m *nats.Msg) {
			f := strings.Split(m.Header.Get(sigHeader), ".")
			sum := s.mac(m.Data, msgDomainV1, m.Subject, "n2", f[1], f[2], f[3])
			field(m, 4, base64.RawURLEncoding.EncodeToString(sum[:]))
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := signed()
			tt.change(m)
			if _, got := s.verify(m, time.Now()); got != tt.ok {
				t.Fatalf("verify = %v, want %v (%s)", got, tt.ok, m.Header.Get(sigHeader))
			}
		})
	}
}

// signV1 signs m as a node of the version before sequence numbers did
// ("<unix>.<MAC>" over "luamcp msg v1").
func signV1(s *signer, m *nats.Msg, now time.Time) {
	unix := strconv.FormatInt(now.Unix(), 10)
	sum := s.mac(m.Data, msgDomainV1, m.Subject, m.Header.Get(originHeader), unix)
	m.Header.Set(sigHeader, unix+"."+base64.RawURLEncoding.EncodeToString(sum[:]))
}
