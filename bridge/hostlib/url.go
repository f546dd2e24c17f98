package hostlib

import (
	"errors"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// urlModule is `url`: query escaping, and URLs taken apart and put together.
// What each function builds is charged to the memory budget; past it, those
// that return nil, message on a failure return it, the others raise.
var urlModule = module{
	funcs: []function{
		{"encode", func(_ *State, L *lua.LState) int {
			s := L.CheckString(1)
			if err := keep(L, "url.encode", queryEscapedLen(s)); err != nil {
				L.RaiseError("%v", err)
			}
			L.Push(lua.LString(url.QueryEscape(s)))
			return 1
		}},
		{"decode", func(_ *State, L *lua.LState) int {
			s, err := url.QueryUnescape(L.CheckString(1))
			if err != nil {
				return fail(L, "url: %v", err)
			}
			// No longer than its argument: built, then charged.
			if err := keep(L, "url.decode", len(s)); err != nil {
				return fail(L, "%v", err)
			}
			L.Push(lua.LString(s))
			return 1
		}},
		{"parse", urlParse},
		{"build", urlBuild},
		{"query", func(_ *State, L *lua.LState) int {
			L.Push(lua.LString(encodeQuery(L, L.CheckTable(1), "url.query")))
			return 1
		}},
	},
}

// urlParts are the keys of the table url.parse returns and url.build takes.
var urlParts = []string{"scheme", "host", "port", "path", "raw_path", "query", "fragment", "user", "password", "raw_query"}

// url.parse(u) -> {scheme=, host=, port=, path=, raw_path=, query={k=v},
// fragment=, user=, password=, raw_query=} | nil, message. host has no
// brackets and no port; port is a number, or nil when the URL gives none.
// raw_path is the path as written, only when that is not how url.build
// would escape path (an escaped slash, "/a%2Fb", means another resource than
// "/a/b"). A key repeated in the query maps to the list of its values.
// Absent parts are nil.
func urlParse(_ *State, L *lua.LState) int {
	u, err := url.Parse(L.CheckString(1))
	if err != nil {
		return fail(L, "url: %v", urlCause(err))
	}
	t := L.CreateTable(0, 9)
	set := func(k, v string) {
		if v != "" {
			t.RawSetString(k, lua.LString(v))
		}
	}
	// net/url takes "a://::" with host ":" and an empty port; only a
	// bracketed IPv6 address may hold colons, or the parts do not rebuild.
	if strings.Contains(u.Hostname(), ":") && !strings.HasPrefix(u.Host, "[") {
		return fail(L, "url: invalid host %q", u.Host)
	}
	values, _ := url.ParseQuery(u.RawQuery) // keeps what parses
	if err := keep(L, "url.parse", parsedSize(u, values)); err != nil {
		return fail(L, "%v", err)
	}
	set("scheme", u.Scheme)
	set("host", u.Hostname())
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n > 65535 {
			return fail(L, "url: invalid port %q", p)
		}
		t.RawSetString("port", lua.LNumber(n))
	}
	path := u.Path
	if u.Opaque != "" {
		path = u.Opaque
	}
	set("path", path)
	set("raw_path", u.RawPath)
	set("fragment", u.Fragment)
	set("raw_query", u.RawQuery)
	if u.User != nil {
		set("user", u.User.Username())
		if pw, ok := u.User.Password(); ok {
			t.RawSetString("password", lua.LString(pw))
		}
	}
	q := L.CreateTable(0, 0)
	for k, vs := range values {
		if len(vs) == 1 {
			q.RawSetString(k, lua.LString(vs[0]))
			continue
		}
		list := L.CreateTable(len(vs), 0)
		for _, v := range vs {
			list.Append(lua.LString(v))
		}
		q.RawSetString(k, list)
	}
	t.RawSetString("query", q)
	L.Push(t)
	return 1
}

// parsedSize is what url.parse's table holds besides the tables themselves
// (CreateTable counts those): its strings, which net/url built (unescaped),
// and the keys and lists of its query.
func parsedSize(u *url.URL, values url.Values) int {
	n := len(u.Scheme) + len(u.Host) + len(u.Path) + len(u.Opaque) + len(u.Fragment) + len(u.RawQuery)
	if u.User != nil {
		pw, _ := u.User.Password()
		n += len(u.User.Username()) + len(pw)
	}
	for k, vs := range values {
		n += sizeKey + len(k)
		if len(vs) > 1 {
			n += sizeList
		}
		for _, v := range vs {
			n += sizeItem + len(v)
		}
	}
	return n
}

// urlCause shortens url.Parse's errors, which repeat the whole input, and
// some of which name Go's package ("net/url: invalid control character").
func urlCause(err error) error {
	if ue, ok := err.(*url.Error); ok {
		err = ue.Err
	}
	if msg, ok := strings.CutPrefix(err.Error(), "net/url: "); ok {
		return errors.New(msg)
	}
	return err
}

// url.build(parts) -> text: the inverse of url.parse. query may be a table
// (encoded as url.query does) or a string (used as it is); raw_query is used
// when query is absent.
func urlBuild(_ *State, L *lua.LState) int {
	parts := L.CheckTable(1)
	const fname = "url.build"
	// A misspelt part (hostname =) would be left out of the URL unseen.
	onlyOptions(L, parts, fname, urlParts...)
	u := url.URL{
		Scheme:   stringField(L, parts, fname, "scheme", ""),
		Path:     stringField(L, parts, fname, "path", ""),
		Fragment: stringField(L, parts, fname, "fragment", ""),
		RawQuery: stringField(L, parts, fname, "raw_query", ""),
		// Used only while it is an escaping of Path (net/url checks): a
		// changed path is escaped afresh.
		RawPath: stringField(L, parts, fname, "raw_path", ""),
	}
	// Written as it is, a scheme that is not one would change what the URL
	// says: "javascript:alert(1)//" or "http://evil.example/#".
	if !validScheme(u.Scheme) {
		L.RaiseError("%s: scheme must be a letter followed by letters, digits, +, - or . (RFC 3986), got %q", fname, u.Scheme)
	}
	host := stringField(L, parts, fname, "host", "")
	if field(parts, "port") != lua.LNil { // port 0 is a port too
		port := intField(L, parts, fname, "port", 0, 0, 65535)
		u.Host = net.JoinHostPort(host, strconv.FormatInt(port, 10))
	} else if strings.Contains(host, ":") {
		u.Host = "[" + host + "]"
	} else {
		u.Host = host
	}
	// url.parse gives a password without a user ("http://:pw@h/") too.
	user := stringField(L, parts, fname, "user", "")
	if pw := field(parts, "password"); pw != lua.LNil {
		u.User = url.UserPassword(user, stringField(L, parts, fname, "password", ""))
	} else if user != "" {
		u.User = url.User(user)
	}
	switch {
	case u.Host != "" && u.Path != "" && !strings.HasPrefix(u.Path, "/"):
		u.Path = "/" + u.Path
	case u.Scheme != "" && u.Host == "" && u.User == nil && u.Path != "" && !strings.HasPrefix(u.Path, "/"):
		// An opaque URL (mailto:ann@x, urn:isbn:1): url.parse gives its
		// opaque part, as written, as path. Written as a path it would
		// follow "//" and become an authority: mailto://ann@x names the
		// host x.
		u.Opaque, u.Path = u.Path, ""
	}
	switch q := field(parts, "query").(type) {
	case *lua.LNilType:
	case lua.LString:
		u.RawQuery = strings.TrimPrefix(string(q), "?")
	case *lua.LTable:
		raw := u.RawQuery
		u.RawQuery = encodeQuery(L, q, fname+": query")
		// url.parse gives the query twice: as a table, and as written
		// (raw_query). While the table says what raw_query says, the query
		// is written as it was: encoding the table sorts its keys, writes
		// "x" as "x=" and "%20" as "+", and drops the pairs url.parse could
		// not take apart ("a=1;b=2").
		if raw != "" && sameQuery(u.RawQuery, raw) {
			u.RawQuery = raw
		}
	default:
		L.RaiseError("%s: query must be a table or a string, got %s", fname, describe(q))
	}
	// Escaping may make the text three times its parts.
	s := u.String()
	if err := keep(L, fname, len(s)); err != nil {
		L.RaiseError("%v", err)
	}
	L.Push(lua.LString(s))
	return 1
}

// validScheme reports whether s is empty or a URI scheme: ALPHA *( ALPHA /
// DIGIT / "+" / "-" / "." ) (RFC 3986, 3.1).
func validScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// sameQuery reports whether two query strings hold the same parameters, as
// url.parse reads them.
func sameQuery(a, b string) bool {
	va, _ := url.ParseQuery(a)
	vb, _ := url.ParseQuery(b)
	return maps.EqualFunc(va, vb, slices.Equal)
}

// encodeQuery encodes a table of parameters as a query string, keys sorted.
// A value is a string, number or boolean, or a list of them (the key is
// repeated); anything else raises, naming what. The result is charged to L's
// memory budget before it is built, and raises past it: a list may hold one
// large string many times, and the query would hold each copy.
func encodeQuery(L *lua.LState, t *lua.LTable, what string) string {
	type param struct{ k, v string }
	var params []param
	var size int64 // of the result, escaped
	add := func(k, v string) {
		if size > 0 {
			size++ // '&'
		}
		size += int64(queryEscapedLen(k) + 1 + queryEscapedLen(v))
		if pastLimit(L, size) {
			L.RaiseError("%v", budgetError(L, what, size))
		}
		params = append(params, param{k, v})
		if len(params)%checkEvery == 0 {
			checkContext(L)
		}
	}
	t.ForEach(func(k, v lua.LValue) {
		ks, ok := k.(lua.LString)
		if !ok {
			L.RaiseError("%s: a key is not a string: %s", what, describe(k))
		}
		if list, ok := v.(*lua.LTable); ok {
			// Only a list: the keys of any other table would vanish.
			n := list.Len()
			list.ForEach(func(i, _ lua.LValue) {
				if f, ok := i.(lua.LNumber); !ok || f < 1 || f > lua.LNumber(n) || f != lua.LNumber(int(f)) {
					L.RaiseError("%s.%s must be a string, number or boolean, or a list of them, got a table with the key %s",
						what, string(ks), describe(i))
				}
			})
			for i := 1; i <= n; i++ {
				add(string(ks), scalar(L, list.RawGetInt(i), what+"."+string(ks)))
			}
			return
		}
		add(string(ks), scalar(L, v, what+"."+string(ks)))
	})
	if err := keep(L, what, int(size)); err != nil {
		L.RaiseError("%v", err)
	}
	slices.SortStableFunc(params, func(a, b param) int { return strings.Compare(a.k, b.k) })
	var b strings.Builder
	b.Grow(int(size))
	for i, p := range params {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(p.k))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(p.v))
	}
	return b.String()
}

// queryEscapedLen is len(url.QueryEscape(s)), without building it.
func queryEscapedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '-', c == '_', c == '.', c == '~', c == ' ':
		default:
			n += 2 // %XX
		}
	}
	return n
}
