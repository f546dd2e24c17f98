package mcp

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The fuzz targets of the small parsers a client's bytes reach besides the
// JSON-RPC decoder (FuzzDecode): resource URIs against templates, list
// cursors, the 2026-07-28 era's requestState, and the signature of a
// forwarded request, which any client can forge headers for.

// FuzzMatchTemplate checks MatchTemplate against a regular expression built
// from the same template, where the two can agree: each {var} is a greedy
// [^/]+ (regexp's leftmost-first preference gives earlier variables the
// longest run, as MatchTemplate does), values percent-decoded when they
// decode, a variable named twice matching one text.
func FuzzMatchTemplate(f *testing.F) {
	for _, s := range [][2]string{
		{"mem://user/{id}", "mem://user/42"},
		{"mem://user/{id}", "mem://user/a/b"},
		{"file:///{dir}/{name}.txt", "file:///docs/a.b.txt"},
		{"x://{a}-{b}", "x://1-2-3"},
		{"x://{a}/{a}", "x://q/q"},
		{"x://{a}/{a}", "x://q/r"},
		{"x://{a%20b}", "x://%41"},
		{"x://{+path}", "x://a/b"},
		{"x://{a", "x://a"},
		{"x://}{a}", "x://}a"},
		{"{a}{b}", "ab"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, template, uri string) {
		vars, ok := MatchTemplate(template, uri)
		if ok {
			for name := range vars {
				if !validVarName(name) {
					t.Fatalf("MatchTemplate(%q, %q) returned the variable %q", template, uri, name)
				}
			}
		}
		re, names, comparable := templateRegexp(template)
		if !comparable || !utf8.ValidString(uri) {
			return
		}
		if re == nil { // a template MatchTemplate must refuse
			if ok {
				t.Fatalf("MatchTemplate(%q, %q) matched a malformed template: %v", template, uri, vars)
			}
			return
		}
		want, wantOK := map[string]string{}, false
		if sub := re.FindStringSubmatch(uri); sub != nil {
			wantOK = true
			for i, name := range names {
				v := sub[i+1]
				if dec, err := url.PathUnescape(v); err == nil {
					v = dec
				}
				if prev, seen := want[name]; seen && prev != v {
					wantOK = false
					break
				}
				want[name] = v
			}
		}
		if ok != wantOK {
			t.Fatalf("MatchTemplate(%q, %q) = %v, %v; the regexp %s says %v", template, uri, vars, ok, re, wantOK)
		}
		if !ok {
			return
		}
		if len(vars) != len(want) {
			t.Fatalf("MatchTemplate(%q, %q) = %v; want %v", template, uri, vars, want)
		}
		for k, v := range want {
			if vars[k] != v {
				t.Fatalf("MatchTemplate(%q, %q) = %v; want %v", template, uri, vars, want)
			}
		}
	})
}

// templateRegexp turns a level-1 template into an anchored regexp and the
// names of its variables in order. re is nil for a template that must
// match nothing (unbalanced braces, an operator or an invalid name).
// comparable is false where the regexp is no oracle: a template that is
// not UTF-8 (regexp works on runes), or that puts two variables side by
// side (MatchTemplate splits the text between them on a byte, regexp on a
// rune boundary; which one a non-ASCII run is split at is no contract).
func templateRegexp(template string) (re *regexp.Regexp, names []string, comparable bool) {
	if !utf8.ValidString(template) {
		return nil, nil, false
	}
	var b strings.Builder
	b.WriteString("^")
	rest := template
	lastVar := false
	for rest != "" {
		open := strings.IndexAny(rest, "{}")
		if open < 0 {
			b.WriteString(regexp.QuoteMeta(rest))
			break
		}
		if rest[open] == '}' {
			return nil, nil, true
		}
		if open > 0 {
			b.WriteString(regexp.QuoteMeta(rest[:open]))
			lastVar = false
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return nil, nil, true
		}
		name := rest[open+1 : open+end]
		if !validVarName(name) {
			return nil, nil, true
		}
		if lastVar {
			return nil, nil, false
		}
		names = append(names, name)
		b.WriteString("([^/]+)")
		lastVar = true
		rest = rest[open+end+1:]
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String()), names, true
}

// FuzzCursor checks that any params.cursor either parses to an offset that
// appendCursor writes back as the same cursor, or is refused.
func FuzzCursor(f *testing.F) {
	for _, s := range []string{`{}`, `{"cursor":null}`, `{"cursor":"MTA="}`, `{"cursor":"LTE="}`,
		`{"cursor":"MDA="}`, `{"cursor":"OTk5OTk5OTk5OTk5OTk5"}`, `{"cursor":7}`, `{"cursor":"\u004dTA="}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		offset, ok := parseCursor(params)
		if !ok {
			return
		}
		if offset < 0 {
			t.Fatalf("parseCursor(%q) = %d", params, offset)
		}
		c := appendCursor(nil, offset)
		again, ok := parseCursor([]byte(`{"cursor":"` + string(c) + `"}`))
		if !ok || again != offset {
			t.Fatalf("parseCursor(%q) = %d, whose cursor %s reads back as %d, %v", params, offset, c, again, ok)
		}
	})
}

// FuzzRequestState checks that a requestState opens only as what was sealed
// with the key: a client's own bytes never verify, and neither does a sealed
// state with one byte changed, unless the change leaves the decoded bytes as
// they were (base64 without padding ignores the last character's unused
// bits).
func FuzzRequestState(f *testing.F) {
	key := bytes.Repeat([]byte{7}, 32)
	now := time.Unix(1_800_000_000, 0)
	digest := []byte("0123456789abcdef0123456789abcdef")
	sealed := sealState(key, &statePayload{Method: "tools/call", Name: "t", Args: digest, Expires: now.Unix() + 60})
	// canonical re-encodes a state's two halves; "" when it does not decode.
	canonical := func(state string) string {
		enc := base64.RawURLEncoding
		body, mac, ok := strings.Cut(state, ".")
		b, err1 := enc.DecodeString(body)
		m, err2 := enc.DecodeString(mac)
		if !ok || err1 != nil || err2 != nil {
			return ""
		}
		return enc.EncodeToString(b) + "." + enc.EncodeToString(m)
	}
	check := func(t *testing.T, state string) {
		if p, err := openState(key, state, "tools/call", "t", digest, "", now); err == nil && canonical(state) != sealed {
			t.Fatalf("openState accepted a state it did not seal: %q: %+v", state, p)
		}
	}
	f.Add(sealed, -1, byte(0))
	f.Add(sealed, 3, byte('A'))
	f.Add(sealed, len(sealed)-1, byte('x'))
	f.Add("e30.AAAA", -1, byte(0))
	f.Add("..", -1, byte(0))
	f.Fuzz(func(t *testing.T, state string, at int, b byte) {
		check(t, state)
		if at >= 0 && at < len(sealed) {
			check(t, sealed[:at]+string(b)+sealed[at+1:])
		}
	})
}

// FuzzForwardSignature checks that forwarding headers a client wrote verify
// only as the one set signForward wrote (the seed): the fuzzer changes node,
// path, session, client address, scheme and signature, and any change of
// what the signature covers must fail.
func FuzzForwardSignature(f *testing.F) {
	key := bytes.Repeat([]byte{9}, 32)
	now := time.Unix(1_800_000_000, 0)
	const node, path, session, client = "n1", "/mcp/echo", "n1.abc", "10.0.0.1:5000"
	signed := &http.Request{Method: http.MethodPost, URL: &url.URL{Path: path}, Header: http.Header{}, RemoteAddr: client}
	signed.Header.Set("Mcp-Session-Id", session)
	h := http.Header{}
	signForward(h, key, node, signed, now)
	sig := h.Get(ForwardSignatureHeader)
	f.Add(node, path, session, client, "http", sig)
	f.Add(node, path, session, client, "https", sig)
	f.Add(node, path, session, client, "http", strconv.FormatInt(now.Unix(), 10)+".")
	f.Add("n2", "/mcp/x", "", "", "https", "1800000000.AAAA")
	f.Add(node, "/", "s", "c", "http", "-9223372036854775808.x")
	// parts reads a signature as verifyForward does: its time and MAC.
	parts := func(s string) (int64, string) {
		ts, mac, _ := strings.Cut(s, ".")
		unix, _ := strconv.ParseInt(ts, 10, 64)
		m, _ := base64.RawURLEncoding.DecodeString(mac)
		return unix, string(m)
	}
	f.Fuzz(func(t *testing.T, gotNode, gotPath, gotSession, gotClient, proto, gotSig string) {
		r := &http.Request{Method: http.MethodPost, URL: &url.URL{Path: gotPath}, Header: http.Header{}}
		r.Header.Set(ForwardedHeader, gotNode)
		r.Header.Set(ForwardedForHeader, gotClient)
		r.Header.Set(ForwardedProtoHeader, proto)
		r.Header.Set(ForwardSignatureHeader, gotSig)
		if gotSession != "" {
			r.Header.Set("Mcp-Session-Id", gotSession)
		}
		c, p, err := verifyForward(r, key, now)
		if err != nil {
			return
		}
		u1, m1 := parts(gotSig)
		u2, m2 := parts(sig)
		if gotNode != node || gotPath != path || gotSession != session || gotClient != client || proto != "http" ||
			u1 != u2 || m1 != m2 || c != client || p != "http" {
			t.Fatalf("verifyForward accepted node %q path %q session %q client %q proto %q signature %q", gotNode, gotPath, gotSession, gotClient, proto, gotSig)
		}
	})
}
