package hostlib

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testAPI is a local HTTP server with the routes the http tests need.
type testAPI struct {
	*httptest.Server
	inFlight, maxInFlight atomic.Int32
	closed                chan struct{} // a /slow request's connection went away
}

func newTestAPI(t *testing.T) *testAPI {
	api := &testAPI{closed: make(chan struct{}, 16)}
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		fmt.Fprintf(w, `{"method":%q,"query":%q,"ua":%q,"auth":%q,"ct":%q,"body":%q}`, r.Method, r.URL.RawQuery,
			r.UserAgent(), r.Header.Get("Authorization"), r.Header.Get("Content-Type"), body)
	})
	mux.HandleFunc("/text", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "plain") })
	mux.HandleFunc("/headers", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"key":%q,"auth":%q,"accept":%q,"referer":%q,"ua":%q}`, r.Header.Get("X-Api-Key"),
			r.Header.Get("Authorization"), r.Header.Get("Accept"), r.Header.Get("Referer"), r.UserAgent())
	})
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		io.WriteString(w, "short and stout")
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, strings.Repeat("x", 100)) })
	mux.HandleFunc("/big-chunked", func(w http.ResponseWriter, r *http.Request) {
		for range 10 {
			io.WriteString(w, strings.Repeat("x", 10))
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	// /chain?n=N redirects N times before it answers.
	mux.HandleFunc("/chain", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		if n <= 0 {
			io.WriteString(w, "end")
			return
		}
		http.Redirect(w, r, "/chain?n="+strconv.Itoa(n-1), http.StatusFound)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			api.closed <- struct{}{}
		case <-time.After(10 * time.Second):
		}
	})
	mux.HandleFunc("/count", func(w http.ResponseWriter, r *http.Request) {
		n := api.inFlight.Add(1)
		for {
			m := api.maxInFlight.Load()
			if n <= m || api.maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(30 * time.Millisecond)
		api.inFlight.Add(-1)
		io.WriteString(w, r.URL.Query().Get("i"))
	})
	api.Server = httptest.NewServer(mux)
	t.Cleanup(api.Close)
	return api
}

func (api *testAPI) hostPort() string { return strings.TrimPrefix(api.URL, "http://") }

func (api *testAPI) port() string {
	_, port, _ := net.SplitHostPort(api.hostPort())
	return port
}

func TestHTTP(t *testing.T) {
	api := newTestAPI(t)
	other := newTestAPI(t) // a server the script is not granted
	lib := newLib(t, t.TempDir(), `{ http = { "`+api.hostPort()+`", "localhost:`+other.port()+`" } }`)
	L, _ := newLua(t, lib)
	L.SetGlobal("BASE", lstr(api.URL))
	L.SetGlobal("OTHER", lstr(other.URL))
	L.SetGlobal("PORT", lstr(api.port()))
	runCases(t, L, []luaCase{
		{"get", `local r = http.get(BASE .. "/echo?a=1")
			eq(r.status, 200); eq(r.headers["content-type"], "application/json"); eq(r.headers["x-multi"], "a, b")
			eq(r.json.method, "GET"); eq(r.json.query, "a=1"); eq(r.json.ua, "luamcp"); eq(r.url, BASE .. "/echo?a=1")
			eq(type(r.body), "string")
			r = http.get(BASE .. "/text"); eq(r.body, "plain"); eq(r.json, nil)`},
		{"request", `local r = http.request{ method = "put", url = BASE .. "/echo?x=0", query = { q = "lua mcp", page = 2 },
				headers = { authorization = "Bearer k" }, body = "raw" }
			eq(r.json.method, "PUT"); eq(r.json.query, "x=0&page=2&q=lua+mcp"); eq(r.json.auth, "Bearer k"); eq(r.json.body, "raw")`},
		{"json and form bodies", `local r = http.post(BASE .. "/echo", { a = { 1, 2 } }); eq(r.json.ct, "application/json"); eq(r.json.body, '{"a":[1,2]}')
			r = http.post(BASE .. "/echo", "text", { headers = { ["content-type"] = "text/plain" } }); eq(r.json.ct, "text/plain"); eq(r.json.body, "text")
			r = http.request{ method = "POST", url = BASE .. "/echo", form = { b = "2 3", a = "1" } }
			eq(r.json.ct, "application/x-www-form-urlencoded"); eq(r.json.body, "a=1&b=2+3")
			local v, err = http.post(BASE .. "/echo", { f = print }); eq(v, nil); eq(err, "http: json.f: cannot encode a function")`},
		{"an error status is a response", `local r = http.get(BASE .. "/status"); eq(r.status, 418); eq(r.body, "short and stout")`},
		{"host not allowed", `local v, err = http.get("http://example.com/"); eq(v, nil); eq(err, "http: host example.com is not allowed (route.allow.http)")
			v, err = http.get(OTHER .. "/text"); eq(err, "http: host " .. OTHER:sub(8) .. " is not allowed (route.allow.http)")
			v, err = http.get("ftp://x/"); eq(err, 'http: unsupported URL scheme "ftp" (want http or https)')
			v, err = http.get("http:///x"); eq(err, "http: the URL has no host")`},
		{"a literal name reaches loopback", `local r = http.get("http://localhost:" .. OTHER:match(":(%d+)$") .. "/text"); eq(r.body, "plain")`},
		{"redirects", `local r = http.get(BASE .. "/redirect?to=/text"); eq(r.status, 200); eq(r.body, "plain"); eq(r.url, BASE .. "/text")
			r = http.get(BASE .. "/redirect?to=/text", { follow_redirects = false }); eq(r.status, 302); eq(r.headers.location, "/text")
			local v, err = http.get(BASE .. "/redirect?to=" .. url.encode(OTHER .. "/text")); eq(v, nil)
			eq(err, "http: redirect to " .. OTHER:sub(8) .. " is not allowed (route.allow.http)")
			v, err = http.get(BASE .. "/redirect?to=" .. url.encode(BASE .. "/redirect?to=/text") .. "&loop")
			eq(v.status, 200)`},
		{"headers stay with the host they were set for", `local h = { headers = { ["x-api-key"] = "k", authorization = "Bearer t", accept = "text/plain" } }
			local r = http.get(BASE .. "/redirect?to=/headers&secret=s", h)
			eq(r.json.key, "k"); eq(r.json.auth, "Bearer t"); eq(r.json.accept, "text/plain")
			r = http.get(BASE .. "/redirect?to=" .. url.encode("http://localhost:" .. OTHER:match(":(%d+)$") .. "/headers") .. "&secret=s", h)
			eq(r.json.key, ""); eq(r.json.auth, ""); eq(r.json.referer, ""); eq(r.json.accept, "text/plain"); eq(r.json.ua, "luamcp")`},
		{"max_bytes", `eq(#http.get(BASE .. "/big").body, 100); eq(#http.get(BASE .. "/big", { max_bytes = 100 }).body, 100)
			local v, err = http.get(BASE .. "/big", { max_bytes = 99 }); eq(v, nil); eq(err, "http: response body is larger than max_bytes (99)")
			v, err = http.get(BASE .. "/big-chunked", { max_bytes = 50 }); eq(v, nil); eq(err, "http: response body is larger than max_bytes (50)")
			-- The bound is exact for a body of unknown length too.
			eq(#http.get(BASE .. "/big-chunked", { max_bytes = 100 }).body, 100)
			v, err = http.get(BASE .. "/big-chunked", { max_bytes = 99 }); eq(v, nil); eq(err, "http: response body is larger than max_bytes (99)")`},
		// Ten redirects are followed, as host-api.md says (Go's default
		// policy stops after nine); the eleventh is refused: a redirect
		// loop ends.
		{"redirect limit", `eq(http.get(BASE .. "/chain?n=9").body, "end"); eq(http.get(BASE .. "/chain?n=10").body, "end")
			local v, err = http.get(BASE .. "/chain?n=11"); eq(v, nil); eq(err, "http: stopped after 10 redirects")`},
		// A 301 or 302 makes a POST a GET, as browsers do, but is not
		// followed for other methods, which Go would make GETs too.
		{"redirected methods", `local r = http.request{ method = "DELETE", url = BASE .. "/redirect?to=/text" }
			eq(r.status, 302); eq(r.headers.location, "/text")
			r = http.request{ method = "PUT", url = BASE .. "/redirect?to=/text", body = "x" }; eq(r.status, 302)
			r = http.post(BASE .. "/redirect?to=/text", "x"); eq(r.status, 200); eq(r.body, "plain")`},
		// A redirect the URL rules refuse says it was the redirect's.
		{"redirect to a bad URL", `local v, err = http.get(BASE .. "/redirect?to=" .. url.encode("ftp://x/y")); eq(v, nil)
			eq(err, 'http: redirect to ftp://x/y: unsupported URL scheme "ftp" (want http or https)')
			v, err = http.get(BASE .. "/redirect?to=" .. url.encode("http:///y")); eq(err, "http: redirect to http:///y: the URL has no host")`},
		// Messages name the module once: net/http's own prefixes go.
		{"no net/http prefixes", `local v, err = http.request{ method = "GE T", url = BASE .. "/text" }; eq(v, nil); eq(err, 'http: invalid method "GE T"')
			v, err = http.get("https://` + api.hostPort() + `/text"); eq(err, "http: ` + api.hostPort() + `: server gave HTTP response to HTTPS client")
			v, err = http.request{ url = BASE .. "/text", headers = { ["bad name"] = "x" } }
			eq(err, 'http: ` + api.hostPort() + `: invalid header field name "bad name"')`},
		{"timeout", `local v, err = http.get(BASE .. "/slow", { timeout_ms = 100 }); eq(v, nil); eq(err, "http: timed out after 100 ms")`},
		{"network error", `local v, err = http.get("http://` + api.hostPort() + `:1/"); eq(v, nil)`},
		{"wrong types raise", `fails(http.get, {}); fails(http.request, { url = BASE, timeout = 5 }); fails(http.request, { url = BASE, headers = 5 })
			fails(http.post, BASE, 5); fails(http.request, { url = BASE, body = "a", json = {} }); fails(http.request_all, { 5 })
			fails(http.request, { method = "GET" })
			local err = fails(http.request, { url = BASE, headers = { ["x-key"] = "a", ["X-Key"] = "b" } })
			if not err:find('http.request: headers has both "X-Key" and "x-key": header names are case-insensitive', 1, true) then error(err) end`},
	})
	select {
	case <-api.closed: // the timed-out request's connection was closed
	case <-time.After(5 * time.Second):
		t.Error("the server did not see the timed-out request end")
	}

	t.Run("request_all", func(t *testing.T) {
		runCases(t, L, []luaCase{{"50", `local reqs = {}
			for i = 1, 50 do reqs[i] = { url = BASE .. "/count?i=" .. i } end
			reqs[51] = { url = "http://example.com/" }
			local out = http.request_all(reqs); eq(#out, 51)
			for i = 1, 50 do eq(out[i][1].body, tostring(i)); eq(out[i][2], nil) end
			eq(out[51][1], nil); eq(out[51][2], "http: host example.com is not allowed (route.allow.http)")
			eq(#http.request_all({}), 0)`}})
		if m := api.maxInFlight.Load(); m > maxInFlight || m < 2 {
			t.Errorf("request_all ran %d requests at once, want 2..%d", m, maxInFlight)
		}
	})

	t.Run("cancellation", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		L.SetContext(ctx)
		defer L.RemoveContext()
		var mu sync.Mutex
		var cancelled time.Time
		timer := time.AfterFunc(200*time.Millisecond, func() { mu.Lock(); cancelled = time.Now(); mu.Unlock(); cancel() })
		defer timer.Stop()
		if err := L.DoString(`http.request_all{ { url = BASE .. "/slow" }, { url = BASE .. "/slow" } }`); err == nil {
			t.Fatal("the call was not interrupted")
		}
		mu.Lock()
		d := time.Since(cancelled)
		mu.Unlock()
		if d > time.Second {
			t.Errorf("returned %v after the cancellation", d)
		}
		for range 2 {
			select {
			case <-api.closed:
			case <-time.After(5 * time.Second):
				t.Fatal("the server did not see the cancelled request's connection close")
			}
		}
	})
}

// TestHTTPAddressCheck: through a wildcard, only public addresses are
// reached; the check is on the resolved address.
func TestHTTPAddressCheck(t *testing.T) {
	api := newTestAPI(t)
	L, _ := newLua(t, newLib(t, t.TempDir(), `{ http = { "*", "*.localhost" } }`))
	L.SetGlobal("PORT", lstr(api.port()))
	runCases(t, L, []luaCase{
		{"a name that resolves to loopback", `local v, err = http.get("http://localhost:" .. PORT .. "/text"); eq(v, nil)
			if not err:find("^http: localhost resolves to [%d%.:]+, a loopback address: only an entry that names it literally allows it %(route.allow.http%)$") then error(err) end`},
		{"a sub-domain wildcard", `local v, err = http.get("http://api.localhost:" .. PORT .. "/text"); eq(v, nil)
			if not err:find("a loopback address", 1, true) and not err:find("no such host", 1, true) then error(err) end`},
		{"a loopback literal", `local v, err = http.get("http://127.0.0.1:" .. PORT .. "/text"); eq(v, nil)
			eq(err, "http: host 127.0.0.1:" .. PORT .. " is a loopback address: only an entry that names it literally allows it (route.allow.http)")`},
		{"cloud metadata", `local v, err = http.get("http://169.254.169.254/latest/meta-data/"); eq(v, nil)
			eq(err, "http: host 169.254.169.254 is a link-local address: only an entry that names it literally allows it (route.allow.http)")
			v, err = http.get("http://[::ffff:10.0.0.1]/"); eq(err, "http: host [::ffff:10.0.0.1] is a private address: only an entry that names it literally allows it (route.allow.http)")`},
		{"unspecified", `local v, err = http.get("http://0.0.0.0:" .. PORT .. "/text"); eq(v, nil)
			eq(err, "http: host 0.0.0.0:" .. PORT .. " is an unspecified address: only an entry that names it literally allows it (route.allow.http)")`},
	})
}

func TestHTTPBeforeGrants(t *testing.T) {
	L, _ := newLua(t, nil)
	runCases(t, L, []luaCase{{"refused", `local v, err = http.get("http://example.com/"); eq(v, nil)
		eq(err, "http: not available while the script's main chunk runs (call it from init or a callback)")`}})
}

// TestHTTPHeadOfALargeResource: a HEAD response has no body, whatever its
// Content-Length says (the size of what a GET would return): it is a
// response with an empty body, not "larger than max_bytes" nor past the
// memory budget, and draws nothing from it (request_all).
func TestHTTPHeadOfALargeResource(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("mib"))
		w.Header().Set("Content-Length", strconv.Itoa(n<<20))
		if r.Method != http.MethodHead {
			w.Write(make([]byte, n<<20))
		}
	})
	mux.HandleFunc("/small", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, strings.Repeat("x", 7<<20)) })
	api := httptest.NewServer(mux)
	t.Cleanup(api.Close)
	L, _ := newLua(t, newLib(t, t.TempDir(), fmt.Sprintf(`{ http = { %q } }`, strings.TrimPrefix(api.URL, "http://"))))
	L.SetMemoryLimit(16 << 20)
	L.SetGlobal("BASE", lstr(api.URL))
	runCases(t, L, []luaCase{
		{"head", `local r, err = http.request{ method = "HEAD", url = BASE .. "/file?mib=64" }; eq(err, nil)
			eq(r.status, 200); eq(r.body, ""); eq(r.headers["content-length"], tostring(64 * 1024 * 1024))`},
		{"head within max_bytes", `local r, err = http.request{ method = "HEAD", url = BASE .. "/file?mib=64", max_bytes = 1 }; eq(err, nil); eq(r.body, "")`},
		// The HEAD's Content-Length fits the budget, but with the GET's
		// body, it would not.
		{"request_all", `local rs = http.request_all{ { method = "HEAD", url = BASE .. "/file?mib=9" }, { url = BASE .. "/small" } }
			eq(rs[1][2], nil, "HEAD"); eq(rs[2][2], nil, "GET"); eq(#rs[2][1].body, 7 * 1024 * 1024)`},
	})
}

// TestHTTPFailureHidesTheResolver: a failed lookup's message names the host
// looked up and the cause, not the address of the host's DNS server (an
// internal address, which scripts hand on to clients with the message).
func TestHTTPFailureHidesTheResolver(t *testing.T) {
	lib := &Lib{}
	u, _ := url.Parse("http://nonexistent.example/")
	spec := &httpSpec{url: u, timeout: time.Second}
	for _, err := range []error{
		&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "nonexistent.example", Server: "10.255.255.53:53", IsNotFound: true}},
		&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "i/o timeout", Name: "nonexistent.example", Server: "10.255.255.53:53", IsTimeout: true}},
	} {
		msg := lib.failure(context.Background(), context.Background(), spec, &url.Error{Op: "Get", URL: u.String(), Err: err}).Error()
		if strings.Contains(msg, "10.255.255.53") || !strings.Contains(msg, "nonexistent.example") {
			t.Errorf("message %q: want the host named, not the resolver", msg)
		}
	}
}

// TestHTTPIsJSON: res.json is set for the JSON media types, whatever their
// case and parameters (a malformed one included), and for +json types.
func TestHTTPIsJSON(t *testing.T) {
	for _, c := range []struct {
		ct   string
		want bool
	}{
		{"application/json", true},
		{"Application/JSON", true},
		{"application/json; charset=utf-8", true},
		{"application/json;charset=UTF-8", true},
		{"application/json; charset", true}, // a parameter without a value
		{"application/json;;", true},
		{"application/problem+json", true},
		{"application/problem+json; charset=utf-8", true},
		{"application/vnd.api+json", true},
		{"application/json-seq", false},
		{"application/x-ndjson", false},
		{"application/jsonx", false},
		{"text/plain", false},
		{"application", false},
		{"", false},
	} {
		if got := isJSON(c.ct); got != c.want {
			t.Errorf("isJSON(%q) = %v, want %v", c.ct, got, c.want)
		}
	}
}

// TestHTTPErrorWording: a failed request's message says what went wrong
// in luamcp's words. It carried Go's plumbing: "failed to parse Location
// header ...: parse ...", "dial tcp 127.0.0.1:1: connect: connection
// refused", "read tcp <local port>->...", a bare "EOF", "HTTP/1.x transport
// connection broken", and 'unsupported URL scheme ""' for a URL without one.
func TestHTTPErrorWording(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/bad-location", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "http://[bad")
		w.WriteHeader(http.StatusFound)
	})
	hijack := func(reply string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			c, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			io.WriteString(c, reply)
			c.Close()
		}
	}
	mux.HandleFunc("/auth", func(w http.ResponseWriter, r *http.Request) {
		user, pw, _ := r.BasicAuth()
		io.WriteString(w, user+":"+pw)
	})
	mux.HandleFunc("/no-answer", hijack(""))
	mux.HandleFunc("/short-body", hijack("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc"))
	mux.HandleFunc("/garbage", hijack("garbage\r\n\r\n"))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	// A server that resets every connection.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
	}()
	host := strings.TrimPrefix(srv.URL, "http://")
	lib := newLib(t, t.TempDir(), `{ http = { "`+host+`", "`+ln.Addr().String()+`", "127.0.0.1:1" } }`)
	L, _ := newLua(t, lib)
	L.SetGlobal("BASE", lstr(srv.URL))
	L.SetGlobal("HOST", lstr(host))
	L.SetGlobal("RESET", lstr("http://"+ln.Addr().String()+"/"))
	runCases(t, L, []luaCase{
		{"no scheme", `local v, err = http.get("example.com/x"); eq(v, nil); eq(err, "http: the URL has no scheme (want http:// or https://)")`},
		{"not a URL", `local v, err = http.get("http://[::1"); eq(v, nil); eq(err, "http: invalid URL: missing ']' in host")
			v, err = http.get("://x"); eq(err, "http: invalid URL: missing protocol scheme")`},
		{"a bad Location", `local v, err = http.get(BASE .. "/bad-location"); eq(v, nil)
			eq(err, "http: " .. HOST .. ': redirect to an invalid URL "http://[bad": missing \']\' in host')`},
		// Go's client read the Location before it asked whether to follow.
		{"a bad Location not followed", `local r = http.get(BASE .. "/bad-location", { follow_redirects = false })
			eq(r.status, 302); eq(r.headers.location, "http://[bad"); eq(r.url, BASE .. "/bad-location")`},
		{"user info without following", `local r = http.get("http://ann:pw@" .. HOST .. "/auth", { follow_redirects = false }); eq(r.body, "ann:pw")
			r = http.get("http://ann:pw@" .. HOST .. "/auth"); eq(r.body, "ann:pw")
			r = http.get("http://ann:pw@" .. HOST .. "/auth", { follow_redirects = false, headers = { authorization = "Basic Ym9iOng=" } }); eq(r.body, "bob:x")`},
		{"no answer", `local v, err = http.get(BASE .. "/no-answer"); eq(v, nil); eq(err, "http: " .. HOST .. ": the server closed the connection without a response")`},
		{"a short body", `local v, err = http.get(BASE .. "/short-body"); eq(v, nil); eq(err, "http: " .. HOST .. ": the connection closed before the response ended")`},
		{"garbage", `local v, err = http.get(BASE .. "/garbage"); eq(v, nil); eq(err, "http: " .. HOST .. ': malformed HTTP response "garbage"')`},
		{"refused", `local v, err = http.get("http://127.0.0.1:1/"); eq(v, nil); eq(err, "http: 127.0.0.1:1: cannot connect: connection refused")`},
		{"reset", `local v, err = http.get(RESET); eq(v, nil)
			assert(err:find("^http: 127%.0%.0%.1:%d+: ") and not err:find("tcp") and not err:find("->", 1, true), err)`},
	})
}

// TestHTTPOptionsNotDropped: an option the call could not use raises. http.get
// took {method = "POST"} and {url = ...} and dropped them (a GET to the first
// argument went out), http.post its {body = ...}; http.request_all left out
// every request not in its list part ({a = req} ran nothing and returned {}).
func TestHTTPOptionsNotDropped(t *testing.T) {
	lib := newLib(t, t.TempDir(), `{ http = { "127.0.0.1:1" } }`)
	L, _ := newLua(t, lib)
	runCases(t, L, []luaCase{
		{"http.get", `for _, k in ipairs({ "url", "method" }) do
				local err = fails(http.get, "http://127.0.0.1:1/", { [k] = "x" })
				assert(err:find("http.get: option " .. k .. " is not taken: http.get sets it (use http.request)", 1, true), err)
			end`},
		{"http.post", `for _, k in ipairs({ "url", "method", "body", "json", "form" }) do
				local err = fails(http.post, "http://127.0.0.1:1/", "b", { [k] = "x" })
				assert(err:find("http.post: option " .. k .. " is not taken", 1, true), err)
			end`},
		{"http.request_all", `for _, list in ipairs({ { a = { url = "x" } }, { { url = "x" }, b = { url = "y" } }, { [0] = { url = "x" } }, { [1.5] = { url = "x" } } }) do
				local err = fails(function() return http.request_all(list) end)
				assert(err:find("bad argument #1 to 'request_all' (a list of requests expected, got key ", 1, true), err)
			end
			eq(#http.request_all({}), 0)`},
	})
}
