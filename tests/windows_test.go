package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The Windows build is tested under Wine (Debian's wine64, 8.0): luamcp.exe,
// built with GOOS=windows, serves testdata/wine/win.lua and the official Go
// SDK client drives it over real HTTP. Wine runs the Windows code paths that
// differ from Unix ones (a job object around exec.run's program, Windows
// paths in fs, the folder watcher on ReadDirectoryChangesW); what it cannot
// show is Windows' own kernel, so this is a smoke test of the port, not a
// replacement for a Windows machine. fs.remove is left out: Wine 8 lacks
// FileDispositionInformationEx, with which Go 1.26 removes files ("Invalid
// function"), which Windows has since Windows 10 1709.

// wineTools returns the paths of wine and the mingw-w64 C compiler, failing
// the test when one is missing: CI installs both (.ci/run).
func wineTools(t *testing.T) (wine, cc string) {
	t.Helper()
	for _, p := range []struct {
		name, pkg string
		path      *string
	}{{"wine", "wine64", &wine}, {"x86_64-w64-mingw32-gcc", "gcc-mingw-w64-x86-64", &cc}} {
		path, err := exec.LookPath(p.name)
		if err != nil {
			t.Fatalf("%s not found (apt-get install -y %s): %v", p.name, p.pkg, err)
		}
		*p.path = path
	}
	return wine, cc
}

// windowsPath names a Linux path as Wine's Z: drive shows it.
func windowsPath(path string) string {
	return "Z:" + strings.ReplaceAll(path, "/", `\`)
}

// goBuildWindows builds the Go package pkg (a path relative to the tests
// module, or ".." for luamcp) for windows/amd64 into out.
func goBuildWindows(t *testing.T, pkg, out string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if pkg == ".." {
		cmd.Dir, cmd.Args[len(cmd.Args)-1] = "..", "."
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("GOOS=windows go build %s: %v\n%s", pkg, err, b)
	}
}

// newWinePrefix makes a Wine prefix of its own for the test, and gives it
// the bcryptprimitives.dll Go's runtime needs where Wine 8 has none
// (testdata/wine/prng.c), and drive Y:, a network drive to Windows
// programs, on netDir. Its wineserver is stopped when the test ends.
func newWinePrefix(t *testing.T, wine, cc, netDir string) []string {
	t.Helper()
	prefix := t.TempDir()
	env := append(os.Environ(), "WINEPREFIX="+prefix, "WINEDEBUG=-all", "WINEDLLOVERRIDES=mscoree,mshtml=")
	boot := exec.Command(wine, "wineboot", "--init")
	boot.Env = env
	if b, err := boot.CombinedOutput(); err != nil {
		t.Fatalf("wineboot: %v\n%s", err, b)
	}
	t.Cleanup(func() {
		kill := exec.Command(filepath.Join(filepath.Dir(wine), "wineserver"), "-k")
		kill.Env = env
		_ = kill.Run() // no wineserver left is fine
	})
	if err := os.Symlink(netDir, filepath.Join(prefix, "dosdevices", "y:")); err != nil {
		t.Fatal(err)
	}
	reg := exec.Command(wine, "reg", "add", `HKLM\Software\Wine\Drives`, "/v", "y:", "/t", "REG_SZ", "/d", "network", "/f")
	reg.Env = env
	if b, err := reg.CombinedOutput(); err != nil {
		t.Fatalf("wine reg add: %v\n%s", err, b)
	}
	// Drive types are read when a Wine session starts: end this one.
	stop := exec.Command(filepath.Join(filepath.Dir(wine), "wineserver"), "-k")
	stop.Env = env
	_ = stop.Run()
	dll := filepath.Join(prefix, "drive_c", "windows", "system32", "bcryptprimitives.dll")
	if _, err := os.Stat(dll); os.IsNotExist(err) {
		build := exec.Command(cc, "-shared", "-O2", "-o", dll, filepath.Join("testdata", "wine", "prng.c"), "-ladvapi32")
		if b, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building bcryptprimitives.dll: %v\n%s", err, b)
		}
	}
	return env
}

// TestWindows serves scripts with luamcp.exe under Wine: a session keeps
// its state, across a hot reload too; exec.run's program and the child it
// started both die when the call times out (the job object: on Unix a
// process group), and when luamcp.exe is killed; exec.run's env may not set Path, in any case; a script
// may not be granted exec and write together; fs takes either separator
// and refuses what leaves its folder, another drive, an alternate data
// stream, a device name and a UNC path; a folder on a network drive is
// polled.
func TestWindows(t *testing.T) {
	wine, cc := wineTools(t)
	netDir := t.TempDir()
	copyFile(t, filepath.Join("testdata", "wine", "files.lua"), filepath.Join(netDir, "files.lua"))
	env := newWinePrefix(t, wine, cc, netDir)
	bin := t.TempDir()
	exe := filepath.Join(bin, "luamcp.exe")
	tree := filepath.Join(bin, "tree.exe")
	goBuildWindows(t, "..", exe)
	goBuildWindows(t, "./testdata/wine/tree", tree)

	// `luamcp new --template exec` writes the Windows starter, which runs.
	starters := t.TempDir()
	wineRun := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(wine, append([]string{exe}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("luamcp.exe %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	wineRun("new", "--dir", windowsPath(starters), "--template", "exec", "w")
	if out := wineRun("call", windowsPath(filepath.Join(starters, "w.lua")), "machine_name"); !regexp.MustCompile(`"text": "[^"\\]+",\s+"type": "text"|"type": "text",\s+"text": "[^"\\]+"`).MatchString(out) || !strings.Contains(out, `"isError": false`) {
		t.Errorf("the Windows exec starter's machine_name answered %s", out)
	}

	// A scripts folder on a network drive is also polled (--watch-poll
	// auto): change notifications there depend on the server.
	netAddr := freeAddr(t)
	onNet := exec.Command(wine, exe, "serve", "--dir", `Y:\`, "--addr", netAddr)
	onNet.Env = env
	netOut := runProxy(t, "luamcp.exe on a network drive", onNet, netAddr)
	for deadline := time.Now().Add(waitLong); !strings.Contains(netOut.String(), `looking at it every second" dir=Y:\ filesystem="network drive`); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("luamcp.exe serving Y: (a network drive) did not say it polls:\n%s", netOut)
		}
	}
	onNet.Process.Kill()

	dir := t.TempDir()
	for _, name := range []string{"win.lua", "files.lua", "both.lua"} {
		copyFile(t, filepath.Join("testdata", "wine", name), filepath.Join(dir, name))
	}
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	beat := filepath.Join(t.TempDir(), "beat.txt")
	addr := freeAddr(t)
	serve := exec.Command(wine, exe, "serve", "--dir", windowsPath(dir), "--addr", addr)
	serve.Env = append(env, "TREE_EXE="+windowsPath(tree), "TREE_BEAT="+windowsPath(beat))
	out := runProxy(t, "luamcp.exe under wine", serve, addr)

	// Granting exec and write together is refused on Windows (the route
	// table is printed once serve listens).
	for deadline := time.Now().Add(waitLong); !strings.Contains(out.String(), "not mounted: both.lua:2: route.allow grants both exec and write: refused on Windows"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("both.lua was not refused within %v", waitLong)
		}
	}

	c := connectGo(t, "http://"+addr+"/mcp/win", nil, latestVersion)
	for i := 1; i <= 3; i++ {
		c.wantText(t, "count", nil, string(rune('0'+i)))
	}

	c.wantText(t, "path", nil, `exec: env.Path is refused: it would make `+windowsPath(tree)+` load code the script chooses`)

	files := connectGo(t, "http://"+addr+"/mcp/files", nil, latestVersion)
	files.wantText(t, "files", nil, `write=true; read=alpha; case=alpha; list=a.txt; `+
		`escape=fs: data\..\..\files.lua escapes its root; `+
		`drive=fs: C:\windows\win.ini is outside the allowed folders (route.allow.read, route.allow.write); `+
		`stream=fs: data\a.txt:hidden escapes its root; device=fs: data\CON escapes its root; `+
		`unc=fs: \\server\share\a.txt is outside the allowed folders (route.allow.read, route.allow.write); `+
		`list file=fs: data/a.txt: not a folder`)

	c.wantText(t, "tree", nil, `exec: `+windowsPath(tree)+` timed out after 5000 ms`)
	// The child wrote its counter every 20 ms until it was killed, before
	// the call returned: the counter no longer moves.
	first, err := os.ReadFile(beat)
	if err != nil || len(first) == 0 {
		t.Fatalf("tree.exe's child never ran (%q, %v)", first, err)
	}
	time.Sleep(300 * time.Millisecond)
	if again, _ := os.ReadFile(beat); string(again) != string(first) {
		t.Errorf("tree.exe's child outlived the call: its counter moved from %s to %s", first, again)
	}

	// A hot reload: the new tool is listed, the session and its state stay.
	src, err := os.ReadFile(filepath.Join(dir, "win.lua"))
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(src), `name = "count", description = "count this session's calls"`,
		`name = "count", description = "count this session's calls, edited"`, 1)
	if edited == string(src) {
		t.Fatal("testdata/wine/win.lua no longer has the count tool's description")
	}
	if err := os.WriteFile(filepath.Join(dir, "win.lua"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(waitLong); ; time.Sleep(50 * time.Millisecond) {
		res, err := c.ListTools(goCtx(t), &sdk.ListToolsParams{})
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(res.Tools, func(tool *sdk.Tool) bool { return strings.HasSuffix(tool.Description, ", edited") }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the edit of win.lua was not served within %v", waitLong)
		}
	}
	c.wantText(t, "count", nil, "4")

	// luamcp.exe killed mid-call: the job's processes die with it (its last
	// handle closes). The child counts from 0 again; once it moves, kill.
	go c.CallTool(context.Background(), &sdk.CallToolParams{Name: "hang"})
	var moved []byte
	for deadline := time.Now().Add(waitLong); ; time.Sleep(50 * time.Millisecond) {
		now, _ := os.ReadFile(beat)
		if moved != nil && len(now) > 0 && string(now) != string(moved) {
			break
		}
		if len(now) > 0 && string(now) != string(first) {
			moved = now
		}
		if time.Now().After(deadline) {
			t.Fatalf("tree.exe's child of the hang call never counted")
		}
	}
	if err := serve.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // Wine closes the dead process's handles
	before, _ := os.ReadFile(beat)
	time.Sleep(300 * time.Millisecond)
	if after, _ := os.ReadFile(beat); string(after) != string(before) {
		t.Errorf("tree.exe's child outlived luamcp.exe: its counter moved from %s to %s", before, after)
	}
}
