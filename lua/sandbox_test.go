package lua

import (
	"sort"
	"strings"
	"testing"

	"github.com/lockd/lockd/resp"
)

// run loads and runs src on e against h, failing the test on a compile error.
func run(t testing.TB, e *Engine, h Host, src string, keys, args []string) resp.Value {
	t.Helper()
	sha, err := e.Load([]byte(src))
	if err != nil {
		t.Fatalf("load %q: %v", src, err)
	}
	return e.Run(sha, bytesArgs(keys), bytesArgs(args), h, Limits{})
}

func render(v resp.Value) string { return string(resp.Append(nil, v, 2)) }

// The exact set of globals Redis 7.0.15 exposes (pairs(_G), see
// TestRedisCompat), less cjson, cmsgpack and struct, which lockd lacks.
var wantGlobals = []string{
	"ARGV", "KEYS", "_G", "_VERSION", "__redis__err__handler", "assert", "bit",
	"collectgarbage", "coroutine", "error", "gcinfo", "getmetatable", "ipairs",
	"load", "loadstring", "math", "next", "pairs", "pcall", "rawequal", "rawget",
	"rawset", "redis", "select", "setmetatable", "string", "table", "tonumber",
	"tostring", "type", "unpack", "xpcall",
}

func TestGlobalsAreRedisAllowList(t *testing.T) {
	e := New()
	v := run(t, e, nil, `local t = {} for k in pairs(_G) do t[#t+1] = k end table.sort(t) return t`, nil, nil)
	var got []string
	for _, el := range v.Elems {
		got = append(got, string(el.Str))
	}
	want := append([]string(nil), wantGlobals...)
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("globals\n got %v\nwant %v", got, want)
	}
}

func TestForbiddenGlobalsAbsent(t *testing.T) {
	e := New()
	for _, name := range []string{
		"os", "io", "require", "dofile", "loadfile", "package", "debug", "print",
		"module", "newproxy", "getfenv", "setfenv", "_printregs", "channel",
		"cjson", "cmsgpack", "struct",
	} {
		src := `return ` + name
		v := run(t, e, nil, src, nil, nil)
		want := "ERR user_script:1: Script attempted to access nonexistent global variable '" + name + "' script: " + SHA1Hex([]byte(src)) + ", on @user_script:1."
		if v.Kind != resp.KindError || string(v.Str) != want {
			t.Errorf("%s: got %s, want error %q", name, render(v), want)
		}
		// Not reachable through rawget or the libraries either.
		v = run(t, e, nil, `return {rawget(_G, '`+name+`') == nil, type(string.`+name+`), type(math.`+name+`)}`, nil, nil)
		if got := render(v); got != "*3\r\n:1\r\n$3\r\nnil\r\n$3\r\nnil\r\n" {
			t.Errorf("%s reachable: %q", name, got)
		}
	}
}

// TestNoStateLeaksBetweenRuns tries every way a script could leave something
// behind for the next one (interpreters are reused), then checks from a
// second script.
func TestNoStateLeaksBetweenRuns(t *testing.T) {
	attempts := []string{
		`x = 1`,
		`_G.x = 1`,
		`rawset(_G, 'x', 1)`,
		`string.x = 1`,
		`rawset(string, 'x', 1)`,
		`table.insert(string, 'x')`,
		`table.insert(_G, 1, 'x')`,
		`setmetatable(_G, {__index = function() return 1 end})`,
		`setmetatable(string, {__index = {x = 1}})`,
		`getmetatable('').__index = {x = 1}`,
		`getmetatable('').x = 1`,
		`rawset(getmetatable(''), 'x', 1)`,
		`getmetatable(_G).__index = function() return 1 end`,
		`rawset(getmetatable(_G), 'x', 1)`,
		`setmetatable(getmetatable(_G), nil)`,
		`math.randomseed(7)`,
		`redis.setresp(3)`,
		`KEYS[1] = 'x'; ARGV.x = 1`,
		`local t = getmetatable(_G); t.__newindex = nil`,
		`coroutine.wrap(function() x = 1 end)()`,
		`loadstring('x = 1')()`,
		`setmetatable(1, {})`,
		`redis.call = nil`,
		`table.sort(_G, function(a, b) return a < b end)`,
		`local k, v = next(_G); rawset(v, 'x', 1)`,
		`for k, v in pairs(_G) do if type(v) == 'table' then pcall(rawset, v, 'x', 1); pcall(table.insert, v, 1) end end`,
	}
	check := `
local bad = {}
if rawget(_G, 'x') ~= nil then bad[#bad+1] = 'global' end
if rawget(string, 'x') ~= nil or string.x ~= nil or string[1] ~= nil then bad[#bad+1] = 'string' end
if rawget(_G, 1) ~= nil then bad[#bad+1] = '_G[1]' end
if (''):len() ~= 0 or ('').x ~= nil then bad[#bad+1] = 'string metatable' end
if getmetatable(string) ~= nil then bad[#bad+1] = 'string mt' end
if #KEYS ~= 0 or ARGV.x ~= nil then bad[#bad+1] = 'KEYS/ARGV' end
if tostring(math.random()) ~= '0.39646477363839' then bad[#bad+1] = 'random' end
if type(redis.call('ping')) ~= 'table' then bad[#bad+1] = 'resp' end
local ok = pcall(function() return y end)
if ok then bad[#bad+1] = 'nonexistent global readable' end
return bad`
	h := newFakeHost()
	for _, a := range attempts {
		e := New()
		run(t, e, h, a, []string{"k"}, []string{"a"}) // errors are expected for most
		v := run(t, e, h, check, nil, nil)
		if v.Kind != resp.KindArray || len(v.Elems) != 0 {
			t.Errorf("after %q: %s", a, render(v))
		}
	}
}

func TestReadonlyErrors(t *testing.T) {
	// The texts are Redis 7.0.15's (see TestRedisCompat for the full replies).
	for _, c := range []struct{ src, want string }{
		{`x = 1`, "ERR user_script:1: Attempt to modify a readonly table"},
		{`redis.call = 1`, "ERR user_script:1: Attempt to modify a readonly table"},
		{`rawset(_G, 'x', 1)`, "ERR Attempt to modify a readonly table"},
		{`setmetatable(_G, nil)`, "ERR Attempt to modify a readonly table"},
		{`table.insert(string, 1)`, "ERR Attempt to modify a readonly table"},
		{`getmetatable('').__index = 1`, "ERR user_script:1: Attempt to modify a readonly table"},
		{`return y`, "ERR user_script:1: Script attempted to access nonexistent global variable 'y'"},
	} {
		v := run(t, New(), nil, c.src, nil, nil)
		want := c.want + " script: " + SHA1Hex([]byte(c.src)) + ", on @user_script:1."
		if string(v.Str) != want {
			t.Errorf("%q: got %q, want %q", c.src, v.Str, want)
		}
	}
}
