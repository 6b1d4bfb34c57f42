package lua

import (
	"strings"

	glua "github.com/yuin/gopher-lua"

	"github.com/lockd/lockd/resp"
)

// Conversions between replies and Lua values, exactly as Redis 7.0 does them
// (script_lua.c: redisProtocolToLuaType_*, luaReplyToRedisReply).

// toLua converts a command reply for the script. In RESP2 mode (the
// default) the RESP3-only kinds arrive as a RESP2 client would see them,
// because in Redis the command itself renders its reply for the script's
// protocol: maps and sets as flat arrays, doubles as bulk strings, booleans
// as 1/0, verbatim strings as bulk strings.
func (s *state) toLua(v resp.Value) glua.LValue {
	L := s.L
	resp3 := s.r.resp == 3
	switch v.Kind {
	case resp.KindNull, resp.KindNullArray:
		if resp3 {
			return glua.LNil
		}
		return glua.LFalse
	case resp.KindSimple:
		t := L.CreateTable(0, 1)
		t.RawSetString("ok", glua.LString(v.Str))
		return t
	case resp.KindError:
		t := errorTable(L, "-"+string(v.Str))
		t.RawSetString("ignore_error_stats_update", glua.LTrue)
		return t
	case resp.KindInt:
		return glua.LNumber(float64(v.Int))
	case resp.KindBulk:
		return glua.LString(v.Str)
	case resp.KindArray, resp.KindPush:
		return s.luaArray(v.Elems)
	case resp.KindPairs:
		if !resp3 {
			return s.luaArray(v.Elems)
		}
		t := L.CreateTable(len(v.Elems)/2, 0)
		for i := 0; i+1 < len(v.Elems); i += 2 {
			t.RawSetInt(i/2+1, s.luaArray(v.Elems[i:i+2]))
		}
		return t
	case resp.KindSet:
		if !resp3 {
			return s.luaArray(v.Elems)
		}
		set := L.CreateTable(0, len(v.Elems))
		for _, e := range v.Elems {
			if k := s.toLua(e); k != glua.LNil {
				set.RawSet(k, glua.LTrue)
			}
		}
		t := L.CreateTable(0, 1)
		t.RawSetString("set", set)
		return t
	case resp.KindMap:
		if !resp3 {
			return s.luaArray(v.Elems)
		}
		m := L.CreateTable(0, len(v.Elems)/2)
		for i := 0; i+1 < len(v.Elems); i += 2 {
			k, val := s.toLua(v.Elems[i]), s.toLua(v.Elems[i+1])
			if k != glua.LNil {
				m.RawSet(k, val)
			}
		}
		t := L.CreateTable(0, 1)
		t.RawSetString("map", m)
		return t
	case resp.KindDouble:
		if !resp3 {
			return glua.LString(resp.FormatDouble(v.Float))
		}
		t := L.CreateTable(0, 1)
		t.RawSetString("double", glua.LNumber(v.Float))
		return t
	case resp.KindBool:
		if !resp3 {
			return glua.LNumber(float64(v.Int))
		}
		return glua.LBool(v.Int != 0)
	case resp.KindVerbatim:
		if !resp3 {
			return glua.LString(v.Str)
		}
		inner := L.CreateTable(0, 2)
		inner.RawSetString("string", glua.LString(v.Str))
		inner.RawSetString("format", glua.LString("txt"))
		t := L.CreateTable(0, 1)
		t.RawSetString("verbatim_string", inner)
		return t
	}
	return glua.LNil
}

func (s *state) luaArray(elems []resp.Value) *glua.LTable {
	t := s.L.CreateTable(len(elems), 0)
	for i, e := range elems {
		t.RawSetInt(i+1, s.toLua(e))
	}
	return t
}

// errorTable is luaPushErrorBuff: the {err="CODE message"} table of an
// error. A buffer starting with "-" carries its own code (the first word);
// anything else gets the code ERR. Line breaks at either end are trimmed.
func errorTable(L *glua.LState, buf string) *glua.LTable {
	var code, msg string
	if strings.HasPrefix(buf, "-") {
		if sp := strings.IndexByte(buf, ' '); sp < 0 {
			code, msg = "ERR", buf[1:]
		} else {
			code, msg = buf[1:sp], buf[sp+1:]
		}
	} else {
		code, msg = "ERR", buf
	}
	msg = strings.Trim(msg, "\r\n")
	t := L.CreateTable(0, 1)
	t.RawSetString("err", glua.LString(cString(code)+" "+cString(msg)))
	return t
}

// maxReplyDepth bounds the nesting of a reply built from Lua tables. Redis
// has no explicit bound, but a table that contains itself would recurse
// without end; its Lua stack check then answers "reached lua stack limit"
// (at a depth that depends on its C stack; here it is fixed).
const maxReplyDepth = 1000

// toResp converts a script's return value (or a value inside it) to a reply
// (luaReplyToRedisReply). Only raw reads are used, so no Lua code runs.
func (s *state) toResp(v glua.LValue, depth int) resp.Value {
	switch x := v.(type) {
	case glua.LString:
		return resp.Bulk([]byte(string(x)))
	case glua.LBool:
		if s.r.resp == 2 {
			if x {
				return resp.Int(1)
			}
			return resp.Nil
		}
		return resp.Bool(bool(x))
	case glua.LNumber:
		return resp.Int(toInt64(float64(x)))
	case *glua.LTable:
		if depth >= maxReplyDepth {
			return resp.Error("ERR reached lua stack limit")
		}
		if e, ok := x.RawGetString("err").(glua.LString); ok {
			return resp.Error(mapLineBreaks(strings.TrimRight(string(e), "\r\n")))
		}
		if ok, isStr := x.RawGetString("ok").(glua.LString); isStr {
			return resp.Simple(mapLineBreaks(string(ok)))
		}
		if d, ok := x.RawGetString("double").(glua.LNumber); ok {
			return resp.Double(float64(d))
		}
		if b, ok := x.RawGetString("big_number").(glua.LString); ok {
			// resp.Value has no big-number kind: it goes out as the bulk
			// string a RESP2 client would get.
			return resp.Bulk([]byte(mapLineBreaks(string(b))))
		}
		if vt, ok := x.RawGetString("verbatim_string").(*glua.LTable); ok {
			// resp.Value carries only the "txt" format.
			_, okf := vt.RawGetString("format").(glua.LString)
			str, oks := vt.RawGetString("string").(glua.LString)
			if okf && oks {
				return resp.Verbatim(string(str))
			}
		}
		if m, ok := x.RawGetString("map").(*glua.LTable); ok {
			var elems []resp.Value
			for k, val := m.Next(glua.LNil); k != glua.LNil; k, val = m.Next(k) {
				elems = append(elems, s.toResp(k, depth+1), s.toResp(val, depth+1))
			}
			return resp.Value{Kind: resp.KindMap, Elems: elems}
		}
		if set, ok := x.RawGetString("set").(*glua.LTable); ok {
			var elems []resp.Value
			for k, _ := set.Next(glua.LNil); k != glua.LNil; k, _ = set.Next(k) {
				elems = append(elems, s.toResp(k, depth+1))
			}
			return resp.Value{Kind: resp.KindSet, Elems: elems}
		}
		var elems []resp.Value
		for j := 1; ; j++ {
			e := x.RawGetInt(j)
			if e == glua.LNil {
				break
			}
			elems = append(elems, s.toResp(e, depth+1))
		}
		return resp.Value{Kind: resp.KindArray, Elems: elems}
	}
	return resp.Nil
}

// mapLineBreaks replaces CR and LF by spaces (sdsmapchars), so that a
// one-line reply stays one line.
func mapLineBreaks(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if c == '\r' || c == '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}
