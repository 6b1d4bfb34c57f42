package lua

import (
	"fmt"

	"github.com/lockd/lockd/internal/cnum"
)

// checkSyntax parses a chunk as Lua 5.1 does (llex.c, lparser.c) and
// returns the message Lua 5.1 gives for its first syntax error, or "" when
// there is none. It builds nothing: gopher-lua compiles the chunk afterwards.
// The point is the message, which must be byte for byte Redis's
// ("user_script:1: unexpected symbol near '<eof>'"), and the refusals:
// gopher-lua's own parser accepts a few chunks Lua 5.1 rejects ("1e",
// "\300").
//
// It also returns the edits gopher-lua needs to read the chunk as Lua does:
// hexadecimal numbers with a fraction or exponent ("0x1p4", which glibc's
// strtod reads for Lua) are rewritten in decimal.
func checkSyntax(src []byte, chunkname string) (msg string, edits []edit) {
	p := &parser{lx: lexer{src: src, line: 1, chunk: chunkname}, ahead: noToken}
	defer func() { edits = p.lx.edits }()
	defer func() {
		if r := recover(); r != nil {
			if se, ok := r.(syntaxError); ok {
				msg = string(se)
			} else {
				// A bug here must not take the server down: let
				// gopher-lua's parser judge the chunk alone.
				msg, p.lx.edits = "", nil
			}
		}
	}()
	p.lx.next()
	p.next()
	p.openFunc(true)
	p.chunk()
	p.check(tkEOS)
	return "", nil
}

// edit replaces src[start:end] by text.
type edit struct {
	start, end int
	text       string
}

type syntaxError string

// Tokens: single characters are their byte value; the rest follow.
const (
	tkAnd = 257 + iota
	tkBreak
	tkDo
	tkElse
	tkElseif
	tkEnd
	tkFalse
	tkFor
	tkFunction
	tkIf
	tkIn
	tkLocal
	tkNil
	tkNot
	tkOr
	tkRepeat
	tkReturn
	tkThen
	tkTrue
	tkUntil
	tkWhile
	tkConcat
	tkDots
	tkEq
	tkGE
	tkLE
	tkNE
	tkNumber
	tkName
	tkString
	tkEOS
)

var tokenNames = []string{
	"and", "break", "do", "else", "elseif", "end", "false", "for", "function",
	"if", "in", "local", "nil", "not", "or", "repeat", "return", "then",
	"true", "until", "while", "..", "...", "==", ">=", "<=", "~=",
	"<number>", "<name>", "<string>", "<eof>",
}

var reserved = func() map[string]int {
	m := make(map[string]int)
	for i := tkAnd; i <= tkWhile; i++ {
		m[tokenNames[i-tkAnd]] = i
	}
	return m
}()

// token2str is luaX_token2str.
func token2str(t int) string {
	if t < 257 {
		c := byte(t)
		if c < 32 || c == 127 {
			return fmt.Sprintf("char(%d)", t)
		}
		return string([]byte{c})
	}
	return tokenNames[t-257]
}

const eoz = -1

// lexer is llex.c. buf holds the text of the token being read, as Lua
// saves it (it is what "near '...'" shows for names, numbers and strings).
type lexer struct {
	src     []byte
	pos     int
	current int
	line    int
	chunk   string
	buf     []byte
	edits   []edit
}

func (l *lexer) next() {
	if l.pos < len(l.src) {
		l.current = int(l.src[l.pos])
		l.pos++
	} else {
		l.current = eoz
	}
}

func (l *lexer) save(c int)      { l.buf = append(l.buf, byte(c)) }
func (l *lexer) saveAndNext()    { l.save(l.current); l.next() }
func (l *lexer) isNewline() bool { return l.current == '\n' || l.current == '\r' }

func (l *lexer) inclinenumber() {
	old := l.current
	l.next()
	if l.isNewline() && l.current != old {
		l.next()
	}
	l.line++
}

// errorf is luaX_lexerror: "<chunk>:<line>: <msg> near '<token>'".
func (l *lexer) errorf(msg string, token int) {
	msg = fmt.Sprintf("%s:%d: %s", l.chunk, l.line, msg)
	if token != 0 {
		msg = fmt.Sprintf("%s near '%s'", msg, l.txtToken(token))
	}
	panic(syntaxError(msg))
}

func (l *lexer) txtToken(token int) string {
	switch token {
	case tkName, tkString, tkNumber:
		return cString(string(l.buf))
	}
	return token2str(token)
}

func lisdigit(c int) bool { return c >= '0' && c <= '9' }
func lisalpha(c int) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func lisalnum(c int) bool { return lisalpha(c) || lisdigit(c) }
func lisspace(c int) bool { return c >= 0 && cnum.IsSpace(byte(c)) }

func (l *lexer) checkNext(set string) bool {
	for i := 0; i < len(set); i++ {
		if l.current == int(set[i]) {
			l.saveAndNext()
			return true
		}
	}
	return false
}

func (l *lexer) readNumeral() {
	start := l.pos - 1
	if l.current == eoz {
		start = l.pos
	}
	start -= len(l.buf) // a leading '.' was saved already
	for {
		l.saveAndNext()
		if !lisdigit(l.current) && l.current != '.' {
			break
		}
	}
	if l.checkNext("Ee") {
		l.checkNext("+-")
	}
	for lisalnum(l.current) || l.current == '_' {
		l.saveAndNext()
	}
	f, ok := str2number(string(l.buf))
	if !ok {
		l.errorf("malformed number", tkNumber)
	}
	if len(l.buf) > 2 && l.buf[0] == '0' && (l.buf[1] == 'x' || l.buf[1] == 'X') && bytesAny(l.buf[2:], ".pP") {
		end := l.pos - 1
		if l.current == eoz {
			end = l.pos
		}
		l.edits = append(l.edits, edit{start, end, fmtArg(f)})
	}
}

func bytesAny(b []byte, chars string) bool {
	for _, c := range b {
		for i := 0; i < len(chars); i++ {
			if c == chars[i] {
				return true
			}
		}
	}
	return false
}

// skipSep reads the '=' of a long bracket: their count, or -count-1 when the
// bracket does not close with the same character.
func (l *lexer) skipSep() int {
	count := 0
	s := l.current
	l.saveAndNext()
	for l.current == '=' {
		l.saveAndNext()
		count++
	}
	if l.current == s {
		return count
	}
	return -count - 1
}

func (l *lexer) readLongString(isString bool, sep int) {
	l.saveAndNext() // second '['
	if l.isNewline() {
		l.inclinenumber()
	}
	for {
		switch l.current {
		case eoz:
			if isString {
				l.errorf("unfinished long string", tkEOS)
			}
			l.errorf("unfinished long comment", tkEOS)
		case '[':
			// Redis's Lua is built without LUA_COMPAT_LSTR's nesting
			// check: a nested "[[" is plain text.
			if l.skipSep() == sep {
				l.saveAndNext()
			}
		case ']':
			if l.skipSep() == sep {
				l.saveAndNext()
				return
			}
		case '\n', '\r':
			l.save('\n')
			l.inclinenumber()
			if !isString {
				l.buf = l.buf[:0]
			}
		default:
			if isString {
				l.saveAndNext()
			} else {
				l.next()
			}
		}
	}
}

func (l *lexer) readString(del int) {
	l.saveAndNext()
	for l.current != del {
		switch l.current {
		case eoz:
			l.errorf("unfinished string", tkEOS)
		case '\n', '\r':
			l.errorf("unfinished string", tkString)
		case '\\':
			var c int
			l.next() // the backslash is not saved
			switch l.current {
			case 'a':
				c = '\a'
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'v':
				c = '\v'
			case '\n', '\r':
				l.save('\n')
				l.inclinenumber()
				continue
			case eoz:
				continue // the next loop raises the error
			default:
				if !lisdigit(l.current) {
					l.saveAndNext() // \\, \", \', \?
				} else {
					c = 0
					for i := 0; i < 3 && lisdigit(l.current); i++ {
						c = 10*c + (l.current - '0')
						l.next()
					}
					if c > 255 {
						l.errorf("escape sequence too large", tkString)
					}
					l.save(c)
				}
				continue
			}
			l.save(c)
			l.next()
		default:
			l.saveAndNext()
		}
	}
	l.saveAndNext()
}

// lex is llex: the next token.
func (l *lexer) lex() int {
	l.buf = l.buf[:0]
	for {
		switch c := l.current; {
		case c == '\n' || c == '\r':
			l.inclinenumber()
		case c == '-':
			l.next()
			if l.current != '-' {
				return '-'
			}
			l.next()
			if l.current == '[' {
				sep := l.skipSep()
				l.buf = l.buf[:0]
				if sep >= 0 {
					l.readLongString(false, sep)
					l.buf = l.buf[:0]
					continue
				}
			}
			for !l.isNewline() && l.current != eoz {
				l.next()
			}
		case c == '[':
			sep := l.skipSep()
			if sep >= 0 {
				l.readLongString(true, sep)
				return tkString
			} else if sep == -1 {
				return '['
			}
			l.errorf("invalid long string delimiter", tkString)
		case c == '=':
			l.next()
			if l.current != '=' {
				return '='
			}
			l.next()
			return tkEq
		case c == '<':
			l.next()
			if l.current != '=' {
				return '<'
			}
			l.next()
			return tkLE
		case c == '>':
			l.next()
			if l.current != '=' {
				return '>'
			}
			l.next()
			return tkGE
		case c == '~':
			l.next()
			if l.current != '=' {
				return '~'
			}
			l.next()
			return tkNE
		case c == '"' || c == '\'':
			l.readString(c)
			return tkString
		case c == '.':
			l.saveAndNext()
			if l.checkNext(".") {
				if l.checkNext(".") {
					return tkDots
				}
				return tkConcat
			} else if !lisdigit(l.current) {
				return '.'
			}
			l.readNumeral()
			return tkNumber
		case c == eoz:
			return tkEOS
		case lisspace(c):
			l.next()
		case lisdigit(c):
			l.readNumeral()
			return tkNumber
		case lisalpha(c) || c == '_':
			for lisalnum(l.current) || l.current == '_' {
				l.saveAndNext()
			}
			if r, ok := reserved[string(l.buf)]; ok {
				return r
			}
			return tkName
		default:
			l.next()
			return c
		}
	}
}

// Limits Lua 5.1 checks while parsing.
const (
	maxVars      = 200 // LUAI_MAXVARS
	maxUpvalues  = 60  // LUAI_MAXUPVALUES
	maxSynLevels = 200 // LUAI_MAXCCALLS
)

// funcState tracks what the error checks need of a function being parsed.
type funcState struct {
	prev        *funcState
	lineDefined int
	isVararg    bool
	actVars     []string // active locals, innermost last
	pending     int      // locals declared by the statement being parsed
	upvalues    []string
	blocks      []bool // per open block: is it a loop
}

// parser is lparser.c without the code generation. Names come from the
// token (t, text); "near" texts come from the lexer's buffer, which, as in
// Lua, holds the text of the last token read (the lookahead, if any).
type parser struct {
	lx        lexer
	t         int    // current token
	text      string // its text
	ahead     int    // lookahead token, or noToken
	aheadText string
	lastline  int
	fs        *funcState
	level     int
}

const noToken = -2

func (p *parser) next() {
	p.lastline = p.lx.line
	if p.ahead != noToken {
		p.t, p.text = p.ahead, p.aheadText
		p.ahead = noToken
		return
	}
	p.t = p.lx.lex()
	p.text = string(p.lx.buf)
}

func (p *parser) lookahead() int {
	p.ahead = p.lx.lex()
	p.aheadText = string(p.lx.buf)
	return p.ahead
}

func (p *parser) errorf(msg string)   { p.lx.errorf(msg, p.t) }
func (p *parser) errorExpected(t int) { p.errorf("'" + token2str(t) + "' expected") }

func (p *parser) check(t int) {
	if p.t != t {
		p.errorExpected(t)
	}
}

func (p *parser) checkNext(t int) {
	p.check(t)
	p.next()
}

func (p *parser) testNext(t int) bool {
	if p.t == t {
		p.next()
		return true
	}
	return false
}

func (p *parser) checkMatch(what, who, where int) {
	if !p.testNext(what) {
		if where == p.lx.line {
			p.errorExpected(what)
		}
		p.errorf(fmt.Sprintf("'%s' expected (to close '%s' at line %d)", token2str(what), token2str(who), where))
	}
}

func (p *parser) checkName() string {
	p.check(tkName)
	name := p.text
	p.next()
	return name
}

func (p *parser) enterLevel() {
	p.level++
	if p.level > maxSynLevels {
		p.lx.errorf("chunk has too many syntax levels", 0)
	}
}

func (p *parser) leaveLevel() { p.level-- }

func (p *parser) errorLimit(limit int, what string) {
	var msg string
	if p.fs.lineDefined == 0 {
		msg = fmt.Sprintf("main function has more than %d %s", limit, what)
	} else {
		msg = fmt.Sprintf("function at line %d has more than %d %s", p.fs.lineDefined, limit, what)
	}
	p.lx.errorf(msg, 0)
}

func (p *parser) openFunc(main bool) {
	fs := &funcState{prev: p.fs, isVararg: main}
	p.fs = fs
}

func (p *parser) closeFunc() { p.fs = p.fs.prev }

// newLocal declares a local (named for the reader; activate makes it
// visible), checking Lua's limit on locals.
func (p *parser) newLocal(string) {
	fs := p.fs
	if len(fs.actVars)+fs.pending+1 > maxVars {
		p.errorLimit(maxVars, "local variables")
	}
	fs.pending++
}

// activate makes the pending locals visible.
func (p *parser) activate(names []string) {
	p.fs.pending = 0
	p.fs.actVars = append(p.fs.actVars, names...)
}

func (p *parser) enterBlock(loop bool) (int, func()) {
	fs := p.fs
	n := len(fs.actVars)
	fs.blocks = append(fs.blocks, loop)
	return n, func() {
		fs.actVars = fs.actVars[:n]
		fs.blocks = fs.blocks[:len(fs.blocks)-1]
	}
}

// singlevar resolves a name, counting the upvalues each function needs.
func (p *parser) singlevar(name string) {
	p.resolve(p.fs, name)
}

// resolve reports whether name is a local of fs or of an enclosing
// function (making it an upvalue of every function in between).
func (p *parser) resolve(fs *funcState, name string) bool {
	if fs == nil {
		return false
	}
	for i := len(fs.actVars) - 1; i >= 0; i-- {
		if fs.actVars[i] == name {
			return true
		}
	}
	if !p.resolve(fs.prev, name) {
		return false
	}
	for _, u := range fs.upvalues {
		if u == name {
			return true
		}
	}
	if len(fs.upvalues)+1 > maxUpvalues {
		saved := p.fs
		p.fs = fs
		p.errorLimit(maxUpvalues, "upvalues")
		p.fs = saved
	}
	fs.upvalues = append(fs.upvalues, name)
	return true
}

func blockFollow(t int) bool {
	switch t {
	case tkElse, tkElseif, tkEnd, tkUntil, tkEOS:
		return true
	}
	return false
}

func (p *parser) chunk() {
	p.enterLevel()
	islast := false
	for !islast && !blockFollow(p.t) {
		islast = p.statement()
		p.testNext(';')
	}
	p.leaveLevel()
}

func (p *parser) block() {
	_, leave := p.enterBlock(false)
	p.chunk()
	leave()
}

func (p *parser) statement() bool {
	line := p.lx.line
	switch p.t {
	case tkIf:
		p.ifStat(line)
	case tkWhile:
		p.next()
		p.expr()
		p.checkNext(tkDo)
		_, leave := p.enterBlock(true)
		p.block()
		leave()
		p.checkMatch(tkEnd, tkWhile, line)
	case tkDo:
		p.next()
		p.block()
		p.checkMatch(tkEnd, tkDo, line)
	case tkFor:
		p.forStat(line)
	case tkRepeat:
		p.next()
		_, leaveLoop := p.enterBlock(true)
		_, leaveScope := p.enterBlock(false)
		p.chunk()
		p.checkMatch(tkUntil, tkRepeat, line)
		p.expr()
		leaveScope()
		leaveLoop()
	case tkFunction:
		p.next()
		p.singlevar(p.checkName())
		method := false
		for p.t == '.' {
			p.next()
			p.checkName()
		}
		if p.t == ':' {
			p.next()
			p.checkName()
			method = true
		}
		p.body(method, line)
	case tkLocal:
		p.next()
		if p.testNext(tkFunction) {
			name := p.checkName()
			p.newLocal(name)
			p.activate([]string{name})
			p.body(false, p.lx.line)
		} else {
			p.localStat()
		}
	case tkReturn:
		p.next()
		if !blockFollow(p.t) && p.t != ';' {
			p.exprList()
		}
		return true
	case tkBreak:
		p.next()
		loop := false
		for _, isLoop := range p.fs.blocks {
			loop = loop || isLoop
		}
		if !loop {
			p.errorf("no loop to break")
		}
		return true
	default:
		p.exprStat()
	}
	return false
}

func (p *parser) ifStat(line int) {
	p.testThenBlock()
	for p.t == tkElseif {
		p.testThenBlock()
	}
	if p.testNext(tkElse) {
		p.block()
	}
	p.checkMatch(tkEnd, tkIf, line)
}

func (p *parser) testThenBlock() {
	p.next()
	p.expr()
	p.checkNext(tkThen)
	p.block()
}

func (p *parser) forStat(line int) {
	_, leave := p.enterBlock(true)
	p.next()
	name := p.checkName()
	switch p.t {
	case '=':
		p.newLocal("(for index)")
		p.newLocal("(for limit)")
		p.newLocal("(for step)")
		p.newLocal(name)
		p.next()
		p.expr()
		p.checkNext(',')
		p.expr()
		if p.testNext(',') {
			p.expr()
		}
		p.forBody([]string{"(for index)", "(for limit)", "(for step)"}, []string{name})
	case ',', tkIn:
		p.newLocal("(for generator)")
		p.newLocal("(for state)")
		p.newLocal("(for control)")
		p.newLocal(name)
		names := []string{name}
		for p.testNext(',') {
			n := p.checkName()
			p.newLocal(n)
			names = append(names, n)
		}
		p.checkNext(tkIn)
		p.exprList()
		p.forBody([]string{"(for generator)", "(for state)", "(for control)"}, names)
	default:
		p.errorf("'=' or 'in' expected")
	}
	p.checkMatch(tkEnd, tkFor, line)
	leave()
}

func (p *parser) forBody(hidden, names []string) {
	p.activate(hidden)
	p.checkNext(tkDo)
	_, leave := p.enterBlock(false)
	p.activate(names)
	p.block()
	leave()
}

func (p *parser) localStat() {
	var names []string
	for {
		n := p.checkName()
		p.newLocal(n)
		names = append(names, n)
		if !p.testNext(',') {
			break
		}
	}
	if p.testNext('=') {
		p.exprList()
	}
	p.activate(names)
}

func (p *parser) body(method bool, line int) {
	p.openFunc(false)
	p.fs.lineDefined = line
	p.checkNext('(')
	var params []string
	if method {
		p.newLocal("self")
		p.activate([]string{"self"})
	}
	if p.t != ')' {
		for {
			switch p.t {
			case tkName:
				n := p.checkName()
				p.newLocal(n)
				params = append(params, n)
			case tkDots:
				p.next()
				p.fs.isVararg = true
				// LUA_COMPAT_VARARG: a vararg function has a local "arg".
				p.newLocal("arg")
				params = append(params, "arg")
			default:
				p.errorf("<name> or '...' expected")
			}
			if p.fs.isVararg || !p.testNext(',') {
				break
			}
		}
	}
	p.activate(params)
	p.checkNext(')')
	p.chunk()
	p.checkMatch(tkEnd, tkFunction, line)
	p.closeFunc()
}

func (p *parser) exprList() {
	p.expr()
	for p.testNext(',') {
		p.expr()
	}
}

// Expression kinds the checks care about.
const (
	exCall = iota + 1
	exVar  // local, upvalue, global or indexed: assignable
	exOther
)

func (p *parser) exprStat() {
	k := p.primaryExp()
	if k == exCall {
		return
	}
	p.assignment(k)
}

func (p *parser) assignment(k int) {
	if k != exVar {
		p.errorf("syntax error")
	}
	if p.testNext(',') {
		p.assignment(p.primaryExp())
		return
	}
	p.checkNext('=')
	p.exprList()
}

func (p *parser) prefixExp() int {
	switch p.t {
	case '(':
		line := p.lx.line
		p.next()
		p.expr()
		p.checkMatch(')', '(', line)
		return exOther
	case tkName:
		p.singlevar(p.checkName())
		return exVar
	}
	p.errorf("unexpected symbol")
	return 0
}

func (p *parser) primaryExp() int {
	k := p.prefixExp()
	for {
		switch p.t {
		case '.':
			p.next()
			p.checkName()
			k = exVar
		case '[':
			p.next()
			p.expr()
			p.checkNext(']')
			k = exVar
		case ':':
			p.next()
			p.checkName()
			p.funcArgs()
			k = exCall
		case '(', tkString, '{':
			p.funcArgs()
			k = exCall
		default:
			return k
		}
	}
}

func (p *parser) funcArgs() {
	line := p.lx.line
	switch p.t {
	case '(':
		if line != p.lastline {
			p.errorf("ambiguous syntax (function call x new statement)")
		}
		p.next()
		if p.t != ')' {
			p.exprList()
		}
		p.checkMatch(')', '(', line)
	case '{':
		p.constructor()
	case tkString:
		p.next()
	default:
		p.errorf("function arguments expected")
	}
}

func (p *parser) constructor() {
	line := p.lx.line
	p.checkNext('{')
	for {
		if p.t == '}' {
			break
		}
		switch p.t {
		case tkName:
			if p.lookahead() != '=' {
				p.expr()
			} else {
				p.checkName()
				p.checkNext('=')
				p.expr()
			}
		case '[':
			p.next()
			p.expr()
			p.checkNext(']')
			p.checkNext('=')
			p.expr()
		default:
			p.expr()
		}
		if !p.testNext(',') && !p.testNext(';') {
			break
		}
	}
	p.checkMatch('}', '{', line)
}

func (p *parser) simpleExp() {
	switch p.t {
	case tkNumber, tkString, tkNil, tkTrue, tkFalse:
		p.next()
	case tkDots:
		if !p.fs.isVararg {
			p.errorf("cannot use '...' outside a vararg function")
		}
		p.next()
	case '{':
		p.constructor()
	case tkFunction:
		p.next()
		p.body(false, p.lx.line)
	default:
		p.primaryExp()
	}
}

// Binary operator priorities (left, right), lparser.c priority[].
func binaryPriority(t int) (int, int, bool) {
	switch t {
	case '+', '-':
		return 6, 6, true
	case '*', '/', '%':
		return 7, 7, true
	case '^':
		return 10, 9, true
	case tkConcat:
		return 5, 4, true
	case tkNE, tkEq, '<', tkLE, '>', tkGE:
		return 3, 3, true
	case tkAnd:
		return 2, 2, true
	case tkOr:
		return 1, 1, true
	}
	return 0, 0, false
}

const unaryPriority = 8

func (p *parser) expr() { p.subExpr(0) }

func (p *parser) subExpr(limit int) {
	p.enterLevel()
	if p.t == tkNot || p.t == '-' || p.t == '#' {
		p.next()
		p.subExpr(unaryPriority)
	} else {
		p.simpleExp()
	}
	for {
		left, right, ok := binaryPriority(p.t)
		if !ok || left <= limit {
			break
		}
		p.next()
		p.subExpr(right)
	}
	p.leaveLevel()
}
