package hostlib

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// TestReFindAllCapturesWithinTheBudget: re.find_all refuses a list of
// captures its budget cannot hold before regexp builds it in Go. A pattern
// of many empty groups, matched at every byte, made one call build
// matches × groups strings: 10,000 × 1,000 took 315 MiB under a 16 MiB
// budget, and the bounds allow 100,000 × 5,000 (some 8 GiB), which kills the
// process.
func TestReFindAllCapturesWithinTheBudget(t *testing.T) {
	for _, watched := range []bool{false, true} {
		for _, code := range []string{
			`refused(re.find_all(GROUPS, S))`,
			`refused(re.find_all(GROUPS, S, 100000))`,
		} {
			name := code
			if watched {
				name = "watched " + code
			}
			t.Run(name, func(t *testing.T) {
				L, _ := newLua(t, nil)
				L.SetMemoryLimit(16 << 20)
				if watched {
					saved := riskyWork
					riskyWork = -1 // the search that watches the context
					t.Cleanup(func() { riskyWork = saved })
					L.SetContext(context.Background())
				}
				L.SetGlobal("REFUSED", lstr("would exceed the script's memory limit"))
				L.SetGlobal("GROUPS", lstr(strings.Repeat("()", 1000)))
				L.SetGlobal("S", lstr(strings.Repeat("x", 10000)))
				if err := L.DoString(`function refused(v, err) eq(v, nil); eq(err:find(REFUSED, 1, true) ~= nil, true, err) end`); err != nil {
					t.Fatal(err)
				}
				runBounded(t, L, code)
				// What fits is still found.
				if err := L.DoString(`local ms = re.find_all(GROUPS, "xy"); eq(#ms, 3); eq(#ms[1], 1000)
					eq(#re.find_all("(x)(y)", string.rep("xy", 1000)), 1000)`); err != nil {
					t.Errorf("%s", strings.TrimSpace(err.Error()))
				}
			})
		}
	}
}

// TestReCountsPastIntRange: a count too large for an int (math.huge, 2^63)
// counts as 100,000 like any count above it, as docs/script-api.md says: it
// became math.MinInt64 on amd64 and raised "a count >= 0 expected".
func TestReCountsPastIntRange(t *testing.T) {
	L, _ := newLua(t, nil)
	runCases(t, L, []luaCase{
		{"find_all math.huge", `eq(#re.find_all("x", "xxx", math.huge), 3)`},
		{"find_all 2^63", `eq(#re.find_all("x", "xxx", 2^63), 3)`},
		{"split math.huge", `eq(#re.split(",", "a,b,c", math.huge), 3)`},
		{"split 2^63", `eq(#re.split(",", "a,b,c", 2^63), 3)`},
		{"negative and NaN still raise", `fails(re.find_all, "x", "x", -1); fails(re.find_all, "x", "x", 0/0)
			fails(re.split, "x", "x", -math.huge)`},
	})
}

// TestURLBuildInvertsParse: url.build(url.parse(u)) names the same resource
// as u (docs: url.build is url.parse's inverse). An opaque URL (mailto:,
// urn:, data:) came back with its path as an authority ("mailto://ann@x"
// names the host x and the user ann); a query that url.parse could not
// take apart was dropped ("?a=1;b=2" became "") or rewritten ("?x" became
// "?x="); a password without a user was dropped.
func TestURLBuildInvertsParse(t *testing.T) {
	L, _ := newLua(t, nil)
	var cases []luaCase
	for _, u := range []string{
		"mailto:ann@example.com",
		"urn:isbn:0451450523",
		"data:text/plain,hi%20there",
		"http://h/?a=1;b=2",
		"http://h/?x",
		"http://h/?b=1&a=2",
		"http://h/?q=a%20b",
		"http://:pw@h/",
		"https://example.com:8443/x/y?a=1&b=two#top",
		"file:///etc/passwd",
		"https://gitlab.example/api/v4/projects/group%2Fproj/issues",
	} {
		cases = append(cases, luaCase{u, `eq(url.build(url.parse("` + u + `")), "` + u + `")`})
	}
	cases = append(cases,
		luaCase{"a scheme and a path", `eq(url.build({ scheme = "mailto", path = "ann@example.com" }), "mailto:ann@example.com")`},
		luaCase{"a changed query is used", `local u = url.parse("http://h/?b=1&a=2"); u.query.a = "3"
			eq(url.build(u), "http://h/?a=3&b=1")`},
		luaCase{"an escaped slash", `local u = url.parse("http://h/a%2Fb"); eq(u.path, "/a/b"); eq(u.raw_path, "/a%2Fb")
			eq(url.parse("http://h/a%20b").raw_path, nil)
			u.path = "/c"; eq(url.build(u), "http://h/c")`},
		luaCase{"an unknown part raises", `local e = fails(url.build, { scheme = "https", hostname = "h" })
			eq(e:find('unknown option "hostname"', 1, true) ~= nil, true, e)`},
		luaCase{"a scheme that is not one raises", `for _, scheme in ipairs({ "javascript:alert(1)//", "http://evil.example/#", "ht tp", "1http", "+x", "h\0" }) do
				local e = fails(url.build, { scheme = scheme, host = "h", path = "/p" })
				eq(e:find("url.build: scheme must be", 1, true) ~= nil, true, e)
			end
			eq(url.build({ scheme = "svn+ssh", host = "h" }), "svn+ssh://h"); eq(url.build({ scheme = "A1.-", path = "x" }), "A1.-:x")
			eq(url.build({ host = "h", path = "/p" }), "//h/p")`},
		luaCase{"a query added to an opaque URL", `local u = url.parse("mailto:ann@example.com"); u.query = { subject = "hi there" }
			eq(url.build(u), "mailto:ann@example.com?subject=hi+there")`},
	)
	runCases(t, L, cases)
}

// TestURLQueryRefusesTables: a value of url.query is a string, number or
// boolean, or a list of them; a table that is not a list raises, naming
// the key (docs: "anything else raises, naming what"). One with string keys
// was taken as an empty list: its key vanished from the query.
func TestURLQueryRefusesTables(t *testing.T) {
	L, _ := newLua(t, nil)
	runCases(t, L, []luaCase{
		{"a map", `local err = fails(url.query, { a = { x = 1 } }); eq(err:find("url.query.a", 1, true) ~= nil, true, err)`},
		{"a list with a key", `fails(url.query, { a = { 1, 2, x = 3 } })`},
		{"in url.build", `fails(url.build, { scheme = "http", host = "h", query = { a = { x = 1 } } })`},
		{"lists still work", `eq(url.query({ a = { 1, 2 }, b = {} }), "a=1&a=2")`},
	})
}

// TestJSONEncodeEscapesWithinTheBudget: json.encode refuses a text whose
// escapes take it past the budget before building it. A control character
// is six bytes escaped ("\u0001"), and the encoder checked a string's room
// by its raw length (a key's not at all): a 4 MiB string, or key, of them
// under a 16 MiB budget allocated 146 MiB before it was refused; 60 MiB
// under the default 64 MiB, some 2 GiB.
func TestJSONEncodeEscapesWithinTheBudget(t *testing.T) {
	for _, code := range []string{
		`refused(json.encode(S))`,
		`refused(json.encode({ [S] = 1 }))`,
		`refused(json.encode({ a = { [S] = 1 } }))`,
	} {
		t.Run(code, func(t *testing.T) {
			L, _ := newLua(t, nil)
			L.SetMemoryLimit(16 << 20)
			if err := L.DoString(`S = string.rep("\1", 4 * 2^20)
				function refused(v, err) eq(v, nil); eq(err:find("memory", 1, true) ~= nil, true, err) end`); err != nil {
				t.Fatal(err)
			}
			runBounded(t, L, code)
			// What fits is still encoded.
			if err := L.DoString(`eq(#json.encode(string.rep("\1", 2^20)), 6 * 2^20 + 2)
				eq(json.encode({ ["\1"] = "\n" }), '{"\\u0001":"\\n"}')`); err != nil {
				t.Errorf("%s", strings.TrimSpace(err.Error()))
			}
		})
	}
}

// TestJSONEncodeErrorsQuoteLongKeysShort: the path in an encode error shows
// a long key by its start. It quoted the whole key: a 1 MiB key of control
// characters made a 4 MiB message (and allocated 68 MiB to build it), three
// nested ones 8 MiB, of which a script or a log can make nothing.
func TestJSONEncodeErrorsQuoteLongKeysShort(t *testing.T) {
	L, _ := newLua(t, nil)
	L.SetMemoryLimit(16 << 20)
	if err := L.DoString(`S = string.rep("\1", 2^20); W = string.rep("w", 2^20)`); err != nil {
		t.Fatal(err)
	}
	runCases(t, L, []luaCase{
		{"a key to quote", `local v, err = json.encode({ [S] = print }); eq(v, nil)
			eq(#err < 1024, true, #err .. " bytes"); eq(err:find("cannot encode a function", 1, true) ~= nil, true, err)`},
		{"nested", `local K = S:sub(1, 2^18); local v, err = json.encode({ [K] = { [K] = { [K] = print } } }); eq(v, nil)
			eq(#err < 1024, true, #err .. " bytes"); eq(err:find("cannot encode a function", 1, true) ~= nil, true, err)`},
		{"an identifier", `local v, err = json.encode({ [W] = print }); eq(v, nil)
			eq(#err < 1024, true, #err .. " bytes"); eq(err:find("cannot encode a function", 1, true) ~= nil, true, err)`},
		{"short keys in full", `local v, err = json.encode({ ["a b"] = { f = print } }); eq(err, 'json: value["a b"].f: cannot encode a function')`},
	})
}

// TestJSONDecodeChargesEmptyContainers: a decoded value is charged what it
// holds, empty arrays and objects included, so that the state it is decoded
// into stays within its limit. Only their slot in the list around them
// was charged: a 16 MiB state decoded 300,000 of them, which its own
// measure puts at 33 MiB (a 64 MiB one holds some 450 MiB this way).
func TestJSONDecodeChargesEmptyContainers(t *testing.T) {
	const limit = 16 << 20
	for _, item := range []string{"[]", "{}"} {
		t.Run(item, func(t *testing.T) {
			L, _ := newLua(t, nil)
			L.SetMemoryLimit(limit)
			L.SetGlobal("TEXT", lstr("["+strings.Repeat(item+",", 300000)+"0]"))
			if err := L.DoString(`V, ERR = json.decode(TEXT)`); err != nil {
				t.Fatal(err)
			}
			if L.GetGlobal("V") == lua.LNil {
				if msg := L.GetGlobal("ERR").String(); !strings.Contains(msg, "memory") {
					t.Errorf("refused with %q, want the budget's message", msg)
				}
			} else if used := L.MemoryUsage(); used > limit {
				t.Errorf("the state holds %d MiB under a %d MiB limit", used>>20, limit>>20)
			}
			// What fits is still decoded.
			if err := L.DoString(`V = nil; local v = json.decode("[" .. string.rep("[],", 1000) .. "{}]"); eq(#v, 1001)
				eq(json.encode(v[1]), "[]"); eq(json.encode(v[1001]), "{}")`); err != nil {
				t.Errorf("%s", strings.TrimSpace(err.Error()))
			}
		})
	}
}

// TestURLParseMessagesNameTheModule: url.parse's messages name the module
// once, not Go's package: "url: net/url: invalid control character in URL".
func TestURLParseMessagesNameTheModule(t *testing.T) {
	L, _ := newLua(t, nil)
	runCases(t, L, []luaCase{
		{"control character", `local v, err = url.parse("http://h/\n"); eq(v, nil); eq(err, "url: invalid control character in URL")`},
		{"others unchanged", `local v, err = url.parse("http://[::1"); eq(err, "url: missing ']' in host")`},
	})
}

// runBounded runs code on L, whose budget is 16 MiB, and fails when it
// raises or when the process allocated more than 64 MiB meanwhile (not
// judged under the race detector, whose shadow memory counts).
func runBounded(t *testing.T, L *lua.LState, code string) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := L.DoString(code); err != nil {
		t.Errorf("%s", strings.TrimSpace(err.Error()))
	}
	runtime.ReadMemStats(&after)
	if mib := (after.TotalAlloc - before.TotalAlloc) >> 20; mib > 64 && !raceEnabled {
		t.Errorf("allocated %d MiB under a 16 MiB budget", mib)
	}
}

// TestBase64Padding: padding, when there is some, completes the text to a
// multiple of 4 characters with one or two '=' (RFC 4648 §3.2, §4, §5), in
// both alphabets, spaces and line breaks aside. Every run of '=' at the end
// was dropped before decoding: "Zg=", "Zm9v==", "Zg=====" and "=" decoded
// (to "f", "foo", "f" and "").
func TestBase64Padding(t *testing.T) {
	L, _ := newLua(t, nil)
	var cases []luaCase
	for _, c := range []struct{ text, want string }{
		{"Zg==", "f"}, {"Zm8=", "fo"}, {"Zm9v", "foo"}, {"Zg", "f"}, {"Zm8", "fo"},
		{"Zm9vYg==", "foob"}, {"Zm9v\nYg=\n=", "foob"}, {" Zg == ", "f"}, {"", ""},
	} {
		cases = append(cases, luaCase{"decodes " + c.text, fmt.Sprintf(`eq(base64.decode(%[1]q), %[2]q)
			eq(base64.url_decode(%[1]q), %[2]q)`, c.text, c.want)})
	}
	for _, text := range []string{"Zg=", "Zg===", "Zg=====", "Zm9v=", "Zm9v==", "Zm8==", "=", "==", "====", "Zm9vZ===", "Zg=\n"} {
		cases = append(cases, luaCase{"refuses " + text, fmt.Sprintf(`for _, f in ipairs({ base64.decode, base64.url_decode }) do
			local v, err = f(%q); eq(v, nil); eq(err:sub(1, 20), "base64: bad padding:")
		end`, text)})
	}
	runCases(t, L, cases)
}

// TestTimeParseZones: time.parse reads a text in UTC whatever the server's
// local zone, and refuses a zone abbreviation whose offset it cannot know.
// Go's time.Parse looked an abbreviation up in the local zone, and read one
// it did not find there as UTC: "10:00:00 PST" was 10:00 UTC on a server in
// UTC and 18:00 UTC on one in Los Angeles, "EST" was UTC on both, and
// "15:00:00 GMT+3" was 15:00 UTC.
func TestTimeParseZones(t *testing.T) {
	L, _ := newLua(t, nil)
	const noon = 1709208000 // 2024-02-29T12:00:00Z
	cases := []luaCase{
		{"RFC 3339 offsets", fmt.Sprintf(`eq(time.parse("2024-02-29T12:00:00Z"), %[1]d)
			eq(time.parse("2024-02-29T14:00:00+02:00"), %[1]d); eq(time.parse("2024-02-29T04:00:00-08:00"), %[1]d)`, noon)},
		{"no zone is UTC", fmt.Sprintf(`eq(time.parse("2024-02-29 12:00", "2006-01-02 15:04"), %d)`, noon)},
		{"UTC and GMT", fmt.Sprintf(`eq(time.parse("Thu, 29 Feb 2024 12:00:00 GMT", "RFC1123"), %[1]d)
			eq(time.parse("Thu Feb 29 12:00:00 UTC 2024", "UnixDate"), %[1]d)`, noon)},
		{"a number beside the abbreviation", fmt.Sprintf(`eq(time.parse("Thu Feb 29 04:00:00 -0800 PST 2024", "Mon Jan _2 15:04:05 -0700 MST 2006"), %[1]d)
			eq(time.parse("Thu Feb 29 12:00:00 +0000 WET 2024", "Mon Jan _2 15:04:05 -0700 MST 2006"), %[1]d)`, noon)},
	}
	for _, text := range []string{"Thu, 29 Feb 2024 12:00:00 PST", "Thu, 29 Feb 2024 12:00:00 EST", "Thu, 29 Feb 2024 12:00:00 CET", "Thu, 29 Feb 2024 15:00:00 GMT+3"} {
		cases = append(cases, luaCase{"refuses " + text, fmt.Sprintf(`local v, err = time.parse(%q, "RFC1123"); eq(v, nil)
			assert(err:find("unknown offset of the time zone", 1, true), err)`, text)})
	}
	// The same outcomes on a server whose local zone has these abbreviations.
	for _, zone := range []string{"UTC", "America/Los_Angeles", "America/New_York", "Europe/Berlin"} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Logf("no zone %s here: %v", zone, err)
			continue
		}
		t.Run(zone, func(t *testing.T) {
			saved := time.Local
			time.Local = loc
			defer func() { time.Local = saved }()
			runCases(t, L, cases)
		})
	}
}

// TestReListsAreArrays: the lists re.find_all and re.split return are
// marked as arrays, as a decoded JSON array is, so that a tool returning
// them writes [] when they are empty: no match, or a count of 0, encoded as
// {} (an object, where the tool's output schema says array).
func TestReListsAreArrays(t *testing.T) {
	L, _ := newLua(t, nil)
	runCases(t, L, []luaCase{
		{"find_all, no match", `eq(json.encode(re.find_all("\\d", "abc")), "[]")`},
		{"find_all, n = 0", `eq(json.encode(re.find_all("\\d", "a1", 0)), "[]")`},
		{"find_all, captures", `eq(json.encode(re.find_all("(\\w)=(\\d)", "none")), "[]")
			eq(json.encode(re.find_all("(\\w)=(\\d)", "a=1")), '[["a","1"]]')`},
		{"find_all, matches", `eq(json.encode(re.find_all("\\d", "a1b2")), '["1","2"]')`},
		{"split, n = 0", `eq(json.encode(re.split(",", "a,b", 0)), "[]")`},
		{"split", `eq(json.encode(re.split(",", "a,b")), '["a","b"]'); eq(json.encode(re.split(",", "")), '[""]')`},
		{"still plain lists", `local m = re.find_all("\\d", "a1b2"); m[3] = "x"; eq(#m, 3); table.insert(m, "y"); eq(m[4], "y")`},
	})
}
