package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The official MCP conformance suite (@modelcontextprotocol/conformance)
// against examples/conformance.lua. Every check must pass: a FAILURE or a
// WARNING in any scenario fails the test, and there is no expected-failures
// file.

// conformanceTools are the fixture names the 2025-11-25 scenarios look for.
var conformanceTools = []string{
	"test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
	"test_multiple_content_types", "test_tool_with_logging", "test_tool_with_progress", "test_error_handling",
	"test_reconnection", "test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults",
	"test_elicitation_sep1330_enums", "json_schema_2020_12_tool",
}

// conformanceTools2026 are the fixture tools the 2026-07-28 scenarios of
// conformance 0.2.0-alpha.12 call (read from its dist/index.js: each
// scenario's tools/call names). A missing one turns whole scenarios into
// "server does not list the diagnostic tool" failures, so the mount test
// names it first.
var conformanceTools2026 = []string{
	"test_missing_capability", "test_streaming_elicitation", "test_logging_tool",
	"test_trigger_tool_change", "test_trigger_prompt_change", "test_custom_headers", "test_custom_headers_null",
	"test_input_required_result_elicitation", "test_input_required_result_sampling",
	"test_input_required_result_list_roots", "test_input_required_result_request_state",
	"test_input_required_result_multiple_inputs", "test_input_required_result_multi_round",
	"test_input_required_result_tampered_state", "test_input_required_result_capabilities",
	// The tasks extension's fixtures.
	"greet", "slow_compute", "failing_job", "protocol_error_job", "confirm_delete", "multi_input",
	"test_tool_with_task",
}

// startConformance serves examples/conformance.lua alone, at its route path.
func startConformance(t *testing.T) *testServer {
	t.Helper()
	dir := t.TempDir()
	copyFile(t, filepath.Join("..", "examples", "conformance.lua"), filepath.Join(dir, "conformance.lua"))
	return startHost(t, dir)
}

func TestConformanceFixtureMounts(t *testing.T) {
	s := startConformance(t)
	routes := s.host.Routes()
	if len(routes) != 1 || routes[0].Path != "/mcp" || !routes[0].Sessions {
		t.Fatalf("routes = %+v, want one session route at /mcp", routes)
	}
	// The 2025 fixtures come first, in the order the script lists them; every
	// 2026 one follows, in any order.
	tools := routes[0].Tools
	if len(tools) < len(conformanceTools) || !reflect.DeepEqual(tools[:len(conformanceTools)], conformanceTools) {
		t.Errorf("tools = %v, want %v first", tools, conformanceTools)
		return
	}
	if m := missing(conformanceTools2026, tools[len(conformanceTools):]); len(m) > 0 {
		t.Errorf("the 2026 fixture tools %v are missing (tools: %v)", m, tools)
	}
}

// missing lists the names of want that are not in got.
func missing(want, got []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			out = append(out, w)
		}
	}
	return out
}

// check is one entry of a scenario's checks.json.
type check struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	Status       string          `json:"status"`
	ErrorMessage string          `json:"errorMessage"`
	Details      json.RawMessage `json:"details"`
}

func TestConformance(t *testing.T) {
	node := filepath.Join("node", "node_modules")
	stable := filepath.Join(node, "@modelcontextprotocol", "conformance", "dist", "index.js")
	alpha := filepath.Join(node, "conformance-alpha", "dist", "index.js")
	// mustPass names scenarios whose checks must be there and pass: the
	// tasks extension's, which the suite runs unscored.
	tasks := []string{"tasks-lifecycle", "tasks-capability-negotiation", "tasks-wire-fields",
		"tasks-request-state-removal", "tasks-mrtr-input", "tasks-request-headers",
		"tasks-dispatch-and-envelope", "tasks-required-task-error", "tasks-mrtr-composition"}
	suites := []struct {
		name     string
		args     []string
		mustPass []string
	}{
		{"active", []string{stable, "server"}, nil},
		{"pending", []string{stable, "server", "--suite", "pending"}, nil},
		{"alpha_2025-11-25", []string{alpha, "server", "--requirements", "2025-11-25"}, nil},
		{"alpha_2026-07-28", []string{alpha, "server", "--requirements", "2026-07-28"}, tasks},
	}
	for _, suite := range suites {
		t.Run(suite.name, func(t *testing.T) {
			bin := nodeBin(t)
			if _, err := os.Stat(suite.args[0]); err != nil {
				t.Fatalf("the conformance suite is not installed (%v): run `make test`, or `npm ci` in tests/node", err)
			}
			s := startConformance(t)
			out := t.TempDir()
			args := append([]string{}, suite.args...)
			args = append(args, "--url", s.srv.URL+"/mcp", "-o", out)
			code, output := runSuite(t, bin, args)
			t.Logf("conformance %s (exit %d):\n%s", strings.Join(args[1:], " "), code, output)
			bad, passed := badChecks(t, out)
			if len(passed) == 0 {
				t.Errorf("the suite wrote no checks to %s", out)
			}
			// Scenarios the suite runs but does not score (the tasks
			// extension, pending ones) count here like the others.
			for _, b := range bad {
				t.Errorf("%s", b)
			}
			for _, name := range suite.mustPass {
				if passed[name] == 0 {
					t.Errorf("scenario %s passed no check (did the suite run it?)", name)
				}
			}
			if code != 0 {
				t.Errorf("the suite exited %d, want 0", code)
			}
		})
	}
}

// runSuite runs the conformance CLI with node and returns its exit code and
// its combined output.
func runSuite(t *testing.T, bin string, args []string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "FORCE_COLOR=0")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the suite ran past 5 minutes; output so far:\n%s", buf.String())
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, buf.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), buf.String()
	}
	t.Fatalf("running the suite: %v\n%s", err, buf.String())
	return 0, ""
}

// resultTimestamp is the end of the suite's result folders' names:
// "-2026-12-07T03-57-20-610Z". (Cutting at the last "-20" cut at the seconds
// or milliseconds when they began with 20.)
var resultTimestamp = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// badChecks reads every checks.json under dir (one per scenario, in a folder
// named server-<scenario>-<timestamp>) and describes the FAILURE and WARNING
// checks; passed counts the SUCCESS checks of each scenario.
func badChecks(t *testing.T, dir string) (bad []string, passed map[string]int) {
	t.Helper()
	passed = make(map[string]int)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var checks []check
		if err := json.Unmarshal(data, &checks); err != nil {
			return err
		}
		folder := filepath.Base(filepath.Dir(path))
		scenario := resultTimestamp.ReplaceAllString(strings.TrimPrefix(folder, "server-"), "")
		for _, c := range checks {
			switch c.Status {
			case "SUCCESS":
				passed[scenario]++
			case "FAILURE", "WARNING":
				bad = append(bad, c.Status+" in "+folder+": ["+c.ID+"] "+c.Description+": "+c.ErrorMessage+" "+string(c.Details))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading checks.json files: %v", err)
	}
	return bad, passed
}

// TestReadmeConformanceCommands keeps the README's "To reproduce by hand"
// commands runnable: npx runs a package of tests/node only by the name of a
// command it installs, and both suites install one named "conformance", so
// the aliased alpha must be run by its path (`npx conformance-alpha` asks the
// registry for a package of that name, and fails).
func TestReadmeConformanceCommands(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile(filepath.Join("node", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	npx := regexp.MustCompile(`(?m)^npx --prefix tests/node (\S+)`).FindAllSubmatch(readme, -1)
	byPath := regexp.MustCompile(`(?m)^node tests/node/node_modules/(\S+?)/dist/index\.js server`).FindAllSubmatch(readme, -1)
	if len(npx)+len(byPath) != 4 {
		t.Errorf("README runs %d conformance suites by hand, want the four TestConformance runs", len(npx)+len(byPath))
	}
	for _, m := range npx {
		if string(m[1]) != "conformance" {
			t.Errorf("README runs `npx --prefix tests/node %s`: tests/node installs no command of that name", m[1])
		}
	}
	for _, m := range byPath {
		if _, ok := pkg.Dependencies[string(m[1])]; !ok {
			t.Errorf("README runs node_modules/%s, which tests/node/package.json does not install", m[1])
		}
	}
}
