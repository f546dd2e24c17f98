package lua

import (
	"context"
	"errors"
	"testing"
)

// patched for luamcp: the whole file.

// A PCall nested in a call formats no traceback for an error caught once
// the state's context is done (a deep unwind through pcalls formatted one at
// every level, each costing the square of the stack's depth); the outermost
// PCall, the host's, still does. Before the cancellation, tracebacks are as
// upstream.
func TestPCallCancelledNoTraceback(t *testing.T) {
	for _, cancelled := range []bool{false, true} {
		L := NewState()
		ctx, cancel := context.WithCancel(context.Background())
		L.SetContext(ctx)
		var inner *ApiError
		L.SetGlobal("fail", L.NewFunction(func(L *LState) int {
			if cancelled {
				cancel()
			}
			L.RaiseError("boom")
			return 0
		}))
		L.SetGlobal("catch", L.NewFunction(func(L *LState) int {
			L.Push(L.GetGlobal("fail"))
			if err := L.PCall(0, 0, nil); !errors.As(err, &inner) {
				t.Fatalf("cancelled=%v: PCall returned %v", cancelled, err)
			}
			L.Error(inner.Object, 0)
			return 0
		}))
		err := L.DoString(`catch()`)
		var outer *ApiError
		if !errors.As(err, &outer) {
			t.Fatalf("cancelled=%v: DoString returned %v", cancelled, err)
		}
		if got := inner.StackTrace != ""; got == cancelled {
			t.Errorf("cancelled=%v: the nested PCall's error has a traceback: %v, want %v", cancelled, got, !cancelled)
		}
		if outer.StackTrace == "" {
			t.Errorf("cancelled=%v: the outermost PCall's error has no traceback", cancelled)
		}
		cancel()
		L.Close()
	}
}
