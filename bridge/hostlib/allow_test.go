package hostlib

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

func TestParseHostPattern(t *testing.T) {
	tests := []struct {
		in      string
		want    string // canonical form; "" when the pattern is refused
		literal bool
		err     string // part of the error
	}{
		{in: "api.weather.gov", want: "api.weather.gov", literal: true},
		{in: "API.Weather.GOV.", want: "api.weather.gov", literal: true},
		{in: "127.0.0.1:9000", want: "127.0.0.1:9000", literal: true},
		{in: "localhost:9000", want: "localhost:9000", literal: true},
		{in: "10.0.0.5", want: "10.0.0.5", literal: true},
		{in: "[::1]:8080", want: "[::1]:8080", literal: true},
		{in: "[::1]", want: "::1", literal: true},
		{in: "::1", want: "::1", literal: true},
		{in: "*.github.com", want: "*.github.com"},
		{in: "*", want: "*"},
		{in: "*:443", want: "*:443"},
		{in: "", err: "empty"},
		{in: "https://api.example.com", err: "not a URL"},
		{in: "api.example.com/v1", err: "not a URL"},
		{in: "user@host", err: "not a URL"},
		{in: "api.*.com", err: "wildcard"},
		{in: "*example.com", err: "wildcard"},
		{in: "*.", err: "host name"},
		{in: "host:0", err: "port"},
		{in: "host:65536", err: "port"},
		{in: "host:08", err: "port"},
		{in: "host:", err: "port"},
		{in: ":80", err: "missing host"},
		{in: "[::1", err: "missing ]"},
		{in: "[1.2.3.4]:80", err: "not an IPv6"},
		{in: "[::1]x", err: "unexpected"},
		{in: "a:b:c", err: "not a host"},
		{in: "exa_mple.com", want: "exa_mple.com", literal: true},
		{in: "bad..name", err: "1 to 63"},
		{in: "ünï.com", err: "punycode"},
		{in: "fe80::1%eth0", err: "zone"},
		{in: strings.Repeat("a", 301), err: "longer"},
	}
	for _, tt := range tests {
		p, err := ParseHostPattern(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseHostPattern(%q) = %v, %v; want an error with %q", tt.in, p, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseHostPattern(%q): %v", tt.in, err)
			continue
		}
		if p.String() != tt.want || p.Literal() != tt.literal {
			t.Errorf("ParseHostPattern(%q) = %q literal=%v, want %q literal=%v", tt.in, p, p.Literal(), tt.want, tt.literal)
		}
	}
}

func TestHostPatternMatch(t *testing.T) {
	tests := []struct {
		pattern, host, port string
		want                bool
	}{
		{"api.example.com", "api.example.com", "443", true},
		{"api.example.com", "api.example.com.", "80", true},
		{"api.example.com", "example.com", "443", false},
		{"example.com", "evilexample.com", "443", false}, // an exact name, not a suffix
		{"example.com", "api.example.com", "443", false},
		{"example.com", "example.com.evil.net", "443", false},
		{"api.example.com:8080", "api.example.com", "443", false},
		{"api.example.com:8080", "api.example.com", "8080", true},
		{"*.github.com", "api.github.com", "443", true},
		{"*.github.com", "a.b.github.com", "443", true},
		{"*.github.com", "github.com", "443", false},
		{"*.github.com", "api.github.com.", "443", true}, // a fully qualified name, as an exact pattern takes it
		{"*.github.com", "github.com.", "443", false},
		{"*.github.com", "evilgithub.com", "443", false},
		{"*.1.1", "1.1.1.1", "443", false}, // a wildcard never matches an IP literal by suffix
		{"*", "anything.example", "80", true},
		{"*", "127.0.0.1", "80", true}, // admitted by name; refused by address (dial)
		{"*:443", "example.com", "80", false},
		{"127.0.0.1:9000", "127.0.0.1", "9000", true},
		{"127.0.0.1:9000", "127.0.0.1", "9001", false},
		{"127.0.0.1", "::ffff:127.0.0.1", "1", true},
		{"[::1]:8080", "::1", "8080", true},
		{"localhost", "127.0.0.1", "80", false},
	}
	for _, tt := range tests {
		p, err := ParseHostPattern(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Match(tt.host, tt.port); got != tt.want {
			t.Errorf("%q.Match(%q, %q) = %v, want %v", tt.pattern, tt.host, tt.port, got, tt.want)
		}
	}
}

func TestPublic(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "2606:4700::1111": true, "93.184.216.34": true,
		"127.0.0.1": false, "::1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false,
		"169.254.169.254": false, "fe80::1": false, "fd00::1": false, "0.0.0.0": false, "::": false,
		"100.64.0.1": false, "::ffff:127.0.0.1": false, "::ffff:10.0.0.1": false, "64:ff9b::7f00:1": false,
		"224.0.0.1": false, "255.255.255.255": false, "198.18.0.1": false, "2002:7f00:1::": false,
		"::127.0.0.1": false, "::10.0.0.1": false, "fec0::1": false,
	} {
		if got := public(netip.MustParseAddr(addr)); got != want {
			t.Errorf("public(%s) = %v, want %v", addr, got, want)
		}
	}
}

// luaValue evaluates a Lua expression into a value.
func luaValue(t *testing.T, L *lua.LState, expr string) lua.LValue {
	t.Helper()
	if err := L.DoString("return " + expr); err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	v := L.Get(-1)
	L.Pop(1)
	return v
}

func TestParseAllow(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"data", "out"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "file.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"API": "http://127.0.0.1:9000/v1", "HOSTPORT": "localhost:81", "NOTES": "out", "EMPTY": ""}
	getenv := func(name string) string { return env[name] }
	L := lua.NewState()
	defer L.Close()

	tests := []struct {
		allow string
		want  string // the summary; "" for no grants
		err   string // part of the error
	}{
		{allow: "nil", want: ""},
		{allow: "{}", want: ""},
		{allow: `{ http = { "api.weather.gov", "*.github.com", "127.0.0.1:9000" }, read = { "data" }, write = { "out" }, env = { "KEY" }, exec = { "sh" } }`,
			want: "http: api.weather.gov, *.github.com, 127.0.0.1:9000  read: data  write: out  env: KEY  exec: sh"},
		{allow: `{ env = { "API", "HOSTPORT", "EMPTY", "UNSET" }, http = { "$API", "$HOSTPORT", "$EMPTY", "$UNSET" } }`,
			want: "http: 127.0.0.1:9000, localhost:81  env: API, HOSTPORT, EMPTY, UNSET"},
		{allow: `{ env = { "NOTES" }, write = { "$NOTES" } }`, want: "write: out  env: NOTES"},
		{allow: `{ read = { "` + filepath.Join(dir, "data") + `" } }`, want: "read: " + filepath.Join(dir, "data")},
		{allow: `{ http = { "$API" } }`, err: `route.allow.http[1] "$API": API must also be listed in route.allow.env`},
		{allow: `{ env = { "X" }, http = { "$X-Y" } }`, err: "not an environment variable name"},
		{allow: `{ env = { "HOSTPORT" }, read = { "$HOSTPORT" } }`, err: "no such folder"},
		{allow: `{ htp = {} }`, err: `route.allow has an unknown key "htp"`},
		{allow: `{ [1] = "x" }`, err: "unknown key 1"},
		{allow: `"api.example.com"`, err: "route.allow must be a table"},
		{allow: `{ http = "api.example.com" }`, err: "route.allow.http must be a list of strings"},
		{allow: `{ http = { host = "x" } }`, err: "route.allow.http must be a list of strings"},
		{allow: `{ http = { "ok.com", 42 } }`, err: "route.allow.http[2] must be a string, got 42"},
		{allow: `{ http = { "https://x.com" } }`, err: `route.allow.http[1] "https://x.com": write a host`},
		{allow: `{ read = { "missing" } }`, err: `route.allow.read[1] "missing": no such folder`},
		{allow: `{ write = { "file.txt" } }`, err: "not a folder"},
		{allow: `{ env = { "A=B" } }`, err: "not an environment variable name"},
		{allow: `{ env = { "1A" } }`, err: "not an environment variable name"},
		{allow: `{ exec = { "no-such-program-luamcp" } }`, err: `route.allow.exec[1] "no-such-program-luamcp": program not found on PATH`},
		{allow: `{ exec = { "bin/tool" } }`, err: "program name"},
		{allow: `{ exec = { "/nonexistent/tool" } }`, err: "not an executable file"},
		{allow: `{ http = { "" } }`, err: "route.allow.http[1] is empty"},
		{allow: `{ read = { "data", "" } }`, err: "route.allow.read[2] is empty"},
		{allow: `{ write = { "" } }`, err: "route.allow.write[1] is empty"},
		{allow: `{ env = { "" } }`, err: "route.allow.env[1] is empty"},
		{allow: `{ exec = { "" } }`, err: "route.allow.exec[1] is empty"},
	}
	for _, tt := range tests {
		g, err := ParseAllow(luaValue(t, L, tt.allow), dir, getenv)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("allow = %s: got %v, want an error with %q", tt.allow, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("allow = %s: %v", tt.allow, err)
			continue
		}
		if got := g.String(); got != tt.want {
			t.Errorf("allow = %s: summary %q, want %q", tt.allow, got, tt.want)
		}
		if g.Empty() != (tt.want == "") {
			t.Errorf("allow = %s: Empty() = %v", tt.allow, g.Empty())
		}
	}

	g, err := ParseAllow(luaValue(t, L, `{ read = { "data" }, exec = { "sh" } }`), dir, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if g.Read[0].Path != filepath.Join(dir, "data") || !filepath.IsAbs(g.Exec[0].Path) {
		t.Errorf("paths not resolved: %+v %+v", g.Read, g.Exec)
	}
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"env":[],"exec":["sh"],"http":[],"read":["data"],"write":[]}`; string(b) != want {
		t.Errorf("JSON %s, want %s", b, want)
	}
	var none *Grants
	if none.String() != "" || !none.Empty() {
		t.Error("nil grants are not empty")
	}
}

// FuzzHostPattern: the parser never panics, a pattern it accepts prints in a
// form it reads back to the same pattern, and matching never panics.
func FuzzHostPattern(f *testing.F) {
	for _, s := range []string{"api.weather.gov", "*.github.com", "127.0.0.1:9000", "[::1]:80", "*", "*:443",
		"::ffff:10.0.0.1", "localhost:9000", "a:b", "[", "*.", "host:65535", "ÿ.com", "1.2.3.4.5"} {
		f.Add(s, "example.com", "443")
	}
	f.Fuzz(func(t *testing.T, s, host, port string) {
		p, err := ParseHostPattern(s)
		if err != nil {
			return
		}
		q, err := ParseHostPattern(p.String())
		if err != nil {
			t.Fatalf("%q parses, but its form %q does not: %v", s, p.String(), err)
		}
		if q != p {
			t.Fatalf("%q: %+v, read back from %q as %+v", s, p, p.String(), q)
		}
		if p.Match(host, port) && p.port != "" && port != p.port {
			t.Fatalf("%q matched port %q", s, port)
		}
		if p.Literal() && p.kind == exactHost && p.Match(host, port) && strings.TrimSuffix(strings.ToLower(host), ".") != p.host {
			t.Fatalf("%q matched another host %q", s, host)
		}
	})
}

// TestMatchHostPrefersLiteral pins that of several patterns admitting a host,
// matchHost returns a literal one whichever comes first: only a literal
// pattern lets a request reach a loopback or private address, so with
// {"*", "localhost"} a request to localhost must be matched by "localhost"
// (allowed), not by "*" (refused at dial time).
func TestMatchHostPrefersLiteral(t *testing.T) {
	tests := []struct {
		name     string
		patterns []string
		host     string
		want     string // the pattern returned; "" for none
	}{
		{"wildcard first", []string{"*", "localhost"}, "localhost", "localhost"},
		{"literal first", []string{"localhost", "*"}, "localhost", "localhost"},
		{"subdomains first", []string{"*.example.com", "api.example.com"}, "api.example.com", "api.example.com"},
		{"only a wildcard", []string{"*.example.com", "*"}, "api.example.com", "*.example.com"},
		{"none", []string{"api.example.com"}, "example.com", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &Grants{}
			for _, s := range tt.patterns {
				p, err := ParseHostPattern(s)
				if err != nil {
					t.Fatal(err)
				}
				g.HTTP = append(g.HTTP, p)
			}
			p, ok := g.matchHost(tt.host, "443")
			got := ""
			if ok {
				got = p.String()
			}
			if got != tt.want {
				t.Fatalf("matchHost(%q) = %q, want %q", tt.host, got, tt.want)
			}
		})
	}
}

// TestPatternReaches pins the dial-time address check (HostPattern.reaches)
// for each kind of pattern. TestHTTPAddressCheck reaches it for a wildcard
// only through a name under *.localhost, which most resolvers do not answer
// (the case accepts "no such host"), so a wildcard that let a name resolve
// to loopback or a cloud metadata address (DNS rebinding) went unseen.
func TestPatternReaches(t *testing.T) {
	tests := []struct {
		pattern, addr string
		want          bool
	}{
		{"*", "93.184.216.34", true},
		{"*", "127.0.0.1", false},
		{"*", "169.254.169.254", false},
		{"*.example.com", "93.184.216.34", true},
		{"*.example.com", "127.0.0.1", false},
		{"*.example.com", "10.0.0.5", false},
		{"*.example.com", "::1", false},
		{"*.example.com:8080", "192.168.1.1", false},
		{"api.example.com", "10.0.0.5", true}, // an exact name reaches what it resolves to
		{"localhost", "127.0.0.1", true},
		{"10.0.0.5", "10.0.0.5", true},
		{"10.0.0.5", "10.0.0.6", false},
		{"[::1]:8080", "::1", true},
		{"[::1]:8080", "127.0.0.1", false},
	}
	for _, tt := range tests {
		p, err := ParseHostPattern(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.reaches(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("%q.reaches(%s) = %v, want %v", tt.pattern, tt.addr, got, tt.want)
		}
	}
}
