package lua

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	glua "github.com/yuin/gopher-lua"

	"github.com/lockd/lockd/resp"
)

// runErrorHandler is the message handler of a run (Redis's
// __redis__err__handler, installed by eval). It first rewords gopher-lua's
// messages into Lua 5.1's, while the stack of the error is still there.
func (s *state) runErrorHandler(L *glua.LState) int {
	obj := s.translate(L, L.Get(1), 1)
	L.Push(s.errInfo(L, obj, 1))
	return 1
}

// redisErrHandler is the global __redis__err__handler, for scripts that
// call it themselves.
func (s *state) redisErrHandler(L *glua.LState) int {
	L.Push(s.errInfo(L, L.Get(1), 1))
	return 1
}

// errInfo is the body of Redis's handler:
//
//	local i = dbg.getinfo(2,'nSl')
//	if i and i.what == 'C' then i = dbg.getinfo(3,'nSl') end
//	if type(err) ~= 'table' then err = {err='ERR ' .. tostring(err)} end
//	if i then err['source'] = i.source; err['line'] = i.currentline end
//	return err
//
// level is the stack level (from the running Go function) of the function
// the error came from.
func (s *state) errInfo(L *glua.LState, obj glua.LValue, level int) glua.LValue {
	dbg, ok := L.GetStack(level)
	if ok {
		if _, err := L.GetInfo("Sl", dbg, glua.LNil); err != nil {
			ok = false
		} else if dbg.What == "G" {
			dbg, ok = L.GetStack(level + 1)
			if ok {
				if _, err := L.GetInfo("Sl", dbg, glua.LNil); err != nil {
					ok = false
				}
			}
		}
	}
	t, isTable := obj.(*glua.LTable)
	if !isTable {
		t = L.CreateTable(0, 3)
		t.RawSetString("err", glua.LString("ERR "+s.tostring(L, obj)))
	}
	if ok && !s.isProxy(t) {
		source := dbg.Source
		if dbg.What == "G" {
			source = "=[C]"
		} else if raw, found := s.sourceOf(source); found {
			source = raw
		}
		t.RawSetString("source", glua.LString(source))
		t.RawSetString("line", glua.LNumber(dbg.CurrentLine))
	}
	return t
}

// sourceOf maps the chunk name shown in messages back to Lua's source name.
func (s *state) sourceOf(display string) (string, bool) {
	if display == scriptChunkName {
		return scriptChunkSource, true
	}
	raw, ok := s.r.chunks[display]
	return raw, ok
}

// errorReply builds the reply of a script that raised an error (the error
// object is the table errInfo made): "<err> script: <sha>, on <source>:<line>."
func (s *state) errorReply(err error) resp.Value {
	var obj glua.LValue = glua.LNil
	if apiErr, ok := err.(*glua.ApiError); ok {
		obj = apiErr.Object
	} else {
		obj = glua.LString(err.Error())
	}
	if str, ok := obj.(glua.LString); ok {
		// The handler itself failed, which happens when the error was a
		// stack overflow (no room left to call it): build what it would
		// have returned from the position in the message.
		if source, line, ok := s.positionOf(string(str)); ok {
			t := s.L.CreateTable(0, 3)
			t.RawSetString("err", glua.LString("ERR "+string(str)))
			t.RawSetString("source", glua.LString(source))
			t.RawSetString("line", glua.LString(line))
			obj = t
		}
	}
	t, ok := obj.(*glua.LTable)
	if !ok {
		msg := "execution failure"
		if str, ok := toStringLua(obj); ok {
			msg = str
		}
		if len(msg) > 100 {
			msg = msg[:100]
		}
		return resp.Error(mapLineBreaks(strings.Trim(fmt.Sprintf("ERR Error running script %s, %s", s.r.sha, msg), "\r\n")))
	}
	msg, ok := toStringLua(t.RawGetString("err"))
	if !ok {
		// Redis 7.0 crashes on an error object without an err string
		// (error({})); this is the text given instead.
		msg = "ERR unknown error"
	}
	source, okSource := toStringLua(t.RawGetString("source"))
	line, okLine := toStringLua(t.RawGetString("line"))
	if okSource && okLine {
		msg += " script: " + s.r.sha + ", on " + cString(source) + ":" + cString(line) + "."
	}
	return resp.Error(cString(msg))
}

// positionOf reads the "chunk:line: " prefix of a message.
func (s *state) positionOf(msg string) (source, line string, ok bool) {
	i := strings.Index(msg, ": ")
	if i < 0 {
		return "", "", false
	}
	pos := msg[:i]
	j := strings.LastIndexByte(pos, ':')
	if j < 0 {
		return "", "", false
	}
	if _, err := strconv.Atoi(pos[j+1:]); err != nil {
		return "", "", false
	}
	src, found := s.sourceOf(pos[:j])
	if !found {
		return "", "", false
	}
	return src, pos[j+1:], true
}

// The messages of gopher-lua that Lua 5.1 words differently.
var (
	reBadArg    = regexp.MustCompile(`^bad argument #(\d+) to ([^' ]\S*) \((.*)\)$`)
	reArith     = regexp.MustCompile(`^cannot perform (\w+) operation between (\w+) and (\w+)$`)
	reConcat    = regexp.MustCompile(`^cannot perform concat operation between (\w+) and (\w+)$`)
	reIndex     = regexp.MustCompile(`^attempt to index a non-table object\((\w+)\) with key '`)
	reCompare   = regexp.MustCompile(`^attempt to compare (\w+) with (\w+)$`)
	rePattern   = regexp.MustCompile(`^(unfinished capture|invalid capture index|invalid '\)') at (?:\d+|EOS)$`)
	patternMsgs = map[string]string{
		"unfinished capture":    "unfinished capture",
		"invalid capture index": "invalid capture index",
		"invalid ')'":           "invalid pattern capture",
	}
	forMsgs = map[string]string{
		"for statement init must be a number":  "'for' initial value must be a number",
		"for statement limit must be a number": "'for' limit must be a number",
		"for statement step must be a number":  "'for' step must be a number",
	}
)

// translate rewrites a message gopher-lua raised into the text Lua 5.1
// gives for the same error. L is the thread the error happened in and level
// the stack level of the function that raised it. Anything else passes
// through unchanged.
func (s *state) translate(L *glua.LState, obj glua.LValue, level int) glua.LValue {
	str, ok := obj.(glua.LString)
	if !ok {
		return obj
	}
	msg := string(str)
	f, ok := frameAt(L, level)
	if !ok {
		return obj
	}
	if f.fn == s.errorFn {
		return obj
	}
	if f.isLua() {
		pre := where(L, level)
		if !strings.HasPrefix(msg, pre) {
			return obj
		}
		if out, ok := s.translateVM(L, f, msg[len(pre):]); ok {
			return glua.LString(pre + out)
		}
		return obj
	}
	// A Go function: gopher-lua prefixed the position of the nearest Lua
	// caller; Lua uses the immediate caller's (none if it is Go code).
	pre := ""
	for lv := level + 1; ; lv++ {
		cf, ok := frameAt(L, lv)
		if !ok {
			break
		}
		if cf.isLua() {
			pre = where(L, lv)
			break
		}
	}
	if !strings.HasPrefix(msg, pre) {
		return obj
	}
	body := msg[len(pre):]
	if m := rePattern.FindStringSubmatch(body); m != nil {
		return glua.LString(where(L, level+1) + patternMsgs[m[1]])
	}
	m := reBadArg.FindStringSubmatch(body)
	if m == nil {
		return obj
	}
	narg, _ := strconv.Atoi(m[1])
	extra := m[3]
	if strings.HasSuffix(extra, "expected, got nil") && narg > f.nargs {
		extra = strings.TrimSuffix(extra, "nil") + "no value"
	}
	name, namewhat := callerName(L, f, level+1)
	out := where(L, level+1)
	if namewhat == "method" {
		narg--
		if narg == 0 {
			return glua.LString(out + fmt.Sprintf("calling '%s' on bad self (%s)", name, extra))
		}
	}
	if name == "" {
		name = "?"
	}
	return glua.LString(out + fmt.Sprintf("bad argument #%d to '%s' (%s)", narg, name, extra))
}

// translateVM rewords an error the VM raised in Lua function f.
func (s *state) translateVM(L *glua.LState, f frame, msg string) (string, bool) {
	if out, ok := forMsgs[msg]; ok {
		return out, true
	}
	if m := reCompare.FindStringSubmatch(msg); m != nil {
		if m[1] == m[2] {
			return "attempt to compare two " + m[1] + " values", true
		}
		return msg, true
	}
	inst, pc, ok := f.currentInst()
	if !ok {
		return "", false
	}
	p := f.fn.Proto
	op := opOf(inst)
	typeErr := func(reg int, typ, what string) (string, bool) {
		if reg >= 0 {
			if rv := register(L, f, reg); rv.ok {
				typ = rv.typ
			}
			if vi := varInfo(p, pc, reg); vi != "" {
				return fmt.Sprintf("attempt to %s%s (a %s value)", what, vi, typ), true
			}
		}
		return fmt.Sprintf("attempt to %s a %s value", what, typ), true
	}
	switch {
	case msg == "attempt to call a non-function object":
		switch op {
		case glua.OP_CALL, glua.OP_TAILCALL, glua.OP_TFORLOOP:
			return typeErr(argA(inst), "nil", "call")
		}
	case reIndex.MatchString(msg):
		typ := reIndex.FindStringSubmatch(msg)[1]
		switch op {
		case glua.OP_GETTABLE, glua.OP_GETTABLEKS, glua.OP_SELF:
			return typeErr(argB(inst), typ, "index")
		case glua.OP_SETTABLE, glua.OP_SETTABLEKS:
			return typeErr(argA(inst), typ, "index")
		}
		return fmt.Sprintf("attempt to index a %s value", typ), true
	case msg == "__unm undefined" && op == glua.OP_UNM:
		return typeErr(argB(inst), "nil", "perform arithmetic on")
	case msg == "__len undefined" && op == glua.OP_LEN:
		return typeErr(argB(inst), "nil", "get length of")
	case reConcat.MatchString(msg) && op == glua.OP_CONCAT:
		return s.concatError(L, f, p, pc, inst, reConcat.FindStringSubmatch(msg))
	case reArith.MatchString(msg):
		m := reArith.FindStringSubmatch(msg)
		switch op {
		case glua.OP_ADD, glua.OP_SUB, glua.OP_MUL, glua.OP_DIV, glua.OP_MOD, glua.OP_POW:
			return s.arithError(L, f, p, pc, inst, m[2], m[3])
		}
		lhs, rhs := m[2], m[3]
		culprit := lhs
		if lhs == "number" {
			culprit = rhs
		}
		return "attempt to perform arithmetic on a " + culprit + " value", true
	}
	return "", false
}

// arithError words a failed arithmetic instruction: Lua blames the first
// operand unless it converts to a number.
func (s *state) arithError(L *glua.LState, f frame, p *glua.FunctionProto, pc int, inst uint32, lt, rt string) (string, bool) {
	type operand struct {
		reg int // -1 for a constant
		typ string
		num bool
	}
	get := func(rk int, typ string) operand {
		if isK(rk) {
			k := indexK(rk)
			o := operand{reg: -1, typ: typ}
			if k < len(p.Constants) {
				_, o.num = toNumber(p.Constants[k])
			}
			return o
		}
		o := operand{reg: rk, typ: typ}
		if rv := register(L, f, rk); rv.ok {
			o.typ = rv.typ
			switch rv.typ {
			case "number":
				o.num = true
			case "string":
				_, o.num = str2number(rv.str)
			}
		} else {
			o.num = typ == "number"
		}
		return o
	}
	p1, p2 := get(argB(inst), lt), get(argC(inst), rt)
	culprit := p2
	if !p1.num {
		culprit = p1
	}
	if culprit.reg >= 0 {
		if vi := varInfo(p, pc, culprit.reg); vi != "" {
			return fmt.Sprintf("attempt to perform arithmetic on%s (a %s value)", vi, culprit.typ), true
		}
	}
	return fmt.Sprintf("attempt to perform arithmetic on a %s value", culprit.typ), true
}

// concatError words a failed CONCAT R(A) := R(B) .. ... .. R(C): Lua works
// from the right and blames the first operand that is neither a string nor a
// number.
func (s *state) concatError(L *glua.LState, f frame, p *glua.FunctionProto, pc int, inst uint32, m []string) (string, bool) {
	b, c := argB(inst), argC(inst)
	isStr := func(reg int) (bool, string, bool) {
		rv := register(L, f, reg)
		if !rv.ok {
			return false, "", false
		}
		return rv.typ == "string" || rv.typ == "number", rv.typ, true
	}
	culprit, typ := -1, m[2]
	if ok, t, known := isStr(c); known && !ok {
		culprit, typ = c, t
		if c-1 >= b {
			if ok1, t1, known1 := isStr(c - 1); known1 && !ok1 {
				culprit, typ = c-1, t1
			}
		}
	} else if known {
		for r := c - 1; r >= b; r-- {
			ok, t, known := isStr(r)
			if !known {
				break
			}
			if !ok {
				culprit, typ = r, t
				break
			}
		}
	}
	if culprit < 0 {
		if m[1] != "string" && m[1] != "number" {
			typ = m[1]
		}
		return "attempt to concatenate a " + typ + " value", true
	}
	if vi := varInfo(p, pc, culprit); vi != "" {
		return fmt.Sprintf("attempt to concatenate%s (a %s value)", vi, typ), true
	}
	return "attempt to concatenate a " + typ + " value", true
}
