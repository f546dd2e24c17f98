// Package report prints benchmark results: one block per scenario with
// every server's figures side by side, then a summary of how each luamcp
// variant compares with the official Go SDK and mcp-go.
package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/luamcp/luamcp/bench/internal/scenario"
)

// Peers are the servers every other server is compared with.
var Peers = []string{"go-sdk", "mcp-go"}

// Ours are the servers the summary is about.
var Ours = []string{"luamcp", "luamcp-go"}

// Print writes the tables for results, which are grouped by scenario in
// the order given by scenarios.
func Print(w io.Writer, scenarios []string, results []*scenario.Result) {
	for _, sc := range scenarios {
		rows := forScenario(results, sc)
		if len(rows) == 0 {
			continue
		}
		printBlock(w, sc, rows)
	}
	printSummary(w, scenarios, results)
	printProblems(w, results)
}

func forScenario(results []*scenario.Result, sc string) []*scenario.Result {
	var rows []*scenario.Result
	for _, r := range results {
		if r.Scenario == sc {
			rows = append(rows, r)
		}
	}
	return rows
}

func find(rows []*scenario.Result, server string) *scenario.Result {
	for _, r := range rows {
		if r.Server == server && !r.NA && len(r.Metrics) > 0 {
			return r
		}
	}
	return nil
}

// Advantage is how many times better a is than b on their headline metric
// (above 1: a is better), or NaN when either is missing.
func Advantage(a, b *scenario.Result) float64 {
	if a == nil || b == nil || a.Fatal() || b.Fatal() || len(a.Metrics) == 0 || len(b.Metrics) == 0 {
		return math.NaN()
	}
	x, y := a.Metrics[0].Value, b.Metrics[0].Value
	if x <= 0 || y <= 0 || a.Metrics[0].Missing || b.Metrics[0].Missing {
		return math.NaN()
	}
	if a.Metrics[0].Lower {
		return y / x
	}
	return x / y
}

func printBlock(w io.Writer, sc string, rows []*scenario.Result) {
	var cols []scenario.Metric
	for _, r := range rows {
		if len(r.Metrics) > len(cols) {
			cols = r.Metrics
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\t", sc)
	for _, m := range cols {
		fmt.Fprintf(tw, "%s\t", Header(m))
	}
	for _, p := range Peers {
		fmt.Fprintf(tw, "vs %s\t", p)
	}
	fmt.Fprintf(tw, "checks\t\n")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t", r.Server)
		for i := range cols {
			if r.NA {
				fmt.Fprint(tw, "n/a\t")
			} else if i < len(r.Metrics) {
				fmt.Fprintf(tw, "%s\t", Value(r.Metrics[i]))
			} else {
				fmt.Fprint(tw, "-\t")
			}
		}
		for _, p := range Peers {
			fmt.Fprintf(tw, "%s\t", ratio(Advantage(r, find(rows, p))))
		}
		fmt.Fprintf(tw, "%s\t\n", checks(r))
	}
	tw.Flush()
	fmt.Fprintln(w)
}

func checks(r *scenario.Result) string {
	switch {
	case r.NA:
		return "n/a"
	case r.Fatal():
		return fmt.Sprintf("FAIL (%d)", r.Errors)
	case r.Failed():
		return fmt.Sprintf("known defect (%d)", r.Errors)
	case len(r.Notes) > 0:
		return "ok, notes"
	}
	return "ok"
}

// Header is the column title of a metric.
func Header(m scenario.Metric) string {
	if m.Name == "rate" {
		return m.Unit
	}
	return m.Name
}

func ratio(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return strconv.FormatFloat(x, 'f', 2, 64) + "x"
}

// Value formats a metric with its unit.
func Value(m scenario.Metric) string {
	if m.Missing {
		return "-"
	}
	v := m.Value
	switch m.Unit {
	case "ms":
		switch {
		case v < 1:
			return strconv.FormatFloat(v, 'f', 3, 64) + "ms"
		case v < 10:
			return strconv.FormatFloat(v, 'f', 2, 64) + "ms"
		}
		return strconv.FormatFloat(v, 'f', 1, 64) + "ms"
	case "µs", "KiB", "s":
		return strconv.FormatFloat(v, 'f', 1, 64) + m.Unit
	case "%", "B":
		return strconv.FormatFloat(v, 'f', 0, 64) + m.Unit
	case "x": // a ratio of two figures of the same server
		return ratio(v)
	case "":
		if v == math.Trunc(v) {
			return strconv.FormatFloat(v, 'f', 0, 64)
		}
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return thousands(int64(math.Round(v)))
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func printSummary(w io.Writer, scenarios []string, results []*scenario.Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "summary: times better (headline metric)\t")
	for _, o := range Ours {
		for _, p := range Peers {
			fmt.Fprintf(tw, "%s vs %s\t", o, p)
		}
	}
	fmt.Fprintln(tw)
	for _, sc := range scenarios {
		rows := forScenario(results, sc)
		if len(rows) == 0 {
			continue
		}
		headline := ""
		for _, r := range rows {
			if len(r.Metrics) > 0 {
				headline = " (" + Header(r.Metrics[0]) + ")"
				break
			}
		}
		fmt.Fprintf(tw, "%s%s\t", sc, headline)
		for _, o := range Ours {
			for _, p := range Peers {
				fmt.Fprintf(tw, "%s\t", ratio(Advantage(find(rows, o), find(rows, p))))
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintln(w)
}

func printProblems(w io.Writer, results []*scenario.Result) {
	for _, r := range results {
		tag := "FAIL "
		if r.KnownDefect != "" {
			tag = "known"
			fmt.Fprintf(w, "known %s / %s: %s\n", r.Scenario, r.Server, r.KnownDefect)
		}
		for _, f := range r.Failures {
			fmt.Fprintf(w, "%s %s / %s: %s\n", tag, r.Scenario, r.Server, f)
		}
		for _, n := range r.Notes {
			fmt.Fprintf(w, "note  %s / %s: %s\n", r.Scenario, r.Server, n)
		}
	}
}
