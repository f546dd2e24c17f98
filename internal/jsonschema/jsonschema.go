// Package jsonschema checks JSON values against the part of JSON Schema
// (draft 2020-12, the MCP default dialect) that tool input schemas use: the
// type, enum and const keywords; numbers' bounds and multipleOf; strings'
// lengths and patterns; arrays' items, prefixItems, lengths, uniqueItems,
// contains, minContains and maxContains; objects' properties, required,
// dependentRequired, dependentSchemas, additionalProperties,
// patternProperties, propertyNames and sizes; allOf, anyOf, oneOf, not and
// if/then/else; unevaluatedProperties and unevaluatedItems, which see what
// the schema's other keywords and its passing subschemas evaluated, as the
// specification's annotations have it; and $ref within the document: a
// JSON pointer (percent-decoded, as the URI fragment it is), an $anchor, or
// a URI an $id of the document gives, relative ones resolved against the
// $ids around them. A $ref to another document does not compile: nothing
// is ever fetched. Other keywords (format, title, description, default,
// examples, ...) are annotations: they never make a value invalid, as the
// specification says of keywords a validator does not know.
// [IgnoredKeywords] lists the ones that read like checks, such as
// $dynamicRef, which is not followed, or a misspelt minimum.
//
// A schema whose $schema is draft-07, -06 or -04 is read, with the
// subschemas in it, as that draft: items may be an array of schemas, with
// additionalItems for the items past it; dependencies holds arrays of
// names and schemas; $ref ignores its siblings; "$id": "#name" is an
// anchor; draft-04's exclusiveMinimum and exclusiveMaximum are booleans
// beside minimum and maximum; and the keywords of later drafts are unknown
// ones. Any other schema, whatever its $schema, is read as 2020-12, where
// items is one schema.
//
// Numbers compare as the decimals they are written as: 10000000001 is no
// multiple of 2 and 9007199254740993 is above 9007199254740992, though
// float64 rounds them otherwise.
//
// Patterns are Go's RE2, which reads the ECMA-262 patterns schemas use except
// for backreferences and lookaround, and whose \s is ASCII whitespace only
// (ECMA's takes in Unicode's spaces); a schema whose pattern RE2 refuses
// does not compile.
package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/luamcp/luamcp/internal/logcap"
	"github.com/luamcp/luamcp/internal/reprog"
)

// A Schema is a compiled schema, safe for concurrent use.
type Schema struct {
	root *node
	size int // bytes it keeps, about (Size)
}

// Size estimates the bytes s keeps: its nodes, its patterns' programs, and
// the values and names it holds from its text. A host that caches compiled
// schemas bounds them by it: a schema takes some 20 times its text (a
// script's tools() made 17 MB of one of 40,000 properties).
func (s *Schema) Size() int { return s.size }

// Rough sizes, in bytes, for Size: a compiled node, with its share of the
// maps and slices that hold it, and an instruction of a pattern's program.
const (
	sizeNode = int(unsafe.Sizeof(node{})) + 64
	sizeInst = 48
)

// maxDepth bounds how deeply a schema may nest, and how deeply $ref may
// recurse while a value is checked.
const maxDepth = 64

// maxSteps bounds the work of one [Schema.Validate]: nested anyOf and oneOf
// can make it exponential in the value's depth. A value that needs more is
// refused ([ErrTooComplex]) rather than let through.
const maxSteps = 200_000

// Bounds of the patterns of one schema (pattern, patternProperties), which
// a script writes. regexp/syntax accepts programs of millions of
// instructions: a tools() that returned a schema with a 14 KiB pattern of
// "a{1000}" made each call compile 2 million (a second of CPU), and the
// compiled schemas a version caches kept 100 MiB each, past the process's
// memory ceiling after ten calls. A pattern's program is sized before it is
// built (reprog), as the re module's are, and refused past the bounds; all
// the patterns of a schema together are bounded too.
const (
	maxPatternInsts   = 1 << 15 // instructions of one pattern's program
	maxSchemaInsts    = 1 << 17 // of all the patterns of one schema
	maxPatternRunes   = 1 << 17 // runes of one pattern's character classes
	maxPatternClasses = 64      // Unicode classes (\p, \P) it names, each some 1,500 runes at most
)

// maxPatternWork bounds the matching one [Schema.Validate] does, as the sum
// of a program's size times the length of a string it matches: Go's regexp
// runs in time linear in the subject, but the factor is the number of
// threads its program runs at once, up to its size, and a match cannot be
// interrupted. "[^x]{1000}y" took 8.7 s to check a 1 MB string, past any
// call timeout. This is about a quarter of a second of the worst case (3.5
// ns an instruction and a byte, measured); a pattern of 30 instructions
// checks 2 MiB. A value that needs more is refused ([ErrTooComplex]).
const maxPatternWork = 1 << 26

// ErrTooComplex is the error of a value the checker gave up on.
var ErrTooComplex = errors.New("too complex to check against the schema")

// A node is one compiled schema object (or boolean schema).
type node struct {
	always *bool // a boolean schema: true accepts all, false nothing

	types    []string // "null", "boolean", "object", "array", "number", "integer", "string"
	enum     []any
	hasConst bool
	constV   any

	minimum, maximum, exclMinimum, exclMaximum, multipleOf *bound

	minLength, maxLength int // -1: none
	pattern              *regexp.Regexp
	patternInsts         int // the size of pattern's program (maxPatternWork)

	items               *node
	prefixItems         []*node
	minItems, maxItems  int // -1: none
	uniqueItems         bool
	contains            *node
	minContains         int // -1: none, which means 1
	maxContains         int // -1: none
	properties          map[string]*node
	propertyOrder       []string
	required            []string
	dependentRequired   map[string][]string
	dependentOrder      []string // dependentRequired's keys, sorted
	dependentSchemas    map[string]*node
	dependentSchemaKeys []string // dependentSchemas' keys, sorted
	additional          *node
	patternProps        []patternProp
	propertyNames       *node
	minProps, maxProps  int // -1: none
	allOf, anyOf, oneOf []*node
	not                 *node
	ifN, thenN, elseN   *node
	unevalProps         *node  // unevaluatedProperties
	unevalItems         *node  // unevaluatedItems
	ref                 string // the JSON pointer, from the document's root, of $ref's target
	resolved            *node  // ref, once resolved
}

type patternProp struct {
	re    *regexp.Regexp
	insts int // the size of re's program (maxPatternWork)
	n     *node
}

// A bound is a numeric keyword's value (or the number checked against it):
// its float64 for the quick comparison, and its text for an exact one when
// the float64s tie.
type bound struct {
	f    float64
	text string
	// multipleOf's digits × 10^exp, when [decimal] reads it (digits
	// non-nil)
	digits *big.Int
	exp    int
}

// Compile reads a schema. It fails on JSON that is not a schema object or
// boolean, on a keyword of the wrong type, on a pattern RE2 cannot compile,
// on a $ref it cannot resolve within the document, on two schemas of one
// $id or $anchor that a $ref names, and past maxDepth.
func Compile(schema []byte) (*Schema, error) {
	doc, err := decode(schema)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	c := newCompiler(doc)
	c.scan(doc, "", rootScope, 0)
	root, err := c.compile(doc, "", 0)
	if err != nil {
		return nil, err
	}
	if err := c.resolve(); err != nil {
		return nil, err
	}
	return &Schema{root: root, size: 2*len(schema) + c.nodes*sizeNode + c.insts*sizeInst}, nil
}

// decode reads JSON with its numbers as written.
func decode(text []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

type compiler struct {
	doc    any
	scopes map[string]scope  // the schemas scan walked, by JSON pointer
	names  map[string]string // URI (with an anchor's fragment) -> JSON pointer
	shared map[string]string // a name two schemas have -> the other's pointer
	refs   map[string]*node  // pointer -> compiled node, filled by resolve
	todo   []*node           // nodes with a ref to resolve
	insts  int               // the instructions of the patterns compiled so far
	nodes  int               // the nodes compiled so far
}

// pattern compiles src, a pattern of the schema at `at`, within the bounds
// of its program (maxPatternInsts and the others), and returns its size.
func (c *compiler) pattern(src, at string) (*regexp.Regexp, int, error) {
	tooLarge := func() error {
		return fmt.Errorf("schema: %s: pattern too large: its program passes %d instructions (x{n} is n copies of x), %d in all the schema's patterns, %d runes of character classes or %d Unicode classes",
			at, maxPatternInsts, maxSchemaInsts, maxPatternRunes, maxPatternClasses)
	}
	// The parser copies a Unicode class's table for each \p or \P, before
	// anything can be counted. (An escaped backslash before a p counts
	// too: a bound, not a parser.)
	if strings.Count(src, `\p`)+strings.Count(src, `\P`) > maxPatternClasses {
		return nil, 0, tooLarge()
	}
	parsed, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil, 0, fmt.Errorf("schema: %s: %w", at, err)
	}
	insts, runes := reprog.Size(parsed, maxPatternInsts)
	if insts > maxPatternInsts || runes > maxPatternRunes || c.insts+insts > maxSchemaInsts {
		return nil, 0, tooLarge()
	}
	c.insts += insts
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, 0, fmt.Errorf("schema: %s: %w", at, err)
	}
	return re, insts, nil
}

func newCompiler(doc any) *compiler {
	return &compiler{doc: doc, scopes: map[string]scope{}, names: map[string]string{rootURI: ""}, shared: map[string]string{}, refs: map[string]*node{}}
}

// A reader reads the keywords of one schema object, at at: those its
// dialect reads, and under draft-07 with a $ref only that.
type reader struct {
	c       *compiler
	obj     map[string]any
	at      string
	depth   int
	sc      scope
	refOnly bool
}

// get is the keyword key, if the schema has it and its dialect reads it.
func (r *reader) get(key string) (any, bool) {
	if !reads(key, r.sc.d) || r.refOnly && key != "$ref" {
		return nil, false
	}
	v, ok := r.obj[key]
	return v, ok
}

func (r *reader) bad(key, want string) error {
	return fmt.Errorf("schema: %s/%s: want %s", pointerOrRoot(r.at), key, want)
}

// sub compiles the schema under key; nil, nil without one.
func (r *reader) sub(key string) (*node, error) {
	s, ok := r.get(key)
	if !ok {
		return nil, nil
	}
	return r.c.compile(s, r.at+"/"+key, r.depth+1)
}

// list compiles the non-empty array of schemas under key.
func (r *reader) list(key string) ([]*node, error) {
	s, ok := r.get(key)
	if !ok {
		return nil, nil
	}
	arr, ok := asArray(s)
	if !ok || len(arr) == 0 {
		return nil, r.bad(key, "a non-empty array of schemas")
	}
	out := make([]*node, len(arr))
	for i, e := range arr {
		var err error
		if out[i], err = r.c.compile(e, r.at+"/"+key+"/"+strconv.Itoa(i), r.depth+1); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// schemaMap compiles the object of schemas under key, and returns its keys
// sorted, so that errors name the same property every time.
func (r *reader) schemaMap(key string) (map[string]*node, []string, error) {
	s, ok := r.get(key)
	if !ok {
		return nil, nil, nil
	}
	m, ok := asObject(s)
	if !ok {
		return nil, nil, r.bad(key, "an object")
	}
	out := make(map[string]*node, len(m))
	keys := sortedKeys(m)
	for _, k := range keys {
		var err error
		if out[k], err = r.c.compile(m[k], r.at+"/"+key+"/"+escapePointer(k), r.depth+1); err != nil {
			return nil, nil, err
		}
	}
	return out, keys, nil
}

func (r *reader) num(key string) (*bound, error) {
	s, ok := r.get(key)
	if !ok {
		return nil, nil
	}
	f, ok := number(s)
	if !ok {
		return nil, r.bad(key, "a number")
	}
	return &bound{f: f, text: string(s.(json.Number))}, nil
}

func (r *reader) count(key string) (int, error) {
	s, ok := r.get(key)
	if !ok {
		return -1, nil
	}
	f, ok := number(s)
	if !ok || f < 0 || f != math.Trunc(f) {
		return -1, r.bad(key, "a non-negative integer")
	}
	return int(min(f, math.MaxInt32)), nil
}

// names reads an array of strings (required, a dependentRequired entry);
// want names the keyword's form in errors.
func (r *reader) names(v any, key, want string) ([]string, error) {
	arr, ok := asArray(v)
	if !ok {
		return nil, r.bad(key, want)
	}
	out := []string{}
	for _, e := range arr {
		s, ok := e.(string)
		if !ok {
			return nil, r.bad(key, want)
		}
		out = append(out, s)
	}
	return out, nil
}

func (c *compiler) compile(v any, at string, depth int) (*node, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("schema: nested deeper than %d at %s", maxDepth, pointerOrRoot(at))
	}
	if b, ok := v.(bool); ok {
		c.nodes++
		return &node{always: &b}, nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema: %s: want an object or a boolean, got %s", pointerOrRoot(at), kind(v))
	}
	c.nodes++
	n := &node{minLength: -1, maxLength: -1, minItems: -1, maxItems: -1, minContains: -1, maxContains: -1, minProps: -1, maxProps: -1}
	r := &reader{c: c, obj: obj, at: at, depth: depth, sc: c.scopeOf(at)}
	_, hasRef := obj["$ref"]
	r.refOnly = hasRef && r.sc.d&upTo7 != 0
	for _, read := range []func(*reader, *node) error{
		readType, readValues, readNumbers, readCounts, readSchemas, readItems,
		readString, readObject, readDependencies, readRef,
	} {
		if err := read(r, n); err != nil {
			return nil, err
		}
	}
	// $defs and definitions are compiled when a $ref names them (resolve).
	return n, nil
}

func readType(r *reader, n *node) error {
	t, ok := r.get("type")
	if !ok {
		return nil
	}
	const want = "a type name or an array of them"
	switch t := t.(type) {
	case string:
		n.types = []string{t}
	case []any:
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return r.bad("type", want)
			}
			n.types = append(n.types, s)
		}
	case map[string]any:
		if len(t) > 0 {
			return r.bad("type", want)
		}
	default:
		return r.bad("type", want)
	}
	for _, t := range n.types {
		switch t {
		case "null", "boolean", "object", "array", "number", "integer", "string":
		default:
			return r.bad("type", fmt.Sprintf("a type name, not %q", t))
		}
	}
	return nil
}

func readValues(r *reader, n *node) error {
	if e, ok := r.get("enum"); ok {
		if n.enum, ok = asArray(e); !ok {
			return r.bad("enum", "an array")
		}
	}
	n.constV, n.hasConst = r.get("const")
	return nil
}

// readNumbers reads the numeric keywords, each alike but for draft-04's
// exclusiveMinimum and exclusiveMaximum, which are booleans that make
// minimum and maximum exclusive.
func readNumbers(r *reader, n *node) error {
	var err error
	for _, f := range []struct {
		key string
		to  **bound
	}{
		{"minimum", &n.minimum}, {"maximum", &n.maximum},
		{"exclusiveMinimum", &n.exclMinimum}, {"exclusiveMaximum", &n.exclMaximum},
		{"multipleOf", &n.multipleOf},
	} {
		if r.sc.d == draft4 && strings.HasPrefix(f.key, "exclusive") {
			continue
		}
		if *f.to, err = r.num(f.key); err != nil {
			return err
		}
	}
	if r.sc.d == draft4 {
		for _, f := range []struct {
			key      string
			from, to **bound
		}{{"exclusiveMinimum", &n.minimum, &n.exclMinimum}, {"exclusiveMaximum", &n.maximum, &n.exclMaximum}} {
			v, ok := r.get(f.key)
			if !ok {
				continue
			}
			b, ok := v.(bool)
			if !ok {
				return r.bad(f.key, "a boolean (draft-04)")
			}
			if b {
				*f.to, *f.from = *f.from, nil
			}
		}
	}
	if n.multipleOf != nil && n.multipleOf.f <= 0 {
		return r.bad("multipleOf", "a number above 0")
	}
	if n.multipleOf != nil {
		n.multipleOf.digits, n.multipleOf.exp = decimal(n.multipleOf.text)
	}
	return nil
}

func readCounts(r *reader, n *node) error {
	var err error
	for _, f := range []struct {
		key string
		to  *int
	}{
		{"minLength", &n.minLength}, {"maxLength", &n.maxLength},
		{"minItems", &n.minItems}, {"maxItems", &n.maxItems},
		{"minContains", &n.minContains}, {"maxContains", &n.maxContains},
		{"minProperties", &n.minProps}, {"maxProperties", &n.maxProps},
	} {
		if *f.to, err = r.count(f.key); err != nil {
			return err
		}
	}
	return nil
}

// readSchemas reads the keywords that hold a schema or an array of them,
// but for items (readItems).
func readSchemas(r *reader, n *node) error {
	var err error
	for _, f := range []struct {
		key string
		to  **node
	}{
		{"contains", &n.contains}, {"additionalProperties", &n.additional},
		{"propertyNames", &n.propertyNames}, {"not", &n.not},
		{"if", &n.ifN}, {"then", &n.thenN}, {"else", &n.elseN},
		{"unevaluatedProperties", &n.unevalProps}, {"unevaluatedItems", &n.unevalItems},
	} {
		if *f.to, err = r.sub(f.key); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		key string
		to  *[]*node
	}{
		{"prefixItems", &n.prefixItems}, {"allOf", &n.allOf}, {"anyOf", &n.anyOf}, {"oneOf", &n.oneOf},
	} {
		if *f.to, err = r.list(f.key); err != nil {
			return err
		}
	}
	return nil
}

// readItems reads uniqueItems and items: one schema for every item past
// prefixItems, or up to draft-07 also an array of schemas, one per item,
// with additionalItems for the items past it (2020-12's prefixItems and
// items). An empty Lua table is {}, the schema that takes anything.
func readItems(r *reader, n *node) error {
	if u, ok := r.get("uniqueItems"); ok {
		if n.uniqueItems, ok = u.(bool); !ok {
			return r.bad("uniqueItems", "a boolean")
		}
	}
	var err error
	if v, _ := r.get("items"); r.sc.d&upTo7 != 0 {
		if _, ok := v.([]any); ok {
			if n.prefixItems, err = r.list("items"); err != nil {
				return err
			}
			n.items, err = r.sub("additionalItems")
			return err
		}
	}
	n.items, err = r.sub("items")
	return err
}

func readString(r *reader, n *node) error {
	p, ok := r.get("pattern")
	if !ok {
		return nil
	}
	s, ok := p.(string)
	if !ok {
		return r.bad("pattern", "a string")
	}
	var err error
	n.pattern, n.patternInsts, err = r.c.pattern(s, pointerOrRoot(r.at)+"/pattern")
	return err
}

func readObject(r *reader, n *node) error {
	var err error
	if n.properties, n.propertyOrder, err = r.schemaMap("properties"); err != nil {
		return err
	}
	if req, ok := r.get("required"); ok {
		if n.required, err = r.names(req, "required", "an array of strings"); err != nil {
			return err
		}
	}
	p, ok := r.get("patternProperties")
	if !ok {
		return nil
	}
	props, ok := asObject(p)
	if !ok {
		return r.bad("patternProperties", "an object")
	}
	for _, k := range sortedKeys(props) {
		re, insts, err := r.c.pattern(k, pointerOrRoot(r.at)+"/patternProperties")
		if err != nil {
			return err
		}
		pn, err := r.c.compile(props[k], r.at+"/patternProperties/"+escapePointer(k), r.depth+1)
		if err != nil {
			return err
		}
		n.patternProps = append(n.patternProps, patternProp{re, insts, pn})
	}
	return nil
}

// readDependencies reads dependentRequired and dependentSchemas, or up to
// draft-07 dependencies, whose entries are either.
func readDependencies(r *reader, n *node) error {
	const want = "an object of arrays of strings"
	var err error
	if n.dependentSchemas, n.dependentSchemaKeys, err = r.schemaMap("dependentSchemas"); err != nil {
		return err
	}
	if d, ok := r.get("dependentRequired"); ok {
		deps, ok := asObject(d)
		if !ok {
			return r.bad("dependentRequired", want)
		}
		for _, k := range sortedKeys(deps) {
			if err := n.addDependentRequired(r, k, deps[k], "dependentRequired", want); err != nil {
				return err
			}
		}
	}
	d, ok := r.get("dependencies")
	if !ok {
		return nil
	}
	deps, ok := asObject(d)
	if !ok {
		return r.bad("dependencies", "an object of arrays of strings and schemas")
	}
	for _, k := range sortedKeys(deps) {
		if _, isList := deps[k].([]any); isList {
			if err := n.addDependentRequired(r, k, deps[k], "dependencies", "an object of arrays of strings and schemas"); err != nil {
				return err
			}
			continue
		}
		s, err := r.c.compile(deps[k], r.at+"/dependencies/"+escapePointer(k), r.depth+1)
		if err != nil {
			return err
		}
		if n.dependentSchemas == nil {
			n.dependentSchemas = map[string]*node{}
		}
		n.dependentSchemas[k] = s
		n.dependentSchemaKeys = append(n.dependentSchemaKeys, k)
	}
	return nil
}

// addDependentRequired notes that property k needs the properties v names.
// Keys are added in order, so dependentOrder stays sorted.
func (n *node) addDependentRequired(r *reader, k string, v any, key, want string) error {
	names, err := r.names(v, key, want)
	if err != nil {
		return err
	}
	if n.dependentRequired == nil {
		n.dependentRequired = map[string][]string{}
	}
	n.dependentRequired[k] = names
	n.dependentOrder = append(n.dependentOrder, k)
	return nil
}

// readRef reads $ref, and resolves it to the JSON pointer of its target
// (compiled by resolve).
func readRef(r *reader, n *node) error {
	v, ok := r.get("$ref")
	if !ok {
		return nil
	}
	s, ok := v.(string)
	if !ok {
		return r.bad("$ref", `a reference within the schema ("#", "#/$defs/name")`)
	}
	var err error
	if n.ref, err = r.c.target(s, r.at, r.sc); err != nil {
		return err
	}
	r.c.todo = append(r.c.todo, n)
	return nil
}

// resolve compiles the targets of the $refs met, which may hold $refs of
// their own.
func (c *compiler) resolve() error {
	for len(c.todo) > 0 {
		n := c.todo[len(c.todo)-1]
		c.todo = c.todo[:len(c.todo)-1]
		if t, ok := c.refs[n.ref]; ok {
			n.resolved = t
			continue
		}
		v, err := lookup(c.doc, n.ref)
		if err != nil {
			return fmt.Errorf("schema: $ref %s: %w", pointerOrRoot(n.ref), err)
		}
		t, err := c.compile(v, n.ref, 0)
		if err != nil {
			return err
		}
		c.refs[n.ref] = t
		n.resolved = t
	}
	return nil
}

type ValidationError struct {
	// Path locates the value in the instance, in JavaScript's notation
	// (".name", "[2]"), empty for the instance itself.
	Path string
	// Message says which keyword refused it.
	Message string
}

func (e *ValidationError) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

// Validate checks the JSON value instance against s. It returns nil, a
// *[ValidationError] for the first place the value breaks the schema,
// [ErrTooComplex], or the error of JSON that does not parse.
func (s *Schema) Validate(instance []byte) error {
	v, err := decode(instance)
	if err != nil {
		return fmt.Errorf("arguments: %w", err)
	}
	ck := checker{}
	if e := ck.check(s.root, v, nil, 0, nil); e != nil {
		return e
	}
	return nil
}

type checker struct {
	steps int
	work  int64 // of matching patterns, see maxPatternWork
}

// match counts the work of matching a pattern of insts instructions
// against s, and refuses the value past maxPatternWork, before the match.
func (ck *checker) match(insts int, s string) error {
	if ck.work += int64(insts) * int64(max(len(s), 1)); ck.work > maxPatternWork {
		return ErrTooComplex
	}
	return nil
}

// spend counts n steps of work, and refuses the value past maxSteps.
func (ck *checker) spend(n int) error {
	if ck.steps += n; ck.steps > maxSteps {
		return ErrTooComplex
	}
	return nil
}

// An eval is what the keywords of a schema evaluated of one object or
// array, and of the schemas they apply to it in place (allOf, $ref, ...):
// the annotations unevaluatedProperties and unevaluatedItems read (JSON
// Schema 2020-12, section 11). A schema that fails has no annotations, so
// the applicators whose subschemas may fail without them failing (anyOf,
// oneOf, if, not) give each subschema a fresh eval and keep it only if the
// subschema passed; the others let a subschema write into theirs, since
// its failure is theirs. A nil *eval collects nothing: no schema around
// the value reads it.
type eval struct {
	allProps bool            // every property (additionalProperties or unevaluatedProperties applied)
	props    map[string]bool // else the properties evaluated
	items    int             // items [0, items) were evaluated (prefixItems; items makes it all)
	matched  map[int]bool    // and these, which contains matched
}

func (e *eval) prop(name string) {
	if e.props == nil {
		e.props = map[string]bool{}
	}
	e.props[name] = true
}

// merge adds src's annotations to e (nil: nothing to add to). It costs a
// step per property or item copied.
func (ck *checker) merge(e, src *eval) error {
	if e == nil || src == nil {
		return nil
	}
	if err := ck.spend(len(src.props) + len(src.matched)); err != nil {
		return err
	}
	e.allProps = e.allProps || src.allProps
	if !e.allProps {
		for k := range src.props {
			e.prop(k)
		}
	}
	e.items = max(e.items, src.items)
	for i := range src.matched {
		if e.matched == nil {
			e.matched = map[int]bool{}
		}
		e.matched[i] = true
	}
	return nil
}

// fresh is a new eval for a subschema whose annotations count only if it
// passes, when ev collects them; else nil.
func fresh(ev *eval) *eval {
	if ev == nil {
		return nil
	}
	return &eval{}
}

// pathElem is one step into the instance: a property name or an index.
type pathElem struct {
	name  string
	index int // -1 for a property
}

func pathString(path []pathElem) string {
	var b strings.Builder
	for _, p := range path {
		if p.index >= 0 {
			b.WriteString("[" + strconv.Itoa(p.index) + "]")
		} else if isIdent(p.name) {
			b.WriteString("." + p.name)
		} else {
			b.WriteString("[" + strconv.Quote(p.name) + "]")
		}
	}
	return strings.TrimPrefix(b.String(), ".")
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func (ck *checker) fail(path []pathElem, format string, args ...any) error {
	return &ValidationError{Path: pathString(path), Message: fmt.Sprintf(format, args...)}
}

// check returns nil when v passes n, else the first error. ev, when not
// nil, collects what n evaluated of v (see eval).
func (ck *checker) check(n *node, v any, path []pathElem, depth int, ev *eval) error {
	if ck.steps++; ck.steps > maxSteps || depth > maxDepth*4 {
		return ErrTooComplex
	}
	if n.always != nil {
		if *n.always {
			return nil
		}
		return ck.fail(path, "no value is allowed here")
	}
	_, isObject := v.(map[string]any)
	_, isArray := v.([]any)
	if !isObject && !isArray {
		ev = nil // only objects and arrays have annotations to collect
	}
	if !(isObject && n.unevalProps != nil || isArray && n.unevalItems != nil) {
		return ck.keywords(n, v, path, depth, ev)
	}
	// unevaluated* see what this schema's keywords evaluated: its own
	// eval, which the schema around it gets too.
	own := &eval{}
	if err := ck.keywords(n, v, path, depth, own); err != nil {
		return err
	}
	if err := ck.unevaluated(n, v, path, depth, own); err != nil {
		return err
	}
	return ck.merge(ev, own)
}

// keywords checks v against n's keywords but unevaluatedProperties and
// unevaluatedItems.
func (ck *checker) keywords(n *node, v any, path []pathElem, depth int, ev *eval) error {
	if n.resolved != nil {
		if err := ck.check(n.resolved, v, path, depth+1, ev); err != nil {
			return err
		}
	}
	if len(n.types) > 0 && !hasType(v, n.types) {
		return ck.fail(path, "want %s, got %s", strings.Join(n.types, " or "), kind(v))
	}
	if n.enum != nil {
		found := false
		for _, e := range n.enum {
			if equal(v, e) {
				found = true
				break
			}
		}
		if !found {
			return ck.fail(path, "want one of %s", brief(n.enum))
		}
	}
	if n.hasConst && !equal(v, n.constV) {
		return ck.fail(path, "want %s", brief(n.constV))
	}
	switch v := v.(type) {
	case json.Number:
		if err := ck.checkNumber(n, v, path); err != nil {
			return err
		}
	case string:
		if err := ck.checkString(n, v, path); err != nil {
			return err
		}
	case []any:
		if err := ck.checkArray(n, v, path, depth, ev); err != nil {
			return err
		}
	case map[string]any:
		if err := ck.checkObject(n, v, path, depth, ev); err != nil {
			return err
		}
	}
	return ck.applicators(n, v, path, depth, ev)
}

// applicators checks v against the subschemas n applies to v itself:
// allOf, anyOf, oneOf, not and if/then/else.
func (ck *checker) applicators(n *node, v any, path []pathElem, depth int, ev *eval) error {
	for _, s := range n.allOf {
		if err := ck.check(s, v, path, depth+1, ev); err != nil {
			return err
		}
	}
	if n.anyOf != nil {
		if err := ck.checkAnyOf(n, v, path, depth, ev); err != nil {
			return err
		}
	}
	if n.oneOf != nil {
		if err := ck.checkOneOf(n, v, path, depth, ev); err != nil {
			return err
		}
	}
	if n.not != nil {
		// Whatever not's schema evaluated, not has no annotations.
		err := ck.check(n.not, v, path, depth+1, nil)
		if err == ErrTooComplex {
			return err
		}
		if err == nil {
			return ck.fail(path, "matches a schema it must not (not)")
		}
	}
	if n.ifN != nil {
		return ck.checkIf(n, v, path, depth, ev)
	}
	return nil
}

// checkAnyOf passes when a subschema does. When annotations are collected
// it tries them all, since each one that passes adds its own.
func (ck *checker) checkAnyOf(n *node, v any, path []pathElem, depth int, ev *eval) error {
	var first error
	passed := false
	for _, s := range n.anyOf {
		sev := fresh(ev)
		err := ck.check(s, v, path, depth+1, sev)
		if err == ErrTooComplex {
			return err
		}
		if err == nil {
			passed = true
			if ev == nil {
				break
			}
			if err := ck.merge(ev, sev); err != nil {
				return err
			}
		} else if first == nil {
			first = err
		}
	}
	if !passed {
		return ck.fail(path, "matches none of the anyOf schemas (the first: %v)", first)
	}
	return nil
}

func (ck *checker) checkOneOf(n *node, v any, path []pathElem, depth int, ev *eval) error {
	matched := 0
	var kept *eval
	for _, s := range n.oneOf {
		sev := fresh(ev)
		err := ck.check(s, v, path, depth+1, sev)
		if err == ErrTooComplex {
			return err
		}
		if err == nil {
			matched++
			kept = sev
		}
	}
	if matched != 1 {
		return ck.fail(path, "matches %d of the oneOf schemas, want exactly 1", matched)
	}
	return ck.merge(ev, kept)
}

// checkIf checks then or else by whether v passes if; if's own
// annotations count when it passes.
func (ck *checker) checkIf(n *node, v any, path []pathElem, depth int, ev *eval) error {
	iev := fresh(ev)
	err := ck.check(n.ifN, v, path, depth+1, iev)
	if err == ErrTooComplex {
		return err
	}
	branch := n.thenN
	if err != nil {
		branch = n.elseN
	} else if err := ck.merge(ev, iev); err != nil {
		return err
	}
	if branch == nil {
		return nil
	}
	return ck.check(branch, v, path, depth+1, ev)
}

// unevaluated checks the properties or items of v that own says n's other
// keywords did not evaluate against unevaluatedProperties or
// unevaluatedItems, which then evaluated them all.
func (ck *checker) unevaluated(n *node, v any, path []pathElem, depth int, own *eval) error {
	switch v := v.(type) {
	case map[string]any:
		if own.allProps {
			return nil
		}
		if err := ck.spend(len(v)); err != nil {
			return err
		}
		for _, k := range sortedKeys(v) {
			if own.props[k] {
				continue
			}
			if n.unevalProps.always != nil && !*n.unevalProps.always {
				return ck.fail(path, "unexpected property %s", strconv.Quote(k))
			}
			if err := ck.check(n.unevalProps, v[k], append(path, pathElem{name: k, index: -1}), depth+1, nil); err != nil {
				return err
			}
		}
		own.allProps = true
	case []any:
		if err := ck.spend(len(v) - min(own.items, len(v))); err != nil {
			return err
		}
		for i := own.items; i < len(v); i++ {
			if own.matched[i] {
				continue
			}
			if n.unevalItems.always != nil && !*n.unevalItems.always {
				return ck.fail(path, "unexpected item %d", i)
			}
			if err := ck.check(n.unevalItems, v[i], append(path, pathElem{index: i}), depth+1, nil); err != nil {
				return err
			}
		}
		own.items = len(v)
	}
	return nil
}

func (ck *checker) checkNumber(n *node, v json.Number, path []pathElem) error {
	f, err := v.Float64()
	if err != nil && !math.IsInf(f, 0) {
		return ck.fail(path, "not a number")
	}
	x := bound{f: f, text: string(v)}
	switch {
	case n.minimum != nil && compare(x, *n.minimum) < 0:
		return ck.fail(path, "want at least %s, got %s", n.minimum.text, v)
	case n.maximum != nil && compare(x, *n.maximum) > 0:
		return ck.fail(path, "want at most %s, got %s", n.maximum.text, v)
	case n.exclMinimum != nil && compare(x, *n.exclMinimum) <= 0:
		return ck.fail(path, "want more than %s, got %s", n.exclMinimum.text, v)
	case n.exclMaximum != nil && compare(x, *n.exclMaximum) >= 0:
		return ck.fail(path, "want less than %s, got %s", n.exclMaximum.text, v)
	case n.multipleOf != nil && !isMultiple(x, *n.multipleOf):
		return ck.fail(path, "want a multiple of %s, got %s", n.multipleOf.text, v)
	}
	return nil
}

// compare orders two JSON numbers: by their float64s, and when those tie by
// their decimal values, which float64 may have rounded together.
func compare(a, b bound) int {
	switch {
	case a.f < b.f:
		return -1
	case a.f > b.f:
		return 1
	case a.text == b.text:
		return 0
	}
	ra, okA := exact(a.text)
	rb, okB := exact(b.text)
	if !okA || !okB {
		return 0
	}
	return ra.Cmp(rb)
}

// isMultiple reports whether x is an integer multiple of m (above 0). It
// divides the decimals exactly: float64 division says 0.3 is no multiple of
// 0.1, and past 2^53 it cannot tell odd from even.
func isMultiple(x, m bound) bool {
	if i, err := strconv.ParseInt(x.text, 10, 64); err == nil {
		if j, err := strconv.ParseInt(m.text, 10, 64); err == nil {
			return i%j == 0 // the common case, without fractions
		}
	}
	// a × 10^p is a multiple of b × 10^q when b divides a × 10^(p-q)
	// (p >= q), or b × 10^(q-p) divides a (p < q).
	if a, p := decimal(x.text); a != nil && m.digits != nil {
		b := m.digits
		if p >= m.exp {
			a = new(big.Int).Mul(a, pow10(p-m.exp))
		} else {
			b = new(big.Int).Mul(b, pow10(m.exp-p))
		}
		return new(big.Int).Rem(a, b).Sign() == 0
	}
	// A number too long to divide exactly: float64 remainders, which
	// are exact for the binary values, are the best left.
	return !math.IsInf(x.f, 0) && math.Mod(x.f, m.f) == 0
}

// exact reads a JSON number's text as a fraction. It declines text longer
// than maxExactLen or with an exponent past maxExactExp, whose fractions
// would cost too much to compute: the caller keeps to float64.
func exact(s string) (*big.Rat, bool) {
	if len(s) > maxExactLen {
		return nil, false
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > maxExactExp || e < -maxExactExp {
			return nil, false
		}
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// decimal reads a JSON number's text as digits × 10^exp, within the bounds
// of [exact]; it returns nil digits for text out of them.
func decimal(s string) (*big.Int, int) {
	if len(s) > maxExactLen {
		return nil, 0
	}
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > maxExactExp || e < -maxExactExp {
			return nil, 0
		}
		mant, exp = s[:i], e
	}
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		exp -= len(mant) - i - 1
		mant = mant[:i] + mant[i+1:]
	}
	d, ok := new(big.Int).SetString(mant, 10)
	if !ok {
		return nil, 0
	}
	return d, exp
}

func pow10(n int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// maxExactLen and maxExactExp bound the numbers [exact] reads, so that its
// fractions stay a few thousand bits: float64 reaches 1e308, and 17
// digits tell its values apart.
const (
	maxExactLen = 64
	maxExactExp = 400
)

func (ck *checker) checkString(n *node, s string, path []pathElem) error {
	if n.minLength >= 0 || n.maxLength >= 0 {
		l := utf8.RuneCountInString(s)
		if n.minLength >= 0 && l < n.minLength {
			return ck.fail(path, "want at least %d characters, got %d", n.minLength, l)
		}
		if n.maxLength >= 0 && l > n.maxLength {
			return ck.fail(path, "want at most %d characters, got %d", n.maxLength, l)
		}
	}
	if n.pattern != nil {
		if err := ck.match(n.patternInsts, s); err != nil {
			return err
		}
		if !n.pattern.MatchString(s) {
			return ck.fail(path, "does not match the pattern %s", brief(n.pattern.String()))
		}
	}
	return nil
}

func (ck *checker) checkArray(n *node, a []any, path []pathElem, depth int, ev *eval) error {
	if n.minItems >= 0 && len(a) < n.minItems {
		return ck.fail(path, "want at least %d items, got %d", n.minItems, len(a))
	}
	if n.maxItems >= 0 && len(a) > n.maxItems {
		return ck.fail(path, "want at most %d items, got %d", n.maxItems, len(a))
	}
	for i, e := range a {
		s := n.items
		if i < len(n.prefixItems) {
			s = n.prefixItems[i]
		}
		if s == nil {
			continue
		}
		if err := ck.check(s, e, append(path, pathElem{index: i}), depth+1, nil); err != nil {
			return err
		}
	}
	if ev != nil {
		// prefixItems evaluated the items it has schemas for, items the
		// rest.
		ev.items = max(ev.items, min(len(n.prefixItems), len(a)))
		if n.items != nil {
			ev.items = len(a)
		}
	}
	if n.contains != nil {
		if err := ck.checkContains(n, a, path, depth, ev); err != nil {
			return err
		}
	}
	if n.uniqueItems {
		for i := range a {
			for j := i + 1; j < len(a); j++ {
				if ck.steps++; ck.steps > maxSteps {
					return ErrTooComplex
				}
				if equal(a[i], a[j]) {
					return ck.fail(path, "items %d and %d are equal, want unique items", i, j)
				}
			}
		}
	}
	return nil
}

// checkContains counts the items of a that pass contains, and checks the
// count against minContains (1 by default; 0 lets an array without such
// items pass) and maxContains. The items that pass are evaluated.
func (ck *checker) checkContains(n *node, a []any, path []pathElem, depth int, ev *eval) error {
	least := 1
	if n.minContains >= 0 {
		least = n.minContains
	}
	matched := 0
	for i, e := range a {
		err := ck.check(n.contains, e, append(path, pathElem{index: i}), depth+1, nil)
		if err == ErrTooComplex {
			return err
		}
		if err == nil {
			matched++
			if ev != nil {
				if ev.matched == nil {
					ev.matched = map[int]bool{}
				}
				ev.matched[i] = true
			}
		}
	}
	switch {
	case matched < least && least == 1:
		return ck.fail(path, "want an item matching contains, got none")
	case matched < least:
		return ck.fail(path, "want at least %d items matching contains, got %d", least, matched)
	case n.maxContains >= 0 && matched > n.maxContains:
		return ck.fail(path, "want at most %d items matching contains, got %d", n.maxContains, matched)
	}
	return nil
}

func (ck *checker) checkObject(n *node, o map[string]any, path []pathElem, depth int, ev *eval) error {
	if n.minProps >= 0 && len(o) < n.minProps {
		return ck.fail(path, "want at least %d properties, got %d", n.minProps, len(o))
	}
	if n.maxProps >= 0 && len(o) > n.maxProps {
		return ck.fail(path, "want at most %d properties, got %d", n.maxProps, len(o))
	}
	for _, r := range n.required {
		if _, ok := o[r]; !ok {
			return ck.fail(path, "missing required property %s", strconv.Quote(r))
		}
	}
	for _, k := range n.dependentOrder {
		if _, ok := o[k]; !ok {
			continue
		}
		for _, r := range n.dependentRequired[k] {
			if _, ok := o[r]; !ok {
				return ck.fail(path, "property %s needs property %s", strconv.Quote(k), strconv.Quote(r))
			}
		}
	}
	for _, name := range n.propertyOrder {
		if v, ok := o[name]; ok {
			if err := ck.check(n.properties[name], v, append(path, pathElem{name: name, index: -1}), depth+1, nil); err != nil {
				return err
			}
			if ev != nil {
				ev.prop(name)
			}
		}
	}
	// dependentSchemas apply to the object itself, so what they evaluate
	// is its.
	for _, k := range n.dependentSchemaKeys {
		if _, ok := o[k]; ok {
			if err := ck.check(n.dependentSchemas[k], o, path, depth+1, ev); err != nil {
				return err
			}
		}
	}
	if n.additional == nil && n.patternProps == nil && n.propertyNames == nil {
		return nil
	}
	for _, k := range sortedKeys(o) { // errors name the same property every time
		if err := ck.checkProperty(n, o, k, path, depth, ev); err != nil {
			return err
		}
	}
	if n.additional != nil && ev != nil {
		ev.allProps = true // with properties and patternProperties
	}
	return nil
}

// checkProperty checks the property k of o against propertyNames,
// patternProperties and additionalProperties.
func (ck *checker) checkProperty(n *node, o map[string]any, k string, path []pathElem, depth int, ev *eval) error {
	p := append(path, pathElem{name: k, index: -1})
	if n.propertyNames != nil {
		if err := ck.check(n.propertyNames, k, p, depth+1, nil); err != nil {
			if err == ErrTooComplex {
				return err
			}
			return ck.fail(p, "the property name is not allowed: %v", err.(*ValidationError).Message)
		}
	}
	_, matched := n.properties[k]
	for _, pp := range n.patternProps {
		if err := ck.match(pp.insts, k); err != nil {
			return err
		}
		if pp.re.MatchString(k) {
			matched = true
			if err := ck.check(pp.n, o[k], p, depth+1, nil); err != nil {
				return err
			}
			if ev != nil {
				ev.prop(k)
			}
		}
	}
	if !matched && n.additional != nil {
		if n.additional.always != nil && !*n.additional.always {
			return ck.fail(path, "unexpected property %s", strconv.Quote(k))
		}
		if err := ck.check(n.additional, o[k], p, depth+1, nil); err != nil {
			return err
		}
	}
	return nil
}

// hasType reports whether v is of one of types.
func hasType(v any, types []string) bool {
	k := kind(v)
	for _, t := range types {
		if t == k {
			return true
		}
		if t == "number" && k == "integer" {
			return true
		}
	}
	return false
}

// kind is v's JSON Schema type: numbers without a fraction are "integer".
func kind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		f, err := v.Float64()
		if (err == nil || math.IsInf(f, 0)) && f == math.Trunc(f) {
			// float64 rounds 1.0000000000000001 to 1.
			if strings.ContainsAny(string(v), ".eE") {
				if r, ok := exact(string(v)); ok && !r.IsInt() {
					return "number"
				}
			}
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// asArray reads a keyword that takes an array. An empty object stands for
// an empty array: Lua has one empty table, and luamcp's encoder writes it {}.
func asArray(v any) ([]any, bool) {
	if m, ok := v.(map[string]any); ok && len(m) == 0 {
		return []any{}, true
	}
	a, ok := v.([]any)
	return a, ok
}

// asObject reads a keyword that takes an object; an empty array stands for
// an empty object, for the same reason.
func asObject(v any) (map[string]any, bool) {
	if a, ok := v.([]any); ok && len(a) == 0 {
		return map[string]any{}, true
	}
	m, ok := v.(map[string]any)
	return m, ok
}

// number reads a schema's numeric keyword.
func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

// equal is JSON equality: numbers by value, objects whatever their order.
func equal(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		fa, _ := a.Float64()
		fb, _ := b.Float64()
		return compare(bound{f: fa, text: string(a)}, bound{f: fb, text: string(b)}) == 0
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !equal(a[i], b[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, va := range a {
			vb, ok := b[k]
			if !ok || !equal(va, vb) {
				return false
			}
		}
		return true
	}
	return a == b
}

// brief writes v as JSON, cut to 100 bytes, for an error message.
func brief(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if s := logcap.Prefix(string(b), 100); len(s) < len(b) {
		return s + "..."
	}
	return string(b)
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func pointerOrRoot(p string) string {
	if p == "" {
		return "#"
	}
	return "#" + p
}
