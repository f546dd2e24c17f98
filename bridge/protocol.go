package bridge

// The MCP schema types some members of its objects as lists: a content
// block's annotations.audience, an icon's sizes, a sampling request's
// modelPreferences.hints. A script that writes one as an empty table meets
// Lua's ambiguity again, now below the top level that a [Shape] settles,
// and a client that checks the schema (the official TypeScript SDK does)
// refuses the whole message for `audience = {}`. So the values the protocol
// defines (results' content, descriptors' annotations and icons, the params
// of requests to the client) are written with the protocol's roles: an
// unmarked empty table under one of these keys is []. Roles follow only
// these keys: what a script nests elsewhere (_meta, structured_content,
// a tool's input) is written as it wrote it.

// protocolRoles are the roles of the members of the MCP schema's objects,
// by key, wherever they appear in one: the schema gives each key one
// meaning across its types. content is a list in CallToolResult and
// ToolResultContent, and a block or a list in SamplingMessage: an empty
// one is []. The keys are the wire names, which results, descriptors and
// requests' params have by the time they are encoded (WireNames).
var protocolRoles = map[string]role{
	"content":          roleMCPs,
	"contents":         roleMCPs,
	"messages":         roleMCPs,
	"tools":            roleMCPs,
	"icons":            roleMCPs,
	"hints":            roleMCPs,
	"resource":         roleMCP,
	"annotations":      roleMCP,
	"modelPreferences": roleMCP,
	"audience":         roleList,
	"sizes":            roleList,
	"stopSequences":    roleList,
	"inputSchema":      roleSchema,
	"outputSchema":     roleSchema,
	"requestedSchema":  roleSchema,
}
