package lua

import (
	"math"

	"github.com/lockd/lockd/internal/cnum"
	glua "github.com/yuin/gopher-lua"
)

// The base library functions Redis's Lua 5.1 has and gopher-lua words,
// orders or sandboxes differently.

// luaError is error(message [, level]).
func (s *state) luaError(L *glua.LState) int {
	level := optInt(L, 2, 1)
	L.SetTop(1)
	v := L.Get(1)
	if str, ok := toStringLua(v); ok && level > 0 {
		v = glua.LString(where(L, int(level)) + str)
	}
	L.Error(v, 0)
	return 0
}

// luaAssert is assert(v [, message]).
func (s *state) luaAssert(L *glua.LState) int {
	checkAny(L, 1)
	if !glua.LVAsBool(L.Get(1)) {
		raisef(L, "%s", optString(L, 2, "assertion failed!"))
	}
	return L.GetTop()
}

// luaCollectGarbage accepts Lua 5.1's options but does nothing: memory
// figures would differ between replicas. "count" reports 0.
func luaCollectGarbage(L *glua.LState) int {
	opts := []string{"stop", "restart", "collect", "count", "step", "setpause", "setstepmul"}
	opt := optString(L, 1, "collect")
	for _, o := range opts {
		if o == opt {
			optInt(L, 2, 0)
			if o == "step" {
				L.Push(glua.LFalse)
			} else {
				L.Push(glua.LNumber(0))
			}
			return 1
		}
	}
	argError(L, 1, "invalid option '"+opt+"'")
	return 0
}

func luaGcinfo(L *glua.LState) int {
	L.Push(glua.LNumber(0))
	return 1
}

// luaTostring is tostring(v), with per-run pseudo addresses instead of
// pointers so that every replica prints the same.
func (s *state) luaTostring(L *glua.LState) int {
	v := checkAny(L, 1)
	L.Push(glua.LString(s.tostring(L, v)))
	return 1
}

func (s *state) tostring(L *glua.LState, v glua.LValue) string {
	if mt := s.rawMetatable(v); mt != nil {
		if fn := mt.RawGetString("__tostring"); fn != glua.LNil {
			L.Push(fn)
			L.Push(v)
			L.Call(1, 1)
			r := L.Get(-1)
			L.Pop(1)
			if str, ok := toStringLua(r); ok {
				return str
			}
			return r.String()
		}
	}
	switch x := v.(type) {
	case glua.LString:
		return string(x)
	case glua.LNumber:
		return fmtNumber(float64(x))
	case glua.LBool:
		if x {
			return "true"
		}
		return "false"
	case *glua.LNilType:
		return "nil"
	}
	return typeOf(v) + ": " + s.pseudoAddress(v)
}

// rawMetatable is the metatable of v as the VM sees it (not __metatable).
func (s *state) rawMetatable(v glua.LValue) *glua.LTable {
	switch x := v.(type) {
	case *glua.LTable:
		mt, _ := x.Metatable.(*glua.LTable)
		return mt
	case glua.LString:
		return s.strMT
	case *glua.LUserData:
		mt, _ := x.Metatable.(*glua.LTable)
		return mt
	}
	return nil
}

// luaTonumber is tonumber(e [, base]).
func luaTonumber(L *glua.LState) int {
	base := optInt(L, 2, 10)
	if base == 10 {
		checkAny(L, 1)
		if f, ok := toNumber(L.Get(1)); ok {
			L.Push(glua.LNumber(f))
			return 1
		}
	} else {
		s1 := cString(checkString(L, 1))
		if base < 2 || base > 36 {
			argError(L, 2, "base out of range")
		}
		n, end, _ := strtoul(s1, int(base))
		if end > 0 {
			for end < len(s1) && cnum.IsSpace(s1[end]) {
				end++
			}
			if end == len(s1) {
				L.Push(glua.LNumber(float64(n)))
				return 1
			}
		}
	}
	L.Push(glua.LNil)
	return 1
}

// luaGetmetatable is getmetatable(v). The metatables behind the read-only
// proxies are never handed out: _G shows a read-only copy of the metatable
// Redis gives it, the libraries show none, strings a read-only proxy.
func (s *state) luaGetmetatable(L *glua.LState) int {
	v := checkAny(L, 1)
	if t, ok := v.(*glua.LTable); ok {
		if mt, ok := s.mtOf[t]; ok {
			L.Push(mt)
			return 1
		}
	}
	if _, ok := v.(glua.LString); ok {
		L.Push(s.proxyOf[s.strMT])
		return 1
	}
	mt := s.rawMetatable(v)
	if mt == nil {
		L.Push(glua.LNil)
		return 1
	}
	if protected := mt.RawGetString("__metatable"); protected != glua.LNil {
		L.Push(protected)
		return 1
	}
	L.Push(mt)
	return 1
}

// luaSetmetatable is setmetatable(t, mt); read-only tables refuse it.
func (s *state) luaSetmetatable(L *glua.LState) int {
	t := checkTable(L, 1)
	mt := L.Get(2)
	if _, ok := mt.(*glua.LTable); !ok && mt != glua.LNil {
		typeError(L, 2, "nil or table")
	}
	if old, ok := t.Metatable.(*glua.LTable); ok && old.RawGetString("__metatable") != glua.LNil {
		raisef(L, "cannot change a protected metatable")
	}
	if s.isProxy(t) {
		raiseReadonly(L)
	}
	t.Metatable = mt
	L.SetTop(1)
	return 1
}

func (s *state) luaRawget(L *glua.LState) int {
	t := checkTable(L, 1)
	k := checkAny(L, 2)
	if real, ok := s.realOf[t]; ok {
		L.Push(s.wrap(real.RawGet(k)))
		return 1
	}
	L.Push(t.RawGet(k))
	return 1
}

func (s *state) luaRawset(L *glua.LState) int {
	t := checkTable(L, 1)
	k := checkAny(L, 2)
	v := checkAny(L, 3)
	if s.isProxy(t) {
		raiseReadonly(L)
	}
	rawSet(L, t, k, v)
	L.SetTop(1)
	return 1
}

// rawSet stores with Lua 5.1's checks on the key.
func rawSet(L *glua.LState, t *glua.LTable, k, v glua.LValue) {
	switch x := k.(type) {
	case *glua.LNilType:
		raisef(L, "table index is nil")
	case glua.LNumber:
		if math.IsNaN(float64(x)) {
			raisef(L, "table index is NaN")
		}
	}
	t.RawSet(k, v)
}

// luaNext is next(t [, k]); on a read-only proxy it walks the real table.
func (s *state) luaNext(L *glua.LState) int {
	t := checkTable(L, 1)
	if real, ok := s.realOf[t]; ok {
		t = real
	}
	k, v := t.Next(L.Get(2))
	if k == glua.LNil {
		L.Push(glua.LNil)
		return 1
	}
	L.Push(k)
	L.Push(s.wrap(v))
	return 2
}

// luaPairs is pairs(t): next, t, nil.
func (s *state) luaPairs(L *glua.LState) int {
	t := checkTable(L, 1)
	L.Push(s.nextFn)
	L.Push(t)
	L.Push(glua.LNil)
	return 3
}

func (s *state) luaIpairs(L *glua.LState) int {
	t := checkTable(L, 1)
	L.Push(s.ipairsAux)
	L.Push(t)
	L.Push(glua.LNumber(0))
	return 3
}

func ipairsAux(L *glua.LState) int {
	t := checkTable(L, 1)
	i := int(checkInt(L, 2)) + 1
	v := t.RawGetInt(i)
	if v == glua.LNil {
		return 0
	}
	L.Push(glua.LNumber(i))
	L.Push(v)
	return 2
}

// luaUnpack is unpack(t [, i [, j]]), with Lua's limit on the number of
// values a function may return.
func luaUnpack(L *glua.LState) int {
	t := checkTable(L, 1)
	i := optInt(L, 2, 1)
	var e int32
	if isNoneOrNil(L, 3) {
		e = int32(t.Len())
	} else {
		e = checkInt(L, 3)
	}
	if i > e {
		return 0
	}
	n := e - i + 1
	if n <= 0 || int(n)+L.GetTop() > luaMaxCStack {
		raisef(L, "too many results to unpack")
	}
	for k := int64(i); k <= int64(e); k++ {
		L.Push(t.RawGetInt(int(k)))
	}
	return int(n)
}

// luaPcall is Redis's pcall (luaRedisPcall): Lua's pcall, except that an
// error object with an err field (what redis.call raises) is replaced by
// its err string.
func (s *state) luaPcall(L *glua.LState) int {
	nargs := L.GetTop()
	if nargs == 0 {
		// Redis calls lua_pcall with -1 arguments here, which ends up
		// calling its own placeholder.
		L.Push(glua.LFalse)
		L.Push(glua.LString("attempt to call a boolean value"))
		return 2
	}
	fn := L.Get(1)
	if _, ok := fn.(*glua.LFunction); !ok && s.callMeta(fn) == nil {
		L.SetTop(0)
		L.Push(glua.LFalse)
		L.Push(glua.LString("attempt to call a " + typeOf(fn) + " value"))
		return 2
	}
	if err := L.PCall(nargs-1, glua.MultRet, s.pcallEH); err != nil {
		obj := errObject(err)
		if t, ok := obj.(*glua.LTable); ok {
			if str, ok := toStringLua(t.RawGetString("err")); ok {
				obj = glua.LString(str)
			}
		}
		L.SetTop(0)
		L.Push(glua.LFalse)
		L.Push(obj)
		return 2
	}
	L.Insert(glua.LTrue, 1)
	return L.GetTop()
}

// luaXpcall is xpcall(f, handler).
func (s *state) luaXpcall(L *glua.LState) int {
	checkAny(L, 2)
	L.SetTop(2)
	fn, handler := L.Get(1), L.Get(2)
	L.SetTop(0)
	if _, ok := fn.(*glua.LFunction); !ok && s.callMeta(fn) == nil {
		L.Push(handler)
		L.Push(glua.LString("attempt to call a " + typeOf(fn) + " value"))
		L.Call(1, glua.MultRet)
		L.Insert(glua.LFalse, 1)
		return L.GetTop()
	}
	L.Push(fn)
	eh := L.NewFunction(func(L *glua.LState) int {
		obj := s.translate(L, L.Get(1), 1)
		L.SetTop(0)
		L.Push(handler)
		L.Push(obj)
		L.Call(1, 1)
		return 1
	})
	if err := L.PCall(0, glua.MultRet, eh); err != nil {
		L.SetTop(0)
		L.Push(glua.LFalse)
		L.Push(errObject(err))
		return 2
	}
	L.Insert(glua.LTrue, 1)
	return L.GetTop()
}

// pcallHandler is the message handler of pcall: it only rewords
// gopher-lua's messages, while the stack of the error still exists.
func (s *state) pcallHandler(L *glua.LState) int {
	L.Push(s.translate(L, L.Get(1), 1))
	return 1
}

func (s *state) callMeta(v glua.LValue) glua.LValue {
	if mt := s.rawMetatable(v); mt != nil {
		if c := mt.RawGetString("__call"); c != glua.LNil {
			return c
		}
	}
	return nil
}

func errObject(err error) glua.LValue {
	if apiErr, ok := err.(*glua.ApiError); ok {
		return apiErr.Object
	}
	return glua.LString(err.Error())
}

// luaLoadstring is loadstring(s [, chunkname]).
func (s *state) luaLoadstring(L *glua.LState) int {
	src := checkString(L, 1)
	name := optString(L, 2, src)
	return s.loadChunk(L, src, name)
}

// luaLoad is load(func [, chunkname]): the chunk is the concatenation of
// the strings func returns until it returns nil or "".
func (s *state) luaLoad(L *glua.LState) int {
	if _, ok := L.Get(1).(*glua.LFunction); !ok {
		typeError(L, 1, "function")
	}
	name := optString(L, 2, "=(load)")
	reader := L.Get(1)
	var buf []byte
	for {
		L.Push(reader)
		L.Call(0, 1)
		piece := L.Get(-1)
		L.Pop(1)
		if piece == glua.LNil {
			break
		}
		str, ok := toStringLua(piece)
		if !ok {
			L.Push(glua.LNil)
			L.Push(glua.LString("reader function must return a string"))
			return 2
		}
		if str == "" {
			break
		}
		buf = append(buf, str...)
		if len(buf) > s.r.maxStr {
			raisef(L, "resulting string too large")
		}
	}
	return s.loadChunk(L, string(buf), name)
}

// compileBytesPerUnit is how many bytes of source compiling a chunk at run
// time (load, loadstring) is charged one unit for.
const compileBytesPerUnit = 4

// loadChunk compiles a chunk loaded by the script. Its functions get the
// scripts' read-only globals.
func (s *state) loadChunk(L *glua.LState, src, chunkname string) int {
	m := s.meter(L)
	m.charge(int64(len(src)) / compileBytesPerUnit)
	m.done()
	display := chunkID(chunkname)
	proto, msg := compile([]byte(src), display)
	if msg != "" {
		L.Push(glua.LNil)
		L.Push(glua.LString(msg))
		return 2
	}
	if s.r.chunks == nil {
		s.r.chunks = make(map[string]string)
	}
	s.r.chunks[display] = chunkname
	fn := L.NewFunctionFromProto(proto)
	fn.Env = s.genv
	L.Push(fn)
	return 1
}

// chunkID is luaO_chunkid: how messages show a chunk name ("=name" as is,
// "@file" as the file name, source text as [string "first line..."]).
func chunkID(source string) string {
	const idsize = 60 // LUA_IDSIZE
	source = cString(source)
	switch {
	case len(source) > 0 && source[0] == '=':
		s := source[1:]
		if len(s) > idsize-1 {
			s = s[:idsize-1]
		}
		return s
	case len(source) > 0 && source[0] == '@':
		s := source[1:]
		max := idsize - len(" '...' ") - 1
		if len(s) > max {
			return "..." + s[len(s)-max:]
		}
		return s
	default:
		max := idsize - len(" [string \"...\"] ") - 1
		l := len(source)
		for i := 0; i < len(source); i++ {
			if source[i] == '\n' || source[i] == '\r' {
				l = i
				break
			}
		}
		if l > max {
			l = max
		}
		if l < len(source) {
			return "[string \"" + source[:l] + "...\"]"
		}
		return "[string \"" + source + "\"]"
	}
}
