package main

import (
	"strings"

	"github.com/luamcp/luamcp/bench/internal/scenario"
)

// knownDefects are reply-check failures that come from a peer itself, each
// verified by hand with curl. They stay visible in the report but do not
// fail the run, so CI tracks our servers, not the peers' bugs. A failure
// that matches no entry fails the run as usual.
var knownDefects = []struct {
	server, scenario, failure, why string
}{
	{
		server: "mcp-go", scenario: "progress", failure: "progress notifications, want",
		why: "mcp-go v1.2.1 sometimes drops the first notifications/progress of a call (the one that upgrades its answer to SSE)",
	},
}

// markKnown sets r.KnownDefect when every sampled failure of r matches a
// known defect of its server.
func markKnown(r *scenario.Result) {
	if !r.Failed() || len(r.Failures) == 0 {
		return
	}
	for _, d := range knownDefects {
		if d.server != r.Server || !strings.Contains(r.Scenario, d.scenario) {
			continue
		}
		all := true
		for _, f := range r.Failures {
			all = all && strings.Contains(f, d.failure)
		}
		if all {
			r.KnownDefect = d.why
			return
		}
	}
}
