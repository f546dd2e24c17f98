package edge

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestConnectionCap: with MaxConnections open connections, a new one is not
// served until one of them closes; its request is then answered. Shutdown
// ends a Serve whose Accept waits for a slot.
func TestConnectionCap(t *testing.T) {
	const cap = 4
	s, err := Listen(Config{Addr: "127.0.0.1:0", MaxConnections: cap, ReadHeaderTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() {
		served <- s.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	}()
	var idle []net.Conn
	for range cap {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n")) // headers never finished
		idle = append(idle, c)
	}
	answered := make(chan error, 1)
	go func() {
		resp, err := http.Get(s.URL())
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	select {
	case err := <-answered:
		t.Fatalf("a request past the cap was served at once (err %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	idle[0].Close()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("the waiting request: %v", err)
		}
	case <-time.After(10 * time.Second): // liveness bound only
		t.Fatal("the waiting request was not served once a connection closed")
	}

	// Full again, with an Accept waiting for a slot: Shutdown still ends Serve.
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n"))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	s.Shutdown(ctx) // the idle connections never finish a request: the deadline ends the wait
	select {
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after Shutdown")
	}
}

func TestDefaultMaxConnections(t *testing.T) {
	if n := DefaultMaxConnections(); n < 64 {
		t.Errorf("DefaultMaxConnections() = %d", n)
	}
}
