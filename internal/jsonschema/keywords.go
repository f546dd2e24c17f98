package jsonschema

import (
	"fmt"
	"sort"
	"strings"
)

// A dialect is a JSON Schema draft, as a bit, so that a keyword can name
// the drafts that read it.
type dialect uint8

const (
	draft4 dialect = 1 << iota
	draft6
	draft7
	draft2020

	allDrafts = draft4 | draft6 | draft7 | draft2020
	since6    = draft6 | draft7 | draft2020
	since7    = draft7 | draft2020
	upTo7     = draft4 | draft6 | draft7
)

var dialectNames = []struct {
	d    dialect
	name string
}{{draft4, "draft-04"}, {draft6, "draft-06"}, {draft7, "draft-07"}, {draft2020, "2020-12"}}

// dialectOf reads a $schema. It knows draft-04, -06, -07 and 2020-12, with
// or without the "#" and over http or https; ok is false for any other,
// which is read as the dialect around it (2020-12 at the root).
func dialectOf(uri string) (d dialect, ok bool) {
	uri = strings.TrimPrefix(strings.TrimPrefix(uri, "http://"), "https://")
	switch strings.TrimSuffix(uri, "#") {
	case "json-schema.org/draft-04/schema":
		return draft4, true
	case "json-schema.org/draft-06/schema":
		return draft6, true
	case "json-schema.org/draft-07/schema":
		return draft7, true
	case "json-schema.org/draft/2020-12/schema":
		return draft2020, true
	}
	return 0, false
}

// String names the drafts of d: "2020-12", "draft-04 to draft-07".
func (d dialect) String() string {
	var names []string
	for _, dn := range dialectNames {
		if d&dn.d != 0 {
			names = append(names, dn.name)
		}
	}
	switch {
	case len(names) == 0:
		return "no draft"
	case len(names) == 1:
		return names[0]
	case d == since6 || d == since7:
		return names[0] + " and later"
	}
	return names[0] + " to " + names[len(names)-1]
}

// A role is what the validator does with a keyword.
type role uint8

const (
	checked    role = iota + 1 // it can refuse a value: an assertion, an applicator, $ref
	core                       // it shapes the schema: $schema, $id, $defs, ...
	annotation                 // it describes the value and never refuses one
	ignored                    // it reads like an assertion, but the validator does not check it
)

// A keyword is what the package knows of one.
type keyword struct {
	in   dialect // the dialects that read it (checked and core keywords)
	role role
	// note says why an ignored keyword is, or for a checked keyword of
	// some dialects only, what the others write instead.
	note string
}

// keywords is every keyword the package knows. The compiler reads a
// checked keyword only in the dialects its entry names: elsewhere it is a
// keyword the dialect does not know, which the specification makes an
// annotation. [IgnoredKeywords] reports from it what a schema's author may
// take for a check the validator does not make.
var keywords = map[string]keyword{
	"type":                  {allDrafts, checked, ""},
	"enum":                  {allDrafts, checked, ""},
	"const":                 {since6, checked, "draft-04 writes enum with one value"},
	"minimum":               {allDrafts, checked, ""},
	"maximum":               {allDrafts, checked, ""},
	"exclusiveMinimum":      {allDrafts, checked, ""}, // draft-04's is a boolean beside minimum
	"exclusiveMaximum":      {allDrafts, checked, ""},
	"multipleOf":            {allDrafts, checked, ""},
	"minLength":             {allDrafts, checked, ""},
	"maxLength":             {allDrafts, checked, ""},
	"pattern":               {allDrafts, checked, ""},
	"items":                 {allDrafts, checked, ""}, // an array of schemas up to draft-07
	"prefixItems":           {draft2020, checked, "earlier drafts write items as an array"},
	"additionalItems":       {upTo7, checked, "2020-12 writes prefixItems for the first items and items for the rest"},
	"minItems":              {allDrafts, checked, ""},
	"maxItems":              {allDrafts, checked, ""},
	"uniqueItems":           {allDrafts, checked, ""},
	"contains":              {since6, checked, ""},
	"minContains":           {draft2020, checked, ""},
	"maxContains":           {draft2020, checked, ""},
	"properties":            {allDrafts, checked, ""},
	"required":              {allDrafts, checked, ""},
	"dependentRequired":     {draft2020, checked, "earlier drafts write dependencies"},
	"dependentSchemas":      {draft2020, checked, "earlier drafts write dependencies"},
	"dependencies":          {upTo7, checked, "2020-12 writes dependentRequired or dependentSchemas"},
	"additionalProperties":  {allDrafts, checked, ""},
	"patternProperties":     {allDrafts, checked, ""},
	"propertyNames":         {since6, checked, ""},
	"minProperties":         {allDrafts, checked, ""},
	"maxProperties":         {allDrafts, checked, ""},
	"allOf":                 {allDrafts, checked, ""},
	"anyOf":                 {allDrafts, checked, ""},
	"oneOf":                 {allDrafts, checked, ""},
	"not":                   {allDrafts, checked, ""},
	"if":                    {since7, checked, ""},
	"then":                  {since7, checked, ""},
	"else":                  {since7, checked, ""},
	"unevaluatedProperties": {draft2020, checked, ""},
	"unevaluatedItems":      {draft2020, checked, ""},
	"$ref":                  {allDrafts, checked, ""},

	"$schema":        {allDrafts, core, ""},
	"$id":            {since6, core, ""},
	"id":             {draft4, core, ""},
	"$anchor":        {draft2020, core, ""},
	"$dynamicAnchor": {draft2020, core, ""}, // also a plain $anchor
	"$defs":          {allDrafts, core, ""}, // both are read wherever a $ref's
	"definitions":    {allDrafts, core, ""}, // pointer leads
	"$vocabulary":    {draft2020, core, ""},
	"$comment":       {allDrafts, annotation, ""},

	"title":            {allDrafts, annotation, ""},
	"description":      {allDrafts, annotation, ""},
	"default":          {allDrafts, annotation, ""},
	"examples":         {allDrafts, annotation, ""},
	"deprecated":       {allDrafts, annotation, ""},
	"readOnly":         {allDrafts, annotation, ""},
	"writeOnly":        {allDrafts, annotation, ""},
	"format":           {allDrafts, annotation, ""}, // an annotation by 2020-12's default vocabulary
	"contentEncoding":  {allDrafts, annotation, ""},
	"contentMediaType": {allDrafts, annotation, ""},
	"contentSchema":    {allDrafts, annotation, ""},

	"$dynamicRef":      {0, ignored, "dynamic references are not followed"},
	"$recursiveRef":    {0, ignored, "2019-09's recursive references are not followed"},
	"$recursiveAnchor": {0, core, ""},
	"nullable":         {0, ignored, `OpenAPI's keyword, not JSON Schema's (a type list with "null" allows null)`},
}

// reads reports whether the compiler reads key in dialect d.
func reads(key string, d dialect) bool {
	k := keywords[key]
	return k.role == checked && k.in&d != 0
}

// An Ignored is a keyword of a schema that reads like a constraint but
// that [Schema.Validate] does not check.
type Ignored struct {
	Pointer string // where the keyword is, a JSON pointer: "/properties/days/minimun"
	Keyword string
	Why     string
}

// IgnoredKeywords lists the keywords of schema that its author may take for
// checks the validator does not make: assertions it does not implement
// ($dynamicRef), keywords of another draft than the schema's ($schema, or
// 2020-12), draft-07's siblings of $ref (which that draft ignores),
// OpenAPI's nullable, and unknown keywords one slip away from a checked one
// (minimun, require, maxlength). Annotations (format, title, ...) and other
// unknown keywords (x-order) are not listed: they are not meant to refuse a
// value. It looks in the schema objects [Compile] reads, in the order of
// their JSON pointers, and at each one's keywords in order. JSON that does
// not parse is an error; a schema that does not compile is not.
func IgnoredKeywords(schema []byte) ([]Ignored, error) {
	doc, err := decode(schema)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	c := newCompiler(doc)
	c.scan(doc, "", rootScope, 0)
	at := make([]string, 0, len(c.scopes))
	for p := range c.scopes {
		at = append(at, p)
	}
	sort.Strings(at)
	var out []Ignored
	for _, p := range at {
		v, _ := lookup(doc, p)
		if obj, ok := v.(map[string]any); ok {
			out = append(out, ignoredIn(obj, p, c.scopes[p].d)...)
		}
	}
	return out, nil
}

// ignoredIn lists the ignored keywords of one schema object, at at, read in
// dialect d.
func ignoredIn(obj map[string]any, at string, d dialect) []Ignored {
	var out []Ignored
	_, hasRef := obj["$ref"]
	refOnly := hasRef && d&upTo7 != 0
	for _, key := range sortedKeys(obj) {
		why := ignoredWhy(key, d, refOnly)
		if why != "" {
			out = append(out, Ignored{Pointer: at + "/" + escapePointer(key), Keyword: key, Why: why})
		}
	}
	return out
}

// ignoredWhy says why key, in a schema object of dialect d, is a check the
// validator does not make; "" when it is not one.
func ignoredWhy(key string, d dialect, refOnly bool) string {
	k, known := keywords[key]
	switch {
	case !known:
		if kw, ok := nearMiss(key); ok {
			return "no such keyword; " + kw + "?"
		}
	case k.role == ignored:
		return k.note
	case k.role != checked:
	case k.in&d == 0:
		why := "a " + k.in.String() + " keyword, not read under " + d.String()
		if k.note != "" {
			why += " (" + k.note + ")"
		}
		return why
	case refOnly && key != "$ref":
		return d.String() + " ignores the siblings of $ref (put them beside it in an allOf)"
	}
	return ""
}

// checkedNames are the checked keywords, sorted: the names nearMiss
// compares with.
var checkedNames = func() []string {
	var names []string
	for k, kw := range keywords {
		if kw.role == checked {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return names
}()

// nearMiss returns the checked keyword that key looks like a slip of: the
// same but for case or a leading $ (minlength, ref), or, both being at
// least 4 letters long, one letter added, dropped, changed, or two swapped
// (require, minimun, maxLenght). A custom annotation seldom lies that close
// to an assertion's name; shorter names (id, if, not, note) too often do.
func nearMiss(key string) (string, bool) {
	k := strings.ToLower(strings.TrimPrefix(key, "$"))
	for _, name := range checkedNames {
		n := strings.ToLower(strings.TrimPrefix(name, "$"))
		if k == n || len(k) >= 4 && len(n) >= 4 && oneEdit(k, n) {
			return name, true
		}
	}
	return "", false
}

// oneEdit reports whether a and b (different) are one insertion, deletion,
// substitution or swap of neighbours apart.
func oneEdit(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	i := 0
	for i < len(a) && a[i] == b[i] {
		i++
	}
	switch len(b) - len(a) {
	case 0:
		if i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:] {
			return true // a swap
		}
		return i < len(a) && a[i+1:] == b[i+1:]
	case 1:
		return a[i:] == b[i+1:]
	}
	return false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
