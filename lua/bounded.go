package lua

import (
	glua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
)

// maxBoundedCode is the most VM instructions a bounded script may compile
// to: dozens of times what a lock script needs (20 to 60), and so far below
// fsm.DryRunBudget that a bounded script cannot come near it.
const maxBoundedCode = 4096

// boundedCallees are the global functions a bounded script may call.
var boundedCallees = map[string]bool{"tonumber": true, "tostring": true, "type": true}

// boundedRedisCallees are the fields of the global redis a bounded script may
// call.
var boundedRedisCallees = map[string]bool{"call": true, "pcall": true, "status_reply": true, "error_reply": true}

// isBounded classifies a parsed chunk: it reports whether its syntax alone
// shows that a run cannot loop and cannot build large values from small
// ones, so that it need not be dry-run (Engine.Bounded). It is a whitelist
// over gopher-lua's syntax tree: anything it does not know makes the chunk
// unbounded, which only costs a dry run. The rules, and why:
//   - No while, repeat, for, goto, function definition or `...`: every
//     statement and expression runs at most once, so a run takes at most as
//     many VM instructions as the chunk has.
//   - Calls only to the globals redis.call, redis.pcall, redis.status_reply,
//     redis.error_reply, tonumber, tostring and type (not to a local of that
//     name), no method calls: each does work linear in its arguments and,
//     for redis.call and redis.pcall, in the command's reply.
//   - A global is read only as such a callee or as KEYS[i], ARGV[i], #KEYS,
//     #ARGV, and nothing is assigned to a global or to a field of one. So no
//     local can alias redis, _G, KEYS or ARGV: the callees stay the
//     sandbox's functions and KEYS and ARGV the script's arguments (the
//     sandbox also refuses such writes at run time; this does not rely on
//     it).
//   - `..` only over literals, KEYS[i], ARGV[i] and numbers (arithmetic,
//     #, tonumber, type): no string built by `..` is concatenated again, so
//     strings cannot double (`s = s .. s` forty times is a terabyte), and
//     each `..` builds at most the chunk's length times the largest argument.
func isBounded(chunk []ast.Stmt) (bool, growth) {
	var b boundedCheck
	ok := b.block(chunk)
	return ok, b.g
}

// growth bounds what a bounded script can build from its arguments: a
// string is a literal, a KEYS or ARGV element, a number's text, a value a
// command answered, or one `..` chain of at most concat operands of the
// first four kinds; a command it sends has at most callArgs arguments.
type growth struct {
	callArgs int // the most arguments of one redis.call or redis.pcall
	concat   int // the most operands of one `..` chain
	literal  int // the longest string literal
}

// numberText is the longest text of a number in a command argument or a
// `..` ("%.17g", e.g. -1.2345678901234567e-308).
const numberText = 24

// maxCommandBytes bounds command.Size of a command the script sends, built
// from arguments whose longest is longest bytes: callArgs arguments, each a
// `..` chain of concat operands of at most max(longest, literal,
// numberText) bytes, plus each argument's length prefix (at most 10 bytes)
// and the entry's header (32).
func (g growth) maxCommandBytes(longest int) int64 {
	op := int64(max(longest, g.literal, numberText))
	return 32 + int64(max(g.callArgs, 1))*(10+int64(max(g.concat, 1))*op)
}

// boundedProto is the check of a bounded chunk's compiled function: no
// nested functions (isBounded already refused them) and at most
// maxBoundedCode instructions, each of which runs at most once.
func boundedProto(p *glua.FunctionProto) bool {
	return len(p.FunctionPrototypes) == 0 && len(p.Code) <= maxBoundedCode
}

// boundedCheck walks a chunk, tracking the locals in scope so that a name
// that refers to a local is never taken for the global of that name.
type boundedCheck struct {
	scopes [][]string // the locals declared in each enclosing block, innermost last
	g      growth
}

func (b *boundedCheck) literal(e *ast.StringExpr) {
	b.g.literal = max(b.g.literal, len(e.Value))
}

// concatLen is the number of operands of the `..` chain e.
func concatLen(e ast.Expr) int {
	if c, ok := e.(*ast.StringConcatOpExpr); ok {
		return concatLen(c.Lhs) + concatLen(c.Rhs)
	}
	return 1
}

func (b *boundedCheck) block(stmts []ast.Stmt) bool {
	b.scopes = append(b.scopes, nil)
	defer func() { b.scopes = b.scopes[:len(b.scopes)-1] }()
	for _, st := range stmts {
		if !b.stmt(st) {
			return false
		}
	}
	return true
}

func (b *boundedCheck) isLocal(name string) bool {
	for _, scope := range b.scopes {
		for _, n := range scope {
			if n == name {
				return true
			}
		}
	}
	return false
}

// global reports whether e is the global variable name.
func (b *boundedCheck) global(e ast.Expr, name string) bool {
	id, ok := e.(*ast.IdentExpr)
	return ok && id.Value == name && !b.isLocal(name)
}

// argTable reports whether e is the global KEYS or ARGV.
func (b *boundedCheck) argTable(e ast.Expr) bool {
	return b.global(e, "KEYS") || b.global(e, "ARGV")
}

func (b *boundedCheck) stmt(st ast.Stmt) bool {
	switch st := st.(type) {
	case *ast.LocalAssignStmt:
		// The values are read before the names exist: in `local redis =
		// redis` the right-hand redis is the global.
		if !b.exprs(st.Exprs) {
			return false
		}
		top := len(b.scopes) - 1
		b.scopes[top] = append(b.scopes[top], st.Names...)
		return true
	case *ast.AssignStmt:
		for _, lhs := range st.Lhs {
			if !b.target(lhs) {
				return false
			}
		}
		return b.exprs(st.Rhs)
	case *ast.FuncCallStmt:
		return b.expr(st.Expr)
	case *ast.DoBlockStmt:
		return b.block(st.Stmts)
	case *ast.IfStmt: // an elseif is an IfStmt alone in Else
		return b.expr(st.Condition) && b.block(st.Then) && b.block(st.Else)
	case *ast.ReturnStmt:
		return b.exprs(st.Exprs)
	}
	return false
}

// target checks the left side of an assignment: a local, or a field of a
// table that is not reached through a global (KEYS[1] = x is refused).
func (b *boundedCheck) target(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.IdentExpr:
		return b.isLocal(e.Value)
	case *ast.AttrGetExpr:
		if id, ok := e.Object.(*ast.IdentExpr); ok && !b.isLocal(id.Value) {
			return false
		}
		return b.expr(e.Object) && b.expr(e.Key)
	}
	return false
}

func (b *boundedCheck) exprs(es []ast.Expr) bool {
	for _, e := range es {
		if !b.expr(e) {
			return false
		}
	}
	return true
}

func (b *boundedCheck) expr(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.NilExpr, *ast.TrueExpr, *ast.FalseExpr, *ast.NumberExpr:
		return true
	case *ast.StringExpr:
		b.literal(e)
		return true
	case *ast.IdentExpr:
		return b.isLocal(e.Value)
	case *ast.AttrGetExpr:
		if b.argTable(e.Object) {
			return b.expr(e.Key)
		}
		return b.expr(e.Object) && b.expr(e.Key)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			if (f.Key != nil && !b.expr(f.Key)) || !b.expr(f.Value) {
				return false
			}
		}
		return true
	case *ast.FuncCallExpr:
		return b.call(e)
	case *ast.LogicalOpExpr:
		return b.expr(e.Lhs) && b.expr(e.Rhs)
	case *ast.RelationalOpExpr:
		return b.expr(e.Lhs) && b.expr(e.Rhs)
	case *ast.ArithmeticOpExpr:
		return b.expr(e.Lhs) && b.expr(e.Rhs)
	case *ast.StringConcatOpExpr:
		b.g.concat = max(b.g.concat, concatLen(e))
		return b.concatOperand(e.Lhs) && b.concatOperand(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		return b.expr(e.Expr)
	case *ast.UnaryNotOpExpr:
		return b.expr(e.Expr)
	case *ast.UnaryLenOpExpr:
		return b.argTable(e.Expr) || b.expr(e.Expr)
	}
	return false // `...`, function literals, anything unknown
}

// call checks a call: one of the allowed globals, with bounded arguments.
// A method call (a:b()) has no Func.
func (b *boundedCheck) call(e *ast.FuncCallExpr) bool {
	if e.Receiver != nil || e.Func == nil {
		return false
	}
	switch b.callee(e.Func) {
	case "":
		return false
	case "redis.call", "redis.pcall":
		b.g.callArgs = max(b.g.callArgs, len(e.Args))
	}
	return b.exprs(e.Args)
}

// callee returns the name of an allowed callee ("tonumber", "redis.call",
// ...), or "" when f is anything else.
func (b *boundedCheck) callee(f ast.Expr) string {
	switch f := f.(type) {
	case *ast.IdentExpr:
		if boundedCallees[f.Value] && !b.isLocal(f.Value) {
			return f.Value
		}
	case *ast.AttrGetExpr:
		key, ok := f.Key.(*ast.StringExpr)
		if ok && boundedRedisCallees[key.Value] && b.global(f.Object, "redis") {
			return "redis." + key.Value
		}
	}
	return ""
}

// concatOperand checks an operand of `..`: a value that no earlier `..`
// can have built.
func (b *boundedCheck) concatOperand(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.NumberExpr:
		return true
	case *ast.StringExpr:
		b.literal(e)
		return true
	case *ast.StringConcatOpExpr:
		return b.concatOperand(e.Lhs) && b.concatOperand(e.Rhs)
	case *ast.AttrGetExpr:
		return b.argTable(e.Object) && b.expr(e.Key)
	case *ast.ArithmeticOpExpr, *ast.UnaryMinusOpExpr, *ast.UnaryLenOpExpr:
		return b.expr(e) // a number, or an error
	case *ast.FuncCallExpr:
		if name := b.callee(e.Func); name == "tonumber" || name == "type" {
			return b.call(e) // a number, nil or a type name
		}
	}
	return false
}
