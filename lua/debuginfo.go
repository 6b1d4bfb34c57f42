package lua

import (
	"reflect"

	glua "github.com/yuin/gopher-lua"
)

// Lua 5.1 names the variable involved in a runtime error ("attempt to index
// field 'x' (a nil value)") and the function a bad argument was passed to,
// by symbolic execution of the bytecode around the current instruction
// (ldebug.c: getobjname, getfuncname). gopher-lua does not, so this file
// does it on gopher-lua's bytecode, which uses Lua 5.1's instruction set
// (plus MOVEN, GETTABLEKS, SETTABLEKS, NOP).
//
// gopher-lua keeps a frame's program counter and registers unexported; they
// are read (never written) through reflect. If a gopher-lua upgrade renames
// them, the readers report "unknown" and messages fall back to Lua's
// anonymous forms ("attempt to call a nil value"); the error tests catch it.

// frame is what the error paths need of a call frame.
type frame struct {
	fn        *glua.LFunction
	pc        int // index of the next instruction; the current one is pc-1
	nargs     int
	localBase int
	tailCall  int
}

// frameAt returns the frame at a stack level (0 = the running function).
func frameAt(L *glua.LState, level int) (frame, bool) {
	dbg, ok := L.GetStack(level)
	if !ok {
		return frame{}, false
	}
	fv, err := L.GetInfo("f", dbg, glua.LNil)
	if err != nil {
		return frame{}, false
	}
	fn, ok := fv.(*glua.LFunction)
	if !ok {
		return frame{}, false
	}
	f := frame{fn: fn}
	rv := reflect.ValueOf(dbg).Elem().FieldByName("frame")
	if !rv.IsValid() || rv.Kind() != reflect.Pointer || rv.IsNil() {
		return frame{}, false
	}
	cf := rv.Elem()
	read := func(name string, dst *int) bool {
		v := cf.FieldByName(name)
		if !v.IsValid() || v.Kind() != reflect.Int {
			return false
		}
		*dst = int(v.Int())
		return true
	}
	if !read("Pc", &f.pc) || !read("NArgs", &f.nargs) || !read("LocalBase", &f.localBase) || !read("TailCall", &f.tailCall) {
		return frame{}, false
	}
	return f, true
}

func (f frame) isLua() bool { return f.fn != nil && !f.fn.IsG && f.fn.Proto != nil }

// currentInst is the instruction the frame is executing (or calling from).
func (f frame) currentInst() (uint32, int, bool) {
	if !f.isLua() || f.pc <= 0 || f.pc > len(f.fn.Proto.Code) {
		return 0, 0, false
	}
	return f.fn.Proto.Code[f.pc-1], f.pc - 1, true
}

// register reads the value kind of register reg of a Lua frame: its Lua
// type name, and its value when it is a string or a number.
type regValue struct {
	typ string
	str string
	num float64
	ok  bool
}

var (
	tNumber = reflect.TypeOf(glua.LNumber(0))
	tString = reflect.TypeOf(glua.LString(""))
	tBool   = reflect.TypeOf(glua.LBool(false))
	tNil    = reflect.TypeOf(glua.LNil)
	tTable  = reflect.TypeOf(&glua.LTable{})
	tFunc   = reflect.TypeOf(&glua.LFunction{})
	tThread = reflect.TypeOf(&glua.LState{})
	tUdata  = reflect.TypeOf(&glua.LUserData{})
)

func register(L *glua.LState, f frame, reg int) regValue {
	rv := reflect.ValueOf(L).Elem().FieldByName("reg")
	if !rv.IsValid() || rv.Kind() != reflect.Pointer || rv.IsNil() {
		return regValue{}
	}
	arr := rv.Elem().FieldByName("array")
	idx := f.localBase + reg
	if !arr.IsValid() || arr.Kind() != reflect.Slice || idx < 0 || idx >= arr.Len() {
		return regValue{}
	}
	v := arr.Index(idx)
	if v.Kind() != reflect.Interface {
		return regValue{}
	}
	if v.IsNil() {
		return regValue{typ: "nil", ok: true}
	}
	c := v.Elem()
	switch c.Type() {
	case tNumber:
		return regValue{typ: "number", num: c.Float(), ok: true}
	case tString:
		return regValue{typ: "string", str: c.String(), ok: true}
	case tBool:
		return regValue{typ: "boolean", ok: true}
	case tNil:
		return regValue{typ: "nil", ok: true}
	case tTable:
		return regValue{typ: "table", ok: true}
	case tFunc:
		return regValue{typ: "function", ok: true}
	case tThread:
		return regValue{typ: "thread", ok: true}
	case tUdata:
		return regValue{typ: "userdata", ok: true}
	}
	return regValue{}
}

// Instruction fields (gopher-lua's layout: opcode in the top 6 bits).
func opOf(i uint32) int   { return int(i >> 26) }
func argA(i uint32) int   { return int(i>>18) & 0xff }
func argB(i uint32) int   { return int(i & 0x1ff) }
func argC(i uint32) int   { return int(i>>9) & 0x1ff }
func argBx(i uint32) int  { return int(i & 0x3ffff) }
func argSbx(i uint32) int { return argBx(i) - (1<<18-1)>>1 }
func isK(x int) bool      { return x&(1<<8) != 0 }
func indexK(x int) int    { return x &^ (1 << 8) }

// setsA reports whether an opcode writes register A (Lua 5.1 testAMode;
// TEST counts, as in Lua's table).
func setsA(op int) bool {
	switch op {
	case glua.OP_MOVE, glua.OP_MOVEN, glua.OP_LOADK, glua.OP_LOADBOOL, glua.OP_LOADNIL,
		glua.OP_GETUPVAL, glua.OP_GETGLOBAL, glua.OP_GETTABLE, glua.OP_GETTABLEKS,
		glua.OP_NEWTABLE, glua.OP_SELF, glua.OP_ADD, glua.OP_SUB, glua.OP_MUL, glua.OP_DIV,
		glua.OP_MOD, glua.OP_POW, glua.OP_UNM, glua.OP_NOT, glua.OP_LEN, glua.OP_CONCAT,
		glua.OP_TEST, glua.OP_TESTSET, glua.OP_CALL, glua.OP_TAILCALL, glua.OP_FORLOOP,
		glua.OP_FORPREP, glua.OP_CLOSURE, glua.OP_VARARG:
		return true
	}
	return false
}

// symbexec finds the last instruction before lastpc that set register reg
// (ldebug.c symbexec, the data-flow part).
func symbexec(p *glua.FunctionProto, lastpc, reg int) uint32 {
	code := p.Code
	last := len(code) - 1
	for pc := 0; pc < lastpc && pc < len(code); pc++ {
		i := code[pc]
		op := opOf(i)
		a := argA(i)
		if setsA(op) && a == reg {
			last = pc
		}
		switch op {
		case glua.OP_LOADNIL:
			if a <= reg && reg <= argB(i) {
				last = pc
			}
		case glua.OP_SELF:
			if reg == a+1 {
				last = pc
			}
		case glua.OP_TFORLOOP:
			if reg >= a+2 {
				last = pc
			}
		case glua.OP_CALL, glua.OP_TAILCALL:
			if reg >= a {
				last = pc
			}
		case glua.OP_JMP, glua.OP_FORLOOP, glua.OP_FORPREP:
			dest := pc + 1 + argSbx(i)
			if pc < dest && dest <= lastpc {
				pc += argSbx(i)
			}
		case glua.OP_SETLIST:
			if argC(i) == 0 {
				pc++
			}
		case glua.OP_CLOSURE:
			if bx := argBx(i); bx < len(p.FunctionPrototypes) {
				pc += int(p.FunctionPrototypes[bx].NumUpvalues)
			}
		}
	}
	if last < 0 || last >= len(code) {
		return 0
	}
	return code[last]
}

// localName is luaF_getlocalname: the name of the n-th (1-based) active
// local at pc.
func localName(p *glua.FunctionProto, n, pc int) string {
	for _, lv := range p.DbgLocals {
		if lv.StartPc > pc {
			break
		}
		if pc < lv.EndPc {
			n--
			if n == 0 {
				return lv.Name
			}
		}
	}
	return ""
}

// constName is kname: a constant string operand's text, or "?".
func constName(p *glua.FunctionProto, rk int) string {
	if isK(rk) {
		if k := indexK(rk); k < len(p.Constants) {
			if s, ok := p.Constants[k].(glua.LString); ok {
				return string(s)
			}
		}
	}
	return "?"
}

// objName is getobjname: what register reg holds at pc, as Lua 5.1 names it
// ("local", "global", "field", "upvalue", "method"), or "" when unknown.
func objName(p *glua.FunctionProto, pc, reg int, depth int) (kind, name string) {
	if name := localName(p, reg+1, pc); name != "" {
		return "local", name
	}
	if depth > 16 {
		return "", ""
	}
	i := symbexec(p, pc, reg)
	switch opOf(i) {
	case glua.OP_GETGLOBAL:
		if bx := argBx(i); bx < len(p.Constants) {
			if s, ok := p.Constants[bx].(glua.LString); ok {
				return "global", string(s)
			}
		}
	case glua.OP_MOVE, glua.OP_MOVEN:
		if b, a := argB(i), argA(i); b < a {
			return objName(p, pc, b, depth+1)
		}
	case glua.OP_GETTABLE, glua.OP_GETTABLEKS:
		return "field", constName(p, argC(i))
	case glua.OP_GETUPVAL:
		if b := argB(i); b < len(p.DbgUpvalues) {
			return "upvalue", p.DbgUpvalues[b]
		}
		return "upvalue", "?"
	case glua.OP_SELF:
		return "method", constName(p, argC(i))
	}
	return "", ""
}

// calledName is getfuncname for the running Go function: how its Lua caller
// named it at the call site (namewhat "global", "local", "method", "field",
// "upvalue"), or "" when the caller is not Lua code.
func calledName(L *glua.LState) (name, namewhat string) {
	cur, ok := frameAt(L, 0)
	if !ok {
		return "", ""
	}
	return callerName(L, cur, 1)
}

// callerName names the function of frame cur (at stack level level-1) from
// its caller's call instruction.
func callerName(L *glua.LState, cur frame, level int) (name, namewhat string) {
	if cur.isLua() && cur.tailCall > 0 {
		return "", ""
	}
	caller, ok := frameAt(L, level)
	if !ok {
		return "", ""
	}
	i, pc, ok := caller.currentInst()
	if !ok {
		return "", ""
	}
	switch opOf(i) {
	case glua.OP_CALL, glua.OP_TAILCALL, glua.OP_TFORLOOP:
		kind, n := objName(caller.fn.Proto, pc, argA(i), 0)
		return n, kind
	}
	return "", ""
}

// varInfo is Lua's varinfo: " local 'x'" style text for a register, or "".
func varInfo(p *glua.FunctionProto, pc, reg int) string {
	kind, name := objName(p, pc, reg, 0)
	if kind == "" {
		return ""
	}
	return " " + kind + " '" + name + "'"
}

// registryCap is the capacity of an interpreter's value stack, or 0 when it
// cannot be read.
func registryCap(L *glua.LState) int {
	rv := reflect.ValueOf(L).Elem().FieldByName("reg")
	if !rv.IsValid() || rv.Kind() != reflect.Pointer || rv.IsNil() {
		return 0
	}
	arr := rv.Elem().FieldByName("array")
	if !arr.IsValid() || arr.Kind() != reflect.Slice {
		return 0
	}
	return arr.Cap()
}
