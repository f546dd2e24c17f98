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
	"strings"
	"testing"
	"time"
)

// The official MCP conformance suite (@modelcontextprotocol/conformance)
// against examples/conformance.lua. Every check must pass: a FAILURE or a
// WARNING in any scenario fails the test, and there is no expected-failures
// file.

// conformanceTools are the fixture names the suite looks for.
var conformanceTools = []string{
	"test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
	"test_multiple_content_types", "test_tool_with_logging", "test_tool_with_progress", "test_error_handling",
	"test_reconnection", "test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults",
	"test_elicitation_sep1330_enums", "json_schema_2020_12_tool",
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
	if !reflect.DeepEqual(routes[0].Tools, conformanceTools) {
		t.Errorf("tools = %v, want %v", routes[0].Tools, conformanceTools)
	}
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
	suites := []struct {
		name string
		args []string
	}{
		{"active", []string{stable, "server"}},
		{"pending", []string{stable, "server", "--suite", "pending"}},
		{"alpha_2025-11-25", []string{alpha, "server", "--requirements", "2025-11-25"}},
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
			bad, total := badChecks(t, out)
			if total == 0 {
				t.Errorf("the suite wrote no checks to %s", out)
			}
			for _, b := range bad {
				t.Errorf("%s", b)
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

// badChecks reads every checks.json under dir and describes the FAILURE and
// WARNING checks; total counts all checks.
func badChecks(t *testing.T, dir string) (bad []string, total int) {
	t.Helper()
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
		scenario := filepath.Base(filepath.Dir(path))
		for _, c := range checks {
			total++
			if c.Status == "FAILURE" || c.Status == "WARNING" {
				bad = append(bad, c.Status+" in "+scenario+": ["+c.ID+"] "+c.Description+": "+c.ErrorMessage+" "+string(c.Details))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading checks.json files: %v", err)
	}
	return bad, total
}
