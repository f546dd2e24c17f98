package mcp

import (
	"encoding/json"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/luamcp/luamcp/internal/jsontext"
)

// This file decodes the JSON-RPC messages a client POSTs and builds the
// envelopes the transport sends. Both sides work on raw bytes: the body is
// validated once with json.Valid, then its top-level members are sliced out by
// a small scanner, so the hot path needs no reflection.

// message is one decoded client message: a request, a notification, or a
// response to a request the server sent.
type message struct {
	// id is the raw JSON id of a request or response; nil for a notification
	// (absent or null id).
	id []byte
	// method is the method of a request or notification; "" for a response.
	method string
	// params is the raw params object; nil when absent.
	params []byte
	// result and errObj are the raw members of a response.
	result []byte
	errObj []byte
	// response marks a client answer to a server request (no method, and a
	// result or an error member).
	response bool
}

// notification reports whether m is a notification (no id, not a response).
func (m *message) notification() bool { return m.id == nil && !m.response }

// maxIDBytes bounds a message's id, as written (quotes and escapes
// included). Clients use counters and UUIDs; what the server keeps of a
// request for long (a listen stream, a pending answer) and repeats in each
// of its messages is its id, which a body of MaxBodyBytes could otherwise
// make megabytes long.
const maxIDBytes = 1024

// decodeMessage decodes one POSTed body into m. It returns 0 on success,
// CodeParseError for a body that is not JSON, or CodeInvalidRequest for JSON
// that is not a single valid JSON-RPC 2.0 message (batches included). Even
// then m.id holds the message's id when it is a valid one (a string or an
// integer), so that the error can echo it.
func decodeMessage(body []byte, m *message) int {
	body = trimSpace(body)
	if len(body) == 0 || !json.Valid(body) {
		return CodeParseError
	}
	if body[0] != '{' {
		return CodeInvalidRequest
	}
	var version, id, method []byte
	var hasMethod bool
	it := objectIter{data: body}
	for {
		key, val, ok := it.next()
		if !ok {
			break
		}
		switch string(key) {
		case "jsonrpc":
			version = val
		case "id":
			id = val
		case "method":
			method, hasMethod = val, true
		case "params":
			m.params = val
		case "result":
			m.result = val
		case "error":
			m.errObj = val
		}
	}
	// The id is read first, so that an Invalid Request answer can echo it.
	if id != nil {
		switch kindOf(id) {
		case 'n':
			id = nil
		case '"', '0':
		default:
			return CodeInvalidRequest
		}
		if id != nil && kindOf(id) == '0' && !isInteger(id) {
			return CodeInvalidRequest
		}
		if len(id) > maxIDBytes {
			return CodeInvalidRequest // not echoed either
		}
		// json.Valid lets invalid UTF-8 through, and answers echo the id
		// as it came: they would not be JSON.
		if !utf8.Valid(id) {
			return CodeInvalidRequest
		}
	}
	m.id = id
	if s, ok := jsonString(version); !ok || s != "2.0" {
		return CodeInvalidRequest
	}
	if !hasMethod {
		if m.result == nil && m.errObj == nil {
			return CodeInvalidRequest
		}
		m.response = true
		m.params = nil
		return 0
	}
	m.result, m.errObj = nil, nil
	name, ok := jsonString(method)
	if !ok {
		return CodeInvalidRequest
	}
	m.method = internMethod(name)
	if m.params != nil && kindOf(m.params) != '{' {
		return CodeInvalidRequest
	}
	return 0
}

// kindOf classifies a raw JSON value by its first byte: '{', '[', '"', 't'
// (true), 'f' (false), 'n' (null), or '0' for a number. 0 means empty.
func kindOf(v []byte) byte {
	if len(v) == 0 {
		return 0
	}
	switch c := v[0]; c {
	case '{', '[', '"', 't', 'f', 'n':
		return c
	}
	return '0'
}

// isInteger reports whether a raw JSON number has no fraction or exponent.
func isInteger(v []byte) bool {
	for _, c := range v {
		if c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// jsonString decodes a raw JSON string value. It reports false when v is not
// a string.
func jsonString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	inner := v[1 : len(v)-1]
	for _, c := range inner {
		if c == '\\' || c >= utf8.RuneSelf { // escapes, or UTF-8 to validate
			var s string
			if json.Unmarshal(v, &s) != nil {
				return "", false
			}
			return s, true
		}
	}
	return string(inner), true
}

// internMethod returns a constant for the well-known method names, so the
// hot path does not keep a copy of the name per request.
func internMethod(s string) string {
	switch s {
	case "tools/call":
		return "tools/call"
	case "tools/list":
		return "tools/list"
	case "ping":
		return "ping"
	case "initialize":
		return "initialize"
	case "notifications/initialized":
		return "notifications/initialized"
	case "notifications/cancelled":
		return "notifications/cancelled"
	case "resources/read":
		return "resources/read"
	case "resources/list":
		return "resources/list"
	case "prompts/get":
		return "prompts/get"
	case "prompts/list":
		return "prompts/list"
	}
	return s
}

// member returns the raw value of key in the raw JSON object obj.
func member(obj []byte, key string) ([]byte, bool) {
	if kindOf(obj) != '{' {
		return nil, false
	}
	var found []byte
	ok := false
	it := objectIter{data: obj}
	for {
		k, v, more := it.next()
		if !more {
			break
		}
		if string(k) == key {
			found, ok = v, true // the last duplicate wins, as in encoding/json
		}
	}
	return found, ok
}

// stringMember returns the string value of key in obj.
func stringMember(obj []byte, key string) (string, bool) {
	v, ok := member(obj, key)
	if !ok {
		return "", false
	}
	return jsonString(v)
}

// objectIter walks the members of a raw JSON object that json.Valid accepted.
type objectIter struct {
	data []byte
	pos  int
	key  []byte // scratch for keys with escapes
}

// next returns the next member. Keys are unescaped; values are raw slices of
// the input.
func (it *objectIter) next() (key, val []byte, ok bool) {
	d := it.data
	i := it.pos
	if i == 0 {
		i = skipSpace(d, 0)
		if i >= len(d) || d[i] != '{' {
			return nil, nil, false
		}
		i++
	}
	i = skipSpace(d, i)
	if i < len(d) && d[i] == ',' {
		i = skipSpace(d, i+1)
	}
	if i >= len(d) || d[i] != '"' {
		it.pos = len(d)
		return nil, nil, false
	}
	end := skipString(d, i)
	if d[end-1] != '"' || end-i < 2 {
		// An unterminated key: only in bytes json.Valid refused, which
		// callers never pass; stop rather than read past them.
		it.pos = len(d)
		return nil, nil, false
	}
	rawKey := d[i:end]
	key = rawKey[1 : len(rawKey)-1]
	for _, c := range key {
		if c == '\\' {
			var s string
			if json.Unmarshal(rawKey, &s) == nil {
				it.key = append(it.key[:0], s...)
				key = it.key
			}
			break
		}
	}
	i = skipSpace(d, end)
	if i >= len(d) || d[i] != ':' {
		it.pos = len(d)
		return nil, nil, false
	}
	i = skipSpace(d, i+1)
	vend := skipValue(d, i)
	val = d[i:vend]
	it.pos = vend
	return key, val, true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(d []byte, i int) int {
	for i < len(d) && isSpace(d[i]) {
		i++
	}
	return i
}

func trimSpace(d []byte) []byte {
	i := skipSpace(d, 0)
	j := len(d)
	for j > i && isSpace(d[j-1]) {
		j--
	}
	return d[i:j]
}

// skipString returns the index just past the string starting at d[i] == '"'.
func skipString(d []byte, i int) int {
	for i++; i < len(d); i++ {
		switch d[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(d)
}

// skipValue returns the index just past the value starting at d[i].
func skipValue(d []byte, i int) int {
	if i >= len(d) {
		return i
	}
	switch d[i] {
	case '"':
		return skipString(d, i)
	case '{', '[':
		depth := 0
		for i < len(d) {
			switch d[i] {
			case '"':
				i = skipString(d, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(d) {
		switch d[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// Envelopes.

var nullID = []byte("null")

// appendResult appends {"jsonrpc":"2.0","id":<id>,"result":<result>}.
func appendResult(dst, id, result []byte) []byte {
	if id == nil {
		id = nullID
	}
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"result":`...)
	dst = append(dst, result...)
	return append(dst, '}')
}

// appendError appends {"jsonrpc":"2.0","id":<id>,"error":{"code":..,"message":..}}.
// data is added when it is not nil.
func appendError(dst, id []byte, code int, msg string, data []byte) []byte {
	if id == nil {
		id = nullID
	}
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	dst = append(dst, `,"message":`...)
	dst = appendString(dst, msg)
	if data != nil {
		dst = append(dst, `,"data":`...)
		dst = append(dst, data...)
	}
	return append(dst, "}}"...)
}

// appendErrorValue appends the error response for e.
func appendErrorValue(dst, id []byte, e *Error) []byte {
	var data []byte
	if len(e.Data) > 0 && json.Valid(e.Data) {
		data = e.Data
	}
	return appendError(dst, id, e.Code, e.Message, data)
}

// appendNotification appends {"jsonrpc":"2.0","method":..,"params":..};
// params is left out when nil.
func appendNotification(dst []byte, method string, params []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","method":`...)
	dst = appendString(dst, method)
	if params != nil {
		dst = append(dst, `,"params":`...)
		dst = append(dst, params...)
	}
	return append(dst, '}')
}

// appendRequest appends {"jsonrpc":"2.0","id":..,"method":..,"params":..}.
func appendRequest(dst, id []byte, method string, params []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"method":`...)
	dst = appendString(dst, method)
	if params != nil {
		dst = append(dst, `,"params":`...)
		dst = append(dst, params...)
	}
	return append(dst, '}')
}

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD.
func appendString(dst []byte, s string) []byte {
	dst, _ = jsontext.AppendString(dst, s)
	return dst
}

// Pooled buffers for encoded responses and events.

var bufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, 2048)
	return &b
}}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if b == nil || cap(*b) > 256<<10 {
		return
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}
