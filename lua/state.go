package lua

import (
	"fmt"
	"sort"

	glua "github.com/yuin/gopher-lua"

	"github.com/lockd/lockd/resp"
)

// state is one sandboxed interpreter. It is built once and reused by many
// runs (Engine pools them), so nothing a script does may survive its run:
// every table reachable from the globals is reached through a read-only
// proxy (see protect), the few functions that could write through a proxy
// check for one, and the per-run state (KEYS, ARGV, RESP version, random
// generator, budget) is reset by run.
type state struct {
	L    *glua.LState
	g    *glua.LTable // the real globals, never visible to scripts
	genv *glua.LTable // the read-only proxy of g: the scripts' _G

	proxyOf map[*glua.LTable]*glua.LTable // protected real table -> its proxy
	realOf  map[*glua.LTable]*glua.LTable // proxy -> real table
	mtOf    map[*glua.LTable]glua.LValue  // proxy -> what getmetatable returns
	strMT   *glua.LTable                  // metatable of strings (real)

	gIndex    *glua.LFunction // __index of _G: nonexistent globals are errors
	roIndex   *glua.LFunction // __newindex of every proxy
	errorFn   *glua.LFunction // our error(): its messages are never translated
	runErrH   *glua.LFunction // the error handler of a run
	pcallEH   *glua.LFunction // the error handler of pcall
	coResume  *glua.LFunction // gopher-lua's coroutine.resume
	coCreate  *glua.LFunction // gopher-lua's coroutine.create
	nextFn    *glua.LFunction // our next (pairs returns it, as Lua 5.1 does)
	ipairsAux *glua.LFunction

	r runState
}

// runState is everything a run may change; run resets it.
type runState struct {
	sha       string
	host      Host
	resp      int // 2 or 3, set by redis.setresp
	rand      rand48
	budget    *budget
	maxStr    int
	logf      func(int, string)
	ids       map[glua.LValue]int // tostring's pseudo addresses
	chunks    map[string]string   // chunk display name -> source name
	hostPanic any
}

func newState() *state {
	// A fixed call stack of Lua 5.1's depth: gopher-lua then raises
	// "stack overflow" where Lua does (its growing stack panics instead).
	L := glua.NewState(glua.Options{
		SkipOpenLibs:     true,
		CallStackSize:    luaMaxCalls,
		RegistrySize:     1024,
		RegistryGrowStep: 1024,
		RegistryMaxSize:  luaMaxRegistry,
	})
	s := &state{
		L:       L,
		proxyOf: make(map[*glua.LTable]*glua.LTable),
		realOf:  make(map[*glua.LTable]*glua.LTable),
		mtOf:    make(map[*glua.LTable]glua.LValue),
	}
	s.build()
	return s
}

// luaMaxCalls is Lua 5.1's LUAI_MAXCALLS: the depth of nested calls at which
// Lua raises "stack overflow".
const luaMaxCalls = 20000

// luaMaxRegistry bounds an interpreter's value stack (16 MiB).
const luaMaxRegistry = 1 << 20

// build opens gopher-lua's libraries in the state, then assembles the
// globals Redis 7.0 exposes, each table filled in sorted key order so that
// pairs() walks them in the same order on every replica (gopher-lua fills
// its libraries from Go maps, in random order).
func (s *state) build() {
	L := s.L
	for _, lib := range []struct {
		name string
		open glua.LGFunction
	}{
		{"", glua.OpenBase},
		{glua.TabLibName, glua.OpenTable},
		{glua.StringLibName, glua.OpenString},
		{glua.MathLibName, glua.OpenMath},
		{glua.CoroutineLibName, glua.OpenCoroutine},
	} {
		L.Push(L.NewFunction(lib.open))
		L.Push(glua.LString(lib.name))
		L.Call(1, 0)
	}
	stock := L.G.Global
	lib := func(name string) *glua.LTable { return stock.RawGetString(name).(*glua.LTable) }
	fn := func(t *glua.LTable, name string) *glua.LFunction { return t.RawGetString(name).(*glua.LFunction) }

	g := L.NewTable()
	s.g = g
	set := func(t *glua.LTable, fns map[string]glua.LValue) {
		keys := make([]string, 0, len(fns))
		for k := range fns {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			t.RawSetString(k, fns[k])
		}
	}
	gofn := func(f glua.LGFunction) glua.LValue { return L.NewFunction(f) }

	// Base library: Redis 7.0's allow-list minus what its Lua lacks
	// (getfenv, setfenv, newproxy are absent in 7.0; print, dofile,
	// loadfile, require, module never were there).
	s.errorFn = L.NewFunction(s.luaError)
	s.nextFn = L.NewFunction(s.luaNext)
	s.ipairsAux = L.NewFunction(ipairsAux)
	base := map[string]glua.LValue{
		"assert":                gofn(s.luaAssert),
		"collectgarbage":        gofn(luaCollectGarbage),
		"error":                 s.errorFn,
		"gcinfo":                gofn(luaGcinfo),
		"getmetatable":          gofn(s.luaGetmetatable),
		"ipairs":                gofn(s.luaIpairs),
		"load":                  gofn(s.luaLoad),
		"loadstring":            gofn(s.luaLoadstring),
		"next":                  s.nextFn,
		"pairs":                 gofn(s.luaPairs),
		"pcall":                 gofn(s.luaPcall),
		"rawequal":              stock.RawGetString("rawequal"),
		"rawget":                gofn(s.luaRawget),
		"rawset":                gofn(s.luaRawset),
		"select":                stock.RawGetString("select"),
		"setmetatable":          gofn(s.luaSetmetatable),
		"tonumber":              gofn(luaTonumber),
		"tostring":              gofn(s.luaTostring),
		"type":                  stock.RawGetString("type"),
		"unpack":                gofn(luaUnpack),
		"xpcall":                gofn(s.luaXpcall),
		"_VERSION":              glua.LString("Lua 5.1"),
		"__redis__err__handler": gofn(s.redisErrHandler),
	}

	// string: gopher-lua's char and len behind argument coercion (Lua
	// converts numbers and numeric strings between each other where a
	// library expects the other); the rest our own, charged to the budget
	// by the work they do (pattern.go, libs.go).
	str := lib(glua.StringLibName)
	gmatch := gofn(s.luaGmatch) // gfind is the same function, as in Lua 5.1's LUA_COMPAT_GFIND
	strFns := map[string]glua.LValue{
		"byte":    gofn(luaByte),
		"char":    s.coerce(fn(str, "char"), "n*"),
		"dump":    gofn(luaStringDump),
		"find":    gofn(s.luaFind),
		"format":  gofn(s.luaFormat),
		"gfind":   gmatch,
		"gmatch":  gmatch,
		"gsub":    gofn(s.luaGsub),
		"len":     s.coerce(fn(str, "len"), "s"),
		"lower":   gofn(s.luaLower),
		"match":   gofn(s.luaMatch),
		"rep":     gofn(s.luaRep),
		"reverse": gofn(s.luaReverse),
		"sub":     gofn(luaSub),
		"upper":   gofn(s.luaUpper),
	}

	tab := lib(glua.TabLibName)
	tabFns := map[string]glua.LValue{
		"concat":   gofn(s.luaConcat),
		"foreach":  gofn(s.luaForeach),
		"foreachi": gofn(luaForeachi),
		"getn":     fn(tab, "getn"),
		"insert":   gofn(s.luaInsert),
		"maxn":     gofn(s.luaMaxn),
		"remove":   s.metered(s.coerce(fn(tab, "remove"), "tn"), removeCost),
		"setn":     gofn(luaSetn),
		"sort":     s.metered(fn(tab, "sort"), sortCost),
	}

	mth := lib(glua.MathLibName)
	mathFns := map[string]glua.LValue{
		"huge":       glua.LNumber(posInf),
		"pi":         mth.RawGetString("pi"),
		"random":     gofn(s.luaRandom),
		"randomseed": gofn(s.luaRandomseed),
	}
	for _, name := range []string{"abs", "acos", "asin", "atan", "atan2", "ceil", "cos", "cosh", "deg", "exp", "floor", "fmod", "frexp", "ldexp", "log", "log10", "max", "min", "mod", "modf", "pow", "rad", "sin", "sinh", "sqrt", "tan", "tanh"} {
		mathFns[name] = s.coerce(fn(mth, name), "n*")
	}

	co := lib(glua.CoroutineLibName)
	s.coCreate = fn(co, "create")
	s.coResume = fn(co, "resume")
	coFns := map[string]glua.LValue{
		"create":  gofn(s.luaCoCreate),
		"resume":  gofn(s.luaCoResume),
		"running": co.RawGetString("running"),
		"status":  co.RawGetString("status"),
		"wrap":    gofn(s.luaCoWrap),
		"yield":   s.yieldFn(fn(co, "yield")),
	}

	libs := map[string]map[string]glua.LValue{
		"string":    strFns,
		"table":     tabFns,
		"math":      mathFns,
		"coroutine": coFns,
		"bit":       s.bitFuncs(),
		"redis":     s.redisFuncs(),
	}
	for name, fns := range libs {
		t := L.NewTable()
		set(t, fns)
		base[name] = t
	}
	base["_G"] = g
	set(g, base)

	// Strings index the real string table through their metatable (fast
	// method calls); getmetatable("") hands out the metatable's proxy.
	s.strMT = L.NewTable()
	s.strMT.RawSetString("__index", base["string"])
	L.SetMetatable(glua.LString(""), s.strMT)

	s.roIndex = L.NewFunction(s.readonlyNewIndex)
	s.gIndex = L.NewFunction(s.globalIndex)
	s.genv = s.protect(g)
	// getmetatable(_G) is, as in Redis, a (read-only) table whose __index
	// is the function raising "Script attempted to access nonexistent
	// global variable".
	visible := L.NewTable()
	visible.RawSetString("__index", s.gIndex)
	s.mtOf[s.genv] = s.protect(visible)
	for _, name := range []string{"string", "table", "math", "coroutine", "bit", "redis"} {
		s.protect(g.RawGetString(name).(*glua.LTable))
	}
	s.protect(s.strMT)

	s.runErrH = L.NewFunction(s.runErrorHandler)
	s.pcallEH = L.NewFunction(s.pcallHandler)
	L.G.Global = s.genv
	L.Env = s.genv
}

// protect returns the read-only proxy of a real table, creating it (and the
// proxies of the tables it holds) on first use. A proxy is an empty table
// whose metatable reads through to the real table and refuses writes.
// Proxies stay empty forever, because every function that could write into
// one (rawset, setmetatable, table.insert) refuses proxies.
func (s *state) protect(t *glua.LTable) *glua.LTable {
	if p, ok := s.proxyOf[t]; ok {
		return p
	}
	L := s.L
	p := L.NewTable()
	s.proxyOf[t] = p
	s.realOf[p] = t
	mt := L.NewTable()
	holdsTables := false
	for k, v := t.Next(glua.LNil); k != glua.LNil; k, v = t.Next(k) {
		if sub, ok := v.(*glua.LTable); ok {
			holdsTables = true
			if sub != t {
				s.protect(sub)
			}
		}
	}
	switch {
	case t == s.g:
		mt.RawSetString("__index", s.gIndex)
	case holdsTables:
		real := t
		mt.RawSetString("__index", L.NewFunction(func(L *glua.LState) int {
			L.Push(s.wrap(real.RawGet(L.Get(2))))
			return 1
		}))
	default:
		mt.RawSetString("__index", t)
	}
	mt.RawSetString("__newindex", s.roIndex)
	p.Metatable = mt
	s.mtOf[p] = glua.LNil
	return p
}

// wrap replaces a protected real table by its proxy.
func (s *state) wrap(v glua.LValue) glua.LValue {
	if t, ok := v.(*glua.LTable); ok {
		if p, ok := s.proxyOf[t]; ok {
			return p
		}
	}
	return v
}

func (s *state) isProxy(v glua.LValue) bool {
	t, ok := v.(*glua.LTable)
	if !ok {
		return false
	}
	_, ok = s.realOf[t]
	return ok
}

const errReadonly = "Attempt to modify a readonly table"

// readonlyNewIndex is __newindex of every proxy. Raised from the VM's point
// of view, the message carries the script position, as Redis's does.
func (s *state) readonlyNewIndex(L *glua.LState) int {
	L.RaiseError(errReadonly)
	return 0
}

// raiseReadonly is the error of a library function writing into a
// read-only table: Redis raises it without a position.
func raiseReadonly(L *glua.LState) {
	L.Error(glua.LString(errReadonly), 0)
}

// globalIndex is __index of _G: reading a global that does not exist is an
// error in Redis (luaProtectedTableError).
func (s *state) globalIndex(L *glua.LState) int {
	if L.GetTop() != 2 {
		L.RaiseError("Wrong number of arguments to luaProtectedTableError")
	}
	key := L.Get(2)
	if v := s.g.RawGet(key); v != glua.LNil {
		L.Push(s.wrap(v))
		return 1
	}
	var name string
	switch k := key.(type) {
	case glua.LString:
		name = string(k)
	case glua.LNumber:
		name = fmtNumber(float64(k))
	default:
		L.RaiseError("Second argument to luaProtectedTableError must be a string or number")
	}
	L.RaiseError("Script attempted to access nonexistent global variable '%s'", cString(name))
	return 0
}

// run runs one script. It returns the reply, and the value a Host panicked
// with, if it did (Run re-raises it once the state is clean).
func (s *state) run(sc *script, keys, argv [][]byte, host Host, lim Limits, logf func(int, string)) (resp.Value, any) {
	L := s.L
	s.r = runState{
		sha:    sc.sha,
		host:   host,
		resp:   2,
		rand:   rand48Initial,
		maxStr: lim.MaxStringLen,
		logf:   logf,
	}
	if s.r.maxStr <= 0 {
		s.r.maxStr = DefaultMaxStringLen
	}
	s.g.RawSetString("KEYS", stringsTable(L, keys))
	s.g.RawSetString("ARGV", stringsTable(L, argv))
	L.SetTop(0)
	L.Env = s.genv
	L.G.Global = s.genv
	L.G.CurrentThread = L
	if lim.MaxInstructions > 0 || lim.Cancel != nil || lim.MaxAllocBytes > 0 {
		left := lim.MaxInstructions
		if left <= 0 {
			left = 1<<63 - 1
		}
		s.r.budget = &budget{left: left, cancel: lim.Cancel}
		if lim.MaxAllocBytes > 0 {
			s.r.budget.startAllocs(lim.MaxAllocBytes)
		}
		L.SetContext(s.r.budget)
	}
	L.Push(L.NewFunctionFromProto(sc.proto))
	err := L.PCall(0, 1, s.runErrH)
	var out resp.Value
	switch {
	case s.r.hostPanic != nil:
	case s.r.budget != nil && s.r.budget.killed:
		out = resp.Error(KilledErrorText)
	case s.r.budget != nil && s.r.budget.oom:
		out = resp.Error(memoryReply(lim.MaxAllocBytes))
	case s.r.budget != nil && s.r.budget.spent:
		out = resp.Error(budgetReply(lim.MaxInstructions))
	case err != nil:
		out = s.errorReply(err)
	default:
		out = s.toResp(L.Get(-1), 0)
	}
	if s.r.budget != nil {
		L.RemoveContext()
	}
	L.SetTop(0)
	s.g.RawSetString("KEYS", glua.LNil)
	s.g.RawSetString("ARGV", glua.LNil)
	hp := s.r.hostPanic
	s.r = runState{}
	return out, hp
}

func stringsTable(L *glua.LState, items [][]byte) *glua.LTable {
	t := L.CreateTable(len(items), 0)
	for i, b := range items {
		t.RawSetInt(i+1, glua.LString(b))
	}
	return t
}

// pseudoAddress is what tostring shows for a table, function or thread in
// place of its address: a number counted per run in order of first use, so
// that it is the same on every replica.
func (s *state) pseudoAddress(v glua.LValue) string {
	if s.r.ids == nil {
		s.r.ids = make(map[glua.LValue]int)
	}
	id, ok := s.r.ids[v]
	if !ok {
		id = len(s.r.ids) + 1
		s.r.ids[v] = id
	}
	return fmt.Sprintf("0x%08x", id)
}
