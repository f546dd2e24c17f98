package hostlib

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Grants is what one script may reach: its route.allow table, parsed and
// validated at load time (host-api.md "Declaring permissions"). The zero
// value, and a nil *Grants, grant nothing. A Grants is never modified after
// ParseAllow returns it, so every state of a script shares it.
type Grants struct {
	HTTP  []HostPattern // hosts the http module may connect to
	Read  []Root        // read-only folders
	Write []Root        // read-write folders (write implies read)
	Env   []string      // environment variables env.get may read
	Exec  []Program     // programs exec.run may start
}

// allowKeys are the keys of route.allow, in the order they are parsed: env
// first, because the other lists may name environment variables ($NAME) that
// env must grant.
var allowKeys = []string{"env", "http", "read", "write", "exec"}

// Getenv reads the process environment; tests replace it.
type Getenv func(name string) string

// ParseAllow reads route.allow (nil for none). Relative folders are taken
// from dir, the scripts folder. Every error names the entry at fault, e.g.
// `route.allow.http[2] "*.": ...`.
//
// An entry written "$NAME" takes the value of environment variable NAME,
// which env must also grant; unset or empty, it grants nothing. An http
// entry so given may be a URL, of which the host and port are used.
func ParseAllow(v lua.LValue, dir string, getenv Getenv) (*Grants, error) {
	g := &Grants{}
	if v == lua.LNil {
		return g, nil
	}
	t, ok := v.(*lua.LTable)
	if !ok {
		return nil, fmt.Errorf("route.allow must be a table, got a %s", v.Type())
	}
	var err error
	t.ForEach(func(k, _ lua.LValue) {
		if s, ok := k.(lua.LString); err == nil && (!ok || !slices.Contains(allowKeys, string(s))) {
			err = fmt.Errorf("route.allow has an unknown key %s (want http, read, write, env or exec)", describe(k))
		}
	})
	if err != nil {
		return nil, err
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	p := allowParser{g: g, dir: dir, getenv: getenv}
	for _, key := range allowKeys {
		if err := p.list(key, t.RawGetString(key)); err != nil {
			return nil, err
		}
	}
	if err := checkGrantsForPlatform(g); err != nil {
		return nil, err
	}
	return g, nil
}

type allowParser struct {
	g      *Grants
	dir    string
	getenv Getenv
}

// list parses route.allow[key], a list of strings.
func (p *allowParser) list(key string, v lua.LValue) error {
	if v == lua.LNil {
		return nil
	}
	t, ok := v.(*lua.LTable)
	n := 0
	if ok {
		t.ForEach(func(lua.LValue, lua.LValue) { n++ })
	}
	if !ok || n != t.Len() {
		return fmt.Errorf("route.allow.%s must be a list of strings, got %s", key, describe(v))
	}
	for i := 1; i <= n; i++ {
		where := fmt.Sprintf("route.allow.%s[%d]", key, i)
		s, ok := t.RawGetInt(i).(lua.LString)
		if !ok {
			return fmt.Errorf("%s must be a string, got %s", where, describe(t.RawGetInt(i)))
		}
		entry, fromEnv, err := p.expand(string(s))
		if err != nil {
			return fmt.Errorf("%s %q: %v", where, string(s), err)
		}
		if entry == "" {
			if fromEnv {
				continue // unset or empty: grants nothing
			}
			// Not skipped: "" in read or write would be the scripts folder.
			return fmt.Errorf("%s is empty", where)
		}
		if err := p.add(key, entry, fromEnv); err != nil {
			return fmt.Errorf("%s %q: %v", where, string(s), err)
		}
	}
	return nil
}

// expand resolves an entry written $NAME; fromEnv reports that it was.
func (p *allowParser) expand(s string) (entry string, fromEnv bool, err error) {
	name, ok := strings.CutPrefix(s, "$")
	if !ok {
		return s, false, nil
	}
	if !validEnvName(name) {
		return "", false, fmt.Errorf("$%s is not an environment variable name", name)
	}
	if !slices.Contains(p.g.Env, name) {
		return "", false, fmt.Errorf("%s must also be listed in route.allow.env", name)
	}
	return strings.TrimSpace(p.getenv(name)), true, nil
}

func (p *allowParser) add(key, entry string, fromEnv bool) error {
	g := p.g
	switch key {
	case "env":
		if !validEnvName(entry) {
			return fmt.Errorf("not an environment variable name (letters, digits and _)")
		}
		if !slices.Contains(g.Env, entry) {
			g.Env = append(g.Env, entry)
		}
	case "http":
		if fromEnv && strings.Contains(entry, "://") {
			u, err := url.Parse(entry)
			if err != nil || u.Host == "" {
				return fmt.Errorf("its value %q is not a URL with a host", entry)
			}
			entry = u.Host
		}
		hp, err := ParseHostPattern(entry)
		if err != nil {
			return err
		}
		g.HTTP = append(g.HTTP, hp)
	case "read", "write":
		root, err := newRoot(entry, p.dir)
		if err != nil {
			return err
		}
		if key == "read" {
			g.Read = append(g.Read, root)
		} else {
			g.Write = append(g.Write, root)
		}
	case "exec":
		prog, err := newProgram(entry)
		if err != nil {
			return err
		}
		g.Exec = append(g.Exec, prog)
	}
	return nil
}

// Root is a folder that fs (and exec's cwd) may use.
type Root struct {
	Name string // as written in route.allow
	Path string // absolute and clean
}

func newRoot(name, dir string) (Root, error) {
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	path, err := filepath.Abs(path)
	if err != nil {
		return Root{}, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return Root{}, fmt.Errorf("no such folder")
	}
	if !fi.IsDir() {
		return Root{}, fmt.Errorf("not a folder")
	}
	return Root{Name: name, Path: path}, nil
}

// Program is a program exec.run may start.
type Program struct {
	Name string // as written in route.allow: a name on PATH, or an absolute path
	Path string // resolved when the script loaded
}

func newProgram(name string) (Program, error) {
	if strings.ContainsRune(name, '/') && !filepath.IsAbs(name) {
		return Program{}, fmt.Errorf("write a program name (looked up on PATH) or an absolute path")
	}
	path, err := exec.LookPath(name)
	if err != nil {
		if filepath.IsAbs(name) {
			return Program{}, fmt.Errorf("not an executable file")
		}
		return Program{}, fmt.Errorf("program not found on PATH")
	}
	if path, err = filepath.Abs(path); err != nil {
		return Program{}, err
	}
	return Program{Name: name, Path: path}, nil
}

// validEnvName accepts names of letters, digits and _, not starting with a
// digit.
func validEnvName(s string) bool {
	if s == "" || len(s) > 256 || ('0' <= s[0] && s[0] <= '9') {
		return false
	}
	for _, c := range []byte(s) {
		if c != '_' && !('a' <= c && c <= 'z') && !('A' <= c && c <= 'Z') && !('0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// Empty reports whether g grants nothing.
func (g *Grants) Empty() bool {
	return g == nil || len(g.HTTP)+len(g.Read)+len(g.Write)+len(g.Env)+len(g.Exec) == 0
}

// grantList is one key of route.allow as text.
type grantList struct {
	key     string
	entries []string
}

// lists returns the grants as text, by key, in the order they are shown.
func (g *Grants) lists() [5]grantList {
	out := [5]grantList{{key: "http"}, {key: "read"}, {key: "write"}, {key: "env"}, {key: "exec"}}
	if g == nil {
		return out
	}
	for _, p := range g.HTTP {
		out[0].entries = append(out[0].entries, p.String())
	}
	for _, r := range g.Read {
		out[1].entries = append(out[1].entries, r.Name)
	}
	for _, r := range g.Write {
		out[2].entries = append(out[2].entries, r.Name)
	}
	out[3].entries = g.Env
	for _, p := range g.Exec {
		out[4].entries = append(out[4].entries, p.Name)
	}
	return out
}

// String is the one-line summary `serve` prints on a route's line, e.g.
// "http: api.weather.gov, *.github.com  read: data"; "" when g grants nothing.
func (g *Grants) String() string {
	var parts []string
	for _, l := range g.lists() {
		if len(l.entries) > 0 {
			parts = append(parts, l.key+": "+strings.Join(l.entries, ", "))
		}
	}
	return strings.Join(parts, "  ")
}

// MarshalJSON gives the grants as `luamcp check --json` reports them: an
// object of lists, {"http": [...], "read": [...], ...}, each always present.
func (g *Grants) MarshalJSON() ([]byte, error) {
	m := make(map[string][]string, 5)
	for _, l := range g.lists() {
		m[l.key] = append([]string{}, l.entries...)
	}
	return json.Marshal(m)
}

// --- host patterns -----------------------------------------------------------

// HostPattern is one entry of route.allow.http: "host", "host:port",
// "*.example.com" (sub-domains only), "*" (any public host), or an IP
// literal ("10.0.0.5", "[::1]:8080").
type HostPattern struct {
	kind patternKind
	host string     // lower-case name; for subdomains, the parent domain
	addr netip.Addr // for literalIP (unmapped)
	port string     // "" matches any port
}

// patternKind tells how a HostPattern matches, and whether it names its
// host literally: only literal patterns reach non-public addresses.
type patternKind uint8

const (
	exactHost  patternKind = iota + 1 // "api.example.com", "localhost": literal
	literalIP                         // "127.0.0.1", "[::1]": literal
	subdomains                        // "*.example.com": a wildcard
	anyHost                           // "*": a wildcard
)

// maxPatternLen bounds a host pattern (a DNS name is at most 253 bytes).
const maxPatternLen = 300

// ParseHostPattern parses one entry of route.allow.http.
func ParseHostPattern(s string) (HostPattern, error) {
	var p HostPattern
	if s == "" {
		return p, fmt.Errorf("empty host pattern")
	}
	if len(s) > maxPatternLen {
		return p, fmt.Errorf("host pattern longer than %d bytes", maxPatternLen)
	}
	if strings.Contains(s, "://") || strings.ContainsAny(s, "/?#@ ") {
		return p, fmt.Errorf("write a host or host:port (like api.example.com or 127.0.0.1:9000), not a URL")
	}
	host, port, err := splitPattern(s)
	if err != nil {
		return p, err
	}
	p.port = port
	switch {
	case host == "*":
		p.kind = anyHost
	case strings.HasPrefix(host, "*."):
		p.kind = subdomains
		p.host = strings.ToLower(host[2:])
		if err := checkHostname(p.host); err != nil {
			return p, err
		}
	case strings.Contains(host, "*"):
		return p, fmt.Errorf("a wildcard may only be \"*\" or lead a domain, as in *.example.com")
	default:
		host = strings.TrimSuffix(host, ".")
		if a, err := netip.ParseAddr(host); err == nil {
			if a.Zone() != "" {
				return p, fmt.Errorf("an IPv6 zone is not allowed")
			}
			p.kind, p.addr = literalIP, a.Unmap()
			return p, nil
		}
		p.kind = exactHost
		p.host = strings.ToLower(host)
		if err := checkHostname(p.host); err != nil {
			return p, err
		}
	}
	return p, nil
}

// splitPattern splits "host", "host:port", "[v6]", "[v6]:port" or a bare
// IPv6 address.
func splitPattern(s string) (host, port string, err error) {
	if rest, ok := strings.CutPrefix(s, "["); ok {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return "", "", fmt.Errorf("missing ] after an IPv6 address")
		}
		host, rest = rest[:end], rest[end+1:]
		if a, err := netip.ParseAddr(host); err != nil || !a.Is6() {
			return "", "", fmt.Errorf("%q between [ ] is not an IPv6 address", host)
		}
		if rest == "" {
			return host, "", nil
		}
		if port, ok = strings.CutPrefix(rest, ":"); !ok {
			return "", "", fmt.Errorf("unexpected %q after ]", rest)
		}
		return host, port, checkPort(port)
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, "", nil
	case 1:
		host, port, _ = strings.Cut(s, ":")
		if host == "" {
			return "", "", fmt.Errorf("missing host before :%s", port)
		}
		return host, port, checkPort(port)
	}
	if _, err := netip.ParseAddr(s); err != nil {
		return "", "", fmt.Errorf("not a host: write an IPv6 address with a port as [addr]:port")
	}
	return s, "", nil
}

func checkPort(port string) error {
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || port[0] == '0' || port[0] == '+' {
		return fmt.Errorf("port %q must be a number from 1 to 65535", port)
	}
	return nil
}

// checkHostname accepts DNS names: dot-separated labels of letters, digits,
// - and _, each 1 to 63 bytes, 253 in all. Internationalised names are
// written in their ASCII (punycode) form.
func checkHostname(h string) error {
	if h == "" || len(h) > 253 {
		return fmt.Errorf("a host name is 1 to 253 characters")
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("%q: each dot-separated part of a host name is 1 to 63 characters", h)
		}
		for _, c := range []byte(label) {
			if c != '-' && c != '_' && !('a' <= c && c <= 'z') && !('A' <= c && c <= 'Z') && !('0' <= c && c <= '9') {
				return fmt.Errorf("%q: a host name has letters, digits, - and _ (write international names in punycode)", h)
			}
		}
	}
	return nil
}

// String returns the pattern in its canonical form; ParseHostPattern reads it
// back to an equal pattern.
func (p HostPattern) String() string {
	var host string
	switch p.kind {
	case anyHost:
		host = "*"
	case subdomains:
		host = "*." + p.host
	case literalIP:
		host = p.addr.String()
		if p.addr.Is6() && p.port != "" {
			host = "[" + host + "]"
		}
	default:
		host = p.host
	}
	if p.port != "" {
		return host + ":" + p.port
	}
	return host
}

// Literal reports whether the pattern names its host exactly: only such a
// pattern reaches loopback, private, link-local or unspecified addresses.
func (p HostPattern) Literal() bool { return p.kind == exactHost || p.kind == literalIP }

// Match reports whether the pattern admits host (lower-case, without
// brackets) on port (never empty: the scheme's default when the URL has
// none).
func (p HostPattern) Match(host, port string) bool {
	if p.port != "" && p.port != port {
		return false
	}
	switch p.kind {
	case anyHost:
		return true
	case subdomains:
		_, err := netip.ParseAddr(host)
		return err != nil && strings.HasSuffix(strings.TrimSuffix(host, "."), "."+p.host)
	case literalIP:
		a, err := netip.ParseAddr(host)
		return err == nil && a.Unmap() == p.addr
	case exactHost:
		return strings.TrimSuffix(host, ".") == p.host
	}
	return false
}

// matchHost returns the pattern of g.HTTP that admits host:port, preferring a
// literal one, and whether there is one.
func (g *Grants) matchHost(host, port string) (HostPattern, bool) {
	var found HostPattern
	ok := false
	for _, p := range g.HTTP {
		if p.Match(host, port) {
			if p.Literal() {
				return p, true
			}
			if !ok {
				found, ok = p, true
			}
		}
	}
	return found, ok
}

// public reports whether a is an ordinary Internet address: not loopback,
// private (RFC 1918, fc00::/7), link-local (169.254.0.0/16, where cloud
// metadata services answer, fe80::/10), unspecified, multicast, or one of the
// other special-purpose ranges (carrier-grade NAT, benchmarking, NAT64, ...).
func public(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() ||
		a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range specialRanges {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// specialRanges are the special-purpose blocks that netip has no predicate
// for and that no public service answers on.
var specialRanges = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and broadcast
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64: may embed any IPv4 address
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("2002::/16"),       // 6to4: may embed any IPv4 address
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("::ffff:0:0:0/96"), // IPv4-translated
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated): ::127.0.0.1 may reach loopback
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated): a private range where still routed
}

// --- small helpers ------------------------------------------------------------

// describe names a Lua value in an error message.
func describe(v lua.LValue) string {
	switch v := v.(type) {
	case lua.LNumber:
		return v.String()
	case lua.LString:
		return strconv.Quote(string(v))
	}
	return "a " + v.Type().String()
}
