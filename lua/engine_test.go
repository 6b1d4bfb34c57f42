package lua

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/lockd/lockd/resp"
)

func TestNoScript(t *testing.T) {
	e := New()
	v := e.Run("0000000000000000000000000000000000000000", nil, nil, nil, Limits{})
	// redis-cli EVALSHA 0000000000000000000000000000000000000000 0
	if got := render(v); got != "-NOSCRIPT No matching script. Please use EVAL.\r\n" {
		t.Fatalf("got %q", got)
	}
}

func TestCacheAndSHACase(t *testing.T) {
	e := New()
	src := []byte("return 'hello'")
	sha, err := e.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	// redis-cli SCRIPT LOAD "return 'hello'"
	if sha != "1b936e3fe509bcbc9cd0664897bbe8fd0cac101b" || sha != SHA1Hex(src) {
		t.Fatalf("sha %s", sha)
	}
	up := strings.ToUpper(sha)
	if !e.Exists(sha) || !e.Exists(up) || e.Exists("1b936e3fe509bcbc9cd0664897bbe8fd0cac101c") {
		t.Fatal("Exists")
	}
	if s, ok := e.Source(up); !ok || string(s) != string(src) {
		t.Fatal("Source")
	}
	if v := e.Run(up, nil, nil, nil, Limits{}); string(v.Str) != "hello" {
		t.Fatalf("run by upper-case sha: %s", render(v))
	}
	if f, ok := e.Flags(sha); !ok || f != FlagEvalCompat {
		t.Fatalf("flags %v", f)
	}
	if got := e.Scripts(); !reflect.DeepEqual(got, map[string][]byte{sha: src}) {
		t.Fatalf("Scripts %v", got)
	}
	if again, err := e.Load(src); err != nil || again != sha {
		t.Fatal("reload")
	}
	e.Flush()
	if e.Exists(sha) || len(e.Scripts()) != 0 {
		t.Fatal("Flush")
	}
	if v := e.Run(sha, nil, nil, nil, Limits{}); !strings.HasPrefix(string(v.Str), "NOSCRIPT") {
		t.Fatal("run after flush")
	}
}

func TestLoadErrors(t *testing.T) {
	e := New()
	for src, want := range map[string]string{
		// redis-cli EVAL 'return 1 +' 0
		"return 1 +": "ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'",
		// redis-cli EVAL $'#!lua\n\nreturn 1 +' 0
		"#!lua\n\nreturn 1 +": "ERR Error compiling script (new function): user_script:3: unexpected symbol near '<eof>'",
		// redis-cli EVAL $'#!python\nreturn 1' 0
		"#!python\nreturn 1": "ERR Unexpected engine in script shebang: #!python",
		// redis-cli EVAL '#!lua' 0
		"#!lua": "ERR Invalid script shebang",
		// redis-cli EVAL $'#!lua flags=bad\nreturn 1' 0
		"#!lua flags=bad\nreturn 1": "ERR Unexpected flag in script shebang: bad",
		// redis-cli EVAL $'#!lua foo=bar\nreturn 1' 0
		"#!lua foo=bar\nreturn 1": "ERR Unknown lua shebang option: foo=bar",
	} {
		sha, err := e.Load([]byte(src))
		if err == nil || err.Error() != want {
			t.Errorf("%q: got %v, want %q", src, err, want)
		}
		if sha != "" || e.Exists(SHA1Hex([]byte(src))) {
			t.Errorf("%q: cached", src)
		}
	}
	sha, err := e.Load([]byte("#!lua flags=no-writes,allow-oom\nreturn 1"))
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := e.Flags(sha); f != FlagNoWrites|FlagAllowOOM {
		t.Fatalf("flags %b", f)
	}
}

func TestHostSeesCommandsAsRedisSendsThem(t *testing.T) {
	e := New()
	h := newFakeHost()
	run(t, e, h, `
redis.call('SET', KEYS[1], ARGV[1])
redis.pcall('set', 'n', 1, 1.5, 0.1, -0, 1e20, 2^63, 1/0, 0/0, 100000000000000)
redis.call('echo', 'a\0b')
return redis.call('GET', KEYS[1])`, []string{"lock:1"}, []string{"owner-7"})
	want := [][]string{
		{"SET", "lock:1", "owner-7"},
		// Numbers go as "%.17g", like Redis's luaArgsToRedisArgv.
		{"set", "n", "1", "1.5", "0.10000000000000001", "-0", "1e+20", "9.2233720368547758e+18", "inf", "-nan", "100000000000000"},
		{"echo", "a\x00b"},
		{"GET", "lock:1"},
	}
	if !reflect.DeepEqual(h.calls, want) {
		t.Fatalf("calls\n got %q\nwant %q", h.calls, want)
	}
}

func TestHostPanicPropagates(t *testing.T) {
	e := New()
	sha, _ := e.Load([]byte(`pcall(redis.call, 'x') return 1`))
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v", r)
			}
		}()
		e.Run(sha, nil, nil, HostFunc(func([][]byte) resp.Value { panic("boom") }), Limits{})
		t.Fatal("no panic")
	}()
	// The interpreter is clean afterwards.
	if v := run(t, e, nil, `return 2`, nil, nil); v.Int != 2 {
		t.Fatalf("after panic: %s", render(v))
	}
}

func TestLogger(t *testing.T) {
	e := New()
	var got []string
	e.SetLogger(func(level int, msg string) { got = append(got, fmt.Sprint(level, ":", msg)) })
	run(t, e, nil, `redis.log(redis.LOG_WARNING, 'a', 1, nil, 2.5, {}, 'b') redis.log(redis.LOG_DEBUG, 'x')`, nil, nil)
	if want := []string{"3:a 1 2.5 b", "0:x"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q", got)
	}
}

// TestDeterminism runs scripts that observe everything that could differ
// between replicas (table order, addresses, random numbers, memory) on
// separate Engines and compares.
func TestDeterminism(t *testing.T) {
	src := `
local out = {}
for _, lib in ipairs({_G, string, table, math, redis, bit, coroutine}) do
  for k in pairs(lib) do out[#out+1] = k end
end
local t = {}
for i = 1, 50 do t['k' .. i] = i; t[i * 3] = i end
for k, v in pairs(t) do out[#out+1] = tostring(k) .. '=' .. v end
out[#out+1] = tostring({}) .. tostring(rawget(_G, 'print') ~= nil) .. tostring(string.len) .. tostring(coroutine.create(function() end))
out[#out+1] = tostring(math.random()) .. ' ' .. math.random(100) .. ' ' .. collectgarbage('count') .. ' ' .. gcinfo()
out[#out+1] = string.format('%5.1f %g %s', 1/3, 2^70, 1e15)
return out`
	var first string
	for i := 0; i < 5; i++ {
		e := New()
		var got string
		for j := 0; j < 3; j++ { // fresh and reused interpreters
			got = render(run(t, e, nil, src, nil, nil))
		}
		if i == 0 {
			first = got
		} else if got != first {
			t.Fatalf("run %d differs:\n%s\n%s", i, got, first)
		}
	}
	if !strings.Contains(first, "table: 0x00000001") {
		t.Fatalf("addresses: %s", first)
	}
}

func TestRandomIsReseededEveryRun(t *testing.T) {
	e := New()
	// The sequence of the first script after a Redis 7.0 restart
	// (redis-cli EVAL "return {tostring(math.random()), math.random(1000), math.random(5,10), tostring(math.random())}" 0).
	want := "*4\r\n$16\r\n0.39646477363839\r\n:841\r\n:7\r\n$16\r\n0.44658343468168\r\n"
	for i := 0; i < 3; i++ {
		v := run(t, e, nil, `return {tostring(math.random()), math.random(1000), math.random(5,10), tostring(math.random())}`, nil, nil)
		if got := render(v); got != want {
			t.Fatalf("run %d: %q", i, got)
		}
	}
}

func TestConcurrentRuns(t *testing.T) {
	e := New()
	sha, err := e.Load([]byte(`local n = 0 for i = 1, 200 do n = n + tonumber(ARGV[1]) end return {KEYS[1], n, tostring(math.random())}`))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				key := fmt.Sprint("k", g, i)
				v := e.Run(sha, [][]byte{[]byte(key)}, [][]byte{[]byte(fmt.Sprint(g))}, nil, Limits{MaxInstructions: 100000})
				want := fmt.Sprintf("*3\r\n$%d\r\n%s\r\n:%d\r\n$16\r\n0.39646477363839\r\n", len(key), key, 200*g)
				if got := render(v); got != want {
					t.Errorf("got %q want %q", got, want)
					return
				}
				if i%50 == 0 {
					e.Load([]byte(fmt.Sprint("return ", g, i)))
				}
			}
		}(g)
	}
	wg.Wait()
}

func TestDeepRecursionAndBigStacks(t *testing.T) {
	e := New()
	// Lua 5.1 allows 20000 nested calls (LUAI_MAXCALLS).
	// redis-cli EVAL 'local function f(n) if n == 0 then return 0 end return 1 + f(n-1) end return f(15000)' 0
	if v := run(t, e, nil, `local function f(n) if n == 0 then return 0 end return 1 + f(n-1) end return f(15000)`, nil, nil); v.Int != 15000 {
		t.Fatalf("got %s", render(v))
	}
	src := `local function f(n) if n == 0 then return 0 end return 1 + f(n-1) end return f(100000)`
	want := "-ERR user_script:1: stack overflow script: " + SHA1Hex([]byte(src)) + ", on @user_script:1.\r\n"
	if got := render(run(t, e, nil, src, nil, nil)); got != want {
		t.Fatalf("got %q", got)
	}
	// A big value stack is not kept by the pool.
	run(t, e, nil, `local t = {} for i = 1, 7000 do t[i] = i end local function f(...) return select('#', ...) end return f(unpack(t))`, nil, nil)
	for _, st := range e.idle {
		if c := registryCap(st.L); c == 0 || c > maxIdleRegistry {
			t.Fatalf("idle interpreter with a %d-slot stack", c)
		}
	}
}
