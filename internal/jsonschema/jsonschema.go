// Package jsonschema checks JSON values against the part of JSON Schema
// (draft 2020-12, the MCP default dialect) that tool input schemas use: the
// type, enum and const keywords; numbers' bounds and multipleOf; strings'
// lengths and patterns; arrays' items, prefixItems, lengths, uniqueItems,
// contains, minContains and maxContains; objects' properties, required,
// dependentRequired, additionalProperties, patternProperties, propertyNames
// and sizes; allOf, anyOf, oneOf, not and if/then/else; and $ref to the
// schema's own root, $defs or definitions (a JSON pointer, percent-decoded
// as the URI fragment it is). Other keywords (format, title, description,
// default, examples, ...) are annotations: they never make a value invalid,
// as the specification says of keywords a validator does not know.
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
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/luamcp/luamcp/internal/logcap"
)

// A Schema is a compiled schema, safe for concurrent use.
type Schema struct {
	root *node
}

// maxDepth bounds how deeply a schema may nest, and how deeply $ref may
// recurse while a value is checked.
const maxDepth = 64

// maxSteps bounds the work of one [Schema.Validate]: nested anyOf and oneOf
// can make it exponential in the value's depth. A value that needs more is
// refused ([ErrTooComplex]) rather than let through.
const maxSteps = 200_000

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
	additional          *node
	patternProps        []patternProp
	propertyNames       *node
	minProps, maxProps  int // -1: none
	allOf, anyOf, oneOf []*node
	not                 *node
	ifN, thenN, elseN   *node
	ref                 string // a JSON pointer into the root ("" for none)
	resolved            *node  // ref, once resolved
}

type patternProp struct {
	re *regexp.Regexp
	n  *node
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
// on a $ref it cannot resolve, and past maxDepth.
func Compile(schema []byte) (*Schema, error) {
	d := json.NewDecoder(bytes.NewReader(schema))
	d.UseNumber()
	var doc any
	if err := d.Decode(&doc); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	c := compiler{doc: doc, refs: map[string]*node{}}
	root, err := c.compile(doc, "", 0)
	if err != nil {
		return nil, err
	}
	if err := c.resolve(); err != nil {
		return nil, err
	}
	return &Schema{root: root}, nil
}

type compiler struct {
	doc  any
	refs map[string]*node // pointer -> compiled node, filled by resolve
	todo []*node          // nodes with a ref to resolve
}

func (c *compiler) compile(v any, at string, depth int) (*node, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("schema: nested deeper than %d at %s", maxDepth, pointerOrRoot(at))
	}
	if b, ok := v.(bool); ok {
		return &node{always: &b}, nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema: %s: want an object or a boolean, got %s", pointerOrRoot(at), kind(v))
	}
	n := &node{minLength: -1, maxLength: -1, minItems: -1, maxItems: -1, minContains: -1, maxContains: -1, minProps: -1, maxProps: -1}
	bad := func(key, want string) error {
		return fmt.Errorf("schema: %s/%s: want %s", pointerOrRoot(at), key, want)
	}
	sub := func(key string) (*node, error) {
		s, ok := obj[key]
		if !ok {
			return nil, nil
		}
		return c.compile(s, at+"/"+key, depth+1)
	}
	list := func(key string) ([]*node, error) {
		s, ok := obj[key]
		if !ok {
			return nil, nil
		}
		arr, ok := asArray(s)
		if !ok || len(arr) == 0 {
			return nil, bad(key, "a non-empty array of schemas")
		}
		out := make([]*node, len(arr))
		for i, e := range arr {
			var err error
			if out[i], err = c.compile(e, at+"/"+key+"/"+strconv.Itoa(i), depth+1); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	num := func(key string) (*bound, error) {
		s, ok := obj[key]
		if !ok {
			return nil, nil
		}
		f, ok := number(s)
		if !ok {
			return nil, bad(key, "a number")
		}
		return &bound{f: f, text: string(s.(json.Number))}, nil
	}
	count := func(key string) (int, error) {
		s, ok := obj[key]
		if !ok {
			return -1, nil
		}
		f, ok := number(s)
		if !ok || f < 0 || f != math.Trunc(f) {
			return -1, bad(key, "a non-negative integer")
		}
		return int(min(f, math.MaxInt32)), nil
	}
	var err error
	if t, ok := obj["type"]; ok {
		switch t := t.(type) {
		case string:
			n.types = []string{t}
		case []any:
			for _, e := range t {
				s, ok := e.(string)
				if !ok {
					return nil, bad("type", "a type name or an array of them")
				}
				n.types = append(n.types, s)
			}
		case map[string]any:
			if len(t) > 0 {
				return nil, bad("type", "a type name or an array of them")
			}
		default:
			return nil, bad("type", "a type name or an array of them")
		}
		for _, t := range n.types {
			switch t {
			case "null", "boolean", "object", "array", "number", "integer", "string":
			default:
				return nil, bad("type", fmt.Sprintf("a type name, not %q", t))
			}
		}
	}
	if e, ok := obj["enum"]; ok {
		if n.enum, ok = asArray(e); !ok {
			return nil, bad("enum", "an array")
		}
	}
	n.constV, n.hasConst = obj["const"]
	// The keywords of one kind each, read alike.
	for _, f := range []struct {
		key string
		to  **bound
	}{
		{"minimum", &n.minimum}, {"maximum", &n.maximum},
		{"exclusiveMinimum", &n.exclMinimum}, {"exclusiveMaximum", &n.exclMaximum},
		{"multipleOf", &n.multipleOf},
	} {
		if *f.to, err = num(f.key); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		key string
		to  **node
	}{
		{"items", &n.items}, {"contains", &n.contains}, {"additionalProperties", &n.additional},
		{"propertyNames", &n.propertyNames}, {"not", &n.not},
		{"if", &n.ifN}, {"then", &n.thenN}, {"else", &n.elseN},
	} {
		if *f.to, err = sub(f.key); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		key string
		to  *[]*node
	}{
		{"prefixItems", &n.prefixItems}, {"allOf", &n.allOf}, {"anyOf", &n.anyOf}, {"oneOf", &n.oneOf},
	} {
		if *f.to, err = list(f.key); err != nil {
			return nil, err
		}
	}
	if n.multipleOf != nil && n.multipleOf.f <= 0 {
		return nil, bad("multipleOf", "a number above 0")
	}
	if n.multipleOf != nil {
		n.multipleOf.digits, n.multipleOf.exp = decimal(n.multipleOf.text)
	}
	for _, f := range []struct {
		key string
		to  *int
	}{
		{"minLength", &n.minLength}, {"maxLength", &n.maxLength},
		{"minItems", &n.minItems}, {"maxItems", &n.maxItems},
		{"minContains", &n.minContains}, {"maxContains", &n.maxContains},
		{"minProperties", &n.minProps}, {"maxProperties", &n.maxProps},
	} {
		if *f.to, err = count(f.key); err != nil {
			return nil, err
		}
	}
	if p, ok := obj["pattern"]; ok {
		s, ok := p.(string)
		if !ok {
			return nil, bad("pattern", "a string")
		}
		if n.pattern, err = regexp.Compile(s); err != nil {
			return nil, fmt.Errorf("schema: %s/pattern: %w", pointerOrRoot(at), err)
		}
	}
	if u, ok := obj["uniqueItems"]; ok {
		if n.uniqueItems, ok = u.(bool); !ok {
			return nil, bad("uniqueItems", "a boolean")
		}
	}
	if p, ok := obj["properties"]; ok {
		props, ok := asObject(p)
		if !ok {
			return nil, bad("properties", "an object")
		}
		n.properties = make(map[string]*node, len(props))
		for name, s := range props {
			n.propertyOrder = append(n.propertyOrder, name)
			if n.properties[name], err = c.compile(s, at+"/properties/"+escapePointer(name), depth+1); err != nil {
				return nil, err
			}
		}
		sort.Strings(n.propertyOrder) // errors name the same property every time
	}
	if r, ok := obj["required"]; ok {
		arr, ok := asArray(r)
		if !ok {
			return nil, bad("required", "an array of strings")
		}
		for _, e := range arr {
			s, ok := e.(string)
			if !ok {
				return nil, bad("required", "an array of strings")
			}
			n.required = append(n.required, s)
		}
	}
	if d, ok := obj["dependentRequired"]; ok {
		deps, ok := asObject(d)
		if !ok {
			return nil, bad("dependentRequired", "an object of arrays of strings")
		}
		n.dependentRequired = make(map[string][]string, len(deps))
		for k, r := range deps {
			arr, ok := asArray(r)
			if !ok {
				return nil, bad("dependentRequired", "an object of arrays of strings")
			}
			names := []string{}
			for _, e := range arr {
				s, ok := e.(string)
				if !ok {
					return nil, bad("dependentRequired", "an object of arrays of strings")
				}
				names = append(names, s)
			}
			n.dependentRequired[k] = names
			n.dependentOrder = append(n.dependentOrder, k)
		}
		sort.Strings(n.dependentOrder) // errors name the same property every time
	}
	if p, ok := obj["patternProperties"]; ok {
		props, ok := asObject(p)
		if !ok {
			return nil, bad("patternProperties", "an object")
		}
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			re, err := regexp.Compile(k)
			if err != nil {
				return nil, fmt.Errorf("schema: %s/patternProperties: %w", pointerOrRoot(at), err)
			}
			pn, err := c.compile(props[k], at+"/patternProperties/"+escapePointer(k), depth+1)
			if err != nil {
				return nil, err
			}
			n.patternProps = append(n.patternProps, patternProp{re, pn})
		}
	}
	if r, ok := obj["$ref"]; ok {
		s, ok := r.(string)
		if !ok || !strings.HasPrefix(s, "#") {
			return nil, bad("$ref", `a reference within the schema ("#", "#/$defs/name")`)
		}
		// A URI's fragment is percent-encoded: "#/$defs/a%25b" names "a%b".
		if n.ref, err = url.PathUnescape(s[1:]); err != nil {
			return nil, bad("$ref", `a reference within the schema ("#", "#/$defs/name"), percent-encoded`)
		}
		c.todo = append(c.todo, n)
	}
	// $defs and definitions are compiled when a $ref names them (resolve).
	return n, nil
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
			return err
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

// lookup follows the JSON pointer p (RFC 6901) in doc.
func lookup(doc any, p string) (any, error) {
	if p == "" {
		return doc, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("schema: $ref #%s: only JSON pointers within the schema are followed", p)
	}
	v := doc
	for _, tok := range strings.Split(p[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch t := v.(type) {
		case map[string]any:
			next, ok := t[tok]
			if !ok {
				return nil, fmt.Errorf("schema: $ref #%s: no %q", p, tok)
			}
			v = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(t) {
				return nil, fmt.Errorf("schema: $ref #%s: no item %q", p, tok)
			}
			v = t[i]
		default:
			return nil, fmt.Errorf("schema: $ref #%s: %q is inside a %s", p, tok, kind(v))
		}
	}
	return v, nil
}

// A ValidationError says where a value broke the schema, and how.
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
	d := json.NewDecoder(bytes.NewReader(instance))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return fmt.Errorf("arguments: %w", err)
	}
	ck := checker{}
	if e := ck.check(s.root, v, nil, 0); e != nil {
		return e
	}
	return nil
}

type checker struct{ steps int }

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

// check returns nil when v passes n, else the first error.
func (ck *checker) check(n *node, v any, path []pathElem, depth int) error {
	if ck.steps++; ck.steps > maxSteps || depth > maxDepth*4 {
		return ErrTooComplex
	}
	if n.always != nil {
		if *n.always {
			return nil
		}
		return ck.fail(path, "no value is allowed here")
	}
	if n.resolved != nil {
		if err := ck.check(n.resolved, v, path, depth+1); err != nil {
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
		if err := ck.checkArray(n, v, path, depth); err != nil {
			return err
		}
	case map[string]any:
		if err := ck.checkObject(n, v, path, depth); err != nil {
			return err
		}
	}
	for _, s := range n.allOf {
		if err := ck.check(s, v, path, depth+1); err != nil {
			return err
		}
	}
	if n.anyOf != nil {
		var first error
		for _, s := range n.anyOf {
			err := ck.check(s, v, path, depth+1)
			if err == nil {
				first = nil
				break
			}
			if err == ErrTooComplex {
				return err
			}
			if first == nil {
				first = err
			}
		}
		if first != nil {
			return ck.fail(path, "matches none of the anyOf schemas (the first: %v)", first)
		}
	}
	if n.oneOf != nil {
		matched := 0
		for _, s := range n.oneOf {
			err := ck.check(s, v, path, depth+1)
			if err == ErrTooComplex {
				return err
			}
			if err == nil {
				matched++
			}
		}
		if matched != 1 {
			return ck.fail(path, "matches %d of the oneOf schemas, want exactly 1", matched)
		}
	}
	if n.not != nil {
		err := ck.check(n.not, v, path, depth+1)
		if err == ErrTooComplex {
			return err
		}
		if err == nil {
			return ck.fail(path, "matches a schema it must not (not)")
		}
	}
	if n.ifN != nil {
		err := ck.check(n.ifN, v, path, depth+1)
		if err == ErrTooComplex {
			return err
		}
		branch := n.thenN
		if err != nil {
			branch = n.elseN
		}
		if branch != nil {
			if err := ck.check(branch, v, path, depth+1); err != nil {
				return err
			}
		}
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
	if n.pattern != nil && !n.pattern.MatchString(s) {
		return ck.fail(path, "does not match the pattern %s", brief(n.pattern.String()))
	}
	return nil
}

func (ck *checker) checkArray(n *node, a []any, path []pathElem, depth int) error {
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
		if err := ck.check(s, e, append(path, pathElem{index: i}), depth+1); err != nil {
			return err
		}
	}
	if n.contains != nil {
		if err := ck.checkContains(n, a, path, depth); err != nil {
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
// items pass) and maxContains.
func (ck *checker) checkContains(n *node, a []any, path []pathElem, depth int) error {
	least := 1
	if n.minContains >= 0 {
		least = n.minContains
	}
	matched := 0
	for i, e := range a {
		err := ck.check(n.contains, e, append(path, pathElem{index: i}), depth+1)
		if err == ErrTooComplex {
			return err
		}
		if err == nil {
			matched++
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

func (ck *checker) checkObject(n *node, o map[string]any, path []pathElem, depth int) error {
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
			if err := ck.check(n.properties[name], v, append(path, pathElem{name: name, index: -1}), depth+1); err != nil {
				return err
			}
		}
	}
	if n.additional == nil && n.patternProps == nil && n.propertyNames == nil {
		return nil
	}
	names := make([]string, 0, len(o))
	for k := range o {
		names = append(names, k)
	}
	sort.Strings(names) // errors name the same property every time
	for _, k := range names {
		p := append(path, pathElem{name: k, index: -1})
		if n.propertyNames != nil {
			if err := ck.check(n.propertyNames, k, p, depth+1); err != nil {
				if err == ErrTooComplex {
					return err
				}
				return ck.fail(p, "the property name is not allowed: %v", err.(*ValidationError).Message)
			}
		}
		matched := false
		if _, ok := n.properties[k]; ok {
			matched = true
		}
		for _, pp := range n.patternProps {
			if pp.re.MatchString(k) {
				matched = true
				if err := ck.check(pp.n, o[k], p, depth+1); err != nil {
					return err
				}
			}
		}
		if !matched && n.additional != nil {
			if n.additional.always != nil && !*n.additional.always {
				return ck.fail(path, "unexpected property %s", strconv.Quote(k))
			}
			if err := ck.check(n.additional, o[k], p, depth+1); err != nil {
				return err
			}
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
