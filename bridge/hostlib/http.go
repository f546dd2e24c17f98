package hostlib

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Bounds of the `http` module.
const (
	defaultHTTPTimeout = 30 * time.Second
	defaultHTTPMax     = 10 << 20 // response body bytes
	maxHTTPMax         = 1 << 30  // the largest max_bytes http.request accepts
	maxHeaderBytes     = 1 << 20  // response header bytes
	maxRedirects       = 10
	maxInFlight        = 16   // requests request_all runs at once
	maxRequestAll      = 1000 // requests one request_all may hold
)

// httpModule is `http`: requests to the hosts route.allow.http admits,
// checked again on every redirect and, against SSRF and DNS rebinding, on
// the address each connection is made to.
var httpModule = module{
	funcs: []function{
		{"request", httpRequest},
		{"get", httpGet},
		{"post", httpPost},
		{"request_all", httpRequestAll},
	},
}

// httpOptions are the keys of a request table.
var httpOptions = map[string]bool{
	"method": true, "url": true, "query": true, "headers": true, "body": true, "json": true,
	"form": true, "timeout_ms": true, "max_bytes": true, "follow_redirects": true,
}

// httpSpec is one request, read from its Lua table.
type httpSpec struct {
	method      string
	url         *url.URL
	headers     map[string]string
	body        string // sent when hasBody; a raw body is the script's own string, not a copy
	hasBody     bool
	contentType string
	timeout     time.Duration
	max         int64
	// room is the part of the memory budget the body is read into (see
	// room), shared by the requests of one request_all; set by the caller
	// of httpSpec.
	room   *share
	follow bool
	// built is what reading the table made outside the state, besides the
	// script's own strings: the parsed URL (at most as long as the script's),
	// the query and an encoded body. request_all holds every spec at once,
	// so together they must fit the budget's room.
	built int64
}

// httpResult is one response, read whole.
type httpResult struct {
	status   int
	header   http.Header
	body     []byte
	finalURL string
}

// size is what the response table holds besides its tables: the body, and
// the headers (up to maxHeaderBytes) and URL, kept as strings in the state
// too. The decoded JSON body charges itself (bridge.Codec.Decode).
func (r *httpResult) size() int {
	n := len(r.body) + len(r.finalURL)
	for k, vs := range r.header {
		n += sizeKey + len(k) + 2*max(len(vs)-1, 0) // joined by ", "
		for _, v := range vs {
			n += len(v)
		}
	}
	return n
}

// http.request{...} -> res | nil, message
func httpRequest(s *State, L *lua.LState) int {
	return s.request(L, L.CheckTable(1), "http.request", nil)
}

// http.get(url [, opts]) -> res | nil, message
func httpGet(s *State, L *lua.LState) int {
	u := L.CheckString(1)
	opts := optTable(L, 2)
	positional(L, opts, "http.get", "url", "method")
	return s.request(L, opts, "http.get", func(t *lua.LTable) {
		t.RawSetString("method", lua.LString("GET"))
		t.RawSetString("url", lua.LString(u))
	})
}

// http.post(url, body [, opts]) -> res | nil, message; a table body is sent
// as JSON.
func httpPost(s *State, L *lua.LState) int {
	u := L.CheckString(1)
	body := L.Get(2)
	switch body.(type) {
	case lua.LString, *lua.LTable:
	default:
		L.ArgError(2, "a string or a table (sent as JSON) expected")
	}
	opts := optTable(L, 3)
	positional(L, opts, "http.post", "url", "method", "body", "json", "form")
	return s.request(L, opts, "http.post", func(t *lua.LTable) {
		t.RawSetString("method", lua.LString("POST"))
		t.RawSetString("url", lua.LString(u))
		t.RawSetString("body", lua.LNil)
		t.RawSetString("json", lua.LNil)
		t.RawSetString("form", lua.LNil)
		if _, ok := body.(*lua.LTable); ok {
			t.RawSetString("json", body)
		} else {
			t.RawSetString("body", body)
		}
	})
}

// positional raises when options table t sets one of keys, which the
// function's arguments set: the option would be dropped unseen (http.get's
// {method = "POST"} sent a GET, http.post's {body = ...} sent the other).
func positional(L *lua.LState, t *lua.LTable, fname string, keys ...string) {
	for _, k := range keys {
		if field(t, k) != lua.LNil {
			L.RaiseError("%s: option %s is not taken: %s sets it (use http.request)", fname, k, fname)
		}
	}
}

// request runs the request t describes; set, when given, fills in a copy of
// t first (the convenience functions' url, method and body).
func (s *State) request(L *lua.LState, t *lua.LTable, fname string, set func(*lua.LTable)) int {
	if set != nil {
		c := L.CreateTable(0, 8)
		if t != nil {
			t.ForEach(func(k, v lua.LValue) { c.RawSet(k, v) })
		}
		set(c)
		t = c
	}
	lib := s.granted(L, "http")
	if lib == nil {
		return 2
	}
	spec, err := s.httpSpec(L, lib, t, fname)
	if err != nil {
		return fail(L, "%v", err)
	}
	spec.room = newShare(room(L, spec.max+maxHeaderBytes))
	res, err := lib.do(s.ctx(), spec)
	if err != nil {
		return fail(L, "%v", err)
	}
	if err := keep(L, "http", res.size()); err != nil {
		return fail(L, "%v", err)
	}
	L.Push(s.response(L, res))
	return 1
}

// http.request_all{req1, req2, ...} -> { {res, err}, ... } in the order
// given, running at most maxInFlight at a time.
func httpRequestAll(s *State, L *lua.LState) int {
	list := L.CheckTable(1)
	n := list.Len()
	if n > maxRequestAll {
		L.ArgError(1, fmt.Sprintf("at most %d requests", maxRequestAll))
	}
	// A request under another key would be left out of the results unseen.
	list.ForEach(func(k, _ lua.LValue) {
		if i, ok := k.(lua.LNumber); !ok || float64(i) != math.Trunc(float64(i)) || i < 1 || int(i) > n {
			L.ArgError(1, fmt.Sprintf("a list of requests expected, got key %s", describe(k)))
		}
	})
	lib := s.granted(L, "http")
	if lib == nil {
		return 2
	}
	specs := make([]*httpSpec, n)
	results := make([]*httpResult, n)
	errs := make([]error, n)
	built, avail := int64(0), int64(-1)
	for i := range n {
		t, ok := list.RawGetInt(i + 1).(*lua.LTable)
		if !ok {
			L.ArgError(1, fmt.Sprintf("request %d is %s, not a table", i+1, describe(list.RawGetInt(i+1))))
		}
		specs[i], errs[i] = s.httpSpec(L, lib, t, fmt.Sprintf("http.request_all[%d]", i+1))
		// What the specs built (encoded bodies, queries) is held in Go
		// memory until every request is done, out of the budget's sight:
		// together it must fit the room the budget has (measured once).
		if specs[i] != nil && specs[i].built > 0 {
			if avail < 0 {
				avail = room(L, math.MaxInt64)
			}
			if built+specs[i].built > avail {
				specs[i], errs[i] = nil, budgetError(L, "http", built+specs[i].built)
				continue
			}
			built += specs[i].built
		}
	}
	// The budget's room is found once (it may take a walk of the state)
	// and shared: the bodies draw on it as they are read, so that together
	// they never hold more than it, however many run at once. keep below
	// charges them to the state.
	var most int64
	for _, spec := range specs {
		if spec != nil {
			most += spec.max + maxHeaderBytes
		}
	}
	if avail < 0 {
		avail = room(L, most)
	}
	// What the specs built is held as long: it takes its part of the room.
	free := newShare(max(min(avail, most+built)-built, 0))
	for _, spec := range specs {
		if spec != nil {
			spec.room = free
		}
	}
	ctx := s.ctx()
	sem := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	for i, spec := range specs {
		if spec == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = lib.callEnded(ctx)
				return
			}
			results[i], errs[i] = lib.do(ctx, spec)
			<-sem
		}()
	}
	wg.Wait()
	// out is on the stack while it fills, where the budget's measure sees
	// the bodies already kept.
	out := L.CreateTable(n, 0)
	L.Push(out)
	for i := range n {
		pair := L.CreateTable(2, 0)
		if errs[i] == nil {
			// Each body read within the budget; together they may not.
			errs[i] = keep(L, "http", results[i].size())
		}
		if errs[i] != nil {
			pair.RawSetInt(2, lua.LString(errs[i].Error()))
		} else {
			pair.RawSetInt(1, s.response(L, results[i]))
		}
		out.RawSetInt(i+1, pair)
	}
	return 1
}

// httpSpec reads a request table. Wrong types raise; a request the script
// may not make returns an error.
func (s *State) httpSpec(L *lua.LState, lib *Lib, t *lua.LTable, fname string) (*httpSpec, error) {
	t.ForEach(func(k, _ lua.LValue) {
		if ks, ok := k.(lua.LString); !ok || !httpOptions[string(ks)] {
			L.RaiseError("%s: unknown option %s", fname, describe(k))
		}
	})
	spec := &httpSpec{
		method:  strings.ToUpper(stringField(L, t, fname, "method", "GET")),
		headers: stringMap(L, t, fname, "headers"),
		timeout: time.Duration(intField(L, t, fname, "timeout_ms", defaultHTTPTimeout.Milliseconds(), 1, 1<<40)) * time.Millisecond,
		max:     intField(L, t, fname, "max_bytes", defaultHTTPMax, 0, maxHTTPMax),
		follow:  boolField(L, t, fname, "follow_redirects", true),
	}
	// Header names are case-insensitive: two keys naming one header
	// would leave it to the table's order which is sent.
	seen := make(map[string]string, len(spec.headers))
	for k := range spec.headers {
		ck := http.CanonicalHeaderKey(k)
		if other, ok := seen[ck]; ok {
			a, b := min(k, other), max(k, other)
			L.RaiseError("%s: headers has both %q and %q: header names are case-insensitive", fname, a, b)
		}
		seen[ck] = k
	}
	raw, ok := field(t, "url").(lua.LString)
	if !ok {
		L.RaiseError("%s: url must be a string, got %s", fname, describe(field(t, "url")))
	}
	var query string
	if q := field(t, "query"); q != lua.LNil {
		qt, ok := q.(*lua.LTable)
		if !ok {
			L.RaiseError("%s: query must be a table, got %s", fname, describe(q))
		}
		query = encodeQuery(L, qt, fname+": query")
	}
	bodies := 0
	if b := field(t, "body"); b != lua.LNil {
		spec.body, spec.hasBody = stringField(L, t, fname, "body", ""), true
		bodies++
	}
	var jsonErr error
	if j := field(t, "json"); j != lua.LNil {
		var b []byte
		b, jsonErr = s.codec.Encode(j, "json")
		spec.body, spec.hasBody, spec.built = string(b), true, int64(len(b))
		spec.contentType = "application/json"
		bodies++
	}
	if f := field(t, "form"); f != lua.LNil {
		ft, ok := f.(*lua.LTable)
		if !ok {
			L.RaiseError("%s: form must be a table, got %s", fname, describe(f))
		}
		spec.body, spec.hasBody = encodeQuery(L, ft, fname+": form"), true
		spec.built = int64(len(spec.body))
		spec.contentType = "application/x-www-form-urlencoded"
		bodies++
	}
	if bodies > 1 {
		L.RaiseError("%s: give one of body, json and form", fname)
	}
	if jsonErr != nil {
		return nil, fmt.Errorf("http: %v", jsonErr)
	}
	u, err := url.Parse(string(raw))
	if err != nil {
		return nil, fmt.Errorf("http: invalid URL: %v", urlCause(err))
	}
	if query != "" {
		if u.RawQuery != "" {
			u.RawQuery += "&"
		}
		u.RawQuery += query
	}
	if err := lib.checkURL(u, "host"); err != nil {
		return nil, err
	}
	spec.url = u
	spec.built += int64(len(raw) + len(query))
	return spec, nil
}

// response builds res = {status=, headers=, body=, json=, url=}.
func (s *State) response(L *lua.LState, r *httpResult) *lua.LTable {
	t := L.CreateTable(0, 5)
	t.RawSetString("status", lua.LNumber(r.status))
	h := L.CreateTable(0, len(r.header))
	for k, vs := range r.header {
		h.RawSetString(strings.ToLower(k), lua.LString(strings.Join(vs, ", ")))
	}
	t.RawSetString("headers", h)
	t.RawSetString("body", lua.LString(r.body))
	t.RawSetString("url", lua.LString(r.finalURL))
	if isJSON(r.header.Get("Content-Type")) {
		if v, err := s.codec.Decode(r.body); err == nil {
			t.RawSetString("json", v)
		}
	}
	return t
}

// isJSON reports whether a Content-Type is JSON (application/json, or a
// +json type such as application/problem+json).
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	// A malformed parameter (charset without a value) leaves the type.
	if err != nil && !errors.Is(err, mime.ErrInvalidMediaParameter) {
		return false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// deniedError is a request route.allow.http does not permit: the host of a
// URL or redirect, or the address a connection would reach.
type deniedError struct{ msg string }

func (e *deniedError) Error() string { return e.msg }

// checkURL checks a URL's scheme and host against the grants. what names the
// URL in the message ("host", "redirect to").
func (l *Lib) checkURL(u *url.URL, what string) error {
	if u.Scheme == "" {
		return errors.New("http: the URL has no scheme (want http:// or https://)")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("http: unsupported URL scheme %q (want http or https)", u.Scheme)
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return errors.New("http: the URL has no host")
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	p, ok := l.grants.matchHost(host, port)
	if !ok {
		return &deniedError{fmt.Sprintf("http: %s %s is not allowed (route.allow.http)", what, u.Host)}
	}
	if a, err := netip.ParseAddr(host); err == nil && !public(a) && !p.Literal() {
		return &deniedError{fmt.Sprintf("http: %s %s is %s address: only an entry that names it literally allows it (route.allow.http)", what, u.Host, addressClass(a))}
	}
	return nil
}

// addressClass names the kind of a non-public address for messages, with
// its article ("a loopback", "an unspecified").
func addressClass(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case a.IsLoopback():
		return "a loopback"
	case a.IsPrivate():
		return "a private"
	case a.IsLinkLocalUnicast():
		return "a link-local"
	case a.IsUnspecified():
		return "an unspecified"
	}
	return "a special-purpose"
}

// newTransport returns the route's transport: no proxy (a proxy would
// connect in its place, out of reach of the address check), every connection
// checked by dial, and capped response headers.
func (l *Lib) newTransport() *http.Transport {
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            l.dial,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    maxInFlight,
		IdleConnTimeout:        30 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: maxHeaderBytes,
	}
}

// dial connects to addr ("host:port", as in the URL) once the resolved
// address passes the check: a public address, or any address when a literal
// entry admits the host (an IP entry: that address only). The check runs on
// the address the socket connects to, after resolution, so a name that
// resolves to 127.0.0.1 through a wildcard is refused (DNS rebinding).
func (l *Lib) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	host = strings.ToLower(host)
	p, ok := l.grants.matchHost(host, port)
	if !ok {
		return nil, &deniedError{fmt.Sprintf("http: host %s is not allowed (route.allow.http)", addr)}
	}
	d := net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return err
			}
			a := ap.Addr().Unmap()
			if p.reaches(a) {
				return nil
			}
			return &deniedError{fmt.Sprintf("http: %s resolves to %s, %s address: only an entry that names it literally allows it (route.allow.http)",
				host, a, addressClass(a))}
		},
	}
	return d.DialContext(ctx, network, addr)
}

// reaches reports whether a connection p admitted may go to the address a
// (unmapped), which its host resolved to: a public address; any address
// for an exact name; the address itself for an IP entry. A wildcard never
// reaches a non-public address, whatever a name under it resolves to.
func (p HostPattern) reaches(a netip.Addr) bool {
	switch {
	case public(a):
		return true
	case p.kind == exactHost, p.kind == literalIP && a == p.addr:
		return true
	}
	return false
}

// checkRedirect re-checks every redirect target against the grants. A
// request with follow_redirects = false never gets here (send).
func (l *Lib) checkRedirect(req *http.Request, via []*http.Request) error {
	// On a 301 or 302 Go makes every method but GET and HEAD a GET (its
	// compatibility policy), where browsers and curl change POST only: a
	// PUT or DELETE redirected so would run as a GET, drop its body and
	// look done. Such a redirect is not followed: the script gets it.
	if code := req.Response.StatusCode; code == http.StatusMovedPermanently || code == http.StatusFound {
		if m := via[len(via)-1].Method; m != http.MethodGet && m != http.MethodHead && m != http.MethodPost {
			return http.ErrUseLastResponse
		}
	}
	// via holds the requests made so far: the first and the redirects
	// followed. Go's own policy stops at len(via) == 10, after 9.
	if len(via) > maxRedirects {
		return &deniedError{fmt.Sprintf("http: stopped after %d redirects", maxRedirects)}
	}
	if err := l.checkURL(req.URL, "redirect to"); err != nil {
		var denied *deniedError
		if !errors.As(err, &denied) {
			// A scheme or a missing host: say it was the redirect's.
			err = &deniedError{fmt.Sprintf("http: redirect to %s: %s", req.URL.Redacted(), strings.TrimPrefix(err.Error(), "http: "))}
		}
		return err
	}
	// The headers a script set were meant for the host it named (an API
	// key in X-Api-Key): on a redirect to another host, granted or not, Go
	// drops only Authorization and Cookie, and adds a Referer that may
	// carry the first URL's query. The rule for "another host" is Go's own
	// for those two: neither the same name nor one of its subdomains.
	if !sameSite(via[0].URL.Hostname(), req.URL.Hostname()) {
		for name := range req.Header {
			if !redirectSafe[name] {
				delete(req.Header, name)
			}
		}
	}
	return nil
}

// redirectSafe lists the headers that follow a redirect to another host:
// those that say what the client accepts or sends, never who it is.
var redirectSafe = map[string]bool{
	"Accept": true, "Accept-Language": true, "Content-Type": true, "Content-Language": true, "User-Agent": true,
}

// sameSite reports whether dest is host or one of its subdomains.
func sameSite(host, dest string) bool {
	host, dest = strings.ToLower(strings.TrimSuffix(host, ".")), strings.ToLower(strings.TrimSuffix(dest, "."))
	return dest == host || strings.HasSuffix(dest, "."+host)
}

// do sends one request and reads its response whole, within spec.timeout
// and ctx. It touches no Lua state: request_all runs it in parallel.
func (l *Lib) do(ctx context.Context, spec *httpSpec) (*httpResult, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, spec.timeout)
	defer cancel()
	defer func() {
		if l.closed.Load() {
			l.transport.CloseIdleConnections()
		}
	}()
	var body io.Reader
	if spec.hasBody {
		body = strings.NewReader(spec.body)
	}
	req, err := http.NewRequestWithContext(ctx, spec.method, spec.url.String(), body)
	if err != nil {
		return nil, fmt.Errorf("http: %s", goCause(err))
	}
	for k, v := range spec.headers {
		req.Header.Set(k, v)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", UserAgent)
	}
	if spec.contentType != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", spec.contentType)
	}
	resp, err := l.send(req, spec.follow)
	if err != nil {
		return nil, l.failure(parent, ctx, spec, err)
	}
	defer resp.Body.Close()
	// The headers wait in Go memory with the body (in request_all, until
	// every request is done): they draw on the room too.
	hb := headerBytes(resp.Header)
	if !spec.room.take(hb) {
		return nil, fmt.Errorf("http: the response headers would exceed the script's memory limit")
	}
	res, err := l.readResponse(parent, ctx, spec, resp)
	if err != nil {
		spec.room.give(hb)
		return nil, err
	}
	return res, nil
}

// send sends req through the route's client, or, when the script follows
// no redirect, through its transport alone: Go's client parses the Location
// of a redirect before it asks CheckRedirect whether to follow it, so one it
// cannot parse failed a request that was not to follow it, instead of
// returning the response. The client's one other step for a request
// without cookies or a client timeout is the URL's user info, sent as basic
// authentication.
func (l *Lib) send(req *http.Request, follow bool) (*http.Response, error) {
	if follow {
		return l.client.Do(req)
	}
	if u := req.URL.User; u != nil && req.Header.Get("Authorization") == "" {
		pw, _ := u.Password()
		req.SetBasicAuth(u.Username(), pw)
	}
	return l.transport.RoundTrip(req)
}

// headerBytes is what a response's headers hold: their names and values.
func headerBytes(h http.Header) int64 {
	var n int64
	for k, vs := range h {
		n += int64(len(k))
		for _, v := range vs {
			n += int64(len(v))
		}
	}
	return n
}

// readResponse reads the body of resp, whose headers do has drawn.
func (l *Lib) readResponse(parent, ctx context.Context, spec *httpSpec, resp *http.Response) (*httpResult, error) {
	size := resp.ContentLength
	if resp.Request.Method == http.MethodHead {
		// Its Content-Length is what a GET would return; it has no body.
		size = 0
	}
	if size > spec.max {
		return nil, fmt.Errorf("http: response body is larger than max_bytes (%d)", spec.max)
	}
	if size > spec.room.left() {
		return nil, fmt.Errorf("http: a body of %d bytes would exceed the script's memory limit", size)
	}
	b, err := readBody(resp.Body, size, spec.max, spec.room)
	switch {
	case errors.Is(err, errTooLarge):
		return nil, fmt.Errorf("http: response body is larger than max_bytes (%d)", spec.max)
	case errors.Is(err, errNoRoom):
		return nil, fmt.Errorf("http: the body would exceed the script's memory limit")
	case err != nil:
		return nil, l.failure(parent, ctx, spec, err)
	}
	return &httpResult{status: resp.StatusCode, header: resp.Header, body: b, finalURL: resp.Request.URL.String()}, nil
}

// failure turns a failed request into its message: a refusal, the call's
// end, the request's own timeout, or the network's error.
func (l *Lib) failure(parent, ctx context.Context, spec *httpSpec, err error) error {
	var denied *deniedError
	switch {
	case errors.As(err, &denied):
		return denied
	case parent.Err() != nil:
		return l.callEnded(parent)
	case ctx.Err() != nil:
		return fmt.Errorf("http: timed out after %d ms", spec.timeout.Milliseconds())
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		// Its text names the DNS server, an internal address the script
		// would hand on to clients: the name and the cause are enough.
		return fmt.Errorf("http: %s: lookup %s: %s", spec.url.Host, dnsErr.Name, dnsErr.Err)
	}
	return fmt.Errorf("http: %s: %s", spec.url.Host, netCause(err))
}

// netCause words the network's error of a request for the script. Go's
// texts name the local socket ("read tcp 127.0.0.1:59558->10.0.0.5:443:
// read: connection reset by peer"), the steps of its transport ("dial tcp",
// "HTTP/1.x transport connection broken") or nothing a reader can act on
// ("EOF"): the cause is kept, the plumbing goes.
func netCause(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var op *net.OpError
	if errors.As(err, &op) {
		cause := op.Err
		var se *os.SyscallError
		if errors.As(cause, &se) {
			cause = se.Err
		}
		if op.Op == "dial" {
			return "cannot connect: " + cause.Error()
		}
		return "connection failed: " + cause.Error()
	}
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection closed before the response ended"
	case errors.Is(err, io.EOF):
		return "the server closed the connection without a response"
	}
	msg := strings.TrimPrefix(goCause(err), "HTTP/1.x transport connection broken: ")
	// Go's client reports a redirect it cannot parse as text only:
	// failed to parse Location header "<loc>": parse "<loc>": <cause>.
	if rest, ok := strings.CutPrefix(msg, "failed to parse Location header "); ok {
		if q, err := strconv.QuotedPrefix(rest); err == nil {
			loc, _ := strconv.Unquote(q)
			cause := "not a URL"
			if _, err := url.Parse(loc); err != nil {
				cause = urlCause(err).Error()
			}
			if len(loc) > maxQuotedURL {
				loc = strings.ToValidUTF8(loc[:maxQuotedURL], "") + "..."
			}
			return fmt.Sprintf("redirect to an invalid URL %q: %s", loc, cause)
		}
	}
	return msg
}

// maxQuotedURL is the length of a URL a message quotes from a response.
const maxQuotedURL = 256

// goCause is the text of an error of net/http without the package's
// prefixes ("net/http: invalid method", "http: server gave HTTP response to
// HTTPS client"): the message already names the module.
func goCause(err error) string {
	msg := err.Error()
	for _, p := range []string{"net/http: ", "http: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return msg
}

// callEnded is the failure of a request whose call was cancelled or timed out.
func (l *Lib) callEnded(ctx context.Context) error {
	return fmt.Errorf("http: stopped: the call ended (%v)", context.Cause(ctx))
}
