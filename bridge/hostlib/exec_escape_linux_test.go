//go:build linux

package hostlib

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// TestExecEnvPythonUserSiteRefused: a granted program that is a Python
// program underneath (as lsb_release is) runs no code the script wrote: env
// may not move Python's user site-packages (PYTHONUSERBASE, or HOME, under
// which it lies) into a write root, where a .pth file's "import" lines run
// at start-up, as PYTHONPATH may not.
func TestExecEnvPythonUserSiteRefused(t *testing.T) {
	python := "/usr/bin/python3"
	ver, err := exec.Command(python, "-c", `import sys; print("%d.%d" % sys.version_info[:2])`).Output()
	if err != nil {
		t.Fatalf("%s: %v (the test needs Python 3: apt-get install -y python3)", python, err)
	}
	site := "lib/python" + strings.TrimSpace(string(ver)) + "/site-packages"
	dir := t.TempDir()
	mkfile(t, filepath.Join(dir, "out", "keep"), "")
	tool := filepath.Join(t.TempDir(), "tool") // harmless: prints hello
	if err := os.WriteFile(tool, []byte("#!"+python+"\nprint('hello')\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	L, _ := newLua(t, newLib(t, dir, `{ write = { "out" }, exec = { "`+tool+`" } }`))
	for _, c := range []struct{ name, pth string }{
		{"PYTHONUSERBASE", site + "/x.pth"},
		{"HOME", ".local/" + site + "/y.pth"},
	} {
		pwned := filepath.Join(out, "pwned-"+c.name)
		runCases(t, L, []luaCase{{c.name, `eq(fs.write("out/` + c.pth + `", 'import os; open("` + pwned + `", "w").write("x")'), true)
			local r, err = exec.run{ "` + tool + `", env = { ` + c.name + ` = "` + out + `" } }
			eq(r, nil, "result"); eq(err, "exec: env.` + c.name + ` is refused: it would make ` + tool + ` load code the script chooses")`}})
		if _, err := os.Stat(pwned); err == nil {
			t.Errorf("env.%s: the granted program ran code the script wrote", c.name)
		}
	}
}

// TestExecEnvOpenSSLConfRefused: env may not name an OpenSSL configuration
// (OPENSSL_CONF), which makes any program linked with OpenSSL (curl, even
// for --version) load a provider module, a shared library the script wrote
// into a write root, as LD_PRELOAD may not.
func TestExecEnvOpenSSLConfRefused(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal("no curl (the test needs a program linked with OpenSSL: apt-get install -y curl)")
	}
	if _, err := exec.LookPath("cc"); err != nil {
		t.Fatal("no C compiler")
	}
	dir := t.TempDir()
	mkfile(t, filepath.Join(dir, "out", "keep"), "")
	out := filepath.Join(dir, "out")
	pwned := filepath.Join(out, "pwned")
	build := t.TempDir() // outside every root: the script writes the library itself
	src := filepath.Join(build, "e.c")
	mkfile(t, src, `#include <stdio.h>
__attribute__((constructor)) static void f(void) { FILE *o = fopen("`+pwned+`", "w"); if (o) fclose(o); }
`)
	so := filepath.Join(build, "e.so")
	if b, err := exec.Command("cc", "-shared", "-fPIC", "-o", so, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v: %s", err, b)
	}
	lib, err := os.ReadFile(so)
	if err != nil {
		t.Fatal(err)
	}
	L, _ := newLua(t, newLib(t, dir, `{ write = { "out" }, exec = { "curl" } }`))
	L.SetGlobal("LIB", lua.LString(lib))
	runCases(t, L, []luaCase{{"OPENSSL_CONF", `eq(fs.write("out/e.so", LIB), true)
		eq(fs.write("out/o.cnf", "openssl_conf = init\n[init]\nproviders = prov\n[prov]\nx = xs\n[xs]\nmodule = ` + out + `/e.so\nactivate = 1\n"), true)
		local r, err = exec.run{ "curl", "--version", env = { OPENSSL_CONF = "` + out + `/o.cnf" } }
		eq(r, nil, "result"); eq(err, "exec: env.OPENSSL_CONF is refused: it would make curl load code the script chooses")`}})
	if _, err := os.Stat(pwned); err == nil {
		t.Errorf("%s loaded a library the script wrote", curl)
	}
}

// TestExecEndsPromptlyDespiteEscapee: a call that times out or is cancelled
// returns promptly (host-api.md: within 100 ms) even when a descendant that
// left the group (setsid) holds the output pipes open: the output of a call
// that failed is not worth waiting drainGrace for.
func TestExecEndsPromptlyDespiteEscapee(t *testing.T) {
	dir := t.TempDir()
	mkfile(t, filepath.Join(dir, "out", "keep"), "")
	L, _ := newLua(t, newLib(t, dir, `{ write = { "out" }, exec = { "sh" } }`))
	// $! is the escapee: setsid does not fork when its caller leads no group.
	const run = `"sh", "-c", "setsid sleep 30 & echo $! > out/%s; sleep 30"`
	killEscapee := func(name string) {
		if b, err := os.ReadFile(filepath.Join(dir, "out", name)); err == nil {
			if pid := strings.TrimSpace(string(b)); pid != "" {
				exec.Command("kill", "-9", pid).Run()
			}
		}
	}
	const slack = 300 * time.Millisecond // the contract's 100 ms, on a loaded machine

	t.Run("timeout", func(t *testing.T) {
		defer killEscapee("pid1")
		start := time.Now()
		runCases(t, L, []luaCase{{"run", `local v, err = exec.run{ ` + strings.Replace(run, "%s", "pid1", 1) + `, timeout_ms = 300 }
			eq(v, nil); eq(err, "exec: sh timed out after 300 ms")`}})
		if d := time.Since(start) - 300*time.Millisecond; d > slack {
			t.Errorf("returned %v after the timeout", d)
		}
	})
	t.Run("cancellation", func(t *testing.T) {
		defer killEscapee("pid2")
		ctx, cancel := context.WithCancel(context.Background())
		L.SetContext(ctx)
		defer L.RemoveContext()
		var cancelled time.Time
		timer := time.AfterFunc(300*time.Millisecond, func() { cancelled = time.Now(); cancel() })
		defer timer.Stop()
		if err := L.DoString(`exec.run{ ` + strings.Replace(run, "%s", "pid2", 1) + ` }`); err == nil {
			t.Fatal("the run was not interrupted")
		}
		if d := time.Since(cancelled); d > slack {
			t.Errorf("returned %v after the cancellation", d)
		}
	})
}

// zombieChildren lists this process's zombie children in process group pgid.
func zombieChildren(t *testing.T, pgid int) []string {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var zombies []string
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // state ppid pgrp ...
		if len(fields) > 2 && fields[0] == "Z" && fields[1] == strconv.Itoa(os.Getpid()) && fields[2] == strconv.Itoa(pgid) {
			zombies = append(zombies, s[:strings.LastIndexByte(s, ')')+1])
		}
	}
	return zombies
}

// TestExecReapsOrphansAsInit: when luamcp is the init of its container (a
// Kubernetes pod's main process is PID 1) or a child subreaper, the
// descendants of a program that the call kills after their parent died are
// reparented to luamcp, which must reap them: else every such call leaves
// zombies, until the container runs out of process ids.
func TestExecReapsOrphansAsInit(t *testing.T) {
	const prSetChildSubreaper = 36 // as PID 1 is for every orphan
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		t.Fatalf("prctl: %v", e)
	}
	defer syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 0, 0)
	dir := t.TempDir()
	mkfile(t, filepath.Join(dir, "out", "keep"), "")
	L, _ := newLua(t, newLib(t, dir, `{ write = { "out" }, exec = { "sh" } }`))
	for _, c := range []luaCase{
		{"exit", `local r = exec.run{ "sh", "-c", "echo $$ > out/pid; sleep 30 & sleep 30 & echo started" }
			eq(r.stdout, "started\n")`},
		{"timeout", `local v, err = exec.run{ "sh", "-c", "echo $$ > out/pid; sleep 30 & sleep 30 & wait", timeout_ms = 200 }
			eq(err, "exec: sh timed out after 200 ms")`},
	} {
		runCases(t, L, []luaCase{c})
		pgid := readPid(t, filepath.Join(dir, "out", "pid"))
		deadline := time.Now().Add(2 * time.Second)
		for {
			z := zombieChildren(t, pgid)
			if len(z) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: the call left zombies: %v", c.name, z)
				for {
					if _, err := syscall.Wait4(-pgid, nil, 0, nil); err != nil {
						break
					}
				}
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
