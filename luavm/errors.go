package luavm

import "fmt"

// definedAt returns "file:line: " of the function that implements callback
// name, for errors about what it returned (which Lua cannot place), or "".
func (v *vm) definedAt(name string) string {
	for i, cb := range callbackNames {
		if cb == name {
			if fn := v.fns[i]; fn != nil && fn.Proto != nil && fn.Proto.LineDefined > 0 {
				return fmt.Sprintf("%s:%d: ", fn.Proto.SourceName, fn.Proto.LineDefined)
			}
			return ""
		}
	}
	return ""
}
