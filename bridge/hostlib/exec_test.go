//go:build unix

package hostlib

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// groupMembers lists the live (not zombie) processes of process group pgid.
func groupMembers(t *testing.T, pgid int) []string {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var live []string
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // gone meanwhile
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // state ppid pgrp ...
		if len(fields) > 2 && fields[0] != "Z" && fields[2] == strconv.Itoa(pgid) {
			live = append(live, s[:strings.LastIndexByte(s, ')')+1])
		}
	}
	return live
}

// waitGroupGone waits until process group pgid has no live process.
func waitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		live := groupMembers(t, pgid)
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has %v", pgid, live)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestExec(t *testing.T) {
	dir := t.TempDir()
	mkfile(t, filepath.Join(dir, "data", "f.txt"), "x")
	mkfile(t, filepath.Join(dir, "out", "keep"), "")
	if err := os.Symlink("/tmp", filepath.Join(dir, "data", "tmp")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LUAMCP_SECRET", "leaked")
	realData, _ := filepath.EvalSymlinks(filepath.Join(dir, "data"))
	realDir, _ := filepath.EvalSymlinks(dir)
	L, _ := newLua(t, newLib(t, dir, `{ read = { "data" }, write = { "out" }, exec = { "sh", "/bin/echo" } }`))
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	shLink := filepath.Join(dir, "sh-link")
	if err := os.Symlink(sh, shLink); err != nil {
		t.Fatal(err)
	}
	L.SetGlobal("SH_LINK", lstr(shLink))
	runCases(t, L, []luaCase{
		{"run", `local r = exec.run{ "sh", "-c", "echo hi; echo err >&2; exit 3" }
			eq(r.code, 3); eq(r.stdout, "hi\n"); eq(r.stderr, "err\n"); eq(r.truncated, nil)`},
		{"arguments are not a shell line", `local r = exec.run{ "/bin/echo", "a b", "$HOME", ";", "ls" }; eq(r.stdout, "a b $HOME ; ls\n")`},
		{"stdin", `eq(exec.run{ "sh", "-c", "cat", stdin = "abc" }.stdout, "abc"); eq(exec.run{ "sh", "-c", "cat" }.stdout, "")
			-- A call as the last, keyed, field is stdin, never an argument too.
			local r = exec.run{ "sh", "-c", "echo $0 $#; cat", stdin = string.rep("x", 3) }; eq(r.stdout, "sh 0\nxxx")`},
		{"minimal environment", `local r = exec.run{ "sh", "-c", "echo $FOO:$LUAMCP_SECRET:$PATH", env = { FOO = "bar" } }
			eq(r.stdout:sub(1, 5), "bar::"); if #r.stdout < 7 then error("no PATH") end`},
		{"cwd", `eq(exec.run{ "sh", "-c", "pwd" }.stdout, "` + realDir + `\n")
			eq(exec.run{ "sh", "-c", "pwd", cwd = "data" }.stdout, "` + realData + `\n")
			local v, err = exec.run{ "sh", "-c", "pwd", cwd = "data/../.." }; eq(v, nil); eq(err, "exec: cwd data/../.. escapes its root")
			v, err = exec.run{ "sh", "-c", "pwd", cwd = "data/tmp" }; eq(err, "exec: cwd data/tmp escapes its root")
			v, err = exec.run{ "sh", "-c", "pwd", cwd = "/" }; eq(err, "exec: cwd / is outside the allowed folders (route.allow.read, route.allow.write)")
			v, err = exec.run{ "sh", "-c", "pwd", cwd = "data/f.txt" }; eq(err, "exec: cwd data/f.txt is not a folder")`},
		{"output cap", `local r = exec.run{ "sh", "-c", "head -c 5000 /dev/zero; head -c 10 /dev/zero >&2", max_bytes = 100 }
			eq(#r.stdout, 100); eq(#r.stderr, 10); eq(r.truncated, true); eq(r.code, 0)`},
		{"not allowed", `local v, err = exec.run{ "ls" }; eq(v, nil); eq(err, "exec: ls is not allowed (route.allow.exec)")
			v, err = exec.run{ "/nonexistent/sh" }; eq(err, "exec: /nonexistent/sh is not allowed (route.allow.exec)")
			-- The same file by another path is refused, with the name to use.
			v, err = exec.run{ SH_LINK, "-c", "echo no" }; eq(v, nil)
			eq(err, "exec: " .. SH_LINK .. ' is not allowed (route.allow.exec): it is the program granted as "sh" by another path; run it as "sh"')`},
		{"killed by a signal", `eq(exec.run{ "sh", "-c", "kill -9 $$" }.code, 137)`},
		{"code-loading variables refused", `
			for _, k in ipairs{ "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "GCONV_PATH",
				"BASH_ENV", "ENV", "SHELLOPTS", "PS4", "PYTHONPATH", "PERL5OPT", "NODE_OPTIONS", "JAVA_TOOL_OPTIONS",
				"CORECLR_PROFILER_PATH", "CORECLR_PROFILER_PATH_64", "DOTNET_STARTUP_HOOKS", "COR_ENABLE_PROFILING",
				"HOME", "XDG_CONFIG_HOME", "OPENSSL_CONF", "PYTHONUSERBASE", "PYTHONPYCACHEPREFIX", "CLASSPATH", "GEM_PATH",
				"LUA_INIT", "LUA_INIT_5_4", "LUA_PATH" } do
				local v, err = exec.run{ "/bin/echo", "x", env = { [k] = "out/x.so" } }
				eq(v, nil); eq(err, "exec: env." .. k .. " is refused: it would make /bin/echo load code the script chooses")
			end
			eq(exec.run{ "sh", "-c", "echo $LD:$ENVX", env = { LD = "a", ENVX = "b" } }.stdout, "a:b\n")
			-- Unix compares names exactly: ld_preload is another variable (Windows refuses Path too).
			eq(exec.run{ "sh", "-c", "echo $ld_preload", env = { ld_preload = "c" } }.stdout, "c\n")`},
		{"wrong types raise", `fails(exec.run, {}); fails(exec.run, "sh"); fails(exec.run, { "sh", timeout = 5 })
			fails(exec.run, { "sh", {} }); fails(exec.run, { "sh", env = { ["A=B"] = "x" } }); fails(exec.run, { "sh", max_bytes = -1 })`},
		// A key outside the argument list and the options was ignored:
		// [1.5], [true] (a hole in the list is named: Lua's # may count it).
		{"keys outside the list raise", `local err = fails(exec.run, { "sh", "-c", "true", [9] = "x" })
			assert(err:find("exec.run: argument key 9 is not in the list 1..3", 1, true) or err:find("got a nil", 1, true), err)
			err = fails(exec.run, { "sh", "-c", "true", [1.5] = "x" }); assert(err:find("argument key 1.5 is not in the list", 1, true), err)
			err = fails(exec.run, { "sh", "-c", "true", [true] = "x" }); assert(err:find("exec.run: unknown option a boolean", 1, true), err)`},
		// A NUL cannot pass to a program: it would cut the argument or the
		// variable short where the script did not mean it to end. Each is
		// refused by name, before any program starts.
		{"NUL bytes raise", `local err = fails(exec.run, { "/bin/echo", "a\0b" })
			if not err:find("exec.run: argument 2 contains a NUL byte", 1, true) then error(err) end
			err = fails(exec.run, { "/bin/echo", env = { FOO = "a\0b" } })
			if not err:find("exec.run: env.FOO: a name of letters", 1, true) then error(err) end`},
	})

	t.Run("timeout kills the group", func(t *testing.T) {
		// The child and its children ignore SIGTERM; the grandchildren would
		// write a file if they lived.
		start := time.Now()
		runCases(t, L, []luaCase{{"run", `local v, err = exec.run{ "sh", "-c", [[
			trap '' TERM; echo $$ > out/pid
			(trap '' TERM; sleep 30; echo late > out/late) &
			sleep 30 & wait]], timeout_ms = 300 }
			eq(v, nil); eq(err, "exec: sh timed out after 300 ms")`}})
		if d := time.Since(start); d > 300*time.Millisecond+time.Second {
			t.Errorf("returned after %v", d)
		}
		waitGroupGone(t, readPid(t, filepath.Join(dir, "out", "pid")))
	})

	t.Run("background children die with the call", func(t *testing.T) {
		start := time.Now()
		runCases(t, L, []luaCase{{"run", `local r = exec.run{ "sh", "-c", "echo $$ > out/pid2; sleep 30 & echo started" }
			eq(r.stdout, "started\n"); eq(r.code, 0)`}})
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("returned after %v: it waited for the background child", d)
		}
		waitGroupGone(t, readPid(t, filepath.Join(dir, "out", "pid2")))
	})

	t.Run("cancellation kills the group", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		L.SetContext(ctx)
		defer L.RemoveContext()
		var cancelled time.Time
		timer := time.AfterFunc(200*time.Millisecond, func() { cancelled = time.Now(); cancel() })
		defer timer.Stop()
		err := L.DoString(`exec.run{ "sh", "-c", "trap '' TERM; echo $$ > out/pid3; sleep 30 & wait" }`)
		if err == nil {
			t.Fatal("the run was not interrupted")
		}
		if d := time.Since(cancelled); d > time.Second {
			t.Errorf("returned %v after the cancellation", d)
		}
		waitGroupGone(t, readPid(t, filepath.Join(dir, "out", "pid3")))
	})
	if _, err := os.Stat(filepath.Join(dir, "out", "late")); err == nil {
		t.Error("a grandchild outlived its call")
	}
}

// TestExecEnvNeverInherited: the child's environment is the minimal one even
// when PATH, HOME and LANG are all unset (an empty list, not exec.Cmd's nil,
// which means "everything").
func TestExecEnvNeverInherited(t *testing.T) {
	for _, k := range []string{"PATH", "HOME", "LANG"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	t.Setenv("LUAMCP_SECRET", "leaked")
	L, _ := newLua(t, newLib(t, t.TempDir(), `{ exec = { "/usr/bin/env" } }`))
	runCases(t, L, []luaCase{
		{"nothing inherited", `eq(exec.run{ "/usr/bin/env" }.stdout, "")
			eq(exec.run{ "/usr/bin/env", env = { FOO = "bar" } }.stdout, "FOO=bar\n")`},
	})
}

// TestExecStdinEscapee: a descendant that left the group (setsid) and holds
// stdin without reading it does not keep the call's stdin writer (a
// goroutine and a pipe) once the call returned.
func TestExecStdinEscapee(t *testing.T) {
	dir := t.TempDir()
	mkfile(t, filepath.Join(dir, "out", "keep"), "")
	L, _ := newLua(t, newLib(t, dir, `{ write = { "out" }, exec = { "sh" } }`))
	// A background job's stdin is /dev/null unless redirected: fd 3 keeps it.
	runCases(t, L, []luaCase{{"run", `local r = exec.run{ "sh", "-c", "exec 3<&0; setsid sh -c 'echo $$ > out/pid; exec sleep 10' <&3 & sleep 0.2",
		stdin = string.rep("x", 1024 * 1024), timeout_ms = 5000 }
		eq(r.code, 0)`}})
	pid := readPid(t, filepath.Join(dir, "out", "pid"))
	defer syscall.Kill(pid, syscall.SIGKILL)
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
		t.Fatalf("the escapee is gone already (%v): the test proves nothing", err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "hostlib.runProgram.func") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a goroutine of runProgram outlives the call while the escapee lives:\n%s", stacks)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
