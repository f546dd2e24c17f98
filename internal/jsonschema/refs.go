package jsonschema

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// A scope is what a schema object's keywords are read under: the base URI
// its $ref resolves against, and its dialect.
type scope struct {
	base string
	d    dialect
}

// rootURI is the base URI of a schema without a root $id: a hierarchical
// URI, so that relative $ids and $refs resolve against it as they would
// against the document's own address, and one that no relative $id is
// likely to spell (an $id that does names the root twice).
const rootURI = "luamcp:///~root"

var rootScope = scope{base: rootURI, d: draft2020}

// The keywords whose values are schemas, by shape, that scan walks. Each is
// walked in the dialects that read it ($defs and definitions in all).
var (
	schemaKeywords     = []string{"items", "additionalItems", "contains", "additionalProperties", "propertyNames", "not", "if", "then", "else", "unevaluatedItems", "unevaluatedProperties"}
	schemaListKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"} // items: draft-07's array
	schemaMapKeywords  = []string{"properties", "patternProperties", "dependentSchemas", "dependencies", "$defs", "definitions"}
)

// scan walks the schemas of the document below v, the schema at at (a JSON
// pointer), and notes each one's scope, the resources ($id) and the
// anchors. Only schemas count: an "$id" inside an enum, or a property named
// "$id", names nothing. Nothing here fails: an $id that is no URI names
// nothing, and a name two schemas share fails the $refs that use it.
func (c *compiler) scan(v any, at string, sc scope, depth int) {
	obj, ok := v.(map[string]any)
	if !ok || depth > maxDepth {
		return
	}
	sc = c.enter(obj, at, sc)
	c.scopes[at] = sc
	_, hasRef := obj["$ref"]
	refOnly := hasRef && sc.d&upTo7 != 0 // draft-07 ignores $ref's siblings
	walked := func(key string) bool {
		if key == "$defs" || key == "definitions" {
			return true
		}
		return !refOnly && reads(key, sc.d)
	}
	for _, key := range schemaKeywords {
		if s, ok := obj[key]; ok && walked(key) {
			c.scan(s, at+"/"+key, sc, depth+1)
		}
	}
	for _, key := range schemaListKeywords {
		if arr, ok := obj[key].([]any); ok && walked(key) {
			for i, s := range arr {
				c.scan(s, at+"/"+key+"/"+strconv.Itoa(i), sc, depth+1)
			}
		}
	}
	for _, key := range schemaMapKeywords {
		if m, ok := obj[key].(map[string]any); ok && walked(key) {
			for _, name := range sortedKeys(m) {
				c.scan(m[name], at+"/"+key+"/"+escapePointer(name), sc, depth+1)
			}
		}
	}
}

// enter reads the $schema, $id and $anchor of the schema object obj at at,
// inside scope sc: it returns the object's own scope. A $schema is read
// wherever it is (the specification has it only at a resource's root).
func (c *compiler) enter(obj map[string]any, at string, sc scope) scope {
	if s, ok := obj["$schema"].(string); ok {
		if d, ok := dialectOf(s); ok {
			sc.d = d
		}
	}
	idKey := "$id"
	if sc.d == draft4 {
		idKey = "id"
	}
	_, hasRef := obj["$ref"]
	if id, ok := obj[idKey].(string); ok && !(hasRef && sc.d&upTo7 != 0) {
		uri, frag, _ := strings.Cut(id, "#")
		if uri != "" {
			if base, err := resolveURI(sc.base, uri); err == nil {
				sc.base = base
				c.name(base, at)
			}
		}
		// Up to draft-07, "$id": "#name" is an anchor; 2020-12 refuses
		// such an $id, and reading it as one is the kindest reading.
		if frag != "" {
			c.name(sc.base+"#"+frag, at)
		}
	}
	if sc.d == draft2020 {
		for _, key := range []string{"$anchor", "$dynamicAnchor"} {
			if a, ok := obj[key].(string); ok {
				c.name(sc.base+"#"+a, at)
			}
		}
	}
	return sc
}

// name notes that uri (with its fragment, for an anchor) names the schema
// at at. A name two schemas share is kept apart: a $ref to it would be
// ambiguous.
func (c *compiler) name(uri, at string) {
	if prev, ok := c.names[uri]; ok && prev != at {
		c.shared[uri] = prev
	}
	c.names[uri] = at
}

// scopeOf is the scope of the schema at at: scan's, or for a place scan
// did not walk (a $ref may point anywhere in the document) the scope of
// the nearest schema around it.
func (c *compiler) scopeOf(at string) scope {
	for {
		if sc, ok := c.scopes[at]; ok {
			return sc
		}
		i := strings.LastIndexByte(at, '/')
		if i < 0 {
			return rootScope
		}
		at = at[:i]
	}
}

// target resolves the $ref ref of the schema at at, in scope sc, to the
// JSON pointer (from the document's root) of the schema it names. The URI
// before the fragment, if any, must be one of the document's own ($id): no
// other document is fetched. The fragment is a JSON pointer into that
// resource, or an anchor's name; it is percent-decoded, as URI fragments
// are.
func (c *compiler) target(ref, at string, sc scope) (string, error) {
	bad := func(why string) error {
		return fmt.Errorf("schema: %s/$ref: %s", pointerOrRoot(at), why)
	}
	uri, frag, _ := strings.Cut(ref, "#")
	var err error
	if uri == "" {
		uri = sc.base
	} else if uri, err = resolveURI(sc.base, uri); err != nil {
		return "", bad(err.Error())
	}
	if prev, ok := c.shared[uri]; ok {
		return "", bad(fmt.Sprintf("%s names both %s and %s", brief(uri), pointerOrRoot(prev), pointerOrRoot(c.names[uri])))
	}
	root, ok := c.names[uri]
	if !ok {
		return "", bad(fmt.Sprintf(`want a reference within the schema ("#", "#/$defs/name", an $anchor or an $id of it), not to another document: %s`, brief(ref)))
	}
	if frag, err = url.PathUnescape(frag); err != nil {
		return "", bad(`want a reference within the schema ("#", "#/$defs/name"), percent-encoded`)
	}
	if frag != "" && frag[0] != '/' {
		p, ok := c.names[uri+"#"+frag]
		if !ok {
			return "", bad(fmt.Sprintf("no $anchor %s", brief(frag)))
		}
		if prev, ok := c.shared[uri+"#"+frag]; ok {
			return "", bad(fmt.Sprintf("the anchor %s names both %s and %s", brief(frag), pointerOrRoot(prev), pointerOrRoot(p)))
		}
		return p, nil
	}
	if _, err := lookup(c.doc, root+frag); err != nil {
		return "", bad(fmt.Sprintf("%s: %v", brief(ref), err))
	}
	return root + frag, nil
}

// resolveURI resolves ref against base (RFC 3986), without its fragment.
func resolveURI(base, ref string) (string, error) {
	r, err := url.Parse(ref)
	if err != nil {
		return "", err
	}
	if !r.IsAbs() {
		b, err := url.Parse(base)
		if err != nil {
			return "", err
		}
		r = b.ResolveReference(r)
	}
	r.Fragment, r.RawFragment = "", ""
	return r.String(), nil
}

// lookup follows the JSON pointer p (RFC 6901) in doc.
func lookup(doc any, p string) (any, error) {
	if p == "" {
		return doc, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("%q is no JSON pointer", p)
	}
	v := doc
	for _, tok := range strings.Split(p[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch t := v.(type) {
		case map[string]any:
			next, ok := t[tok]
			if !ok {
				return nil, fmt.Errorf("no %q", tok)
			}
			v = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(t) {
				return nil, fmt.Errorf("no item %q", tok)
			}
			v = t[i]
		default:
			return nil, fmt.Errorf("%q is inside a %s", tok, kind(v))
		}
	}
	return v, nil
}
