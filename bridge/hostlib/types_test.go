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
