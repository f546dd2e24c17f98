package mcp

import (
	"encoding/json"
	"errors"
)

// JSON-RPC and MCP error codes used by the transport.
const (
	CodeParseError       = -32700
	CodeInvalidRequest   = -32600
	CodeMethodNotFound   = -32601
	CodeInvalidParams    = -32602
	CodeInternalError    = -32603
	CodeResourceNotFound = -32002

	// The 2026-07-28 era's codes, each answered with HTTP 400.
	CodeHeaderMismatch             = -32020 // an Mcp-* header disagrees with the body
	CodeMissingClientCapability    = -32021 // data.requiredCapabilities names what is missing
	CodeUnsupportedProtocolVersion = -32022 // data.supported and data.requested
)

// Error is a JSON-RPC error object. A Session returns one to send exactly that
// code and message to the client.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// ErrUnknownTool is the error for a tools/call of a name the server does not list.
func ErrUnknownTool(name string) *Error {
	return &Error{Code: CodeInvalidParams, Message: "Unknown tool: " + name}
}

// ErrUnknownPrompt is the error for a prompts/get of a name the server does not list.
func ErrUnknownPrompt(name string) *Error {
	return &Error{Code: CodeInvalidParams, Message: "Unknown prompt: " + name}
}

// ErrInvalidParams is the error for a request whose params the server cannot
// take (arguments that do not decode, nested too deep, numbers out of range):
// -32602 "Invalid params: " and what is wrong. It is the client's mistake,
// answered and logged at debug, never as a crash.
func ErrInvalidParams(what string) *Error {
	return &Error{Code: CodeInvalidParams, Message: "Invalid params: " + what}
}

// ErrResourceNotFound is the error for a resources/read of a uri that is
// neither listed nor matched by a template.
func ErrResourceNotFound(uri string) *Error {
	return &Error{Code: CodeResourceNotFound, Message: "Resource not found: " + uri}
}

// ErrNoClientCapability is returned by Outbound.Request when the client did not
// declare the capability the request needs (or cannot receive a stream).
var ErrNoClientCapability = errors.New("the client did not declare the capability for this request")

// ErrInputRequired ends a 2026-07-28 era call that asked the client for
// input it has not given yet (see [Outbound.Ask]): the transport answers
// resultType "input_required", and the client runs the call again with the
// answers.
var ErrInputRequired = errors.New("mcp: the call needs input from the client")
