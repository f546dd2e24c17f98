package report

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/luamcp/luamcp/bench/internal/scenario"
)

func TestValue(t *testing.T) {
	tests := []struct {
		m    scenario.Metric
		want string
	}{
		{scenario.Metric{Unit: "calls/s", Value: 11302.4}, "11,302"},
		{scenario.Metric{Unit: "calls/s", Value: 999}, "999"},
		{scenario.Metric{Unit: "/s", Value: 1234567}, "1,234,567"},
		{scenario.Metric{Unit: "ms", Value: 0.5534}, "0.553ms"},
		{scenario.Metric{Unit: "ms", Value: 5.134}, "5.13ms"},
		{scenario.Metric{Unit: "ms", Value: 51.34}, "51.3ms"},
		{scenario.Metric{Unit: "µs", Value: 71.85}, "71.8µs"},
		{scenario.Metric{Unit: "KiB", Value: 16.04}, "16.0KiB"},
		{scenario.Metric{Unit: "%", Value: 99.6}, "100%"},
		{scenario.Metric{Unit: "B", Value: -17.2}, "-17B"},
		{scenario.Metric{Unit: "", Value: 20}, "20"},
		{scenario.Metric{Unit: "", Value: 0.25}, "0.25"},
		{scenario.Metric{Unit: "x", Value: 3.126}, "3.13x"},
		{scenario.Metric{Unit: "ms", Missing: true}, "-"},
	}
	for _, tt := range tests {
		if got := Value(tt.m); got != tt.want {
			t.Errorf("Value(%+v) = %q, want %q", tt.m, got, tt.want)
		}
	}
}

func res(server string, v float64, lower bool) *scenario.Result {
	return &scenario.Result{Scenario: "s", Server: server, Metrics: []scenario.Metric{{Name: "rate", Unit: "calls/s", Value: v, Lower: lower}}}
}

func TestAdvantage(t *testing.T) {
	if got := Advantage(res("a", 300, false), res("b", 100, false)); got != 3 {
		t.Errorf("higher is better: %v", got)
	}
	if got := Advantage(res("a", 10, true), res("b", 40, true)); got != 4 {
		t.Errorf("lower is better: %v", got)
	}
	failed := res("a", 300, false)
	failed.Errors = 1
	if !math.IsNaN(Advantage(failed, res("b", 1, false))) {
		t.Error("a failed result has an advantage")
	}
	failed.KnownDefect = "known"
	if math.IsNaN(Advantage(failed, res("b", 100, false))) {
		t.Error("a known defect hides the figures")
	}
	if !math.IsNaN(Advantage(nil, res("b", 1, false))) || !math.IsNaN(Advantage(res("a", 0, false), res("b", 1, false))) {
		t.Error("missing figures have an advantage")
	}
}

func TestPrint(t *testing.T) {
	bad := res("luamcp", 50, false)
	bad.Errors, bad.Failures = 2, []string{"reply check failed: text"}
	results := []*scenario.Result{
		res("luamcp", 200, false), res("go-sdk", 100, false), res("mcp-go", 50, false),
		{Scenario: "t", Server: "luamcp", NA: true}, {Scenario: "t", Server: "go-sdk", Notes: []string{"leak"}},
	}
	results[0].Scenario, results[1].Scenario, results[2].Scenario = "s", "s", "s"
	bad.Scenario = "u"
	results = append(results, bad)
	var b bytes.Buffer
	Print(&b, []string{"s", "t", "u"}, results)
	out := b.String()
	for _, want := range []string{"2.00x", "4.00x", "n/a", "FAIL (2)", "FAIL  u / luamcp: reply check failed: text", "note  t / go-sdk: leak"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
