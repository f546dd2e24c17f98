package scenario

import (
	"os"
	"testing"
	"time"
)

func TestRoundOf(t *testing.T) {
	tests := []struct {
		data string
		k    int
		ok   bool
	}{
		{`{"method":"notifications/message","params":{"level":"info","data":{"marker":"bcast-3"}}}`, 3, true},
		{`{"params":{"message":"bcast-12"}}`, 12, true},
		{`{"params":{"data":{"marker":"bcast-x"}}}`, 0, false},
		{`{"params":{}}`, 0, false},
		{`"bcast-4`, 0, false},
	}
	for _, tt := range tests {
		k, ok := roundOf([]byte(tt.data))
		if k != tt.k || ok != tt.ok {
			t.Errorf("roundOf(%s) = %d, %v; want %d, %v", tt.data, k, ok, tt.k, tt.ok)
		}
	}
}

func TestRounds(t *testing.T) {
	r := newRounds(2, 2)
	now := time.Now()
	r.seen(0, 0, now)
	r.seen(0, 0, now) // warm-up repeats are fine
	r.seen(0, 1, now)
	select {
	case <-r.done[0]:
	default:
		t.Fatal("round 0 not done after both listeners")
	}
	r.seen(1, 1, now)
	r.seen(1, 1, now)
	r.seen(5, 0, now) // unknown round: ignored
	if r.dups.Load() != 1 {
		t.Errorf("%d duplicates, want 1", r.dups.Load())
	}
	select {
	case <-r.done[1]:
		t.Fatal("round 1 done with one listener")
	default:
	}
}

func TestProc(t *testing.T) {
	pid := os.Getpid()
	// Burn a little CPU so the tick counter moves.
	x := 0
	for start := time.Now(); time.Since(start) < 30*time.Millisecond; {
		x++
	}
	cpu, err := procCPU(pid)
	if err != nil || cpu <= 0 {
		t.Fatalf("procCPU = %v, %v (x=%d)", cpu, err, x)
	}
	rss, err := procRSS(pid)
	if err != nil || rss < 1<<20 {
		t.Fatalf("procRSS = %d, %v", rss, err)
	}
	if selfCPU() <= 0 {
		t.Fatal("selfCPU is zero")
	}
	if _, err := procCPU(1 << 30); err == nil {
		t.Fatal("procCPU of a missing process")
	}
}

func TestAllNamesAndFindings(t *testing.T) {
	all := All(Scale{Levels: []int{1, 16}, Conc: 4, Abandon: 100, Listeners: 10})
	seen := map[string]bool{}
	for _, sc := range all {
		if seen[sc.Name] {
			t.Errorf("scenario %q twice", sc.Name)
		}
		seen[sc.Name] = true
	}
	if len(all) != 21 { // five call scenarios per level (h1, h2, h3 sessions, stateless, 2026), nine, two of a cluster
		t.Errorf("%d scenarios, want 21", len(all))
	}
	var r Result
	r.finding(&Target{Strict: false}, "leak %d", 1)
	if r.Failed() || len(r.Notes) != 1 {
		t.Errorf("a peer's leak should be a note: %+v", r)
	}
	r.finding(&Target{Strict: true}, "leak %d", 2)
	if !r.Fatal() || r.Failures[0] != "leak 2" {
		t.Errorf("our leak should fail: %+v", r)
	}
	na := all[0].RunOn(t.Context(), &Target{Routes: map[string]bool{}}, Scale{})
	if !na.NA || na.Failed() {
		t.Errorf("missing route: %+v", na)
	}
	// A cluster row is n/a on a single server, a single server's on a
	// cluster.
	for _, sc := range all {
		var tg Target
		tg.Routes = map[string]bool{sc.Route: true}
		if !sc.Cluster {
			tg.Nodes = []string{"a", "b"}
		}
		if na := sc.RunOn(t.Context(), &tg, Scale{}); !na.NA || na.Failed() {
			t.Errorf("%s on the wrong kind of target: %+v", sc.Name, na)
		}
	}
	// An HTTP/2 or HTTP/3 row on a server without TLS is n/a, route or not.
	for _, sc := range all {
		if sc.Proto == H1 {
			continue
		}
		na := sc.RunOn(t.Context(), &Target{Routes: map[string]bool{sc.Route: true}}, Scale{})
		if !na.NA || na.Failed() {
			t.Errorf("%s without a TLSAddr: %+v", sc.Name, na)
		}
	}
}
