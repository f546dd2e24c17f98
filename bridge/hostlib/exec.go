package hostlib

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Bounds of the `exec` module.
const (
	defaultExecTimeout = 30 * time.Second
	defaultExecMax     = 1 << 20  // bytes kept of each output stream
	maxExecMax         = 64 << 20 // the largest max_bytes exec.run accepts
	maxExecArgs        = 4096
	// killGrace is how long a process group has between SIGTERM and SIGKILL
	// when its call ends early: enough for a well-behaved program to remove
	// its lock files, short enough for the call to return within 100 ms.
	killGrace = 50 * time.Millisecond
	// drainGrace bounds the wait for the output pipes after the group was
	// killed: a process that left the group (setsid) may hold them open.
	drainGrace = time.Second
)

// execModule is `exec`: programs route.allow.exec names, run without a
// shell, each in its own process group.
var execModule = module{
	funcs: []function{{"run", execRun}},
}

// execOptions are the keys of exec.run's table besides the argument list.
var execOptions = []string{"cwd", "stdin", "timeout_ms", "max_bytes", "env"}

// Variables exec.run's env may not set: they make any program, whatever it
// is, load code or files the script chooses, so a script granted a harmless
// program (echo) and a write root would run anything. They are the
// dynamic loader's (LD_*, macOS's DYLD_*), the rest of glibc's own list of
// variables it ignores for setuid programs (unsecure-envvars.h: GCONV_PATH
// loads iconv modules, LOCPATH locale files, ...), and those that make a
// shell or an interpreter run code at start-up, since many programs are
// shell, Python, Perl, Ruby, Node or Java programs underneath. A program
// that runs commands from its own arguments (sh, env, git -c ...) grants
// what it runs: that is its grant's meaning, not a variable's. HOME and
// XDG_CONFIG_HOME are refused too: under them lie the files many programs
// load at start-up (Python's user site-packages, whose .pth files run code,
// git's config, whose core.pager or core.fsmonitor is a command).
// OPENSSL_CONF makes any program linked with OpenSSL load the provider or
// engine libraries the file names; PYTHONPYCACHEPREFIX makes Python load
// compiled modules from a folder, CLASSPATH Java classes, GEM_* Ruby's gem
// plugins.
var (
	refusedEnvPrefixes = []string{"LD_", "DYLD_", "BASH_FUNC_", "COR_PROFILER_PATH_", "CORECLR_PROFILER_PATH_",
		"LUA_INIT", "LUA_PATH", "LUA_CPATH"} // and their versions: LUA_INIT_5_4, ...
	refusedEnv = map[string]bool{
		// glibc
		"GCONV_PATH": true, "GETCONF_DIR": true, "GLIBC_TUNABLES": true, "HOSTALIASES": true,
		"LOCALDOMAIN": true, "LOCPATH": true, "MALLOC_TRACE": true, "NIS_PATH": true,
		"NLSPATH": true, "RESOLV_HOST_CONF": true, "RES_OPTIONS": true, "TMPDIR": true, "TZDIR": true,
		// libraries and files loaded at start-up
		"HOME": true, "XDG_CONFIG_HOME": true, "OPENSSL_CONF": true, "OPENSSL_CONF_INCLUDE": true,
		"OPENSSL_MODULES": true, "OPENSSL_ENGINES": true,
		// shells
		"BASH_ENV": true, "ENV": true, "SHELLOPTS": true, "BASHOPTS": true, "PS4": true, "IFS": true,
		"PROMPT_COMMAND": true,
		// interpreters
		"PYTHONPATH": true, "PYTHONHOME": true, "PYTHONSTARTUP": true, "PYTHONINSPECT": true,
		"PYTHONUSERBASE": true, "PYTHONPYCACHEPREFIX": true, "PERL5OPT": true, "PERL5LIB": true, "PERLLIB": true, "PERL5DB": true,
		"RUBYOPT": true, "RUBYLIB": true, "NODE_OPTIONS": true, "NODE_PATH": true,
		"JAVA_TOOL_OPTIONS": true, "_JAVA_OPTIONS": true, "JDK_JAVA_OPTIONS": true, "CLASSPATH": true,
		"GEM_HOME": true, "GEM_PATH": true,
		// .NET (Windows and Unix): a profiler or start-up hook is a library
		// the runtime loads into any .NET program
		"COR_ENABLE_PROFILING": true, "COR_PROFILER": true, "COR_PROFILER_PATH": true,
		"CORECLR_ENABLE_PROFILING": true, "CORECLR_PROFILER": true, "CORECLR_PROFILER_PATH": true,
		"DOTNET_STARTUP_HOOKS": true, "DOTNET_ADDITIONAL_DEPS": true,
	}
)

// envRefused reports whether exec.run's env may not set name (refusedEnv,
// and the platform's own: platformRefusedEnv). Names compare as the
// platform does (envName: regardless of case on Windows).
func envRefused(name string) bool {
	name = envName(name)
	if refusedEnv[name] || slices.Contains(platformRefusedEnv, name) {
		return true
	}
	for _, p := range refusedEnvPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// execSpec is one exec.run call, read from its table.
type execSpec struct {
	prog    Program
	args    []string
	cwd     string
	stdin   *string
	env     []string
	timeout time.Duration
	max     int
}

// exec.run{prog, args..., cwd=, stdin=, timeout_ms=, max_bytes=, env=} ->
// {code=, stdout=, stderr=, truncated=} | nil, message. A non-zero exit is a
// result, not a failure.
func execRun(s *State, L *lua.LState) int {
	t := L.CheckTable(1)
	spec, msg := s.execSpec(L, t)
	if msg != "" {
		return fail(L, "%s", msg)
	}
	if spec == nil {
		return 2
	}
	// Each stream keeps at most half of what the memory budget has left.
	spec.max = int(room(L, 2*int64(spec.max)) / 2)
	res, err := runProgram(s.ctx(), spec)
	if err != nil {
		return fail(L, "%v", err)
	}
	if err := keep(L, "exec", res.stdout.buf.Len()+res.stderr.buf.Len()); err != nil {
		return fail(L, "%v", err)
	}
	out := L.CreateTable(0, 4)
	out.RawSetString("code", lua.LNumber(res.code))
	out.RawSetString("stdout", lua.LString(res.stdout.buf.Bytes()))
	out.RawSetString("stderr", lua.LString(res.stderr.buf.Bytes()))
	if res.stdout.truncated || res.stderr.truncated {
		out.RawSetString("truncated", lua.LTrue)
	}
	L.Push(out)
	return 1
}

// execSpec reads the call's table. Wrong types raise; a refusal returns its
// message; nil, "" means the failure was pushed already.
func (s *State) execSpec(L *lua.LState, t *lua.LTable) (*execSpec, string) {
	const fname = "exec.run"
	n := t.Len()
	t.ForEach(func(k, _ lua.LValue) {
		switch k := k.(type) {
		case lua.LString:
			if !slices.Contains(execOptions, string(k)) {
				L.RaiseError("%s: unknown option %q (want %s)", fname, string(k), strings.Join(execOptions, ", "))
			}
		case lua.LNumber:
			// An argument past the list ({"sh", [5] = "x"} or [1.5]) would
			// be left out unseen; a hole in it is named below.
			if f := float64(k); f != math.Trunc(f) || f < 1 || f > float64(n) {
				L.RaiseError("%s: argument key %s is not in the list 1..%d", fname, k.String(), n)
			}
		default:
			L.RaiseError("%s: unknown option %s (want %s)", fname, describe(k), strings.Join(execOptions, ", "))
		}
	})
	if n == 0 {
		L.RaiseError("%s: the program name is missing: exec.run{\"prog\", \"arg\", ...}", fname)
	}
	if n > maxExecArgs {
		L.RaiseError("%s: more than %d arguments", fname, maxExecArgs)
	}
	spec := &execSpec{
		timeout: time.Duration(intField(L, t, fname, "timeout_ms", defaultExecTimeout.Milliseconds(), 1, 1<<40)) * time.Millisecond,
		max:     int(intField(L, t, fname, "max_bytes", defaultExecMax, 0, maxExecMax)),
	}
	for i := 1; i <= n; i++ {
		a := t.RawGetInt(i)
		switch a.(type) {
		case lua.LString, lua.LNumber:
		default:
			L.RaiseError("%s: argument %d must be a string, got %s", fname, i, describe(a))
		}
		arg := lua.LVAsString(a)
		if strings.IndexByte(arg, 0) >= 0 {
			L.RaiseError("%s: argument %d contains a NUL byte", fname, i)
		}
		spec.args = append(spec.args, arg)
	}
	if v := field(t, "stdin"); v != lua.LNil {
		in := stringField(L, t, fname, "stdin", "")
		spec.stdin = &in
	}
	extra := stringMap(L, t, fname, "env")
	cwd := stringField(L, t, fname, "cwd", "")

	lib := s.granted(L, "exec")
	if lib == nil {
		return nil, ""
	}
	name := spec.args[0]
	found := false
	for _, p := range lib.grants.Exec {
		if name == p.Name || name == p.Path {
			spec.prog, found = p, true
			break
		}
	}
	if !found {
		msg := fmt.Sprintf("exec: %s is not allowed (route.allow.exec)", name)
		if p, ok := lib.grants.sameFile(name); ok {
			msg += fmt.Sprintf(": it is the program granted as %q by another path; run it as %q", p.Name, p.Name)
		}
		return nil, msg
	}
	var err error
	if spec.cwd, err = lib.workDir(cwd); err != nil {
		return nil, err.Error()
	}
	// Never nil: exec.Cmd gives a nil Env the whole process environment.
	spec.env = make([]string, 0, len(childEnv)+len(extra))
	for _, k := range childEnv {
		if v, ok := os.LookupEnv(k); ok {
			spec.env = append(spec.env, k+"="+v)
		}
	}
	for k, v := range extra {
		if !validEnvName(k) || strings.IndexByte(v, 0) >= 0 {
			L.RaiseError("%s: env.%s: a name of letters, digits and _ and a value without NUL expected", fname, k)
		}
		if envRefused(k) {
			return nil, fmt.Sprintf("exec: env.%s is refused: it would make %s load code the script chooses", k, name)
		}
		spec.env = append(spec.env, k+"="+v)
	}
	return spec, ""
}

// sameFile returns the granted program that the absolute path name reaches
// through symbolic links (/bin/sh where "sh" is /usr/bin/sh), for the
// refusal's message only. A program is matched by its name as written: a
// file reached by another path runs with another argv[0], which a
// multi-call program (busybox) reads as the command to run.
func (g *Grants) sameFile(name string) (Program, bool) {
	if !filepath.IsAbs(name) {
		return Program{}, false
	}
	real, err := filepath.EvalSymlinks(name)
	if err != nil {
		return Program{}, false
	}
	for _, p := range g.Exec {
		if pr, err := filepath.EvalSymlinks(p.Path); err == nil && pr == real {
			return p, true
		}
	}
	return Program{}, false
}

// workDir resolves exec.run's cwd: inside a read or write root, also once
// symbolic links are followed; the scripts folder when empty.
func (l *Lib) workDir(cwd string) (string, error) {
	if cwd == "" {
		return filepath.Abs(l.dir)
	}
	p, err := l.resolve(cwd, readAccess)
	if err != nil {
		return "", fmt.Errorf("exec: cwd %s", strings.TrimPrefix(err.Error(), "fs: "))
	}
	real, err := filepath.EvalSymlinks(filepath.Join(p.root.Path, filepath.FromSlash(p.rel)))
	if err != nil {
		return "", fmt.Errorf("exec: cwd %s: not found", cwd)
	}
	root, err := filepath.EvalSymlinks(p.root.Path)
	if err != nil {
		return "", fmt.Errorf("exec: cwd %s: its root cannot be read", cwd)
	}
	if rel, err := filepath.Rel(root, real); err != nil || !filepath.IsLocal(rel) && rel != "." {
		return "", fmt.Errorf("exec: cwd %s escapes its root", cwd)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("exec: cwd %s is not a folder", cwd)
	}
	return real, nil
}

// capped keeps the first max bytes written to it and drops the rest, so that
// a chatty child never blocks on a full pipe.
type capped struct {
	max       int
	buf       bytes.Buffer
	truncated bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room < len(p) {
		c.truncated = true
		c.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return c.buf.Write(p)
}

type execResult struct {
	code           int
	stdout, stderr capped
}

// runProgram runs spec under ctx and its own timeout. The child runs in a
// [procGroup] of its own (a process group; a job object on Windows); when
// the call ends early the group is asked to end (SIGTERM), then killed after
// killGrace, and whatever is left of the group when the child exits is
// killed too, so no descendant outlives the call (one that left the group
// with setsid is out of reach).
func runProgram(ctx context.Context, spec *execSpec) (*execResult, error) {
	name := spec.args[0]
	parent := ctx
	ctx, cancel := context.WithTimeout(parent, spec.timeout)
	defer cancel()
	res := &execResult{stdout: capped{max: spec.max}, stderr: capped{max: spec.max}}

	var pipes [3][2]*os.File // stdin, stdout, stderr: read end, write end
	closeAll := func() {
		for _, p := range pipes {
			for _, f := range p {
				if f != nil {
					f.Close()
				}
			}
		}
	}
	for i := range pipes {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("exec: %s: %v", name, err)
		}
		pipes[i] = [2]*os.File{r, w}
	}
	defer closeAll()
	cmd := &exec.Cmd{
		Path:        spec.prog.Path,
		Args:        spec.args,
		Dir:         spec.cwd,
		Env:         spec.env,
		Stdin:       pipes[0][0],
		Stdout:      pipes[1][1],
		Stderr:      pipes[2][1],
		SysProcAttr: groupAttr(),
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("exec: %s: %v", name, startError(err))
	}
	group, err := adopt(cmd.Process)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("exec: %s: %v", name, err)
	}
	defer group.release()
	// The child has its copies; the parent keeps the ends it uses.
	for _, f := range []*os.File{pipes[0][0], pipes[1][1], pipes[2][1]} {
		f.Close()
	}
	pipes[0][0], pipes[1][1], pipes[2][1] = nil, nil, nil

	var readers sync.WaitGroup
	readers.Add(2)
	go drain(&readers, pipes[1][0], &res.stdout)
	go drain(&readers, pipes[2][0], &res.stderr)
	stdin := pipes[0][1]
	go func() {
		if spec.stdin != nil {
			stdin.WriteString(*spec.stdin) // EPIPE when the child does not read it all: fine
		}
		stdin.Close()
	}()
	pipes[0][1] = nil // closed by the writer, or below once the child is gone

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var waitErr error
	select {
	case waitErr = <-exited:
	case <-ctx.Done():
		group.terminate()
		select {
		case waitErr = <-exited:
		case <-time.After(killGrace):
			group.kill()
			waitErr = <-exited
		}
	}
	// Descendants still in the group die with the call.
	group.kill()
	go group.reap()
	// The child is gone: a writer still blocked on its stdin writes to a
	// descendant outside the group (setsid) that inherited it. Closing the
	// pipe here ends the write (pipes are non-blocking, so Close interrupts
	// it), rather than leaving the writer and the pipe for as long as that
	// descendant lives.
	stdin.Close()

	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	// A call that timed out or was cancelled returns its error, not the
	// output: it does not wait for the pipes at all.
	select {
	case <-drained:
	case <-ctx.Done():
	case <-time.After(drainGrace):
	}
	select {
	case <-drained:
	default:
		pipes[1][0].Close() // unblocks the readers: a process outside the group holds the pipes
		pipes[2][0].Close()
		<-drained
	}

	if err := ctx.Err(); err != nil {
		if parent.Err() == nil {
			return nil, fmt.Errorf("exec: %s timed out after %d ms", name, spec.timeout.Milliseconds())
		}
		return nil, fmt.Errorf("exec: %s stopped: the call ended (%v)", name, context.Cause(parent))
	}
	var exitErr *exec.ExitError
	switch {
	case waitErr == nil:
	case errors.As(waitErr, &exitErr):
		res.code = exitErr.ExitCode()
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.code = 128 + int(ws.Signal())
		}
	default:
		return nil, fmt.Errorf("exec: %s: %v", name, waitErr)
	}
	return res, nil
}

// drain copies a pipe into c until it closes.
func drain(wg *sync.WaitGroup, r io.Reader, c *capped) {
	defer wg.Done()
	io.Copy(c, r)
}

// startError drops the program path from exec's start errors.
func startError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
