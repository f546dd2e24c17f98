package bridge

// A JSON Schema written in Lua meets Lua's one ambiguity: an empty table.
// `required = {}` is a list in JSON Schema and `properties = {}` an object,
// and a client that checks a tool's schema against the MCP schema (which
// types required as a list of strings) refuses the whole tools/list when
// one is {}. So a value encoded as a [Schema] is read keyword by keyword:
// what each keyword holds says whether an empty table there is [] or {}.
// Only unmarked empty tables are decided this way; everything else is
// written as the script wrote it, as by AppendEncode.

// A role is what the table being written is, in a schema: it decides how
// an empty one is written, and the roles of the values inside it.
type role uint8

const (
	roleNone    role = iota // not in a schema, or a keyword's plain value (const, default)
	roleSchema              // a schema: its keys are keywords
	roleSchemas             // a list of schemas (allOf, anyOf, oneOf, prefixItems)
	roleNames               // an object of schemas by name (properties, $defs)
	roleList                // a list of values (required, enum, type)
	roleLists               // an object of lists by name (dependentRequired)
	roleMCP                 // an object of the MCP schema (protocol.go)
	roleMCPs                // a list of them, or an object where one may be a list (content)
)

// keywordRoles are the keywords whose values are schemas, or lists, or
// objects of either: the keywords of JSON Schema 2020-12 and of draft-07
// (definitions, dependencies' lists aside), which tools' schemas use.
var keywordRoles = map[string]role{
	"required":              roleList,
	"enum":                  roleList,
	"type":                  roleList,
	"examples":              roleList,
	"allOf":                 roleSchemas,
	"anyOf":                 roleSchemas,
	"oneOf":                 roleSchemas,
	"prefixItems":           roleSchemas,
	"not":                   roleSchema,
	"if":                    roleSchema,
	"then":                  roleSchema,
	"else":                  roleSchema,
	"items":                 roleSchema,
	"additionalItems":       roleSchema,
	"additionalProperties":  roleSchema,
	"contains":              roleSchema,
	"propertyNames":         roleSchema,
	"unevaluatedItems":      roleSchema,
	"unevaluatedProperties": roleSchema,
	"properties":            roleNames,
	"patternProperties":     roleNames,
	"dependentSchemas":      roleNames,
	"$defs":                 roleNames,
	"definitions":           roleNames,
	"dependentRequired":     roleLists,
}

// member is the role of the value under key in a table of role r.
func (r role) member(key string) role {
	switch r {
	case roleSchema:
		return keywordRoles[key]
	case roleNames:
		return roleSchema
	case roleLists:
		return roleList
	case roleMCP, roleMCPs:
		return protocolRoles[key]
	}
	return roleNone
}

// item is the role of an item of a list of role r. A schema written as a
// list is draft-07's array form of items: a list of schemas.
func (r role) item() role {
	switch r {
	case roleSchemas, roleSchema:
		return roleSchema
	case roleMCP, roleMCPs:
		return roleMCP
	}
	return roleNone
}

// emptyIsList reports whether an unmarked empty table of role r is [].
func (r role) emptyIsList() bool { return r == roleList || r == roleSchemas || r == roleMCPs }
