package lua

import (
	"math"
	"math/bits"
	"strings"
	"unsafe"

	glua "github.com/yuin/gopher-lua"
)

// coerce wraps one of gopher-lua's library functions so that it sees its
// arguments as Lua 5.1's C library would: a number where a string is
// expected becomes its "%.14g" text, a numeric string where a number is
// expected becomes the number. spec has one letter per argument: 's'
// string, 'n' number, anything else untouched; a trailing '*' repeats the
// letter before it for the remaining arguments.
func (s *state) coerce(orig *glua.LFunction, spec string) glua.LValue {
	upvalues := make([]glua.LValue, len(orig.Upvalues))
	for i, uv := range orig.Upvalues {
		upvalues[i] = uv.Value()
	}
	gf := orig.GFunction
	return s.L.NewClosure(func(L *glua.LState) int {
		top := L.GetTop()
		for i := 1; i <= top; i++ {
			var c byte
			switch {
			case i-1 < len(spec) && spec[i-1] != '*':
				c = spec[i-1]
			case strings.HasSuffix(spec, "*") && len(spec) >= 2:
				c = spec[len(spec)-2]
			default:
				continue
			}
			v := L.Get(i)
			switch c {
			case 's':
				if n, ok := v.(glua.LNumber); ok {
					L.Replace(i, glua.LString(fmtNumber(float64(n))))
				}
			case 'n':
				if str, ok := v.(glua.LString); ok {
					if f, ok := str2number(string(str)); ok {
						L.Replace(i, glua.LNumber(f))
					}
				}
			}
		}
		return gf(L)
	}, upvalues...)
}

// luaRep is string.rep(s, n), refusing results longer than the run's
// string limit.
func (s *state) luaRep(L *glua.LState) int {
	str := checkString(L, 1)
	n := checkInt(L, 2)
	if n <= 0 || len(str) == 0 {
		L.Push(glua.LString(""))
		return 1
	}
	if int64(len(str))*int64(n) > int64(s.r.maxStr) {
		raisef(L, "resulting string too large")
	}
	m := s.meter(L)
	m.bytes(len(str) * int(n))
	m.done()
	L.Push(glua.LString(strings.Repeat(str, int(n))))
	return 1
}

// luaStringDump is string.dump: there is no bytecode format to dump to.
func luaStringDump(L *glua.LState) int {
	if _, ok := L.Get(1).(*glua.LFunction); !ok {
		typeError(L, 1, "function")
	}
	raisef(L, "unable to dump given function")
	return 0
}

// luaConcat is table.concat(t [, sep [, i [, j]]]).
func (s *state) luaConcat(L *glua.LState) int {
	sep := optString(L, 2, "")
	t := checkTable(L, 1)
	i := optInt(L, 3, 1)
	var last int32
	if isNoneOrNil(L, 4) {
		last = int32(t.Len())
	} else {
		last = checkInt(L, 4)
	}
	var b strings.Builder
	m := s.meter(L)
	defer m.done()
	add := func(i int32) {
		m.step()
		v := t.RawGetInt(int(i))
		str, ok := toStringLua(v)
		if !ok {
			// Redis's Lua words it so (not Lua 5.1's "(at index %d)").
			raisef(L, "invalid value (%s) at index %d in table for 'concat'", typeOf(v), i)
		}
		if b.Len()+len(str) > s.r.maxStr {
			raisef(L, "resulting string too large")
		}
		m.bytes(len(str))
		b.WriteString(str)
	}
	for ; i < last; i++ {
		add(i)
		if b.Len()+len(sep) > s.r.maxStr {
			raisef(L, "resulting string too large")
		}
		m.bytes(len(sep))
		b.WriteString(sep)
	}
	if i == last {
		add(i)
	}
	L.Push(glua.LString(b.String()))
	return 1
}

// luaInsert is table.insert(t, [pos,] v).
func (s *state) luaInsert(L *glua.LState) int {
	t := checkTable(L, 1)
	e := int32(t.Len()) + 1
	var pos int32
	switch L.GetTop() {
	case 2:
		pos = e
	case 3:
		pos = checkInt(L, 2)
		if pos > e {
			e = pos
		}
		if s.isProxy(t) && e > pos {
			raiseReadonly(L)
		}
		if e > pos {
			m := s.meter(L)
			m.charge(int64(e) - int64(pos))
			m.done()
		}
		for i := e; i > pos; i-- {
			t.RawSetInt(int(i), t.RawGetInt(int(i-1)))
		}
	default:
		raisef(L, "wrong number of arguments to 'insert'")
	}
	if s.isProxy(t) {
		raiseReadonly(L)
	}
	t.RawSetInt(int(pos), L.Get(L.GetTop()))
	return 0
}

// luaForeach is table.foreach(t, f) (deprecated in 5.1, present in Redis).
func (s *state) luaForeach(L *glua.LState) int {
	t := checkTable(L, 1)
	if _, ok := L.Get(2).(*glua.LFunction); !ok {
		typeError(L, 2, "function")
	}
	f := L.Get(2)
	src := t
	if real, ok := s.realOf[t]; ok {
		src = real
	}
	for k, v := src.Next(glua.LNil); k != glua.LNil; k, v = src.Next(k) {
		L.Push(f)
		L.Push(k)
		L.Push(s.wrap(v))
		L.Call(2, 1)
		if r := L.Get(-1); r != glua.LNil {
			return 1
		}
		L.Pop(1)
	}
	return 0
}

// luaForeachi is table.foreachi(t, f).
func luaForeachi(L *glua.LState) int {
	t := checkTable(L, 1)
	if _, ok := L.Get(2).(*glua.LFunction); !ok {
		typeError(L, 2, "function")
	}
	f := L.Get(2)
	n := t.Len()
	for i := 1; i <= n; i++ {
		L.Push(f)
		L.Push(glua.LNumber(i))
		L.Push(t.RawGetInt(i))
		L.Call(2, 1)
		if r := L.Get(-1); r != glua.LNil {
			return 1
		}
		L.Pop(1)
	}
	return 0
}

// luaSetn is table.setn, obsolete in Lua 5.1.
func luaSetn(L *glua.LState) int {
	checkTable(L, 1)
	raisef(L, "'setn' is obsolete")
	return 0
}

// luaRandom is Redis's math.random (redis_math_random): Lua 5.1's, drawing
// from Redis's rand48 generator.
func (s *state) luaRandom(L *glua.LState) int {
	r := s.r.rand.float()
	switch L.GetTop() {
	case 0:
		L.Push(glua.LNumber(r))
	case 1:
		u := checkInt(L, 1)
		if u < 1 {
			argError(L, 1, "interval is empty")
		}
		L.Push(glua.LNumber(math.Floor(r*float64(u)) + 1))
	case 2:
		l := checkInt(L, 1)
		u := checkInt(L, 2)
		if l > u {
			argError(L, 2, "interval is empty")
		}
		L.Push(glua.LNumber(math.Floor(r*float64(u-l+1)) + float64(l)))
	default:
		raisef(L, "wrong number of arguments")
	}
	return 1
}

// luaRandomseed is math.randomseed(x): reseeds this run's generator.
func (s *state) luaRandomseed(L *glua.LState) int {
	s.r.rand.seed(checkInt(L, 1))
	return 0
}

// posRelat is Lua 5.1's posrelat: a negative string position counts from
// the end.
func posRelat(pos int64, n int) int64 {
	if pos < 0 {
		pos += int64(n) + 1
	}
	if pos < 0 {
		return 0
	}
	return pos
}

// luaByte is string.byte(s [, i [, j]]).
func luaByte(L *glua.LState) int {
	s := checkString(L, 1)
	posi := posRelat(toInt64(optNumber(L, 2, 1)), len(s))
	pose := posRelat(toInt64(optNumber(L, 3, float64(posi))), len(s))
	if posi <= 0 {
		posi = 1
	}
	if pose > int64(len(s)) {
		pose = int64(len(s))
	}
	if posi > pose {
		return 0
	}
	n := pose - posi + 1
	if n+int64(L.GetTop()) > luaMaxCStack {
		raisef(L, "stack overflow (string slice too long)")
	}
	for i := posi; i <= pose; i++ {
		L.Push(glua.LNumber(s[i-1]))
	}
	return int(n)
}

// luaSub is string.sub(s, i [, j]).
func luaSub(L *glua.LState) int {
	s := checkString(L, 1)
	start := posRelat(toInt64(checkNumber(L, 2)), len(s))
	end := posRelat(toInt64(optNumber(L, 3, -1)), len(s))
	if start < 1 {
		start = 1
	}
	if end > int64(len(s)) {
		end = int64(len(s))
	}
	if start <= end {
		L.Push(glua.LString(s[start-1 : end]))
	} else {
		L.Push(glua.LString(""))
	}
	return 1
}

// luaUpper, luaLower and luaReverse are string.upper, lower and reverse:
// byte-wise in the C locale, as Lua's (gopher-lua's upper and lower map
// UTF-8), and charged by the bytes they produce.
func (s *state) luaUpper(L *glua.LState) int { return s.mapCase(L, 'a', 'z', -('a' - 'A')) }

func (s *state) luaLower(L *glua.LState) int { return s.mapCase(L, 'A', 'Z', 'a'-'A') }

// mapCase pushes the argument with every byte from lo to hi shifted by delta
// (C's toupper/tolower in the "C" locale, as Redis's Lua: bytes, not UTF-8).
func (s *state) mapCase(L *glua.LState, lo, hi byte, delta int) int {
	str, b := s.mapBytes(L)
	for i := 0; i < len(str); i++ {
		c := str[i]
		if c >= lo && c <= hi {
			c = byte(int(c) + delta)
		}
		b[i] = c
	}
	L.Push(glua.LString(b.String()))
	return 1
}

func (s *state) luaReverse(L *glua.LState) int {
	str, b := s.mapBytes(L)
	for i := 0; i < len(str); i++ {
		b[len(str)-1-i] = str[i]
	}
	L.Push(glua.LString(b.String()))
	return 1
}

// mapBytes checks the string argument of upper, lower or reverse, charges
// for it, and returns it with a buffer of its length for the result.
func (s *state) mapBytes(L *glua.LState) (string, byteBuf) {
	str := checkString(L, 1)
	m := s.meter(L)
	m.bytes(len(str))
	m.done()
	return str, make(byteBuf, len(str))
}

// byteBuf is a result being built; String hands it over without a copy
// (the buffer is not used again).
type byteBuf []byte

func (b byteBuf) String() string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// luaMaxn is table.maxn(t): the largest positive numeric key, charged one
// unit per key it visits.
func (s *state) luaMaxn(L *glua.LState) int {
	t := checkTable(L, 1)
	m := s.meter(L)
	defer m.done()
	most := 0.0
	for k, _ := t.Next(glua.LNil); k != glua.LNil; k, _ = t.Next(k) {
		m.step()
		if n, ok := k.(glua.LNumber); ok && float64(n) > most {
			most = float64(n)
		}
	}
	L.Push(glua.LNumber(most))
	return 1
}

// metered wraps one of gopher-lua's library functions, charging first what
// cost says its arguments will make it do.
func (s *state) metered(orig glua.LValue, cost func(L *glua.LState) int64) glua.LValue {
	gf := orig.(*glua.LFunction).GFunction
	return s.L.NewFunction(func(L *glua.LState) int {
		if n := cost(L); n > 0 {
			m := s.meter(L)
			m.charge(n)
			m.done()
		}
		return gf(L)
	})
}

// removeCost is what table.remove(t [, pos]) moves: the elements after
// pos, one unit per removeSlotsPerUnit (a memmove of 16-byte slots).
func removeCost(L *glua.LState) int64 {
	t, ok := L.Get(1).(*glua.LTable)
	if !ok || L.GetTop() < 2 {
		return 0
	}
	pos, ok := toNumber(L.Get(2))
	if !ok {
		return 0
	}
	return max(0, int64(t.Len())-toInt64(pos)) / removeSlotsPerUnit
}

// removeSlotsPerUnit is how many moved table slots table.remove is charged
// one unit for.
const removeSlotsPerUnit = 16

// sortCost is what table.sort(t) is charged, before it runs: n·⌈log2 n⌉
// for the n elements of t's array, the order of the comparisons Go's
// pattern-defeating quicksort (which gopher-lua's sort runs) makes at most.
// A comparator's own instructions are counted by the VM besides.
func sortCost(L *glua.LState) int64 {
	t, ok := L.Get(1).(*glua.LTable)
	if !ok {
		return 0
	}
	n := int64(t.Len())
	return n * int64(bits.Len64(uint64(n)))
}
