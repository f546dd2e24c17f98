package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"

	"github.com/luamcp/luamcp/internal/syncbuf"
)

const sessionScript = `return {
  route = { sessions = true },
  init = function(params) return { name = "s", version = "1" }, { tools = {} }, {} end,
  tools = function(state)
    return { { name = "a", description = "a", input_schema = { type = "object" } },
             { name = "b", description = "b", input_schema = { type = "object" } } }
  end,
  handle_tool = function(name, args, ctx, state) return name end,
  terminate = function(reason, state) print("terminate " .. reason) end,
}
`

// TestVersion: the version command and the --version flag (-v) print the
// same text, which starts with the release.
func TestVersion(t *testing.T) {
	run := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := newApp(&out, io.Discard).Run(append([]string{"luamcp"}, args...)); err != nil {
			t.Fatalf("luamcp %s: %v", strings.Join(args, " "), err)
		}
		return out.String()
	}
	want := run("version")
	if !strings.HasPrefix(want, "luamcp "+version+"\n") {
		t.Errorf("luamcp version printed %q", want)
	}
	for _, args := range [][]string{{"--version"}, {"-v"}} {
		if got := run(args...); got != want {
			t.Errorf("luamcp %s printed %q, want what luamcp version prints, %q", strings.Join(args, " "), got, want)
		}
	}
}

// TestUnknownCommand: a mistyped command is an error that names the
// commands, not urfave/cli's "No help topic for 'x'"; no command at all
// prints the help.
func TestUnknownCommand(t *testing.T) {
	err := newApp(io.Discard, io.Discard).Run([]string{"luamcp", "serv"})
	want := `unknown command "serv": the commands are serve, check, call, new, version (luamcp --help)`
	if err == nil || err.Error() != want {
		t.Errorf("luamcp serv: error %v, want %q", err, want)
	}
	var out bytes.Buffer
	if err := newApp(&out, io.Discard).Run([]string{"luamcp"}); err != nil || !strings.Contains(out.String(), "COMMANDS:") {
		t.Errorf("luamcp: error %v, printed %q; want the help", err, out.String())
	}
}

func TestServeErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	scripts := writeScripts(t, map[string]string{"s.lua": sessionScript})
	empty := t.TempDir()
	shortKey := filepath.Join(empty, "short.key")
	if err := os.WriteFile(shortKey, []byte("  tiny\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	goodKey := filepath.Join(empty, "good.key")
	if err := os.WriteFile(goodKey, []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"address in use", []string{"--dir", scripts, "--addr", busy.Addr().String()}, "address already in use: another process (another luamcp serve?) listens there; stop it, or choose another --addr"},
		{"bad address", []string{"--dir", scripts, "--addr", "nowhere"}, "nowhere"},
		{"missing folder", []string{"--dir", filepath.Join(empty, "absent"), "--addr", "127.0.0.1:0"}, "absent"},
		{"nothing to serve", []string{"--dir", empty, "--addr", "127.0.0.1:0", "--no-watch"}, "no server to mount"},
		{"nothing to serve in the argument", []string{"--addr", "127.0.0.1:0", "--no-watch", empty}, "no server to mount in " + empty},
		{"flags after the folder", []string{scripts, "--addr", "127.0.0.1:0"}, "--addr comes after the arguments"},
		{"two folders as arguments", []string{"--addr", "127.0.0.1:0", scripts, empty}, "serve takes one folder"},
		{"two folders", []string{"--dir", empty, scripts}, "the folder is given twice"},
		{"log level", []string{"--dir", scripts, "--log-level", "loud"}, `--log-level must be debug, info, warn or error, not "loud"`},
		{"log format", []string{"--dir", scripts, "--log-format", "xml"}, "--log-format"},
		{"call timeout zero", []string{"--dir", scripts, "--call-timeout", "0s"}, "--call-timeout must be positive"},
		{"call timeout unparsable", []string{"--dir", scripts, "--call-timeout", "soon"}, "call-timeout"},
		{"max running", []string{"--dir", scripts, "--max-running", "-1"}, "--max-running must be at least 1"},
		{"max sessions", []string{"--dir", scripts, "--addr", "127.0.0.1:0", "--max-sessions", "0"}, "--max-sessions must be at least 1"},
		{"max listens", []string{"--dir", scripts, "--addr", "127.0.0.1:0", "--max-listens", "-1"}, "--max-listens must be at least 1"},
		{"max connections", []string{"--dir", scripts, "--addr", "127.0.0.1:0", "--max-connections", "-1"}, "--max-connections must be at least 1"},
		{"max header", []string{"--dir", scripts, "--addr", "127.0.0.1:0", "--max-header-kb", "0"}, "--max-header-kb must be from 1 to 65536"},
		{"drain", []string{"--dir", scripts, "--drain", "-1s"}, "--drain must not be negative"},
		{"watch poll", []string{"--dir", scripts, "--watch-poll", "0s"}, "--watch-poll must be auto, off or a positive duration"},
		{"watch poll unparsable", []string{"--dir", scripts, "--watch-poll", "sometimes"}, "--watch-poll must be auto"},
		{"max stateless", []string{"--dir", scripts, "--addr", "127.0.0.1:0", "--max-stateless", "0"}, "--max-stateless must be at least 1"},
		{"memory limit", []string{"--dir", scripts, "--memory-limit-mb", "0"}, "--memory-limit-mb must be from 1 to 1073741824"},
		{"memory limit past int64 bytes", []string{"--dir", scripts, "--memory-limit-mb", "8796093022208"}, "--memory-limit-mb must be from 1"},
		{"replay budget", []string{"--dir", scripts, "--replay-budget-mb", "0"}, "--replay-budget-mb must be from 1 to 1073741824"},
		{"replay budget past int64 bytes", []string{"--dir", scripts, "--replay-budget-mb", "8796093022208"}, "--replay-budget-mb must be from 1"},
		{"body budget", []string{"--dir", scripts, "--body-budget-mb", "0"}, "--body-budget-mb must be from 1 to 1073741824"},
		{"body budget past int64 bytes", []string{"--dir", scripts, "--body-budget-mb", "8796093022208"}, "--body-budget-mb must be from 1"},
		{"sessions file", []string{"--dir", scripts, "--addr", "127.0.0.1:0", "--sessions-file", filepath.Join(empty, "absent", "sessions.json")}, "sessions file: its folder is not writable"},
		{"state key file missing", []string{"--dir", scripts, "--state-key-file", filepath.Join(empty, "absent.key")}, "--state-key-file"},
		{"state key short", []string{"--dir", scripts, "--state-key-file", shortKey}, "has 4 bytes; it needs at least 16"},
		{"metrics address in use", []string{"--dir", scripts, "--addr", "127.0.0.1:0", "--metrics-addr", busy.Addr().String()}, "--metrics-addr"},
		{"metrics bad address", []string{"--dir", scripts, "--addr", "127.0.0.1:0", "--metrics-addr", "nowhere"}, "--metrics-addr"},
		{"cluster without a state key", []string{"--dir", scripts, "--addr", "127.0.0.1:0", "--nats", "embedded:0"}, "needs the same state key"},
		{"node id without nats", []string{"--dir", scripts, "--addr", "127.0.0.1:0", "--node-id", "a"}, "--node-id needs --nats"},
		{"advertise without nats", []string{"--dir", scripts, "--addr", "127.0.0.1:0", "--advertise", "http://x"}, "--advertise needs --nats"},
		{"cluster ca without nats", []string{"--dir", scripts, "--addr", "127.0.0.1:0", "--cluster-ca", goodKey}, "--cluster-ca needs --nats"},
		{"cluster ca missing", []string{"--dir", scripts, "--addr", "127.0.0.1:0", "--state-key-file", goodKey, "--nats", "embedded:0", "--cluster-ca", filepath.Join(empty, "absent.pem")}, "--cluster-ca"},
		{"cluster ca without a certificate", []string{"--dir", scripts, "--addr", "127.0.0.1:0", "--state-key-file", goodKey, "--nats", "embedded:0", "--cluster-ca", goodKey}, "no PEM certificate"},
		{"bad node id", []string{"--dir", scripts, "--addr", "127.0.0.1:0", "--state-key-file", goodKey, "--nats", "embedded:0", "--node-id", "a.b"}, "--node-id"},
		{"bad advertise", []string{"--dir", scripts, "--addr", "127.0.0.1:0", "--state-key-file", goodKey, "--nats", "embedded:0", "--advertise", "ftp://x"}, "--advertise must be"},
		{"advertise unspecified", []string{"--dir", scripts, "--addr", "0.0.0.0:0", "--state-key-file", goodKey, "--nats", "embedded:0"}, "--advertise: other nodes cannot reach"},
		{"embedded bad port", []string{"--dir", scripts, "--addr", "127.0.0.1:0", "--state-key-file", goodKey, "--nats", "embedded:x"}, "the port must be a number"},
		{"nats unreachable", []string{"--dir", scripts, "--addr", "127.0.0.1:0", "--state-key-file", goodKey, "--nats", "nats://127.0.0.1:1"}, "--nats nats://127.0.0.1:1: "},
		{"nats unreachable, credentials not shown", []string{"--dir", scripts, "--addr", "127.0.0.1:0", "--state-key-file", goodKey, "--nats", "nats://me:secret@127.0.0.1:1,nats://127.0.0.1:2"},
			"--nats nats://redacted@127.0.0.1:1,nats://127.0.0.1:2: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"luamcp", "serve"}, tc.args...)
			err := newApp(io.Discard, io.Discard).Run(args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("serve %v: error %v, want one containing %q", tc.args, err, tc.want)
			}
		})
	}
}

// TestServe starts the command on a free port, calls a route, and stops it
// the way a signal does (by ending its context).
func TestServe(t *testing.T) {
	dir := writeScripts(t, map[string]string{
		"s.lua":   sessionScript,
		"bad.lua": "return {\n  oops(\n",
	})
	var logs syncbuf.Buffer
	run := startServe(t, &logs, "--dir", dir, "--addr", "127.0.0.1:0", "--log-format", "json")
	status := run.lines(t, 2)
	route := regexp.MustCompile(`^(http://127\.0\.0\.1:\d+/mcp/s) +session +tools: a, b$`).FindStringSubmatch(status[0])
	if route == nil {
		t.Fatalf("status line %q does not show the URL, mode and tools", status[0])
	}
	if !strings.HasPrefix(status[1], "not mounted: ") || !strings.Contains(status[1], "bad.lua:") {
		t.Errorf("status line %q does not report bad.lua", status[1])
	}

	resp := postMCP(t, nil, route[1], "", initializeBody)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: status %d, session %q", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"))
	}

	run.stop(t)
	if !strings.Contains(logs.String(), "terminate shutdown") {
		t.Errorf("the session did not terminate with reason shutdown; log:\n%s", logs.String())
	}
	if _, err := http.Post(route[1], "application/json", strings.NewReader("{}")); err == nil {
		t.Error("the listener is still open after shutdown")
	}
}

// TestFlagsFirst: a command's flag after its arguments is refused, not
// read as an argument (urfave/cli stops reading flags at the first one).
func TestFlagsFirst(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "scripts", "--addr", "127.0.0.1:0"},
		{"check", "scripts", "--json"},
		{"new", "x", "--template=http"},
		{"call", "s.lua", "a", "--dir", "."},
	} {
		err := newApp(io.Discard, io.Discard).Run(append([]string{"luamcp"}, args...))
		if err == nil || !strings.Contains(err.Error(), "comes after the arguments") {
			t.Errorf("luamcp %v: error %v, want one saying the flag comes after the arguments", args, err)
		}
	}
}

// TestServeFolderArgument serves the folder given as the argument, which
// wins over $LUAMCP_DIR as a flag would.
func TestServeFolderArgument(t *testing.T) {
	dir := writeScripts(t, map[string]string{"s.lua": sessionScript})
	t.Setenv(envVar("dir"), t.TempDir())
	run := startServe(t, io.Discard, "--addr", "127.0.0.1:0", dir)
	if line := run.lines(t, 1)[0]; !regexp.MustCompile(`/mcp/s +session +tools: a, b$`).MatchString(line) {
		t.Errorf("status line %q: the argument's folder is not served", line)
	}
	run.stop(t)
}

// initializeBody is a 2025-11-25 initialize.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// mcpRequest is a POST of body to url with the headers every MCP request
// carries, and the session's when sid is not "".
func mcpRequest(url, sid, body string) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	return req
}

// postMCP posts body to url as an MCP client does, in session sid unless
// it is "", with client (nil: http.DefaultClient), and returns the answer,
// its body read and closed.
func postMCP(t *testing.T, client *http.Client, url, sid, body string) *http.Response {
	t.Helper()
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(mcpRequest(url, sid, body))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func writeScripts(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var update = flag.Bool("update", false, "rewrite the golden files")

// TestCheckGolden runs `luamcp check` on testdata/check, where each script
// has one kind of problem, and compares its report with check.golden.
func TestCheckGolden(t *testing.T) {
	var out bytes.Buffer
	err := newApp(&out, io.Discard).Run([]string{"luamcp", "check", filepath.Join("testdata", "check")})
	if err == nil {
		t.Error("check of broken scripts exited 0")
	}
	golden := filepath.Join("testdata", "check.golden")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		t.Errorf("check printed:\n%s\nwant (%s):\n%s", out.String(), golden, want)
	}
}

func TestCheckJSON(t *testing.T) {
	var out bytes.Buffer
	err := newApp(&out, io.Discard).Run([]string{"luamcp", "check", "--json",
		filepath.Join("testdata", "check", "good.lua"), filepath.Join("testdata", "check", "tools.lua")})
	if err == nil {
		t.Error("check exited 0")
	}
	var report struct {
		Scripts []struct {
			File     string
			Path     string
			Tools    []string
			Problems []struct {
				File    string
				Line    int
				Message string
			}
		}
		Problems int
	}
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatalf("--json printed %s: %v", out.String(), err)
	}
	if len(report.Scripts) != 2 || report.Problems != 9 {
		t.Fatalf("report %+v, want 2 scripts and 9 problems", report)
	}
	good, bad := report.Scripts[0], report.Scripts[1]
	if good.Path != "/mcp/good" || len(good.Tools) != 1 || len(good.Problems) != 0 {
		t.Errorf("good.lua: %+v", good)
	}
	if p := bad.Problems[0]; p.File != filepath.Join("testdata", "check", "tools.lua") || p.Line != 4 || !strings.Contains(p.Message, "bad name") {
		t.Errorf("first problem of tools.lua: %+v", p)
	}
}

// Warnings (schema keywords the validator does not check) are reported
// apart from problems, and alone do not fail check.
func TestCheckWarnings(t *testing.T) {
	var out bytes.Buffer
	if err := newApp(&out, io.Discard).Run([]string{"luamcp", "check", "--json", filepath.Join("testdata", "check", "schema.lua")}); err != nil {
		t.Fatalf("check with warnings only: %v\n%s", err, out.String())
	}
	var report struct {
		Scripts []struct {
			Tools    []string
			Problems []json.RawMessage
			Warnings []struct {
				Line    int
				Message string
				Warning bool
			}
		}
		Problems, Warnings int
	}
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatalf("--json printed %s: %v", out.String(), err)
	}
	if len(report.Scripts) != 1 || report.Problems != 0 || report.Warnings != 4 {
		t.Fatalf("report %+v, want 1 script, no problems and 4 warnings", report)
	}
	s := report.Scripts[0]
	if len(s.Problems) != 0 || len(s.Warnings) != 4 || len(s.Tools) != 1 {
		t.Fatalf("schema.lua: %+v", s)
	}
	if w := s.Warnings[2]; w.Line != 6 || !w.Warning || w.Message != "tools[1].input_schema: #/properties/days/minimun is not checked: no such keyword; minimum?" {
		t.Errorf("third warning: %+v", w)
	}
}

// TestCheckSummary: the last line counts scripts in the singular when there
// is one, and a folder or file that does not exist is named with the usage,
// not as a bare stat error.
func TestCheckSummary(t *testing.T) {
	dir := writeScripts(t, map[string]string{"s.lua": sessionScript})
	var out bytes.Buffer
	if err := newApp(&out, io.Discard).Run([]string{"luamcp", "check", dir}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), "\n1 script, no problems\n") {
		t.Errorf("check of one script printed %q", out.String())
	}
	missing := filepath.Join(dir, "absent")
	err := newApp(io.Discard, io.Discard).Run([]string{"luamcp", "check", missing})
	if want := missing + ": no such folder or file (luamcp check [DIR|FILE...]; the default folder is scripts)"; err == nil || err.Error() != want {
		t.Errorf("check of a missing folder: error %v, want %q", err, want)
	}
}

// TestExamplesCopied: the README has users copy an example into scripts/
// (files.lua with its notes folder, which it is granted and which must
// exist when it loads); copied that way, every example loads.
func TestExamplesCopied(t *testing.T) {
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join("examples", "*.lua"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range append(files, filepath.Join("examples", "notes", "welcome.md")) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(dir, strings.TrimPrefix(f, "examples"+string(filepath.Separator)))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "cp -r examples/files.lua examples/notes scripts/") {
		t.Error("README does not say to copy examples/notes with files.lua")
	}
	var out bytes.Buffer
	if err := newApp(&out, io.Discard).Run([]string{"luamcp", "check", dir}); err != nil {
		t.Errorf("check of the examples copied as the README says: %v\n%s", err, out.String())
	}
}

func TestCheckClean(t *testing.T) {
	var out bytes.Buffer
	if err := newApp(&out, io.Discard).Run([]string{"luamcp", "check", "scripts", "examples"}); err != nil {
		t.Fatalf("check of the bundled scripts and examples: %v\n%s", err, out.String())
	}
}

const callScript = `local mcp = require("mcp")
return {
  route = { sessions = true },
  init = function(params) return { name = "c", version = "1" }, { tools = {} }, { n = 1, client = params.clientInfo.name } end,
  tools = function() return { { name = "work", description = "", input_schema = { type = "object" } },
                              { name = "fail", description = "", input_schema = { type = "object" } },
                              { name = "crash", description = "", input_schema = { type = "object" } } } end,
  handle_tool = function(name, args, ctx, state)
    if name == "fail" then return nil, "no good" end
    if name == "crash" then error("kaboom") end
    mcp.progress(ctx, 1, { total = 2 })
    mcp.log(ctx, "info", "halfway")
    mcp.notify(ctx.session_id, "notifications/x", { a = 1 })
    return "done " .. args.what .. " in " .. ctx.session_id .. " for " .. state.client
  end,
  terminate = function(reason, state) print("terminate " .. reason) end,
}
`

func TestCall(t *testing.T) {
	dir := writeScripts(t, map[string]string{"c.lua": callScript})
	file := filepath.Join(dir, "c.lua")
	for _, tc := range []struct {
		name       string
		args       []string
		fail       bool
		out, trail []string // in stdout, in stderr (or the error)
	}{
		{"result", []string{"work", `{"what":"it"}`}, false,
			[]string{`"text": "done it in luamcp-call for luamcp call"`, `"isError": false`},
			[]string{`progress {"progressToken":"call","progress":1,"total":2}`, `log info "halfway"`, `notify luamcp-call notifications/x {"a":1}`, "terminate normal"}},
		{"error result", []string{"fail"}, true, []string{`"text": "no good"`, `"isError": true`}, nil},
		{"crash", []string{"crash"}, true, nil, []string{"c.lua:10: kaboom", "traceback"}},
		{"unknown tool", []string{"nope"}, true, nil, []string{`no tool "nope" (tools: work, fail, crash)`}},
		{"bad arguments", []string{"work", `[1]`}, true, nil, []string{"JSON object"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := newApp(&stdout, &stderr).Run(append([]string{"luamcp", "call", file}, tc.args...))
			if (err != nil) != tc.fail {
				t.Errorf("error %v, want failure %v", err, tc.fail)
			}
			trail := stderr.String()
			if err != nil {
				trail += err.Error()
			}
			for _, w := range tc.out {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout %q lacks %q", stdout.String(), w)
				}
			}
			for _, w := range tc.trail {
				if !strings.Contains(trail, w) {
					t.Errorf("stderr %q lacks %q", trail, w)
				}
			}
		})
	}
}

// TestUsageErrors: new and call given too few or too many arguments say
// what they take, flags included, and call hints at an unquoted JSON.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"new"}, "usage: luamcp new [--dir scripts] [--template http|fs|exec] NAME"},
		{[]string{"new", "a", "b"}, `new takes one NAME, not ["a" "b"]`},
		{[]string{"call", "x.lua"}, "usage: luamcp call [--dir DIR] [--env-file FILE] [--log-level info] FILE TOOL [JSON arguments]"},
		{[]string{"call", "x.lua", "greet", "{name:", "Ada}"}, `not 4 arguments: quote the JSON ('{"name": "Ada"}')`},
	} {
		err := newApp(io.Discard, io.Discard).Run(append([]string{"luamcp"}, tc.args...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("luamcp %v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

// TestBadFlags: a flag that cannot be read is an error naming it and where
// the help is, and the help itself is not printed (it buried the error).
func TestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "flag provided but not defined: -bogus (luamcp --help lists the flags)"},
		{[]string{"serve", "--bogus"}, "flag provided but not defined: -bogus (luamcp serve --help lists the flags)"},
		{[]string{"check", "--bogus"}, "(luamcp check --help lists the flags)"},
		{[]string{"call", "--bogus"}, "(luamcp call --help lists the flags)"},
		{[]string{"new", "--bogus"}, "(luamcp new --help lists the flags)"},
		{[]string{"serve", "--max-sessions", "many"}, `invalid value "many" for flag -max-sessions: parse error (luamcp serve --help lists the flags)`},
	} {
		var out, errOut bytes.Buffer
		err := newApp(&out, &errOut).Run(append([]string{"luamcp"}, tc.args...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("luamcp %v: error %v, want one containing %q", tc.args, err, tc.want)
		}
		if out.Len()+errOut.Len() != 0 {
			t.Errorf("luamcp %v printed the help:\n%s%s", tc.args, out.String(), errOut.String())
		}
	}
}

// TestCallStatelessInit: a stateless script's init gets {} under call, as
// on a server (only a session-mode script gets initialize params).
func TestCallStatelessInit(t *testing.T) {
	dir := writeScripts(t, map[string]string{"s.lua": `local mcp = require("mcp")
return {
  init = function(params) return { name = "s", version = "1" }, { tools = {} }, { params = mcp.json_encode(params) } end,
  tools = { { name = "p", input_schema = { type = "object" } } },
  handle_tool = function(name, args, ctx, state) return state.params end,
}`})
	var out bytes.Buffer
	if err := newApp(&out, io.Discard).Run([]string{"luamcp", "call", filepath.Join(dir, "s.lua"), "p"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"text": "{}"`) {
		t.Errorf("init of a stateless script under call got params other than {}:\n%s", out.String())
	}
}

func TestNew(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := newApp(&out, io.Discard).Run([]string{"luamcp", "new", "--dir", dir, "weather"}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "weather.lua")
	if !strings.Contains(out.String(), file) {
		t.Errorf("new printed %q, want the file name", out.String())
	}
	// The starter passes check and its tool runs.
	if err := newApp(io.Discard, io.Discard).Run([]string{"luamcp", "check", dir}); err != nil {
		t.Errorf("check of the starter: %v", err)
	}
	var res bytes.Buffer
	if err := newApp(&res, io.Discard).Run([]string{"luamcp", "call", file, "greet", `{"name":"Ada"}`}); err != nil {
		t.Fatalf("call greet: %v", err)
	}
	if !strings.Contains(res.String(), "Hello, Ada!") {
		t.Errorf("greet answered %s", res.String())
	}
	src, _ := os.ReadFile(file)
	if !strings.Contains(string(src), "---@type luamcp.Server") || !strings.Contains(string(src), `name = "weather"`) {
		t.Errorf("starter lacks its annotation or name:\n%s", src)
	}
	// Its header's commands work from where new ran, as those it printed.
	for _, cmd := range []string{"luamcp call " + file + " greet", "luamcp check " + dir + "\n", "luamcp serve " + dir + "\n"} {
		if !strings.Contains(string(src), cmd) {
			t.Errorf("starter's header lacks %q:\n%s", cmd, src)
		}
	}
	for _, bad := range [][]string{{"weather"}, {"no/slash"}, {}} {
		if err := newApp(io.Discard, io.Discard).Run(append([]string{"luamcp", "new", "--dir", dir}, bad...)); err == nil {
			t.Errorf("new %v succeeded", bad)
		}
	}
}

// TestServeWaitsForFiles: with the watcher on, an empty folder is served, and
// a script added later is mounted.
func TestServeWaitsForFiles(t *testing.T) {
	dir := t.TempDir()
	run := startServe(t, io.Discard, "--dir", dir, "--addr", "127.0.0.1:0")
	first := run.lines(t, 1)[0]
	if !strings.Contains(first, "watching") {
		t.Fatalf("serve printed %q, want it watching the empty folder", first)
	}
	base := regexp.MustCompile(`http://[0-9.]+:[0-9]+`).FindString(first)
	if err := os.WriteFile(filepath.Join(dir, "s.lua"), []byte(sessionScript), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second) // liveness bound only
	for {
		resp, err := http.Post(base+"/mcp/s", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the script added to the folder was not mounted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	run.stop(t)
}

// TestServeWarnsOnRemoteBind: binding an address other machines can reach
// gets one warning line; a loopback address gets none.
func TestServeWarnsOnRemoteBind(t *testing.T) {
	empty := t.TempDir()
	for _, tc := range []struct {
		addr string
		warn bool
	}{
		{"0.0.0.0:0", true},
		{"127.0.0.1:0", false},
		{"localhost:0", false},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			var logs syncbuf.Buffer
			// --no-watch on an empty folder: serve ends right after binding.
			err := newApp(io.Discard, &logs).Run([]string{"luamcp", "serve", "--dir", empty, "--addr", tc.addr, "--no-watch"})
			if err == nil || !strings.Contains(err.Error(), "no server to mount") {
				t.Fatalf("serve: %v", err)
			}
			got := strings.Count(logs.String(), "listening on a non-loopback address")
			if tc.warn && (got != 1 || !strings.Contains(logs.String(), "allow_remote_access")) {
				t.Errorf("want one warning naming allow_remote_access; log:\n%s", logs.String())
			}
			if !tc.warn && got != 0 {
				t.Errorf("a loopback address was warned about; log:\n%s", logs.String())
			}
		})
	}
}

func TestReadStateKey(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "state.key")
	if err := os.WriteFile(file, []byte("0123456789abcdef-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(stateKeyEnv, "")
	if key, err := readStateKey(""); key != nil || err != nil {
		t.Errorf("no file, no env: %q %v, want nil (random per process)", key, err)
	}
	t.Setenv(stateKeyEnv, "0123456789abcdef-from-env")
	if key, err := readStateKey(""); string(key) != "0123456789abcdef-from-env" || err != nil {
		t.Errorf("env: %q %v", key, err)
	}
	if key, err := readStateKey(file); string(key) != "0123456789abcdef-from-file" || err != nil {
		t.Errorf("file beside env: %q %v, want the file's", key, err)
	}
	t.Setenv(stateKeyEnv, "short")
	if _, err := readStateKey(""); err == nil || !strings.Contains(err.Error(), stateKeyEnv) {
		t.Errorf("short env key: %v", err)
	}
}

// TestServeTLSFlags: the TLS flags are checked before anything is bound.
func TestServeTLSFlags(t *testing.T) {
	scripts := writeScripts(t, map[string]string{"s.lua": sessionScript})
	cert, key := selfSigned(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"cert without key", []string{"--tls-cert", cert}, "--tls-cert and --tls-key go together"},
		{"key without cert", []string{"--tls-key", key}, "--tls-cert and --tls-key go together"},
		{"http3 without tls", []string{"--http3"}, "--http3 needs --tls-cert and --tls-key"},
		{"missing cert", []string{"--tls-cert", filepath.Join(t.TempDir(), "absent.pem"), "--tls-key", key}, "loading the TLS certificate"},
		{"key for another cert", []string{"--tls-cert", cert, "--tls-key", cert}, "loading the TLS certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"luamcp", "serve", "--dir", scripts, "--addr", "127.0.0.1:0"}, tc.args...)
			err := newApp(io.Discard, io.Discard).Run(args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("serve %v: error %v, want one containing %q", tc.args, err, tc.want)
			}
		})
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// TestServeTLS: with --tls-cert, --tls-key and --http3, serve prints https
// URLs and answers over HTTP/2, announcing HTTP/3 on its port.
func TestServeTLS(t *testing.T) {
	dir := writeScripts(t, map[string]string{"s.lua": sessionScript})
	cert, key := selfSigned(t)
	var logs syncbuf.Buffer
	run := startServe(t, &logs, "--dir", dir, "--addr", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", key, "--http3")
	status := run.lines(t, 1)[0]
	route := regexp.MustCompile(`^(https://127\.0\.0\.1:(\d+)/mcp/s) +session`).FindStringSubmatch(status)
	if route == nil {
		t.Fatalf("status line %q does not show an https URL", status)
	}

	pemCert, err := os.ReadFile(cert)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemCert)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	resp := postMCP(t, &http.Client{Transport: tr}, route[1], "", initializeBody)
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
		t.Errorf("initialize: status %d over %s, want 200 over HTTP/2", resp.StatusCode, resp.Proto)
	}
	if got, want := resp.Header.Get("Alt-Svc"), `h3=":`+route[2]+`"; ma=86400`; got != want {
		t.Errorf("Alt-Svc = %q, want %q", got, want)
	}
	// The same over HTTP/3, on the port Alt-Svc names.
	h3 := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer h3.Close()
	resp = postMCP(t, &http.Client{Transport: h3}, route[1], "", initializeBody)
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 3 || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Errorf("initialize over HTTP/3: status %d over %s, session %q", resp.StatusCode, resp.Proto, resp.Header.Get("Mcp-Session-Id"))
	}

	run.stop(t)
	if !strings.Contains(logs.String(), "HTTP/3") {
		t.Errorf("the log does not say HTTP/3 is served:\n%s", logs.String())
	}
}

// TestServeWarnsOnBadPort: a port browsers refuse gets one warning; the
// default port gets none.
func TestServeWarnsOnBadPort(t *testing.T) {
	empty := t.TempDir()
	bad := ""
	for _, p := range []string{"6665", "6666", "6667", "6668", "6669", "10080", "6679", "6697"} {
		if ln, err := net.Listen("tcp", "127.0.0.1:"+p); err == nil {
			ln.Close()
			bad = p
			break
		}
	}
	if bad == "" {
		t.Fatal("every candidate bad port is busy on 127.0.0.1")
	}
	for _, tc := range []struct {
		port string
		warn bool
	}{{bad, true}, {"0", false}} {
		t.Run(tc.port, func(t *testing.T) {
			var logs syncbuf.Buffer
			err := newApp(io.Discard, &logs).Run([]string{"luamcp", "serve", "--dir", empty, "--addr", "127.0.0.1:" + tc.port, "--no-watch"})
			if err == nil || !strings.Contains(err.Error(), "no server to mount") {
				t.Fatalf("serve: %v", err)
			}
			got := strings.Count(logs.String(), "browsers refuse to connect to this port")
			if tc.warn && got != 1 {
				t.Errorf("want one bad-port warning; log:\n%s", logs.String())
			}
			if !tc.warn && got != 0 {
				t.Errorf("a usable port was warned about; log:\n%s", logs.String())
			}
		})
	}
}

// TestServeReprintsRoutes: every change the watcher applies prints the
// route table again, as it is now.
func TestServeReprintsRoutes(t *testing.T) {
	dir := writeScripts(t, map[string]string{"s.lua": sessionScript})
	run := startServe(t, io.Discard, "--dir", dir, "--addr", "127.0.0.1:0")
	lines := make(chan string, 100)
	go func() {
		for run.out.Scan() {
			lines <- run.out.Text()
		}
		close(lines)
	}()
	// until returns the lines printed up to the first one matching re.
	until := func(what, re string) []string {
		t.Helper()
		var got []string
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("serve ended before printing %s (got %q): %v", what, got, <-run.done)
				}
				got = append(got, l)
				if regexp.MustCompile(re).MatchString(l) {
					return got
				}
			case <-time.After(10 * time.Second): // liveness bound only
				t.Fatalf("serve did not print %s; it printed %q", what, got)
			}
		}
	}
	until("the route table", `/mcp/s +session +tools: a, b$`)

	write := func(name, src string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A new script: the table is printed again, with both routes.
	write("t.lua", sessionScript)
	if got := until("the table after a mount", `/mcp/t +session +tools: a, b$`); !strings.Contains(got[len(got)-2], "/mcp/s ") {
		t.Errorf("table after adding t.lua: %q", got)
	}
	// A reload that changes the tools: the table shows the new ones.
	write("t.lua", strings.Replace(sessionScript, `name = "b"`, `name = "c"`, 1))
	until("the table after a reload", `/mcp/t +session +tools: a, c$`)
	// A broken edit: the running version stays, and the table is printed
	// again all the same.
	write("t.lua", "return {\n  oops(\n")
	until("the table after a failed reload", `/mcp/t +session +tools: a, c$`)
	// A removed script is gone from the table printed once its removal
	// grace (a second) has passed; a mount meanwhile prints it still.
	if err := os.Remove(filepath.Join(dir, "t.lua")); err != nil {
		t.Fatal(err)
	}
	write("u.lua", sessionScript)
	for i := 0; ; i++ {
		got := until("the table after a removal and a mount", `/mcp/u +session`)
		if prev := got[len(got)-2]; strings.Contains(prev, "/mcp/s ") {
			break
		} else if i == 2 {
			t.Fatalf("the tables after removing t.lua still list it: %q", got)
		}
	}
	go func() {
		for range lines {
		}
	}()
	run.stop(t)
}

// serveRun is `luamcp serve` running in the background for a test.
type serveRun struct {
	out    *bufio.Scanner // what it prints, a line at a time
	rest   io.Reader      // the same output, for whoever drains it
	done   chan error     // its result, once it returns
	cancel context.CancelFunc
}

// startServe runs `luamcp serve args...`, its logs going to logs; it is
// stopped when the test ends, if the test did not stop it.
func startServe(t *testing.T, logs io.Writer, args ...string) *serveRun {
	t.Helper()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r := &serveRun{out: bufio.NewScanner(outR), rest: outR, done: make(chan error, 1), cancel: cancel}
	go func() {
		r.done <- newApp(outW, logs).RunContext(ctx, append([]string{"luamcp", "serve"}, args...))
		outW.Close()
	}()
	return r
}

// lines returns the first n lines serve prints and drains the rest; serve
// ending before it printed them fails the test.
func (r *serveRun) lines(t *testing.T, n int) []string {
	t.Helper()
	var got []string
	for len(got) < n && r.out.Scan() {
		got = append(got, r.out.Text())
	}
	go io.Copy(io.Discard, r.rest)
	if len(got) != n {
		r.cancel()
		t.Fatalf("serve printed %q, then ended: %v", got, <-r.done)
	}
	return got
}

// stop ends serve as a signal would and fails the test unless it returns
// nil in time.
func (r *serveRun) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("serve ended with %v", err)
		}
	case <-time.After(30 * time.Second): // liveness bound only
		t.Fatal("serve did not stop after its context ended")
	}
}

// TestServeDrain: with --drain, the end of serve starts with /readyz
// answering 503 while the routes still serve, for that long.
func TestServeDrain(t *testing.T) {
	dir := writeScripts(t, map[string]string{"s.lua": sessionScript})
	run := startServe(t, io.Discard, "--dir", dir, "--addr", "127.0.0.1:0", "--drain", "3s")
	route := regexp.MustCompile(`^(http://127\.0\.0\.1:\d+)(/mcp/s) `).FindStringSubmatch(run.lines(t, 1)[0])
	if route == nil {
		t.Fatal("no route line")
	}
	get := func(path string) int {
		resp, err := http.Get(route[1] + path)
		if err != nil {
			return -1
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := get("/readyz"); s != http.StatusOK {
		t.Fatalf("/readyz before the end: %d", s)
	}
	start := time.Now()
	run.cancel()
	for get("/readyz") != http.StatusServiceUnavailable {
		if time.Since(start) > 2*time.Second {
			t.Fatal("/readyz did not turn 503 once serve was told to stop")
		}
		time.Sleep(10 * time.Millisecond)
	}
	resp := postMCP(t, nil, route[1]+route[2], "", initializeBody)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Errorf("an initialize while draining: %d, session %q", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"))
	}
	select {
	case err := <-run.done:
		if err != nil {
			t.Fatalf("serve ended with %v", err)
		}
	case <-time.After(30 * time.Second): // liveness bound only
		t.Fatal("serve did not stop after draining")
	}
}

// TestServeBodyBudget: --body-budget-mb bounds the POST bodies all routes
// hold while they arrive: past 1 MiB held by a body that stopped coming, a
// new request gets 503 "Server at capacity" (under the default 256 MiB it
// would be served).
func TestServeBodyBudget(t *testing.T) {
	dir := writeScripts(t, map[string]string{"s.lua": sessionScript})
	run := startServe(t, io.Discard, "--dir", dir, "--addr", "127.0.0.1:0", "--no-watch", "--body-budget-mb", "1")
	m := regexp.MustCompile(`^(http://(127\.0\.0\.1:\d+))(/mcp/s) +session`).FindStringSubmatch(run.lines(t, 1)[0])
	if m == nil {
		t.Fatal("no route line for s.lua")
	}
	c, err := net.Dial("tcp", m[2])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A body of 2 MiB announced, 1.25 MiB of it sent: the budget's one body
	// may pass it, the next request may not.
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", m[3], m[2], 2<<20)
	if _, err := c.Write(bytes.Repeat([]byte(" "), 5<<18)); err != nil {
		t.Fatal(err)
	}
	// Asked again until the server has read what came, within the second
	// after which the stalled body may be cut to make room.
	var resp *http.Response
	var body []byte
	for deadline := time.Now().Add(900 * time.Millisecond); ; {
		resp, err = http.DefaultClient.Do(mcpRequest(m[1]+m[3], "", initializeBody))
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"message":"Server at capacity"`) {
		t.Errorf("a request while 1.25 MiB of another's body is held under --body-budget-mb 1: %d %s", resp.StatusCode, body)
	}
	c.Close()
	run.stop(t)
}
