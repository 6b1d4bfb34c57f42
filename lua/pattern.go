package lua

import (
	"strings"

	"github.com/lockd/lockd/internal/cnum"
	glua "github.com/yuin/gopher-lua"
)

// Lua 5.1's pattern matching (string.find, match, gmatch, gsub), written for
// lockd rather than taken from gopher-lua: gopher-lua's matcher (its pm
// package) offers no hook, so a backtracking pattern ran for minutes as one
// VM instruction, and its gsub copied the whole result once per match. This
// one follows Lua 5.1's algorithm (lstrlib.c's match, the recursive
// backtracking matcher Redis's Lua runs), so that results, captures and
// error texts are Redis's byte for byte, and charges every step of it to the
// run's budget through a meter: one unit per pattern item tried at a subject
// position, so a run that backtracks stops at the same step on every
// replica, and SCRIPT KILL reaches it within one meter chunk.

// maxCaptures is LUA_MAXCAPTURES.
const maxCaptures = 32

// maxMatchDepth bounds the matcher's recursion. Each level consumes at least
// one pattern byte, so only patterns with more items than this reach it; Lua
// 5.1 has no bound (a deep enough pattern overflows Redis's C stack), Lua
// 5.2 stops at 200 with the same message.
const maxMatchDepth = 20000

const (
	capUnfinished = -1
	capPosition   = -2
)

// matcher is lstrlib.c's MatchState: the subject, the pattern (cut at its
// first NUL, as C sees it), the captures, and the meter the work is charged
// to.
type matcher struct {
	L     *glua.LState
	m     *meter
	src   string
	pat   string
	level int
	depth int
	cap   [maxCaptures]struct{ init, len int }
}

// pc is the pattern byte at i, 0 past the end (C's terminating NUL).
func (ms *matcher) pc(i int) byte {
	if i < len(ms.pat) {
		return ms.pat[i]
	}
	return 0
}

// sc is the subject byte at i, 0 at the end (Lua strings end in a NUL that
// %f and %b read).
func (ms *matcher) sc(i int) byte {
	if i < len(ms.src) {
		return ms.src[i]
	}
	return 0
}

// classEnd returns the index just past the single-character class at p.
func (ms *matcher) classEnd(p int) int {
	c := ms.pc(p)
	p++
	switch c {
	case '%':
		if ms.pc(p) == 0 {
			raisef(ms.L, "malformed pattern (ends with '%%')")
		}
		return p + 1
	case '[':
		if ms.pc(p) == '^' {
			p++
		}
		for { // look for the closing ']' (the first byte never closes)
			if ms.pc(p) == 0 {
				raisef(ms.L, "malformed pattern (missing ']')")
			}
			c := ms.pc(p)
			p++
			if c == '%' && ms.pc(p) != 0 {
				p++ // an escape such as %]
			}
			if ms.pc(p) == ']' {
				return p + 1
			}
		}
	}
	return p
}

// matchClass is match_class: c against the class letter cl (%a, %d, ...;
// upper case negates), in the C locale; any other cl matches itself.
func matchClass(c, cl byte) bool {
	var res bool
	switch cl | 0x20 {
	case 'a':
		res = isAlpha(c)
	case 'c':
		res = c < 0x20 || c == 0x7f
	case 'd':
		res = isDigit(c)
	case 'l':
		res = c >= 'a' && c <= 'z'
	case 'p':
		res = isPunct(c)
	case 's':
		res = cnum.IsSpace(c)
	case 'u':
		res = c >= 'A' && c <= 'Z'
	case 'w':
		res = isAlpha(c) || isDigit(c)
	case 'x':
		res = isDigit(c) || (c|0x20) >= 'a' && (c|0x20) <= 'f'
	case 'z':
		res = c == 0
	default:
		return cl == c
	}
	if cl >= 'A' && cl <= 'Z' {
		return !res
	}
	return res
}

func isAlpha(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }

// isPunct is C's ispunct: printable, not a letter, digit or space.
func isPunct(c byte) bool { return c > 0x20 && c < 0x7f && !isAlpha(c) && !isDigit(c) }

// matchBracket is matchbracketclass: c against the set [ ... ] from p (the
// '[') to ec (its ']').
func (ms *matcher) matchBracket(c byte, p, ec int) bool {
	sig := true
	if ms.pc(p+1) == '^' {
		sig = false
		p++
	}
	for p++; p < ec; p++ {
		switch {
		case ms.pc(p) == '%':
			p++
			if matchClass(c, ms.pc(p)) {
				return sig
			}
		case ms.pc(p+1) == '-' && p+2 < ec:
			p += 2
			if ms.pc(p-2) <= c && c <= ms.pc(p) {
				return sig
			}
		case ms.pc(p) == c:
			return sig
		}
	}
	return !sig
}

// singleMatch reports whether c matches the class from p to ep.
func (ms *matcher) singleMatch(c byte, p, ep int) bool {
	switch ms.pc(p) {
	case '.':
		return true
	case '%':
		return matchClass(c, ms.pc(p+1))
	case '[':
		return ms.matchBracket(c, p, ep-1)
	}
	return ms.pc(p) == c
}

// match matches the pattern from p against the subject from s, and returns
// where the match ends, or -1.
func (ms *matcher) match(s, p int) int {
	if ms.depth++; ms.depth > maxMatchDepth {
		raisef(ms.L, "pattern too complex")
	}
	r := ms.doMatch(s, p)
	ms.depth--
	return r
}

func (ms *matcher) doMatch(s, p int) int {
	for {
		ms.m.step()
		switch ms.pc(p) {
		case '(':
			if ms.pc(p+1) == ')' {
				return ms.startCapture(s, p+2, capPosition)
			}
			return ms.startCapture(s, p+1, capUnfinished)
		case ')':
			return ms.endCapture(s, p+1)
		case 0:
			return s
		case '$':
			if ms.pc(p+1) == 0 {
				if s == len(ms.src) {
					return s
				}
				return -1
			}
		case '%':
			switch c := ms.pc(p + 1); {
			case c == 'b':
				if s = ms.matchBalance(s, p+2); s < 0 {
					return -1
				}
				p += 4
				continue
			case c == 'f':
				p += 2
				if ms.pc(p) != '[' {
					raisef(ms.L, "missing '[' after '%%f' in pattern")
				}
				ep := ms.classEnd(p)
				var prev byte
				if s > 0 {
					prev = ms.src[s-1]
				}
				if ms.matchBracket(prev, p, ep-1) || !ms.matchBracket(ms.sc(s), p, ep-1) {
					return -1
				}
				p = ep
				continue
			case isDigit(c):
				if s = ms.matchCapture(s, c); s < 0 {
					return -1
				}
				p += 2
				continue
			}
		}
		// A single-character class, perhaps followed by a repetition.
		ep := ms.classEnd(p)
		m := s < len(ms.src) && ms.singleMatch(ms.src[s], p, ep)
		switch ms.pc(ep) {
		case '?':
			if m {
				if r := ms.match(s+1, ep+1); r >= 0 {
					return r
				}
			}
			p = ep + 1
		case '*':
			return ms.maxExpand(s, p, ep)
		case '+':
			if !m {
				return -1
			}
			return ms.maxExpand(s+1, p, ep)
		case '-':
			return ms.minExpand(s, p, ep)
		default:
			if !m {
				return -1
			}
			s++
			p = ep
		}
	}
}

// matchBalance is %bxy at p: a balanced run from x to y at s.
func (ms *matcher) matchBalance(s, p int) int {
	if ms.pc(p) == 0 || ms.pc(p+1) == 0 {
		raisef(ms.L, "unbalanced pattern")
	}
	if ms.sc(s) != ms.pc(p) {
		return -1
	}
	b, e := ms.pc(p), ms.pc(p+1)
	cont := 1
	for s++; s < len(ms.src); s++ {
		ms.m.step()
		switch ms.src[s] {
		case e:
			if cont--; cont == 0 {
				return s + 1
			}
		case b:
			cont++
		}
	}
	return -1
}

// maxExpand is a greedy repetition: as many as match, then fewer until the
// rest of the pattern matches.
func (ms *matcher) maxExpand(s, p, ep int) int {
	i := 0
	for s+i < len(ms.src) && ms.singleMatch(ms.src[s+i], p, ep) {
		ms.m.step()
		i++
	}
	for ; i >= 0; i-- {
		if r := ms.match(s+i, ep+1); r >= 0 {
			return r
		}
	}
	return -1
}

// minExpand is a lazy repetition: as few as let the rest match.
func (ms *matcher) minExpand(s, p, ep int) int {
	for {
		if r := ms.match(s, ep+1); r >= 0 {
			return r
		}
		if s < len(ms.src) && ms.singleMatch(ms.src[s], p, ep) {
			s++
		} else {
			return -1
		}
	}
}

func (ms *matcher) startCapture(s, p, what int) int {
	if ms.level >= maxCaptures {
		raisef(ms.L, "too many captures")
	}
	ms.cap[ms.level].init = s
	ms.cap[ms.level].len = what
	ms.level++
	r := ms.match(s, p)
	if r < 0 {
		ms.level--
	}
	return r
}

func (ms *matcher) endCapture(s, p int) int {
	l := -1
	for i := ms.level - 1; i >= 0; i-- {
		if ms.cap[i].len == capUnfinished {
			l = i
			break
		}
	}
	if l < 0 {
		raisef(ms.L, "invalid pattern capture")
	}
	ms.cap[l].len = s - ms.cap[l].init
	r := ms.match(s, p)
	if r < 0 {
		ms.cap[l].len = capUnfinished
	}
	return r
}

// matchCapture is a back reference %1-%9 at s.
func (ms *matcher) matchCapture(s int, c byte) int {
	l := int(c) - '1'
	if l < 0 || l >= ms.level || ms.cap[l].len == capUnfinished {
		raisef(ms.L, "invalid capture index")
	}
	n := ms.cap[l].len
	if n < 0 || len(ms.src)-s < n { // a position capture never matches
		return -1
	}
	ms.m.bytes(n)
	init := ms.cap[l].init
	if ms.src[init:init+n] == ms.src[s:s+n] {
		return s + n
	}
	return -1
}

// capture returns capture i of a match from s to e as Lua sees it: the
// whole match when the pattern has none (i 0 only), a position, or a string.
func (ms *matcher) capture(i, s, e int) glua.LValue {
	if i >= ms.level {
		if i != 0 {
			raisef(ms.L, "invalid capture index")
		}
		return glua.LString(ms.src[s:e])
	}
	c := ms.cap[i]
	switch c.len {
	case capUnfinished:
		raisef(ms.L, "unfinished capture")
	case capPosition:
		return glua.LNumber(c.init + 1)
	}
	return glua.LString(ms.src[c.init : c.init+c.len])
}

// pushCaptures pushes the captures of a match (the whole match when there
// are none and wholeIfNone is set) and returns how many.
func (ms *matcher) pushCaptures(s, e int, wholeIfNone bool) int {
	n := ms.level
	if n == 0 && wholeIfNone {
		n = 1
	}
	for i := 0; i < n; i++ {
		ms.L.Push(ms.capture(i, s, e))
	}
	return n
}

// patternSpecials are the bytes that make string.find match a pattern
// rather than search for plain text.
const patternSpecials = "^$*+?.([%-"

// luaFind is string.find(s, pattern [, init [, plain]]).
func (s *state) luaFind(L *glua.LState) int { return s.findAux(L, true) }

// luaMatch is string.match(s, pattern [, init]).
func (s *state) luaMatch(L *glua.LState) int { return s.findAux(L, false) }

// findAux is str_find_aux.
func (s *state) findAux(L *glua.LState, find bool) int {
	src := checkString(L, 1)
	pat := checkString(L, 2)
	init := posRelat(toInt64(optNumber(L, 3, 1)), len(src)) - 1
	if init < 0 {
		init = 0
	} else if init > int64(len(src)) {
		init = int64(len(src))
	}
	m := s.meter(L)
	defer m.done()
	cpat := cString(pat)
	if find && (glua.LVAsBool(L.Get(4)) || !strings.ContainsAny(cpat, patternSpecials)) {
		m.bytes(len(src) - int(init))
		if i := strings.Index(src[init:], pat); i >= 0 {
			at := int(init) + i
			L.Push(glua.LNumber(at + 1))
			L.Push(glua.LNumber(at + len(pat)))
			return 2
		}
		L.Push(glua.LNil)
		return 1
	}
	ms := &matcher{L: L, m: m, src: src, pat: cpat}
	p := 0
	anchor := ms.pc(0) == '^'
	if anchor {
		p = 1
	}
	for s1 := int(init); ; s1++ {
		ms.level = 0
		if e := ms.match(s1, p); e >= 0 {
			if find {
				L.Push(glua.LNumber(s1 + 1))
				L.Push(glua.LNumber(e))
				return ms.pushCaptures(0, 0, false) + 2
			}
			return ms.pushCaptures(s1, e, true)
		}
		if s1 >= len(src) || anchor {
			break
		}
	}
	L.Push(glua.LNil)
	return 1
}

// luaGmatch is string.gmatch(s, pattern) (and string.gfind): an iterator
// over the matches. As in Lua 5.1, '^' is not an anchor here.
func (s *state) luaGmatch(L *glua.LState) int {
	src := checkString(L, 1)
	pat := cString(checkString(L, 2))
	pos := 0
	L.Push(L.NewFunction(func(L *glua.LState) int {
		m := s.meter(L)
		defer m.done()
		ms := &matcher{L: L, m: m, src: src, pat: pat}
		for start := pos; start <= len(src); start++ {
			ms.level = 0
			if e := ms.match(start, 0); e >= 0 {
				pos = e
				if e == start {
					pos++ // an empty match: move on at least one byte
				}
				return ms.pushCaptures(start, e, true)
			}
		}
		return 0
	}))
	return 1
}

// luaGsub is string.gsub(s, pattern, repl [, n]).
func (s *state) luaGsub(L *glua.LState) int {
	src := checkString(L, 1)
	pat := cString(checkString(L, 2))
	tr := L.Get(3).Type()
	maxN := optInt(L, 4, int32(min(len(src)+1, 1<<31-1)))
	if tr != glua.LTNumber && tr != glua.LTString && tr != glua.LTFunction && tr != glua.LTTable {
		argError(L, 3, "string/function/table expected")
	}
	repl := L.Get(3)
	m := s.meter(L)
	defer m.done()
	ms := &matcher{L: L, m: m, src: src, pat: pat}
	p := 0
	anchor := ms.pc(0) == '^'
	if anchor {
		p = 1
	}
	var b []byte
	add := func(str string) {
		if len(b)+len(str) > s.r.maxStr {
			raisef(L, "resulting string too large")
		}
		m.bytes(len(str))
		b = append(b, str...)
	}
	// kept is where the subject bytes not yet added start: unmatched bytes
	// are added in runs, when a match or the end comes.
	at, kept, n := 0, 0, int32(0)
scan:
	for n < maxN {
		ms.level = 0
		e := ms.match(at, p)
		if e >= 0 {
			n++
			add(src[kept:at])
			s.gsubValue(ms, repl, at, e, add)
			kept = at
		}
		switch {
		case e > at:
			at, kept = e, e
		case at < len(src):
			at++
		default:
			break scan
		}
		if anchor {
			break
		}
	}
	add(src[kept:])
	L.Push(glua.LString(b))
	L.Push(glua.LNumber(n))
	return 2
}

// gsubValue is add_value: it adds what replaces the match from..to.
func (s *state) gsubValue(ms *matcher, repl glua.LValue, from, to int, add func(string)) {
	L := ms.L
	var v glua.LValue
	switch r := repl.(type) {
	case glua.LString, glua.LNumber:
		news, _ := toStringLua(r)
		for i := 0; i < len(news); i++ {
			j := strings.IndexByte(news[i:], '%')
			if j < 0 {
				add(news[i:])
				break
			}
			if j > 0 {
				add(news[i : i+j])
			}
			i += j + 1 // past the '%'
			switch {
			case i >= len(news):
				add("\x00") // Lua reads the string's terminating NUL
			case !isDigit(news[i]):
				add(news[i : i+1])
			case news[i] == '0':
				add(ms.src[from:to])
			default:
				str, _ := toStringLua(ms.capture(int(news[i]-'1'), from, to))
				add(str)
			}
		}
		return
	case *glua.LFunction:
		ms.m.done() // the function's instructions are counted by the VM
		top := L.GetTop()
		L.Push(r)
		n := ms.pushCaptures(from, to, true)
		L.Call(n, 1)
		v = L.Get(-1)
		L.SetTop(top)
	case *glua.LTable:
		ms.m.done() // __index may run Lua code
		v = L.GetTable(r, ms.capture(0, from, to))
	}
	if !glua.LVAsBool(v) {
		add(ms.src[from:to])
		return
	}
	str, ok := toStringLua(v)
	if !ok {
		raisef(L, "invalid replacement value (a %s)", typeOf(v))
	}
	add(str)
}
