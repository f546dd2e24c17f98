// Package logcap bounds what one log record can carry. Much of what luamcp
// logs comes from scripts and clients: error messages, tracebacks, print
// output, dropped pushes. One 60 MB error must not become a 60 MB log line,
// so every such value is cut at [Max] bytes with a marker saying how much was
// cut.
//
// [String] cuts one value; [Handler] cuts every attribute of every record
// that passes through it. luavm and host wrap the loggers they are given, so
// whatever a script or a client makes them log is bounded, whoever logs it.
//
// [Throttle] bounds the rate instead: a kind of line a client can trigger at
// will is logged at most once per interval, with the count of those held
// back.
package logcap

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"unicode/utf8"
)

// Max is the most bytes of one logged value that are kept.
const Max = 8 << 10

// String returns s when it has at most [Max] bytes; otherwise its first Max
// bytes (cut on a UTF-8 boundary) followed by "… [N bytes cut]".
func String(s string) string {
	if len(s) <= Max {
		return s
	}
	head := Prefix(s, Max)
	return head + "… [" + strconv.Itoa(len(s)-len(head)) + " bytes cut]"
}

// Prefix returns the longest prefix of s of at most n bytes that does not
// end inside a UTF-8 sequence (of valid text: a few bytes shorter at most).
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	end := n
	for end > n-utf8.UTFMax && end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end]
}

// Handler is a [slog.Handler] that cuts every attribute value of a record
// with [String] before handing it on: strings, errors, byte slices and
// fmt.Stringers, in groups too, after resolving [slog.LogValuer]s. Other
// values pass as they are.
type Handler struct {
	next slog.Handler
}

// NewHandler wraps next; a handler that is already a *Handler is returned as
// it is.
func NewHandler(next slog.Handler) slog.Handler {
	if h, ok := next.(*Handler); ok {
		return h
	}
	return &Handler{next: next}
}

// Logger returns a logger that writes through l's handler wrapped with
// [NewHandler]; l itself when it already does.
func Logger(l *slog.Logger) *slog.Logger {
	if _, ok := l.Handler().(*Handler); ok {
		return l
	}
	return slog.New(NewHandler(l.Handler()))
}

// Enabled reports whether the wrapped handler handles level.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle hands r on, with its long values cut. A record with none is handed
// on as it is.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	long := len(r.Message) > Max
	r.Attrs(func(a slog.Attr) bool {
		_, cut := capValue(a.Value)
		long = long || cut
		return !long
	})
	if !long {
		return h.next.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(capAttr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs returns a handler whose records carry as, cut.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	capped := make([]slog.Attr, len(as))
	for i, a := range as {
		capped[i] = capAttr(a)
	}
	return &Handler{next: h.next.WithAttrs(capped)}
}

// WithGroup returns a handler that puts the attributes that follow in group
// name.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name)}
}

func capAttr(a slog.Attr) slog.Attr {
	a.Value, _ = capValue(a.Value)
	return a
}

// capValue returns v resolved and cut, and whether that changed it.
func capValue(v slog.Value) (slog.Value, bool) {
	v = v.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if s := v.String(); len(s) > Max {
			return slog.StringValue(String(s)), true
		}
	case slog.KindGroup:
		group := v.Group()
		cut := false
		for _, a := range group {
			if _, c := capValue(a.Value); c {
				cut = true
				break
			}
		}
		if !cut {
			return v, false
		}
		capped := make([]slog.Attr, len(group))
		for i, a := range group {
			capped[i] = capAttr(a)
		}
		return slog.GroupValue(capped...), true
	case slog.KindAny:
		var s string
		switch x := v.Any().(type) {
		case error:
			s = x.Error()
		case []byte:
			s = string(x)
		case json.RawMessage:
			s = string(x)
		case fmt.Stringer:
			s = x.String()
		default:
			return v, false
		}
		if len(s) > Max {
			return slog.StringValue(String(s)), true
		}
	}
	return v, false
}
