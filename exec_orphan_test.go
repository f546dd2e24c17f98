//go:build linux

package main

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// orphanScript runs a program that outlives any reasonable call: the
// test kills luamcp while it runs.
const orphanScript = `return {
  route = { allow = { exec = { "sh" }, write = { "out" } } },
  init = function() return { name = "o", version = "1" }, { tools = {} }, {} end,
  tools = { { name = "hang", input_schema = { type = "object" } } },
  handle_tool = function()
    require("exec").run{ "sh", "-c", "echo $$ > out/pid; exec sleep 60", timeout_ms = 60000 }
    return { content = {} }
  end,
}`

// TestExecDiesWithLuamcp: a program exec.run started is killed when luamcp
// itself is killed (SIGKILL, as the OOM killer does), instead of running on
// with nobody to end it.
func TestExecDiesWithLuamcp(t *testing.T) {
	dir := writeScripts(t, map[string]string{"o.lua": orphanScript})
	if err := os.Mkdir(filepath.Join(dir, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	serve := exec.Command(os.Args[0], "serve", "--dir", dir, "--addr", "127.0.0.1:0")
	serve.Env = append(os.Environ(), "LUAMCP_TEST_RUN_MAIN=1")
	stdout, err := serve.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		serve.Process.Kill()
		serve.Wait()
	}()
	out := bufio.NewScanner(stdout)
	if !out.Scan() {
		t.Fatal("serve printed nothing")
	}
	route := regexp.MustCompile(`^(http://127\.0\.0\.1:\d+/mcp/o) `).FindStringSubmatch(out.Text())
	if route == nil {
		t.Fatalf("route line %q", out.Text())
	}
	go func() {
		for out.Scan() {
		}
	}()
	go http.Post(route[1], "application/json", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hang","arguments":{}}}`))

	var pid int
	for deadline := time.Now().Add(10 * time.Second); pid == 0; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(dir, "out", "pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if time.Now().After(deadline) {
			t.Fatal("the program never started")
		}
	}
	if err := serve.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	serve.Wait()
	for deadline := time.Now().Add(5 * time.Second); alive(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			exec.Command("kill", "-9", strconv.Itoa(pid)).Run()
			t.Fatalf("the program (pid %d) outlived luamcp", pid)
		}
	}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
