package hostlib

import (
	"testing"
)

func TestJSON(t *testing.T) {
	L, _ := newLua(t, nil)
	runCases(t, L, []luaCase{
		{"encode", `eq(json.encode({ a = 1, b = { 1, 2 }, s = "x" }), '{"a":1,"b":[1,2],"s":"x"}')`},
		{"markers", `eq(json.encode(json.array({})), "[]"); eq(json.encode(json.object()), "{}"); eq(json.encode(json.null), "null")`},
		{"indent", `eq(json.encode({ x = { 1 } }, { indent = true }), '{\n  "x": [\n    1\n  ]\n}')`},
		{"decode", `local v = json.decode('{"a":[1,2.5,null],"b":"\\u00e9"}')
			eq(v.a[1], 1); eq(v.a[2], 2.5); eq(v.a[3], json.null); eq(v.b, "é")
			eq(json.encode(json.decode("[]")), "[]")`},
		{"decode failure", `local v, err = json.decode("{"); eq(v, nil); eq(err:sub(1, 19), "json: invalid JSON ")`},
		{"encode failure", `local v, err = json.encode({ f = print }); eq(v, nil); eq(err, "json: value.f: cannot encode a function")`},
		{"encode invalid UTF-8", `local v, err = json.encode("\255"); eq(v, nil); eq(err:sub(1, 6), "json: ")`},
		{"wrong types raise", `fails(json.decode, {}); fails(json.encode, 1, { indent = "yes" }); fails(json.array, 5)`},
	})
}

func TestBase64(t *testing.T) {
	L, _ := newLua(t, nil)
	runCases(t, L, []luaCase{
		{"standard", `eq(base64.encode("hello"), "aGVsbG8="); eq(base64.decode("aGVsbG8="), "hello")
			eq(base64.decode("aGVs\nbG8"), "hello"); eq(base64.encode(""), ""); eq(base64.decode(""), "")`},
		{"url-safe", `eq(base64.url_encode("\255\254\253"), "__79"); eq(base64.url_decode("__79"), "\255\254\253")
			eq(base64.url_encode("\255"), "_w"); eq(base64.url_decode("_w=="), "\255")`},
		{"binary round trip", `local s = ""; for i = 0, 255 do s = s .. string.char(i) end
			eq(base64.decode(base64.encode(s)), s); eq(base64.url_decode(base64.url_encode(s)), s)`},
		{"failures", `local v, err = base64.decode("!!!!"); eq(v, nil); eq(err:sub(1, 8), "base64: ")
			v, err = base64.url_decode("a+b/"); eq(v, nil); eq(err:sub(1, 8), "base64: ")
			v, err = base64.decode("a"); eq(v, nil)`},
		// Go's "illegal base64 data at input byte N" counted from the text
		// without its spaces (and strings.Map made an invalid byte three).
		{"failures say where, in the text given", `local v, err = base64.decode("Zm9v\nYm!y"); eq(v, nil); eq(err, "base64: invalid character '!' at byte 7")
			v, err = base64.decode("Zm 9v Y"); eq(err, "base64: the text ends in a lone character (byte 6): it is cut short")
			v, err = base64.decode("\255\255 Zm9v\255"); eq(err, "base64: invalid byte 0xff at byte 0")
			v, err = base64.decode("Zm9v \255"); eq(err, "base64: invalid byte 0xff at byte 5")
			v, err = base64.url_decode("ab+/"); eq(err, "base64: invalid character '+' at byte 2")`},
		{"wrong types raise", `fails(base64.encode, {}); fails(base64.decode)`},
	})
}

func TestCrypto(t *testing.T) {
	L, _ := newLua(t, nil)
	runCases(t, L, []luaCase{
		{"digests", `
			eq(crypto.sha256("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
			eq(crypto.sha1("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d")
			eq(crypto.md5(""), "d41d8cd98f00b204e9800998ecf8427e")
			eq(crypto.sha512("abc"):sub(1, 16), "ddaf35a193617aba")`},
		{"hmac", `eq(crypto.hmac_sha256("key", "The quick brown fox jumps over the lazy dog"),
			"f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8")
			eq(crypto.hmac_sha1("key", "The quick brown fox jumps over the lazy dog"), "de7c9b85b8b78aa6bc8a7a36f70a90701c9db4d9")`},
		{"raw", `eq(#crypto.raw.sha256("abc"), 32); eq(#crypto.raw.md5("abc"), 16)
			eq(#crypto.raw.hmac_sha256("k", "m"), 32)
			local hex = crypto.raw.sha1("abc"):gsub(".", function(c) return string.format("%02x", c:byte()) end)
			eq(hex, crypto.sha1("abc"))`},
		{"random", `eq(#crypto.random_bytes(16), 16); eq(#crypto.random_bytes(0), 0)
			local h = crypto.random_hex(8); eq(#h, 16); eq(h:match("^[0-9a-f]+$"), h)
			if crypto.random_hex(16) == crypto.random_hex(16) then error("random_hex repeats") end`},
		{"uuid", `local u = crypto.uuid()
			eq(u:match("^%x%x%x%x%x%x%x%x%-%x%x%x%x%-4%x%x%x%-[89ab]%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$"), u)
			if u == crypto.uuid() then error("uuid repeats") end`},
		{"wrong arguments raise", `fails(crypto.random_bytes, -1); fails(crypto.random_bytes, 2 ^ 21); fails(crypto.sha256, {})
			for _, n in ipairs({1.5, -0.5, 0 / 0, 1 / 0, -1 / 0, 2 ^ 63, 1e300}) do
			  local err = fails(function() return crypto.random_bytes(n) end)
			  assert(err:find("bad argument #1 to 'random_bytes' (an integer from 0 to 1048576 expected, got ", 1, true), err)
			  err = fails(function() return crypto.random_hex(n) end)
			  assert(err:find("bad argument #1 to 'random_hex' (an integer from 0 to 1048576 expected, got ", 1, true), err)
			end
			fails(crypto.hmac_sha256, "key")`},
	})
}

func TestTime(t *testing.T) {
	L, _ := newLua(t, nil)
	runCases(t, L, []luaCase{
		{"format", `eq(time.format(0), "1970-01-01T00:00:00Z"); eq(time.format(1.5, "RFC3339Nano"), "1970-01-01T00:00:01.5Z")
			eq(time.format(1704164645, "2006-01-02 15:04"), "2024-01-02 03:04"); eq(time.format(86400, "DateOnly"), "1970-01-02")`},
		{"parse", `eq(time.parse("2024-01-02T03:04:05Z"), 1704164645); eq(time.parse("2024-01-02", "DateOnly"), 1704153600)
			eq(time.parse("2024-01-02T03:04:05+01:00"), 1704164645 - 3600); eq(time.parse("1970-01-01T00:00:01.25Z"), 1.25)
			eq(time.parse(time.format(1704164645, "RFC1123"), "RFC1123"), 1704164645)`},
		{"HTTP dates", `eq(time.format(1704164645, "HTTP"), "Tue, 02 Jan 2024 03:04:05 GMT")
			eq(time.parse("Tue, 02 Jan 2024 03:04:05 GMT", "HTTP"), 1704164645)`},
		{"parse failure", `local v, err = time.parse("yesterday"); eq(v, nil); eq(err:sub(1, 6), "time: ")`},
		{"now", `local now, ms = time.now(), time.ms()
			if now < 1.7e9 or math.abs(now * 1000 - ms) > 5000 then error("now " .. now .. " ms " .. ms) end
			eq(ms % 1, 0)`},
		{"fractions as written", `eq(time.format(1700000000.123, "2006-01-02T15:04:05.000Z07:00"), "2023-11-14T22:13:20.123Z")
			eq(time.format(time.parse("2023-11-14T22:13:20.123Z"), "RFC3339Nano"), "2023-11-14T22:13:20.123Z")
			eq(time.format(-0.25, "RFC3339Nano"), "1969-12-31T23:59:59.75Z"); eq(time.format(1e-9, "RFC3339Nano"), "1970-01-01T00:00:00.000000001Z")`},
		{"wrong arguments raise", `fails(time.format, "x"); fails(time.format, 0 / 0); fails(time.parse, {})`},
		{"RFC 3339 years", `eq(time.format(253402300799), "9999-12-31T23:59:59Z"); eq(time.format(-62167219200), "0000-01-01T00:00:00Z")
			eq(time.parse(time.format(-62167219200)), -62167219200)
			for _, t in ipairs({253402300800, -62167219201, 1e14, -1e14}) do
			  for _, layout in ipairs({"RFC3339", "RFC3339Nano", "2006-01-02T15:04:05Z07:00"}) do
			    local err = fails(function() return time.format(t, layout) end)
			    assert(err:find("bad argument #1 to 'format'", 1, true) and err:find("year 0 to 9999", 1, true), err)
			  end
			end
			eq(time.format(253402300800, "2006"), "10000")`},
	})
}

func TestRe(t *testing.T) {
	L, _ := newLua(t, nil)
	runCases(t, L, []luaCase{
		{"match", `local a, b = re.match("(\\w+)@(\\w+)", "mail: ann@example now"); eq(a, "ann"); eq(b, "example")
			eq(re.match("\\d+", "ab12cd"), "12"); eq(re.match("\\d+", "abc"), nil)
			local x, y = re.match("(a)|(b)", "b"); eq(x, ""); eq(y, "b")`},
		{"find_all", `local m = re.find_all("\\d", "a1b2c3"); eq(#m, 3); eq(m[3], "3")
			eq(#re.find_all("\\d", "a1b2c3", 2), 2); eq(#re.find_all("\\d", "abc"), 0)
			local p = re.find_all("(\\w)=(\\d)", "a=1, b=2"); eq(#p, 2); eq(p[2][1], "b"); eq(p[2][2], "2")`},
		{"replace", `eq(re.replace("(\\w+)@(\\w+)", "ann@example", "$2 at ${1}x"), "example at annx")
			eq(re.replace("a", "banana", "$$"), "b$n$n$")`},
		{"split", `local s = re.split(",\\s*", "a, b,c"); eq(#s, 3); eq(s[2], "b")
			s = re.split(",", "a,b,c", 2); eq(#s, 2); eq(s[2], "b,c")`},
		{"test", `eq(re.test("^\\d+$", "123"), true); eq(re.test("^\\d+$", "12a"), false)
			eq(re.test("(?i)HELLO", "hello"), true)`},
		{"bad pattern", `for _, f in ipairs({ re.match, re.find_all, re.split, re.test }) do
				local v, err = f("(", "x"); eq(v, nil); eq(err, "re: error parsing regexp: missing closing ): ` + "`(`" + `")
			end
			local v, err = re.replace("(", "x", "y"); eq(v, nil)
			v, err = re.test("(" .. string.rep("a", 10000), "x"); eq(v, nil)
			eq(err, "re: error parsing regexp: missing closing ): ` + "`(" + `" .. string.rep("a", 63) .. "...` + "`" + `")
			v, err = re.test(string.rep("\195\169", 40) .. "\255", "x"); eq(v, nil)
			eq(err, "re: error parsing regexp: invalid UTF-8: ` + "`" + `\239\191\189` + "`" + `")
			v, err = re.test("\255" .. string.rep("a", 100), "x"); eq(v, nil)
			eq(err, "re: error parsing regexp: invalid UTF-8: ` + "`" + `\239\191\189" .. string.rep("a", 63) .. "...` + "`" + `")
			v, err = re.test("(" .. string.rep("\195\169", 40), "x"); eq(v, nil)
			eq(err, "re: error parsing regexp: missing closing ): ` + "`(" + `" .. string.rep("\195\169", 31) .. "...` + "`" + `")
			v, err = re.test("\\p{Nope}", "x"); eq(v, nil)`},
		{"bounds", `local v, err = re.test(string.rep("a", 16 * 1024 + 1), "a"); eq(v, nil); eq(err, "re: pattern longer than 16384 bytes")
			v, err = re.test("a", string.rep("a", 16 * 1024 * 1024 + 1)); eq(v, nil); eq(err, "re: input longer than 16777216 bytes")
			local many = string.rep("a", 100001)
			v, err = re.find_all("a", many); eq(v, nil); eq(err, "re: more than 100000 matches (pass n to take the first n)")
			eq(#re.find_all("a", many, 100001), 100000); eq(#re.find_all("a", many, 5), 5)
			v, err = re.split("a", many); eq(v, nil)`},
		{"linear on hostile input", `eq(re.test("(a+)+$", string.rep("a", 100000) .. "b"), false)`},
		{"counted repetitions", `eq(re.test("^[a-z]{1,100}$", string.rep("q", 100)), true); eq(re.test("^[a-z]{1,100}$", string.rep("q", 101)), false)
			eq(re.match("(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})", "ip 10.0.200.1"), "10")
			eq(re.test("^x.{1,1000}$", "xyz"), true); eq(re.test("^a{1000}$", string.rep("a", 1000)), true); eq(re.test("(?:ab{1,100}){1,10}", "abbb"), true)
			eq(re.test("\\pL{1,100}\\p{Greek}+[\\pL\\pN_-]*", "aαβ_1"), true)
			eq(re.test(string.rep("z", 16 * 1024), "zz"), false)`},
		{"wrong arguments raise", `fails(re.match, {}, "x"); fails(re.find_all, "a", "a", -1); fails(re.replace, "a", "b")
			for _, n in ipairs({1.5, -1, 0 / 0, -1 / 0}) do
			  local err = fails(function() return re.find_all("a", "aaa", n) end)
			  assert(err:find("bad argument #3 to 'find_all' (an integer count >= 0 expected", 1, true), err)
			  fails(function() return re.split("a", "aaa", n) end)
			end
			eq(#re.find_all("a", "aaa", 1 / 0), 3)`},
	})
}

func TestURL(t *testing.T) {
	L, _ := newLua(t, nil)
	runCases(t, L, []luaCase{
		{"encode", `eq(url.encode("a b&c=d/é"), "a+b%26c%3Dd%2F%C3%A9"); eq(url.decode("a+b%26c"), "a b&c")
			local v, err = url.decode("%zz"); eq(v, nil); eq(err, 'url: invalid URL escape "%zz"')`},
		{"parse", `local u = url.parse("https://ann:pw@example.com:8443/p/a%20b?x=1&y=2&y=3#frag")
			eq(u.scheme, "https"); eq(u.host, "example.com"); eq(u.port, 8443); eq(u.path, "/p/a b")
			eq(u.query.x, "1"); eq(u.query.y[1], "2"); eq(u.query.y[2], "3"); eq(u.fragment, "frag")
			eq(u.user, "ann"); eq(u.password, "pw"); eq(u.raw_query, "x=1&y=2&y=3")`},
		{"parse ipv6 and bare", `local u = url.parse("http://[::1]:80/"); eq(u.host, "::1"); eq(u.port, 80)
			u = url.parse("/just/a/path"); eq(u.scheme, nil); eq(u.host, nil); eq(u.path, "/just/a/path"); eq(next(u.query), nil)`},
		{"parse failure", `local v, err = url.parse(":nope"); eq(v, nil); eq(err, "url: missing protocol scheme")`},
		{"build", `eq(url.build({ scheme = "https", host = "example.com", path = "/a b", query = { q = "x y", n = 2 } }),
				"https://example.com/a%20b?n=2&q=x+y")
			eq(url.build({ scheme = "http", host = "::1", port = 8080 }), "http://[::1]:8080")
			eq(url.build({ scheme = "http", host = "h", path = "rel", query = "a=1", fragment = "f" }), "http://h/rel?a=1#f")
			eq(url.build({ scheme = "https", host = "h", user = "u", password = "p" }), "https://u:p@h")`},
		{"round trip", `local s = "https://example.com:8443/x/y?a=1&b=two#top"; eq(url.build(url.parse(s)), s)`},
		{"query", `eq(url.query({ b = 2, a = { 1, "x y" }, c = true }), "a=1&a=x+y&b=2&c=true"); eq(url.query({}), "")`},
		{"wrong types raise", `fails(url.query, { a = print }); fails(url.query, { [1] = "x" }); fails(url.build, { port = "80" })
			fails(url.build, { query = 5 }); fails(url.parse, {})
			fails(url.query, { a = 0/0 }); fails(url.query, { a = { 1, math.huge } }); fails(url.build, { host = "h", query = { a = -math.huge } })`},
	})
}
