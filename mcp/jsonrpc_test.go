package mcp

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDecodeMessage(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		code     int
		id       string // raw id; "" = none
		method   string
		params   string
		response bool
	}{
		{name: "request", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"x"}}`, id: "1", method: "tools/list", params: `{"cursor":"x"}`},
		{name: "string id", body: `{"jsonrpc":"2.0","id":"a-1","method":"ping"}`, id: `"a-1"`, method: "ping"},
		{name: "negative id", body: `{"jsonrpc":"2.0","id":-7,"method":"ping"}`, id: "-7", method: "ping"},
		{name: "whitespace", body: " \n{ \"method\" : \"ping\" , \"id\" : 3 , \"jsonrpc\" : \"2.0\" }\n", id: "3", method: "ping"},
		{name: "notification", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, method: "notifications/initialized"},
		{name: "null id is a notification", body: `{"jsonrpc":"2.0","id":null,"method":"x"}`, method: "x"},
		{name: "absent params", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, id: "1", method: "ping"},
		{name: "escaped method", body: `{"jsonrpc":"2.0","id":1,"method":"tools\/call"}`, id: "1", method: "tools/call"},
		{name: "escaped key", body: `{"jsonrpc":"2.0","id":1,"\u006dethod":"ping"}`, id: "1", method: "ping"},
		{name: "nested params", body: `{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1,{"b":"}"}],"c":"\""}}`, id: "1", method: "m", params: `{"a":[1,{"b":"}"}],"c":"\""}`},
		{name: "response result", body: `{"jsonrpc":"2.0","id":"s-1","result":{}}`, id: `"s-1"`, response: true},
		{name: "response error", body: `{"jsonrpc":"2.0","id":"s-1","error":{"code":-1,"message":"no"}}`, id: `"s-1"`, response: true},

		{name: "empty", body: ``, code: CodeParseError},
		{name: "blank", body: "  \n", code: CodeParseError},
		{name: "garbage", body: `{"jsonrpc":`, code: CodeParseError},
		{name: "trailing garbage", body: `{"jsonrpc":"2.0","id":1,"method":"ping"} x`, code: CodeParseError},
		{name: "scalar", body: `42`, code: CodeInvalidRequest},
		{name: "batch", body: `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, code: CodeInvalidRequest},
		{name: "missing method", body: `{"jsonrpc":"2.0","id":1}`, code: CodeInvalidRequest, id: "1"},
		{name: "method not string", body: `{"jsonrpc":"2.0","id":1,"method":5}`, code: CodeInvalidRequest, id: "1"},
		{name: "wrong version", body: `{"jsonrpc":"1.0","id":1,"method":"ping"}`, code: CodeInvalidRequest, id: "1"},
		{name: "missing version", body: `{"id":1,"method":"ping"}`, code: CodeInvalidRequest, id: "1"},
		{name: "params array", body: `{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}`, code: CodeInvalidRequest, id: "1"},
		{name: "params null", body: `{"jsonrpc":"2.0","id":1,"method":"m","params":null}`, code: CodeInvalidRequest, id: "1"},
		{name: "fractional id", body: `{"jsonrpc":"2.0","id":2.5,"method":"ping"}`, code: CodeInvalidRequest},
		{name: "exponent id", body: `{"jsonrpc":"2.0","id":1e2,"method":"ping"}`, code: CodeInvalidRequest},
		{name: "bool id", body: `{"jsonrpc":"2.0","id":true,"method":"ping"}`, code: CodeInvalidRequest},
		{name: "array id", body: `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, code: CodeInvalidRequest},
		{name: "object id", body: `{"jsonrpc":"2.0","id":{},"method":"ping"}`, code: CodeInvalidRequest},
		{name: "id not UTF-8", body: "{\"jsonrpc\":\"2.0\",\"id\":\"a\xffb\",\"method\":\"ping\"}", code: CodeInvalidRequest},
		{name: "longest id", body: `{"jsonrpc":"2.0","id":"` + strings.Repeat("i", maxIDBytes-2) + `","method":"ping"}`, id: `"` + strings.Repeat("i", maxIDBytes-2) + `"`, method: "ping"},
		{name: "id too long", body: `{"jsonrpc":"2.0","id":"` + strings.Repeat("i", maxIDBytes-1) + `","method":"ping"}`, code: CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m message
			code := decodeMessage([]byte(tt.body), &m)
			if code != tt.code {
				t.Fatalf("code = %d, want %d", code, tt.code)
			}
			if code != 0 {
				// An invalid message keeps a valid id, for the error to echo.
				if string(m.id) != tt.id {
					t.Fatalf("id = %s, want %q", m.id, tt.id)
				}
				return
			}
			if string(m.id) != tt.id || m.method != tt.method || string(m.params) != tt.params || m.response != tt.response {
				t.Fatalf("got id=%q method=%q params=%q response=%v", m.id, m.method, m.params, m.response)
			}
		})
	}
}

func TestEnvelopes(t *testing.T) {
	tests := []struct {
		name string
		got  []byte
		want string
	}{
		{"result", appendResult(nil, []byte("7"), []byte(`{"a":1}`)), `{"jsonrpc":"2.0","id":7,"result":{"a":1}}`},
		{"error", appendError(nil, []byte(`"x"`), -32601, "Method not found", nil), `{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"Method not found"}}`},
		{"error null id", appendError(nil, nil, -32700, "Parse error", nil), `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{"error data", appendErrorValue(nil, []byte("1"), &Error{Code: -32042, Message: "m", Data: []byte(`{"k":1}`)}), `{"jsonrpc":"2.0","id":1,"error":{"code":-32042,"message":"m","data":{"k":1}}}`},
		{"notification", appendNotification(nil, "notifications/x", []byte(`{}`)), `{"jsonrpc":"2.0","method":"notifications/x","params":{}}`},
		{"notification no params", appendNotification(nil, "n", nil), `{"jsonrpc":"2.0","method":"n"}`},
		{"request", appendRequest(nil, []byte(`"s-1"`), "roots/list", nil), `{"jsonrpc":"2.0","id":"s-1","method":"roots/list"}`},
	}
	for _, tt := range tests {
		if string(tt.got) != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, tt.got, tt.want)
		}
		if !json.Valid(tt.got) {
			t.Errorf("%s: not valid JSON", tt.name)
		}
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\`, "ctl\x00\x01\x1f\n\r\t", "héllo ☃ 𝄞", "bad\xffutf8\xc3", "sep\u2028\u2029", "<&>"} {
		got := appendString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%q -> %s: %v", s, got, err)
		}
		want := strings.ToValidUTF8(s, "\ufffd")
		if back != want {
			t.Errorf("%q round-trips to %q", s, back)
		}
	}
}

func TestMember(t *testing.T) {
	obj := []byte(`{"a":1,"b":{"c":[1,2]},"a":"last","s":"x\"y"}`)
	if v, ok := member(obj, "a"); !ok || string(v) != `"last"` {
		t.Errorf("duplicate key: %s %v", v, ok)
	}
	if v, ok := member(obj, "b"); !ok || string(v) != `{"c":[1,2]}` {
		t.Errorf("object member: %s", v)
	}
	if s, ok := stringMember(obj, "s"); !ok || s != `x"y` {
		t.Errorf("escaped string: %q", s)
	}
	if _, ok := member(obj, "zz"); ok {
		t.Error("missing key found")
	}
	if _, ok := member([]byte(`[1]`), "a"); ok {
		t.Error("member of an array")
	}
}

// FuzzDecode checks that the decoder never panics, and that whatever it
// accepts is a JSON object whose members agree with encoding/json.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1},"_meta":{"progressToken":"t"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`,
		`{"jsonrpc":"2.0","id":"s-1","result":{"action":"accept"}}`,
		`{"jsonrpc":"2.0","id":"s-1","error":{"code":-1,"message":"x"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":2.5,"method":"ping"}`,
		`{"\u006aSONrpc":"2.0"}`, `{"a":"\\\"}"}`, `"str"`, `{`, ``, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var m message
		code := decodeMessage(body, &m)
		if code != 0 {
			// An Invalid Request echoes the id it could read: the answer must
			// still be JSON.
			if out := appendError(nil, m.id, code, "Invalid Request", nil); !json.Valid(out) {
				t.Fatalf("error envelope for %q is not JSON: %s", body, out)
			}
			return
		}
		var ref map[string]json.RawMessage
		if err := json.Unmarshal(body, &ref); err != nil {
			t.Fatalf("accepted a body encoding/json rejects: %q: %v", body, err)
		}
		if !m.response {
			var method string
			if err := json.Unmarshal(ref["method"], &method); err != nil || method != m.method {
				t.Fatalf("method %q, encoding/json says %q (%v)", m.method, method, err)
			}
		}
		if m.id != nil && !json.Valid(m.id) {
			t.Fatalf("id %q is not JSON", m.id)
		}
		if m.params != nil && kindOf(m.params) != '{' {
			t.Fatalf("params %q is not an object", m.params)
		}
		// The encoders must produce valid JSON for any decoded id and method.
		out := appendError(nil, m.id, -1, m.method, nil)
		if !json.Valid(out) {
			t.Fatalf("error envelope is not JSON: %s", out)
		}
		if !json.Valid(appendNotification(nil, m.method, m.params)) {
			t.Fatalf("notification envelope is not JSON")
		}
	})
}

// TestProgressToken checks that only a string or an integer of an id's length
// is a progress token: anything else would go back in every
// notifications/progress, where the schema allows only those.
func TestProgressToken(t *testing.T) {
	long := `"` + strings.Repeat("t", maxIDBytes) + `"`
	for _, tt := range []struct {
		token string // "" = no progressToken member
		want  string // "" = no token
	}{
		{`"t1"`, `"t1"`},
		{`7`, `7`},
		{`-7`, `-7`},
		{`0`, `0`},
		{`""`, `""`},
		{``, ``},
		{`null`, `null`},
		{`1.5`, `1.5`},
		{`1e3`, `1e3`},
		{`true`, `true`},
		{`{}`, `{}`},
		{`["t"]`, `["t"]`},
		{long, ``},
	} {
		params := `{"name":"x","_meta":{}}`
		if tt.token != "" {
			params = `{"name":"x","_meta":{"progressToken":` + tt.token + `}}`
		}
		if got := string(progressToken([]byte(params))); got != tt.want {
			t.Errorf("progressToken(%.40s) = %q, want %q", tt.token, got, tt.want)
		}
	}
}
