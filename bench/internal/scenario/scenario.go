// Package scenario holds the benchmark scenarios. Each runs against one
// server process and returns a Result: its metrics, and every failed reply
// check. A scenario whose route the server does not mount is n/a.
package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/luamcp/luamcp/bench/internal/load"
	"github.com/luamcp/luamcp/bench/internal/spec"
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
}

// Scale sets how big and how long the scenarios are.
type Scale struct {
	Levels    []int         // concurrency levels of the session and stateless calls
	Conc      int           // concurrency of churn, list, progress and of setup work
	Warmup    time.Duration // unmeasured start of every timed run
	Duration  time.Duration // measured window of every timed run
	Abandon   int           // sessions opened and abandoned
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
}

// All returns every scenario in report order.
func All(s Scale) []Scenario {
	var all []Scenario
	for _, c := range s.Levels {
		all = append(all, Scenario{fmt.Sprintf("session c=%d", c), spec.PathEcho, calls(c, true)})
	}
	for _, c := range s.Levels {
		all = append(all, Scenario{fmt.Sprintf("stateless c=%d", c), spec.PathStateless, calls(c, false)})
	}
	for _, c := range s.Levels {
		all = append(all, Scenario{fmt.Sprintf("2026-07-28 c=%d", c), spec.PathModern, modernCalls(c)})
	}
	return append(all,
		Scenario{fmt.Sprintf("churn c=%d", s.Conc), spec.PathChurn, churn},
		Scenario{fmt.Sprintf("abandon %d", s.Abandon), spec.PathChurn, abandon},
		Scenario{fmt.Sprintf("tools/list %d c=%d", spec.ToolCount, listConc(s)), spec.PathTools, list},
		Scenario{fmt.Sprintf("progress x%d c=%d", spec.ProgressSteps, s.Conc), spec.PathProgress, progress},
		Scenario{fmt.Sprintf("broadcast %d", s.Listeners), spec.PathBroadcast, broadcast},
		Scenario{fmt.Sprintf("http.get c=%d", s.Conc), spec.PathFetch, fetch(s.Conc)},
		Scenario{fmt.Sprintf("echo beside %d spinners", spec.Spinners), spec.PathSpin, spin},
	)
}

// RunOn runs sc against t.
func (sc Scenario) RunOn(ctx context.Context, t *Target, s Scale) *Result {
	r := &Result{Scenario: sc.Name, Server: t.Name}
	if !t.Routes[sc.Route] {
		r.NA = true
		return r
	}
	sc.Run(ctx, t, s, r)
	return r
}
