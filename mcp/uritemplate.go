package mcp

import (
	"net/url"
	"strings"
)

// MatchTemplate matches uri against an RFC 6570 level-1 template such as
// "mem://user/{id}". Literal text must match exactly; each {var} matches one
// or more characters other than '/', percent-decoded. A variable named twice
// must match the same text. Templates using operators of higher levels
// ({+var}, {#var}, {?var}, ...) or with unbalanced braces match nothing.
func MatchTemplate(template, uri string) (vars map[string]string, ok bool) {
	var parts []tplPart
	rest := template
	for rest != "" {
		open := strings.IndexAny(rest, "{}")
		if open < 0 {
			parts = append(parts, tplPart{lit: rest})
			break
		}
		if rest[open] == '}' {
			return nil, false
		}
		if open > 0 {
			parts = append(parts, tplPart{lit: rest[:open]})
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return nil, false
		}
		name := rest[open+1 : open+end]
		if !validVarName(name) {
			return nil, false
		}
		parts = append(parts, tplPart{name: name, isVar: true})
		rest = rest[open+end+1:]
	}
	vals := make([]string, len(parts))
	if !matchParts(parts, vals, uri) {
		return nil, false
	}
	vars = make(map[string]string)
	for i, p := range parts {
		if !p.isVar {
			continue
		}
		v := vals[i]
		if dec, err := url.PathUnescape(v); err == nil {
			v = dec
		}
		if prev, seen := vars[p.name]; seen && prev != v {
			return nil, false
		}
		vars[p.name] = v
	}
	return vars, true
}

type tplPart struct {
	lit   string
	name  string
	isVar bool
}

// validVarName accepts RFC 6570 varname characters (ALPHA, DIGIT, '_', '.'
// and pct-encoded triplets), which excludes every operator.
func validVarName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '.', c == '%':
		default:
			return false
		}
	}
	return name[0] != '.'
}

// matchParts matches s against parts, recording variable values in vals. A
// variable takes the longest run it can that still lets the rest match. The
// work is linear in len(s) per part, whatever the input: can[i][p] records
// whether parts[i:] match s[p:], computed from the end.
func matchParts(parts []tplPart, vals []string, s string) bool {
	n := len(s)
	// segEnd[p] is the index of the first '/' at or after p (or n): a
	// variable starting at p ends at most there.
	segEnd := make([]int, n+1)
	segEnd[n] = n
	for p := n - 1; p >= 0; p-- {
		if s[p] == '/' {
			segEnd[p] = p
		} else {
			segEnd[p] = segEnd[p+1]
		}
	}
	can := make([][]bool, len(parts)+1)
	for i := range can {
		can[i] = make([]bool, n+1)
	}
	can[len(parts)][n] = true
	nearest := make([]int, n+2) // nearest[q]: smallest q' >= q with can[i+1][q']
	for i := len(parts) - 1; i >= 0; i-- {
		next, cur := can[i+1], can[i]
		if p := parts[i]; !p.isVar {
			for pos := 0; pos+len(p.lit) <= n; pos++ {
				cur[pos] = next[pos+len(p.lit)] && s[pos:pos+len(p.lit)] == p.lit
			}
			continue
		}
		nearest[n+1] = n + 1
		for q := n; q >= 0; q-- {
			nearest[q] = nearest[q+1]
			if next[q] {
				nearest[q] = q
			}
		}
		for pos := 0; pos < n; pos++ {
			cur[pos] = nearest[pos+1] <= segEnd[pos]
		}
	}
	if !can[0][0] {
		return false
	}
	pos := 0
	for i, p := range parts {
		if !p.isVar {
			pos += len(p.lit)
			continue
		}
		end := segEnd[pos]
		for !can[i+1][end] {
			end--
		}
		vals[i] = s[pos:end]
		pos = end
	}
	return true
}
