package lua

// patched for luamcp: the whole file.

// CallDepth returns the number of frames on ls's call stack. A coroutine
// resumed by ls runs on the Go stack of ls's goroutine, under ls's frames: a
// host bounding the Go stack sums CallDepth over the chain of resumers
// (Parent), since CallStackSize bounds each thread alone.
func (ls *LState) CallDepth() int { return ls.stack.Sp() }
