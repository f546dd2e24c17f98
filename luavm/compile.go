package luavm

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// Limits on code compiled at run time (load, loadstring). Script files and
// the modules they require are the author's own code and are limited only
// by maxFileDepth.
const (
	// maxFileDepth bounds the nesting of a script file or module. The
	// parser and compiler recurse once a level, and a file of f(f(f(...)))
	// a few million levels deep (well under MaxSourceBytes) would overflow
	// the goroutine's stack, which no recover catches: the process would
	// die. No code a person writes, nor a generated table, comes near it.
	maxFileDepth = 10000

	// maxLoadSize bounds a chunk given to load or loadstring: parsing runs in
	// Go and cannot be interrupted.
	maxLoadSize = 1 << 20
	// maxLoadDepth bounds the nesting of blocks and expressions of such a
	// chunk. gopher-lua compiles deeply nested blocks in quadratic time (an
	// elseif chain of 20,000 branches takes 20 s), so a hostile chunk could
	// stall its goroutine beyond the reach of cancellation. Lua 5.1 itself
	// stops at 200 levels.
	maxLoadDepth = 200
	// loadStackPerLevel bounds the parser's stack for such a chunk, in
	// entries per level of maxLoadDepth. A level holds one to eight entries
	// while it is open (a numeric for, eight: "for i = a, b do" and its
	// block), so a chunk within maxLoadDepth always fits; a deeper one is
	// refused as it is read, not after a parse that a megabyte of "(" or
	// "a .." made take seconds and hundreds of MiB.
	loadStackPerLevel = 12
	// parseBytesPerByte is what the parse tree of such a chunk is charged
	// against the state's memory budget, per byte of source: a tree takes
	// 26 to 47 bytes per byte of terse code ("x=1 x=1 ...").
	parseBytesPerByte = 48
)

// compile parses and compiles src as the chunk called name. Errors read
// "name:line: message". A positive maxDepth refuses deeper nesting (while
// parsing, past loadStackPerLevel parser entries per level; after it, past
// maxDepth levels of the tree). A non-nil interrupt is checked as the parse
// goes and before the compilation: its error ends them.
func compile(src []byte, name string, maxDepth int, interrupt func() error) (*lua.FunctionProto, error) {
	chunk, err := parse.ParseWith(bytes.NewReader(src), name,
		parse.Options{MaxStack: maxDepth * loadStackPerLevel, Interrupt: interrupt})
	if err == nil && interrupt != nil {
		err = interrupt()
	}
	var perr *parse.Error
	if errors.As(err, &perr) && perr.Message == parse.TooDeep {
		return nil, fmt.Errorf("%s:%d: chunk nests deeper than %d levels", name, max(perr.Pos.Line, 1), maxDepth)
	}
	if err != nil {
		return nil, syntaxError(err, src, name)
	}
	if maxDepth > 0 {
		if line, ok := tooDeep(chunk, maxDepth); !ok {
			return nil, fmt.Errorf("%s:%d: chunk nests deeper than %d levels", name, line, maxDepth)
		}
	}
	proto, err := lua.Compile(chunk, name)
	if err != nil {
		return nil, syntaxError(err, src, name)
	}
	return proto, nil
}

// syntaxError rewrites gopher-lua's parse and compile errors as
// "name:line: message".
func syntaxError(err error, src []byte, name string) error {
	var perr *parse.Error
	if errors.As(err, &perr) {
		line := perr.Pos.Line
		msg := strings.TrimSpace(perr.Message)
		if line == parse.EOF {
			line = bytes.Count(src, []byte("\n")) + 1
			if len(src) > 0 && src[len(src)-1] == '\n' {
				line--
			}
			return fmt.Errorf("%s:%d: %s at end of file", name, max(line, 1), msg)
		}
		if perr.Token != "" {
			return fmt.Errorf("%s:%d: %s near '%s'", name, line, msg, perr.Token)
		}
		return fmt.Errorf("%s:%d: %s", name, line, msg)
	}
	var cerr *lua.CompileError
	if errors.As(err, &cerr) {
		return fmt.Errorf("%s:%d: %s", name, max(cerr.Line, 1), cerr.Message)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// tooDeep reports whether chunk nests deeper than limit, and the line where it
// does. The walk gives up at the limit, so its own recursion stays shallow.
func tooDeep(chunk []ast.Stmt, limit int) (line int, ok bool) {
	d := depthWalker{limit: limit}
	d.stmts(chunk, 0)
	return d.line, d.line == 0
}

type depthWalker struct {
	limit int
	line  int // first line past the limit; 0 while within it
}

func (d *depthWalker) deep(n ast.PositionHolder, depth int) bool {
	if d.line != 0 {
		return true
	}
	if depth > d.limit {
		d.line = max(n.Line(), 1)
		return true
	}
	return false
}

func (d *depthWalker) stmts(list []ast.Stmt, depth int) {
	for _, s := range list {
		d.stmt(s, depth)
	}
}

func (d *depthWalker) exprs(list []ast.Expr, depth int) {
	for _, e := range list {
		d.expr(e, depth)
	}
}

func (d *depthWalker) stmt(s ast.Stmt, depth int) {
	if d.deep(s, depth) {
		return
	}
	depth++
	switch s := s.(type) {
	case *ast.AssignStmt:
		d.exprs(s.Lhs, depth)
		d.exprs(s.Rhs, depth)
	case *ast.LocalAssignStmt:
		d.exprs(s.Exprs, depth)
	case *ast.FuncCallStmt:
		d.expr(s.Expr, depth)
	case *ast.DoBlockStmt:
		d.stmts(s.Stmts, depth)
	case *ast.WhileStmt:
		d.expr(s.Condition, depth)
		d.stmts(s.Stmts, depth)
	case *ast.RepeatStmt:
		d.expr(s.Condition, depth)
		d.stmts(s.Stmts, depth)
	case *ast.IfStmt:
		d.expr(s.Condition, depth)
		d.stmts(s.Then, depth)
		d.stmts(s.Else, depth) // elseif nests: it costs the compiler as much
	case *ast.NumberForStmt:
		d.expr(s.Init, depth)
		d.expr(s.Limit, depth)
		if s.Step != nil {
			d.expr(s.Step, depth)
		}
		d.stmts(s.Stmts, depth)
	case *ast.GenericForStmt:
		d.exprs(s.Exprs, depth)
		d.stmts(s.Stmts, depth)
	case *ast.FuncDefStmt:
		if s.Name != nil {
			if s.Name.Func != nil {
				d.expr(s.Name.Func, depth)
			}
			if s.Name.Receiver != nil {
				d.expr(s.Name.Receiver, depth)
			}
		}
		d.expr(s.Func, depth)
	case *ast.ReturnStmt:
		d.exprs(s.Exprs, depth)
	}
}

func (d *depthWalker) expr(e ast.Expr, depth int) {
	if e == nil || d.deep(e, depth) {
		return
	}
	depth++
	switch e := e.(type) {
	case *ast.AttrGetExpr:
		d.expr(e.Object, depth)
		d.expr(e.Key, depth)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			d.expr(f.Key, depth)
			d.expr(f.Value, depth)
		}
	case *ast.FuncCallExpr:
		d.expr(e.Func, depth)
		d.expr(e.Receiver, depth)
		d.exprs(e.Args, depth)
	case *ast.LogicalOpExpr:
		d.expr(e.Lhs, depth)
		d.expr(e.Rhs, depth)
	case *ast.RelationalOpExpr:
		d.expr(e.Lhs, depth)
		d.expr(e.Rhs, depth)
	case *ast.StringConcatOpExpr:
		d.expr(e.Lhs, depth)
		d.expr(e.Rhs, depth)
	case *ast.ArithmeticOpExpr:
		d.expr(e.Lhs, depth)
		d.expr(e.Rhs, depth)
	case *ast.UnaryMinusOpExpr:
		d.expr(e.Expr, depth)
	case *ast.UnaryNotOpExpr:
		d.expr(e.Expr, depth)
	case *ast.UnaryLenOpExpr:
		d.expr(e.Expr, depth)
	case *ast.FunctionExpr:
		d.stmts(e.Stmts, depth)
	}
}
