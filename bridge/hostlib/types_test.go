package hostlib

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestEditorStubs keeps the LuaLS stubs (types/<module>.lua) in step with
// the modules: every function is annotated, and nothing annotated is missing.
func TestEditorStubs(t *testing.T) {
	for name, fns := range Modules() {
		b, err := os.ReadFile(filepath.Join("..", "..", "types", name+".lua"))
		if err != nil {
			t.Errorf("module %s has no stubs: %v", name, err)
			continue
		}
		stub := string(b)
		if !strings.HasPrefix(stub, "---@meta "+name+"\n") {
			t.Errorf("types/%s.lua does not start with ---@meta %s", name, name)
		}
		for _, fn := range fns {
			// crypto.raw's functions are annotated on their class, raw.
			decl := "function " + name + "." + fn + "("
			if tbl, f, nested := strings.Cut(fn, "."); nested {
				decl = "function " + tbl + "." + f + "("
			}
			if !strings.Contains(stub, decl) {
				t.Errorf("types/%s.lua does not annotate %s.%s", name, name, fn)
			}
		}
		for _, m := range regexp.MustCompile(`(?m)^function (\w+)\.(\w+)\(`).FindAllStringSubmatch(stub, -1) {
			fn := m[2]
			if m[1] != name {
				fn = m[1] + "." + fn
			}
			if !slices.Contains(fns, fn) {
				t.Errorf("types/%s.lua annotates %s.%s, which the module lacks", name, name, fn)
			}
		}
	}
}

// TestEditorStubsOptionalOptions: the class of every optional options table
// (---@param opts T?) has only optional fields, its parents' included:
// LuaLS reports a table literal that lacks a required field of its class
// (missing-fields), so http.get(url, { timeout_ms = 10000 }) was flagged for
// want of url while opts was an http.Request.
func TestEditorStubsOptionalOptions(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "types", "*.lua"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no stubs: %v", err)
	}
	classRe := regexp.MustCompile(`^---@class ([\w.]+)(?:: ([\w.]+))?`)
	fieldRe := regexp.MustCompile(`^---@field (\[?\w+\]?) (.*)`)
	optsRe := regexp.MustCompile(`^---@param opts ([\w.]+)\?`)
	parent := map[string]string{}
	required := map[string][]string{} // class: its fields that are not optional
	var uses []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		class := ""
		for _, line := range strings.Split(string(b), "\n") {
			if m := classRe.FindStringSubmatch(line); m != nil {
				class, parent[m[1]] = m[1], m[2]
				continue
			}
			if m := fieldRe.FindStringSubmatch(line); m != nil && class != "" {
				if !strings.HasSuffix(stubType(m[2]), "?") {
					required[class] = append(required[class], m[1])
				}
				continue
			}
			if !strings.HasPrefix(line, "---") {
				class = ""
			}
			if m := optsRe.FindStringSubmatch(line); m != nil {
				uses = append(uses, m[1])
			}
		}
	}
	if len(uses) == 0 {
		t.Fatal("no ---@param opts T? in the stubs")
	}
	for _, use := range uses {
		for c := use; c != ""; c = parent[c] {
			if len(required[c]) > 0 {
				t.Errorf("opts of type %s: %s requires %v", use, c, required[c])
			}
		}
	}
}

// stubType is the type at the start of an annotation's rest, up to the
// first space outside brackets (table<string, string>? is one type).
func stubType(rest string) string {
	depth := 0
	for i, r := range rest {
		switch r {
		case '<', '(', '{', '[':
			depth++
		case '>', ')', '}', ']':
			depth--
		case ' ':
			if depth == 0 {
				return rest[:i]
			}
		}
	}
	return rest
}
