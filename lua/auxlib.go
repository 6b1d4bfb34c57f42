package lua

import (
	"fmt"
	"math"

	glua "github.com/yuin/gopher-lua"
)

// Helpers in the manner of Lua 5.1's lauxlib, so that the functions written
// here check their arguments and word their errors exactly as Redis's Lua.

var posInf = math.Inf(1)

// where is luaL_where(L, level): "chunk:line: " for a Lua function at that
// level of the stack, "" for a Go function or none.
func where(L *glua.LState, level int) string {
	dbg, ok := L.GetStack(level)
	if !ok {
		return ""
	}
	if _, err := L.GetInfo("Sl", dbg, glua.LNil); err != nil {
		return ""
	}
	if dbg.What == "G" || dbg.CurrentLine <= 0 {
		return ""
	}
	return fmt.Sprintf("%s:%d: ", dbg.Source, dbg.CurrentLine)
}

// raisef is luaL_error: the message, prefixed with the position of the Lua
// code that called the running Go function.
func raisef(L *glua.LState, format string, args ...any) {
	L.Error(glua.LString(where(L, 1)+fmt.Sprintf(format, args...)), 0)
}

// argError is luaL_argerror.
func argError(L *glua.LState, narg int, extra string) {
	name, namewhat := calledName(L)
	if namewhat == "method" {
		narg--
		if narg == 0 {
			raisef(L, "calling '%s' on bad self (%s)", name, extra)
		}
	}
	if name == "" {
		name = "?"
	}
	raisef(L, "bad argument #%d to '%s' (%s)", narg, name, extra)
}

// typeName is luaL_typename of argument n ("no value" past the last one).
func typeName(L *glua.LState, n int) string {
	if n > L.GetTop() {
		return "no value"
	}
	return L.Get(n).Type().String()
}

// typeError is luaL_typerror.
func typeError(L *glua.LState, n int, tname string) {
	argError(L, n, fmt.Sprintf("%s expected, got %s", tname, typeName(L, n)))
}

func checkAny(L *glua.LState, n int) glua.LValue {
	if n > L.GetTop() {
		argError(L, n, "value expected")
	}
	return L.Get(n)
}

func checkTable(L *glua.LState, n int) *glua.LTable {
	t, ok := L.Get(n).(*glua.LTable)
	if !ok {
		typeError(L, n, "table")
	}
	return t
}

// toNumber is lua_tonumber: numbers, and strings that convert.
func toNumber(v glua.LValue) (float64, bool) {
	switch x := v.(type) {
	case glua.LNumber:
		return float64(x), true
	case glua.LString:
		return str2number(string(x))
	}
	return 0, false
}

// toStringLua is lua_tolstring: strings, and numbers formatted "%.14g".
func toStringLua(v glua.LValue) (string, bool) {
	switch x := v.(type) {
	case glua.LString:
		return string(x), true
	case glua.LNumber:
		return fmtNumber(float64(x)), true
	}
	return "", false
}

func checkNumber(L *glua.LState, n int) float64 {
	f, ok := toNumber(L.Get(n))
	if !ok {
		typeError(L, n, "number")
	}
	return f
}

func optNumber(L *glua.LState, n int, def float64) float64 {
	if isNoneOrNil(L, n) {
		return def
	}
	return checkNumber(L, n)
}

// checkInt is luaL_checkint: a number converted to a C int.
func checkInt(L *glua.LState, n int) int32 { return toInt32(checkNumber(L, n)) }

func optInt(L *glua.LState, n int, def int32) int32 {
	if isNoneOrNil(L, n) {
		return def
	}
	return checkInt(L, n)
}

func checkString(L *glua.LState, n int) string {
	s, ok := toStringLua(L.Get(n))
	if !ok {
		typeError(L, n, "string")
	}
	return s
}

func optString(L *glua.LState, n int, def string) string {
	if isNoneOrNil(L, n) {
		return def
	}
	return checkString(L, n)
}

func isNoneOrNil(L *glua.LState, n int) bool {
	return n > L.GetTop() || L.Get(n) == glua.LNil
}

// luaMaxCStack is LUAI_MAXCSTACK: how many values a Go function may push
// (lua_checkstack refuses more).
const luaMaxCStack = 8000

// typeOf is lua_type's name for v.
func typeOf(v glua.LValue) string { return v.Type().String() }
