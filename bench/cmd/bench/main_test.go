package main

import (
	"testing"

	"github.com/luamcp/luamcp/bench/internal/scenario"
)

func TestMarkKnown(t *testing.T) {
	progress := "tools/call progress: 9 progress notifications, want 10"
	tests := []struct {
		name     string
		r        scenario.Result
		wantKnow bool
	}{
		{"mcp-go progress", scenario.Result{Server: "mcp-go", Scenario: "progress x10 c=16", Errors: 3, Failures: []string{progress, progress}}, true},
		{"mixed failures", scenario.Result{Server: "mcp-go", Scenario: "progress x10 c=16", Errors: 2, Failures: []string{progress, "HTTP 500"}}, false},
		{"another server", scenario.Result{Server: "luamcp", Scenario: "progress x10 c=16", Errors: 1, Failures: []string{progress}}, false},
		{"another scenario", scenario.Result{Server: "mcp-go", Scenario: "session c=1", Errors: 1, Failures: []string{progress}}, false},
		{"no failure", scenario.Result{Server: "mcp-go", Scenario: "progress x10 c=16"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.r
			markKnown(&r)
			if (r.KnownDefect != "") != tt.wantKnow {
				t.Fatalf("KnownDefect = %q, want known=%v", r.KnownDefect, tt.wantKnow)
			}
			if tt.r.Errors > 0 && r.Fatal() == tt.wantKnow {
				t.Fatalf("Fatal = %v with known=%v", r.Fatal(), tt.wantKnow)
			}
		})
	}
}

func TestSelect(t *testing.T) {
	defs, err := selectServers("go-sdk, luamcp")
	if err != nil || len(defs) != 2 || defs[0].Name != "go-sdk" || defs[1].Name != "luamcp" {
		t.Fatalf("selectServers = %v, %v", defs, err)
	}
	if _, err := selectServers("luamcp,nope"); err == nil {
		t.Fatal("an unknown server was accepted")
	}
	c := config{only: "churn, list"}
	for name, want := range map[string]bool{"churn c=16": true, "tools/list 1000 c=16": true, "session c=1": false} {
		if c.selected(name) != want {
			t.Errorf("selected(%q) = %v", name, !want)
		}
	}
	if !(&config{}).selected("anything") {
		t.Error("no -only selects nothing")
	}
}

func TestClusterOptIn(t *testing.T) {
	tests := []struct {
		c       config
		servers string
		ran     []string
	}{
		{config{servers: "luamcp"}, "luamcp", []string{"session c=16"}},
		{config{servers: "luamcp,go-sdk", only: "cluster"}, clusterServer, []string{"cluster broadcast 10", "cluster tools/call c=4"}},
		{config{servers: "luamcp,go-sdk", only: "cluster", serversSet: true}, "luamcp,go-sdk," + clusterServer, nil},
		{config{servers: "luamcp", only: "broadcast"}, "luamcp," + clusterServer, []string{"broadcast 10", "cluster broadcast 10"}},
	}
	for _, tt := range tests {
		tt.c.scale = scenario.Scale{Levels: []int{16}, Conc: 4, Listeners: 10}
		if got := tt.c.serverList(); got != tt.servers {
			t.Errorf("-servers %q -only %q: servers %q, want %q", tt.c.servers, tt.c.only, got, tt.servers)
		}
		ran := map[string]bool{}
		for _, sc := range scenario.All(tt.c.scale) {
			ran[sc.Name] = tt.c.wants(sc)
		}
		for _, name := range tt.ran {
			if !ran[name] {
				t.Errorf("-only %q: %q does not run", tt.c.only, name)
			}
		}
		if tt.c.only == "" && (ran["cluster broadcast 10"] || ran["cluster tools/call c=4"]) {
			t.Error("the default run runs the cluster scenarios")
		}
	}
}
