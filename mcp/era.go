package mcp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// This file decides which protocol era a POST belongs to and checks what the
// 2026-07-28 era asks of every request: the per-request _meta and the
// Mcp-* headers that mirror the body.
//
// Both eras share one endpoint. A request is of the stateless 2026-07-28
// era when its MCP-Protocol-Version header names a version that is not a
// 2025 one (or, without the header, when its params carry the era's
// _meta protocol version); everything else (initialize, requests with
// Mcp-Session-Id, header-less 2025 clients) is the session era.

// era is the protocol era a request is served in.
type era uint8

const (
	eraSession   era = 1 << iota // 2025-11-25 and before: initialize, optional sessions
	eraStateless                 // 2026-07-28: per-request _meta, no session
	// eraUnknown is a request whose MCP-Protocol-Version neither era
	// speaks, without the 2026-07-28 _meta: it is refused (400, -32022).
	eraUnknown
)

// Protocol versions. supportedVersions is the one list every answer that
// names versions is built from (server/discover, -32022, the 2025 era's 400).
const (
	versionStateless = "2026-07-28"
	latestVersion    = "2025-11-25"
	// defaultHeaderVersion is what a request without MCP-Protocol-Version
	// speaks.
	defaultHeaderVersion = "2025-03-26"
)

var supportedVersions = []string{versionStateless, latestVersion, "2025-06-18", defaultHeaderVersion}

// supportedVersionsJSON is supportedVersions encoded, for the answers.
var supportedVersionsJSON, _ = json.Marshal(supportedVersions)

// sessionEraVersion reports whether v is a 2025-era version luamcp speaks.
func sessionEraVersion(v string) bool {
	switch v {
	case latestVersion, "2025-06-18", defaultHeaderVersion:
		return true
	}
	return false
}

// statelessEraVersion reports whether v is a stateless-era version luamcp
// speaks.
func statelessEraVersion(v string) bool { return v == versionStateless }

// Keys of the 2026-07-28 per-request _meta.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaLogLevel           = "io.modelcontextprotocol/logLevel"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
	metaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
)

// eraOf returns the era of a POSTed message: a request whose _meta names
// its protocol version is the 2026-07-28 era's, whatever its header says
// (readRequestMeta refuses a header that differs, -32020).
func eraOf(r *http.Request, m *message) era {
	meta, _ := member(m.params, "_meta")
	if _, hasMeta := member(meta, metaProtocolVersion); hasMeta {
		return eraStateless
	}
	if v, ok := r.Header["Mcp-Protocol-Version"]; ok && len(v) > 0 {
		switch {
		case sessionEraVersion(v[0]):
			return eraSession
		case statelessEraVersion(v[0]):
			return eraStateless
		}
		return eraUnknown
	}
	return eraSession
}

// unsupportedVersion returns the -32022 error for version.
func unsupportedVersion(version string) *Error {
	data := append([]byte(`{"supported":`), supportedVersionsJSON...)
	data = append(data, `,"requested":`...)
	data = appendString(data, version)
	data = append(data, '}')
	return &Error{Code: CodeUnsupportedProtocolVersion, Message: msgUnsupportedVersion, Data: data}
}

// requestMeta is what a 2026-07-28 request says about its client.
type requestMeta struct {
	version string
	caps    json.RawMessage // the clientCapabilities object
	client  clientCaps
	// tasks is whether the client declared the tasks extension
	// (capabilities.extensions["io.modelcontextprotocol/tasks"]).
	tasks bool
	// logLevel is the severity notifications/message must reach; noLogs
	// when the request asked for none.
	logLevel int
}

// noLogs is requestMeta.logLevel when the request named no log level: the
// era sends no log messages then.
const noLogs = 1 << 10

// statelessError is an answer refusing a 2026-07-28 request before it runs,
// with its HTTP status.
type statelessError struct {
	status int
	err    *Error
}

func badRequest(code int, msg string, data []byte) *statelessError {
	return &statelessError{status: http.StatusBadRequest, err: &Error{Code: code, Message: msg, Data: data}}
}

// readRequestMeta checks the request's _meta (-32602), that the header
// version equals it (-32020) and that luamcp speaks it (-32022), in that
// order.
func readRequestMeta(r *http.Request, m *message) (requestMeta, *statelessError) {
	var rm requestMeta
	meta, ok := member(m.params, "_meta")
	if !ok || kindOf(meta) != '{' {
		return rm, badRequest(CodeInvalidParams, "Invalid params: missing _meta", nil)
	}
	version, ok := stringMember(meta, metaProtocolVersion)
	if !ok {
		return rm, badRequest(CodeInvalidParams, "Invalid params: _meta lacks "+metaProtocolVersion, nil)
	}
	caps, ok := member(meta, metaClientCapabilities)
	if !ok || kindOf(caps) != '{' {
		return rm, badRequest(CodeInvalidParams, "Invalid params: _meta lacks "+metaClientCapabilities, nil)
	}
	if len(caps) > maxCapabilitiesBytes { // a task keeps them for its life
		return rm, badRequest(CodeInvalidParams, "Invalid params: capabilities larger than 64 KiB", nil)
	}
	rm.logLevel = noLogs
	if v, ok := member(meta, metaLogLevel); ok {
		level, _ := jsonString(v)
		sev := levelSeverity(level)
		if sev < 0 {
			return rm, badRequest(CodeInvalidParams, "Invalid params: invalid log level in _meta", nil)
		}
		rm.logLevel = sev
	}
	header := r.Header["Mcp-Protocol-Version"]
	if len(header) == 0 || header[0] != version {
		return rm, badRequest(CodeHeaderMismatch, "Header mismatch: MCP-Protocol-Version must equal _meta "+metaProtocolVersion, nil)
	}
	if !statelessEraVersion(version) {
		return rm, &statelessError{status: http.StatusBadRequest, err: unsupportedVersion(version)}
	}
	rm.version = versionStateless
	rm.caps = caps
	rm.client = clientCapsFrom(caps)
	exts, _ := member(caps, "extensions")
	ext, ok := member(exts, extTasks)
	rm.tasks = ok && kindOf(ext) == '{'
	return rm, nil
}

// checkMirrorHeaders checks that Mcp-Method, and Mcp-Name for the methods
// that name something, equal the body (-32020 otherwise). Values may be in
// the "=?base64?...?=" form.
func checkMirrorHeaders(r *http.Request, m *message, spec *methodSpec) *statelessError {
	got, ok := headerValue(r.Header, "Mcp-Method")
	if !ok || got != m.method {
		return badRequest(CodeHeaderMismatch, "Header mismatch: Mcp-Method must equal the request's method", nil)
	}
	if spec == nil || spec.nameParam == "" {
		return nil
	}
	want, ok := stringMember(m.params, spec.nameParam)
	if !ok {
		return nil // the method itself answers the missing param
	}
	got, ok = headerValue(r.Header, "Mcp-Name")
	if !ok || got != want {
		return badRequest(CodeHeaderMismatch, "Header mismatch: Mcp-Name must equal params."+spec.nameParam, nil)
	}
	return nil
}

// headerValue returns the decoded value of a mirror header: ok is false when
// it is missing, or holds characters or a Base64 form that does not decode.
func headerValue(h http.Header, name string) (string, bool) {
	v := h[name]
	if len(v) != 1 {
		return "", false
	}
	return decodeHeaderValue(v[0])
}

// decodeHeaderValue decodes "=?base64?<b64>?=" and checks a plain value for
// visible ASCII, spaces and tabs only (RFC 9110's field value, as clients
// send it unencoded). The marker is matched exactly, as the spec writes it:
// a client or gateway that reads "=?BASE64?...?=" as a plain value must not
// find this server reading another.
func decodeHeaderValue(s string) (string, bool) {
	const prefix, suffix = "=?base64?", "?="
	if len(s) >= len(prefix)+len(suffix) && strings.HasPrefix(s, prefix) && strings.HasSuffix(s, suffix) {
		b, err := base64.StdEncoding.DecodeString(s[len(prefix) : len(s)-len(suffix)])
		if err != nil {
			return "", false
		}
		return string(b), true
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c > 0x7e {
			return "", false
		}
	}
	return strings.TrimSpace(s), true
}

// checkParamHeaders checks the Mcp-Param-* headers of a tools/call against
// the arguments named by the tool's x-mcp-header properties, top-level or
// reached through plain "properties" chains (-32020 on a missing, mismatched
// or undecodable header). schema is the tool's inputSchema.
func checkParamHeaders(r *http.Request, schema, args []byte) *statelessError {
	props, ok := member(schema, "properties")
	if !ok || kindOf(props) != '{' || kindOf(args) != '{' {
		return nil
	}
	it := objectIter{data: props}
	for {
		prop, def, more := it.next()
		if !more {
			return nil
		}
		val, present := member(args, string(prop))
		if !present || kindOf(val) == 'n' {
			continue
		}
		hname, ok := stringMember(def, "x-mcp-header")
		if !ok || hname == "" {
			if serr := checkParamHeaders(r, def, val); serr != nil { // nested objects
				return serr
			}
			continue
		}
		got, ok := headerValue(r.Header, http.CanonicalHeaderKey(paramHeaderPrefix+hname))
		if !ok || !sameParam(got, val) {
			return badRequest(CodeHeaderMismatch, "Header mismatch: "+paramHeaderPrefix+hname+" must equal the argument "+string(prop), nil)
		}
	}
}

// paramHeaderState is what a route's tools lists have shown of x-mcp-header
// (Handler.paramHeaders). A check of a tools/call's Mcp-Param-* headers
// costs a tools listing, so a route whose tools mirror nothing in headers
// checks only the calls that send such headers, which a mismatch needs.
// States move only forward: unknown, then none or seen; none, then seen
// (a tool gained one: a reload, a list that depends on the state).
type paramHeaderState int32

const (
	// paramHeadersUnknown: no tools listing yet; every call is checked, and
	// its check's listing decides.
	paramHeadersUnknown paramHeaderState = iota
	// paramHeadersNone: no listing showed x-mcp-header; a call is checked
	// when it carries an Mcp-Param-* header.
	paramHeadersNone
	// paramHeadersSeen: a listing showed x-mcp-header; every call is
	// checked, so a header left out is refused too.
	paramHeadersSeen
)

// xMCPHeader marks a tool property mirrored by an Mcp-Param-* header.
var xMCPHeader = []byte(`"x-mcp-header"`)

// sawTools moves the route's paramHeaderState on with what a tools listing
// showed: any page may show a header, but only a whole listing that none:
// a later page may list the tool that has one.
func (h *Handler) sawTools(items []Item, whole bool) {
	if paramHeaderState(h.paramHeaders.Load()) == paramHeadersSeen {
		return
	}
	for _, it := range items {
		if bytes.Contains(it.JSON, xMCPHeader) {
			h.paramHeaders.Store(int32(paramHeadersSeen))
			return
		}
	}
	if whole {
		h.paramHeaders.CompareAndSwap(int32(paramHeadersUnknown), int32(paramHeadersNone))
	}
}

// checksParamHeaders reports whether the tools/call r has its Mcp-Param-*
// headers checked (paramHeaderState).
func (h *Handler) checksParamHeaders(r *http.Request) bool {
	if paramHeaderState(h.paramHeaders.Load()) != paramHeadersNone {
		return true
	}
	for name := range r.Header {
		if len(name) > len(paramHeaderPrefix) && strings.EqualFold(name[:len(paramHeaderPrefix)], paramHeaderPrefix) {
			return true
		}
	}
	return false
}

// paramHeaderPrefix starts the name of a header that mirrors an argument.
const paramHeaderPrefix = "Mcp-Param-"

// sameParam compares a header value with the raw argument it mirrors:
// strings exactly, numbers numerically, booleans as true/false.
func sameParam(header string, val []byte) bool {
	switch kindOf(val) {
	case '"':
		s, ok := jsonString(val)
		return ok && s == header
	case '0':
		a, err1 := strconv.ParseFloat(header, 64)
		b, err2 := strconv.ParseFloat(string(val), 64)
		return err1 == nil && err2 == nil && a == b
	case 't', 'f':
		return header == string(val)
	}
	return false
}
