// Package scenario holds the benchmark scenarios. Each runs against one
// server process and returns a Result: its metrics, and every failed reply
// check. A scenario whose route the server does not mount is n/a.
package scenario

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"time"

	"github.com/quic-go/quic-go/http3"

	"github.com/luamcp/luamcp/bench/internal/client"
	"github.com/luamcp/luamcp/bench/internal/load"
	"github.com/luamcp/luamcp/bench/internal/spec"
	"github.com/luamcp/luamcp/bench/internal/wire"
)

// Target is a running server under test.
type Target struct {
	Name   string
	Addr   string
	PID    int
	Routes map[string]bool
	// Strict servers are ours (luamcp, the floor): for them a leak or a
	// session that is never reaped is a failure, not only a finding.
	Strict bool
	// TLSAddr serves the routes over HTTPS (HTTP/2) and HTTP/3 with a
	// certificate CA trusts; "" when the server does not (spec.Ready).
	TLSAddr string
	CA      *x509.CertPool
	// Nodes are the addresses of the nodes of a cluster Addr balances over
	// (spec.Ready.Nodes); empty for a single server. Only cluster
	// scenarios run on a cluster, and only on one.
	Nodes []string
}

// Proto is the HTTP version a scenario's clients speak.
type Proto int

const (
	// H1 is raw HTTP/1.1 over package wire: the generator's cheapest path.
	H1 Proto = iota
	// H2 is HTTP/2 over TLS (net/http), to Target.TLSAddr.
	H2
	// H3 is HTTP/3 over QUIC (quic-go), to Target.TLSAddr.
	H3
)

// newClient returns a client of route speaking p, on a connection of its
// own.
func (t *Target) newClient(p Proto, route string, timeout time.Duration) *client.Client {
	base := "https://" + t.TLSAddr
	switch p {
	case H2:
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: t.CA}, ForceAttemptHTTP2: true}
		return client.NewOver(wire.NewHTTPConn(base, tr, tr.CloseIdleConnections, 2, timeout), route)
	case H3:
		tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: t.CA}}
		return client.NewOver(wire.NewHTTPConn(base, tr, func() { tr.Close() }, 3, timeout), route)
	}
	return client.New(t.Addr, route, timeout)
}

// Scale sets how big and how long the scenarios are.
type Scale struct {
	Levels    []int         // concurrency levels of the session and stateless calls
	Conc      int           // concurrency of churn, list, progress and of setup work
	Warmup    time.Duration // unmeasured start of every timed run
	Duration  time.Duration // measured window of every timed run
	Abandon   int           // sessions opened and abandoned
	Idle      int           // sessions of the "idle" scenario (0: not run): abandon at full scale
	IdleWait  time.Duration // how long abandoned sessions sit idle before their memory is read
	TTL       time.Duration // the idle TTL servers were started with on spec.PathChurn
	Listeners int           // sessions with an open GET stream in the broadcast
	Rounds    int           // measured broadcasts
	Timeout   time.Duration // bound on every HTTP exchange
}

// Metric is one measured figure.
type Metric struct {
	Name  string  `json:"name"`
	Unit  string  `json:"unit"`
	Value float64 `json:"value"`
	// Lower reports that a lower value is better.
	Lower bool `json:"lower,omitempty"`
	// Missing reports that the figure could not be measured.
	Missing bool `json:"missing,omitempty"`
}

// Result is one scenario on one server. The first metric is the headline
// the report computes ratios for.
type Result struct {
	Scenario string   `json:"scenario"`
	Server   string   `json:"server"`
	NA       bool     `json:"na,omitempty"`
	Metrics  []Metric `json:"metrics,omitempty"`
	// Errors counts failed operations and reply checks; Failures samples them.
	Errors   uint64   `json:"errors"`
	Failures []string `json:"failures,omitempty"`
	// Notes are findings that are not check failures (for peers: leaks).
	Notes []string `json:"notes,omitempty"`
	// KnownDefect, when set, explains failures that are the server's own
	// (verified by hand): they are reported but do not fail the run.
	KnownDefect string `json:"known_defect,omitempty"`
}

// Failed reports whether any check failed.
func (r *Result) Failed() bool { return r.Errors > 0 }

// Fatal reports whether the result fails the run: a failed check that is
// not a known defect of the server.
func (r *Result) Fatal() bool { return r.Failed() && r.KnownDefect == "" }

func (r *Result) add(name, unit string, v float64, lower bool) {
	r.Metrics = append(r.Metrics, Metric{Name: name, Unit: unit, Value: v, Lower: lower})
}

func (r *Result) fail(err error) {
	r.Errors++
	if len(r.Failures) < 5 {
		r.Failures = append(r.Failures, err.Error())
	}
}

func (r *Result) failf(format string, args ...any) { r.fail(fmt.Errorf(format, args...)) }

// finding records a leak-like problem: a failure on strict servers, a note
// on the others.
func (r *Result) finding(t *Target, format string, args ...any) {
	if t.Strict {
		r.failf(format, args...)
		return
	}
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

func (r *Result) absorb(lr *load.Result) {
	r.Errors += lr.Errors
	for _, f := range lr.Failures {
		if len(r.Failures) < 5 {
			r.Failures = append(r.Failures, f)
		}
	}
}

// Scenario is one row of the report.
type Scenario struct {
	Name  string
	Route string
	Run   func(ctx context.Context, t *Target, s Scale, r *Result)
	// Proto is what its clients speak; H2 and H3 rows are n/a on servers
	// without a TLSAddr.
	Proto Proto
	// Cluster scenarios run on a cluster target (Target.Nodes) and are n/a
	// on single servers; the others are n/a on a cluster.
	Cluster bool
}

// All returns every scenario in report order.
func All(s Scale) []Scenario {
	var all []Scenario
	for _, c := range s.Levels {
		all = append(all, Scenario{Name: fmt.Sprintf("session c=%d", c), Route: spec.PathEcho, Run: calls(c, true), Proto: H1})
	}
	// The same session calls over HTTP/2 and HTTP/3, beside HTTP/1.1. Their
	// clients are net/http and quic-go, dearer than the raw HTTP/1.1
	// client: compare srv cpu/op, not only calls/s, when gen cpu is high.
	for _, p := range []Proto{H2, H3} {
		for _, c := range s.Levels {
			all = append(all, Scenario{Name: fmt.Sprintf("session h%d c=%d", p+1, c), Route: spec.PathEcho, Run: callsOver(c, p), Proto: p})
		}
	}
	for _, c := range s.Levels {
		all = append(all, Scenario{Name: fmt.Sprintf("stateless c=%d", c), Route: spec.PathStateless, Run: calls(c, false), Proto: H1})
	}
	for _, c := range s.Levels {
		all = append(all, Scenario{Name: fmt.Sprintf("2026-07-28 c=%d", c), Route: spec.PathModern, Run: modernCalls(c), Proto: H1})
	}
	all = append(all,
		Scenario{Name: fmt.Sprintf("churn c=%d", s.Conc), Route: spec.PathChurn, Run: churn, Proto: H1},
		Scenario{Name: fmt.Sprintf("abandon %d", s.Abandon), Route: spec.PathChurn, Run: abandon(s.Abandon), Proto: H1},
		Scenario{Name: fmt.Sprintf("tools/call, 1 tool built in tools() c=%d", s.Conc), Route: spec.PathBuilt1, Run: built(s.Conc, spec.PathBuilt1), Proto: H1},
		Scenario{Name: fmt.Sprintf("tools/call, %d tools built in tools() c=%d", spec.BuiltTools, s.Conc), Route: spec.PathBuilt100, Run: built(s.Conc, spec.PathBuilt100), Proto: H1},
		Scenario{Name: fmt.Sprintf("tools/list %d c=%d", spec.ToolCount, listConc(s)), Route: spec.PathTools, Run: list, Proto: H1},
		Scenario{Name: fmt.Sprintf("progress x%d c=%d", spec.ProgressSteps, s.Conc), Route: spec.PathProgress, Run: progress, Proto: H1},
		Scenario{Name: fmt.Sprintf("broadcast %d", s.Listeners), Route: spec.PathBroadcast, Run: broadcast, Proto: H1},
		Scenario{Name: fmt.Sprintf("http.get c=%d", s.Conc), Route: spec.PathFetch, Run: fetch(s.Conc), Proto: H1},
		Scenario{Name: fmt.Sprintf("echo beside %d spinners", spec.Spinners), Route: spec.PathSpin, Run: spin, Proto: H1},
		// Three luamcp nodes joined by NATS (issue 13): opt-in, see
		// cmd/bench's -only.
		Scenario{Name: fmt.Sprintf("cluster broadcast %d", s.Listeners), Route: spec.PathBroadcast, Run: clusterBroadcast, Proto: H1, Cluster: true},
		Scenario{Name: fmt.Sprintf("cluster tools/call c=%d", s.Conc), Route: spec.PathEcho, Run: clusterCalls, Proto: H1, Cluster: true},
	)
	if s.Idle > 0 {
		all = append(all, Scenario{Name: fmt.Sprintf("idle %d", s.Idle), Route: spec.PathChurn, Run: abandon(s.Idle), Proto: H1})
	}
	return all
}

// RunOn runs sc against t.
func (sc Scenario) RunOn(ctx context.Context, t *Target, s Scale) *Result {
	r := &Result{Scenario: sc.Name, Server: t.Name}
	if !t.Routes[sc.Route] || (sc.Proto != H1 && t.TLSAddr == "") || sc.Cluster != (len(t.Nodes) > 0) {
		r.NA = true
		return r
	}
	sc.Run(ctx, t, s, r)
	return r
}
