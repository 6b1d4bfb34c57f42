package lua

import (
	"reflect"
	"testing"

	"github.com/lockd/lockd/resp"
)

// describe renders a Lua value with its types, keys sorted.
const describe = `
local function d(v)
  local t = type(v)
  if t == 'table' then
    local keys = {}
    for k in pairs(v) do keys[#keys+1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    local parts = {}
    for _, k in ipairs(keys) do parts[#parts+1] = tostring(k) .. '=' .. d(v[k]) end
    return '{' .. table.concat(parts, ',') .. '}'
  elseif t == 'string' then
    return string.format('%q', v)
  end
  return t .. ':' .. tostring(v)
end
redis.setresp(tonumber(ARGV[1]))
return d(redis.pcall('x'))`

// TestRESPToLua: what a command reply looks like to the script, in RESP2
// and RESP3 mode (script_lua.c redisProtocolToLuaType_*).
func TestRESPToLua(t *testing.T) {
	for _, c := range []struct {
		name       string
		reply      resp.Value
		resp2, rs3 string
	}{
		{"int", resp.Int(-42), `number:-42`, `number:-42`},
		{"bulk", resp.BulkString("a\x00b"), `"a\000b"`, `"a\000b"`},
		{"nil bulk", resp.Nil, `boolean:false`, `nil:nil`},
		{"nil array", resp.NilArray, `boolean:false`, `nil:nil`},
		{"status", resp.Simple("OK"), `{ok="OK"}`, `{ok="OK"}`},
		{"error", resp.Error("WRONGTYPE Operation against a key"), `{err="WRONGTYPE Operation against a key",ignore_error_stats_update=boolean:true}`, `{err="WRONGTYPE Operation against a key",ignore_error_stats_update=boolean:true}`},
		{"error without code", resp.Error("oops"), `{err="ERR oops",ignore_error_stats_update=boolean:true}`, `{err="ERR oops",ignore_error_stats_update=boolean:true}`},
		{"array", resp.Array(resp.Int(1), resp.BulkString("x"), resp.Nil, resp.Array()), `{1=number:1,2="x",3=boolean:false,4={}}`, `{1=number:1,2="x",4={}}`},
		{"map", resp.Map(resp.BulkString("f"), resp.BulkString("v")), `{1="f",2="v"}`, `{map={f="v"}}`},
		{"set", resp.Value{Kind: resp.KindSet, Elems: []resp.Value{resp.BulkString("a")}}, `{1="a"}`, `{set={a=boolean:true}}`},
		{"double", resp.Double(1.5), `"1.5"`, `{double=number:1.5}`},
		{"double inf", resp.Double(posInf), `"inf"`, `{double=number:inf}`},
		{"bool true", resp.Bool(true), `number:1`, `boolean:true`},
		{"bool false", resp.Bool(false), `number:0`, `boolean:false`},
		{"verbatim", resp.Verbatim("txt!"), `"txt!"`, `{verbatim_string={format="txt",string="txt!"}}`},
	} {
		for _, mode := range []string{"2", "3"} {
			e := New()
			h := HostFunc(func([][]byte) resp.Value { return c.reply })
			v := run(t, e, h, describe, nil, []string{mode})
			want := c.resp2
			if mode == "3" {
				want = c.rs3
			}
			if string(v.Str) != want {
				t.Errorf("%s RESP%s: got %s, want %s", c.name, mode, render(v), want)
			}
		}
	}
}

// TestLuaToRESP: what the client gets for a returned value
// (luaReplyToRedisReply).
func TestLuaToRESP(t *testing.T) {
	arr := func(el ...resp.Value) resp.Value { return resp.Value{Kind: resp.KindArray, Elems: el} }
	for _, c := range []struct {
		src  string
		want resp.Value
	}{
		{`return 'a'`, resp.BulkString("a")},
		{`return 3.99`, resp.Int(3)},
		{`return -3.99`, resp.Int(-3)},
		{`return 0/0`, resp.Int(-9223372036854775808)},
		{`return 2^63`, resp.Int(-9223372036854775808)},
		{`return true`, resp.Int(1)},
		{`return false`, resp.Nil},
		{`return nil`, resp.Nil},
		{`return tostring`, resp.Nil},
		{`return function() end`, resp.Nil},
		{`return {}`, arr()},
		{`return {1, 'a', {2}, true, false}`, arr(resp.Int(1), resp.BulkString("a"), arr(resp.Int(2)), resp.Int(1), resp.Nil)},
		{`return {1, nil, 3}`, arr(resp.Int(1))},
		{`return {ok = 'fine'}`, resp.Simple("fine")},
		{`return {ok = 'a\r\nb'}`, resp.Simple("a  b")},
		{`return {err = 'CODE msg'}`, resp.Error("CODE msg")},
		{`return {err = 'a\r\nb\r\n'}`, resp.Error("a  b")},
		{`return {err = 1}`, arr()},
		{`return redis.error_reply('MY err')`, resp.Error("MY err")},
		{`return redis.error_reply('noSpace')`, resp.Error("ERR noSpace")},
		{`return redis.status_reply('FINE')`, resp.Simple("FINE")},
		{`return {double = 1.5}`, resp.Double(1.5)},
		{`return {map = {a = 1}}`, resp.Value{Kind: resp.KindMap, Elems: []resp.Value{resp.BulkString("a"), resp.Int(1)}}},
		{`return {set = {a = true}}`, resp.Value{Kind: resp.KindSet, Elems: []resp.Value{resp.BulkString("a")}}},
		{`return {big_number = '123'}`, resp.BulkString("123")},
		{`return {verbatim_string = {format = 'txt', string = 'hi'}}`, resp.Verbatim("hi")},
		{`return {err = 'E x', ok = 'y'}`, resp.Error("E x")},
		{`return {1, {err = 'E nested'}}`, arr(resp.Int(1), resp.Error("E nested"))},
		{`redis.setresp(3) return true`, resp.Bool(true)},
		{`redis.setresp(3) return false`, resp.Bool(false)},
		{`redis.setresp(3) return {true, nil}`, arr(resp.Bool(true))},
		{`local t = {} t[1] = t return t`, nestedErr(maxReplyDepth)},
	} {
		v := run(t, New(), nil, c.src, nil, nil)
		if !reflect.DeepEqual(v, c.want) {
			if len(c.src) < 60 {
				t.Errorf("%s: got %#v, want %#v", c.src, v, c.want)
			} else {
				t.Errorf("%s: got %s", c.src, render(v))
			}
		}
	}
}

func nestedErr(depth int) resp.Value {
	v := resp.Error("ERR reached lua stack limit")
	for i := 0; i < depth; i++ {
		v = resp.Value{Kind: resp.KindArray, Elems: []resp.Value{v}}
	}
	return v
}
