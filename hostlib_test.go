package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/luamcp/luamcp/host"
)

const grantsScript = `return {
  route = { allow = { http = { "api.example.com", "127.0.0.1:9000" }, read = { "data" }, env = { "LUAMCP_T1" } } },
  init = function() return { name = "g", version = "1" }, { tools = {} }, {} end,
  tools = function() return { { name = "t", description = "t", input_schema = { type = "object" } } } end,
  handle_tool = function() return "" end,
}
`

func TestGrantsReported(t *testing.T) {
	dir := writeScripts(t, map[string]string{"g.lua": grantsScript})
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	const want = "http: api.example.com, 127.0.0.1:9000  read: data  env: LUAMCP_T1"

	var out bytes.Buffer
	if err := newApp(&out, io.Discard).Run([]string{"luamcp", "check", dir}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "tools: t  "+want+"\n") {
		t.Errorf("check printed %q, want the grants %q", out.String(), want)
	}

	out.Reset()
	if err := newApp(&out, io.Discard).Run([]string{"luamcp", "check", "--json", dir}); err != nil {
		t.Fatal(err)
	}
	var report struct {
		Scripts []struct{ Grants map[string][]string }
	}
	if err := json.Unmarshal(out.Bytes(), &report); err != nil || len(report.Scripts) != 1 {
		t.Fatalf("--json printed %s: %v", out.String(), err)
	}
	wantJSON := map[string][]string{"http": {"api.example.com", "127.0.0.1:9000"}, "read": {"data"}, "write": {},
		"env": {"LUAMCP_T1"}, "exec": {}}
	if got := report.Scripts[0].Grants; !reflect.DeepEqual(got, wantJSON) {
		t.Errorf("--json grants %v, want %v", got, wantJSON)
	}

	h, err := host.New(host.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Shutdown(t.Context())
	out.Reset()
	printStatus(&out, "http://x", h)
	if line := out.String(); !strings.HasPrefix(line, "http://x/mcp/g") || !strings.HasSuffix(line, "tools: t  "+want+"\n") {
		t.Errorf("serve's status line %q does not end with the grants %q", line, want)
	}
}

func TestEnvFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, ".env")
	src := "# comment\n\nLUAMCP_EF_A=1\nexport LUAMCP_EF_B = \"two words\"\nLUAMCP_EF_C='x=y'\nLUAMCP_EF_SET=from file\nLUAMCP_EF_EMPTY=\n"
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LUAMCP_EF_SET", "from environment")
	for _, k := range []string{"LUAMCP_EF_A", "LUAMCP_EF_B", "LUAMCP_EF_C", "LUAMCP_EF_EMPTY"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	if err := loadEnvFile(file); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"LUAMCP_EF_A": "1", "LUAMCP_EF_B": "two words", "LUAMCP_EF_C": "x=y",
		"LUAMCP_EF_SET": "from environment", "LUAMCP_EF_EMPTY": ""} {
		if got, ok := os.LookupEnv(k); !ok || got != want {
			t.Errorf("%s = %q (set %v), want %q", k, got, ok, want)
		}
	}

	for _, bad := range []struct{ src, want string }{
		{"A=1\nnot a pair\n", ":2: want KEY=VALUE"},
		{"1A=x\n", ":1: want KEY=VALUE"},
		{"A-B=x\n", ":1: want KEY=VALUE"},
		{"=x\n", ":1: want KEY=VALUE"},
	} {
		if _, err := parseEnvFile(strings.NewReader(bad.src), "f"); err == nil || !strings.Contains(err.Error(), "--env-file f"+bad.want) {
			t.Errorf("%q: error %v, want %q", bad.src, err, bad.want)
		}
	}
	if err := loadEnvFile(filepath.Join(dir, "absent")); err == nil || !strings.Contains(err.Error(), "--env-file") {
		t.Errorf("a missing file: %v", err)
	}
}

func TestNewTemplates(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		template, tool, args, want string
	}{
		{"http", "", "", ""}, // it calls api.github.com: checked, not called
		{"fs", "save", `{"name":"first","text":"hello"}`, "saved first"},
		{"exec", "word_count", `{"text":"one two three\n"}`, "1 lines, 3 words, 14 bytes"},
	} {
		t.Run(tc.template, func(t *testing.T) {
			var out bytes.Buffer
			name := "t_" + tc.template
			if err := newApp(&out, io.Discard).Run([]string{"luamcp", "new", "--dir", dir, "--template", tc.template, name}); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, name+".lua")
			if !strings.Contains(out.String(), "try it:  luamcp call "+file+" ") {
				t.Errorf("new printed %q", out.String())
			}
			if err := newApp(io.Discard, io.Discard).Run([]string{"luamcp", "check", file}); err != nil {
				t.Errorf("check of the %s starter: %v", tc.template, err)
			}
			if tc.tool == "" {
				return
			}
			var res bytes.Buffer
			if err := newApp(&res, io.Discard).Run([]string{"luamcp", "call", file, tc.tool, tc.args}); err != nil {
				t.Fatalf("call %s: %v\n%s", tc.tool, err, res.String())
			}
			if !strings.Contains(res.String(), tc.want) {
				t.Errorf("%s answered %s, want %q", tc.tool, res.String(), tc.want)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(dir, "data", "first.txt")); err != nil || string(b) != "hello" {
		t.Errorf("the fs starter wrote %q, %v", b, err)
	}
	// The Windows exec starter (TestWindows runs it under Wine) loads and
	// answers here too: hostname is a Unix program as well.
	win := filepath.Join(dir, "t_win.lua")
	if err := os.WriteFile(win, []byte(strings.ReplaceAll(execTemplate("windows").source, "NAME", "t_win")), 0o644); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	var res bytes.Buffer
	if err := newApp(&res, io.Discard).Run([]string{"luamcp", "call", win, "machine_name"}); err != nil ||
		!strings.Contains(res.String(), `"text": "`+host+`"`) {
		t.Errorf("the Windows exec starter answered %s, %v; want the host name %q", res.String(), err, host)
	}
	if err := newApp(io.Discard, io.Discard).Run([]string{"luamcp", "new", "--dir", dir, "--template", "ftp", "x"}); err == nil ||
		!strings.Contains(err.Error(), "want http, fs or exec") {
		t.Errorf("an unknown template: %v", err)
	}
}

func TestCallEnvFile(t *testing.T) {
	dir := writeScripts(t, map[string]string{"e.lua": `local env = require("env")
return {
  route = { allow = { env = { "LUAMCP_CALL_EF" } } },
  init = function() return { name = "e", version = "1" }, { tools = {} }, {} end,
  tools = function() return { { name = "get", description = "", input_schema = { type = "object" } } } end,
  handle_tool = function() return "value=" .. tostring(env.get("LUAMCP_CALL_EF")) end,
}
`, ".env": "LUAMCP_CALL_EF=from the file\n"})
	t.Setenv("LUAMCP_CALL_EF", "")
	os.Unsetenv("LUAMCP_CALL_EF")
	var out bytes.Buffer
	if err := newApp(&out, io.Discard).Run([]string{"luamcp", "call", "--env-file", filepath.Join(dir, ".env"),
		filepath.Join(dir, "e.lua"), "get"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "value=from the file") {
		t.Errorf("call printed %s", out.String())
	}
	if err := newApp(io.Discard, io.Discard).Run([]string{"luamcp", "serve", "--env-file", filepath.Join(dir, "absent"),
		"--dir", dir, "--addr", "127.0.0.1:0"}); err == nil || !strings.Contains(err.Error(), "--env-file") {
		t.Errorf("serve with a missing --env-file: %v", err)
	}
}
