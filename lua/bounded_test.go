package lua

import (
	"strings"
	"testing"

	"github.com/lockd/lockd/resp"
)

// Lock scripts of common clients, as they send them.
var (
	redsyncUnlock = `if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
else
	return 0
end`
	redsyncUnlockV4 = `
local val = redis.call("GET", KEYS[1])
if val == ARGV[1] then
    return redis.call("DEL", KEYS[1])
elseif val == false then
    return -1
else
    return 0
end`
	redsyncExtend = `if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
else
	return 0
end`
	redisPyRelease = `
local token = redis.call('get', KEYS[1])
if not token or token ~= ARGV[1] then
    return 0
end
redis.call('del', KEYS[1])
return 1`
	redisPyExtend = `
local token = redis.call('get', KEYS[1])
if not token or token ~= ARGV[1] then
    return 0
end
local expiration = redis.call('pttl', KEYS[1])
if not expiration then
    expiration = 0
end
if expiration < 0 then
    return 0
end

local newttl = ARGV[2]
if ARGV[3] == "0" then
    newttl = tonumber(ARGV[2]) + expiration
end
redis.call('pexpire', KEYS[1], newttl)
return 1`
	redisPyReacquire = `
local token = redis.call('get', KEYS[1])
if not token or token ~= ARGV[1] then
    return 0
end
redis.call('pexpire', KEYS[1], tonumber(ARGV[2]))
return 1`
	compareAndSet = `
local cur = redis.call('get', KEYS[1])
if cur == false or cur == ARGV[1] then
    return redis.call('set', KEYS[1], ARGV[1], 'px', tonumber(ARGV[2]))
end
return redis.error_reply('held by ' .. tostring(type(cur)))`
	lockdUnlock = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`
)

var boundedCases = []struct {
	name    string
	src     string
	bounded bool
}{
	{"redsync unlock", redsyncUnlock, true},
	{"redsync v4 unlock", redsyncUnlockV4, true},
	{"redsync extend", redsyncExtend, true},
	{"redis-py release", redisPyRelease, true},
	{"redis-py extend", redisPyExtend, true},
	{"redis-py reacquire", redisPyReacquire, true},
	{"compare and delete", compareAndDelete, true}, // bench_test.go
	{"lockd-style compare and delete", lockdUnlock, true},
	{"compare and set", compareAndSet, false}, // `..` over tostring: conservatively refused
	{"shebang", "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])", true},
	{"empty", "", true},
	{"pcall and replies", "local r = redis.pcall('get', KEYS[1]) if type(r) == 'table' then return redis.status_reply('OK') end return redis.error_reply('x')", true},
	{"tables and fields", "local t = {KEYS[1], n = #ARGV, [ARGV[1]] = 1} t.x = -t.n t[1] = not t.x return {t[1], t.x, #t}", true},
	{"nested blocks", "do local a = 1 if a then local b = a * 2 elseif a == 2 then return 1 else do return 2 end end end return 0", true},
	{"key built from arguments", "return redis.call('get', KEYS[1] .. ':' .. ARGV[1] .. (#KEYS + 1) .. tonumber(ARGV[2]) .. type(ARGV[3]))", true},
	{"local out of scope", "do local tonumber = 1 end return tonumber('1')", true},

	{"while", "while true do end", false},
	{"numeric for", "for i=1,10 do end", false},
	{"generic for", "for _,k in ipairs(KEYS) do end", false},
	{"repeat", "repeat until false", false},
	{"function literal", "local f = function() end", false},
	{"local function", "local function f() end", false},
	{"function statement", "function f() end", false},
	{"shebang then loop", "#!lua\nwhile true do end", false},
	{"string.rep", "return string.rep('x', ARGV[1])", false},
	{"string.rep as argument", "return redis.call(string.rep('x',5))", false},
	{"loadstring", "return loadstring('return 1')()", false},
	{"pcall", "return pcall(redis.call, 'get', KEYS[1])", false},
	{"assign global callee", "tonumber = string.rep; return tonumber('x', 1e9)", false},
	{"assign redis field", "redis.call = string.rep", false},
	{"assign global", "x = 1", false},
	{"assign global after a shadow went out of scope", "if ARGV[1] then local tonumber = 1 end tonumber = 1", false},
	{"shadowing local callee", "local tostring = string.rep; return tostring('x', 10)", false},
	{"shadowing local redis", "local redis = {} return redis.call('get', KEYS[1])", false},
	{"alias redis", "local r = redis return r.call('get', KEYS[1])", false},
	{"alias _G", "local g = _G g.tonumber = nil", false},
	{"alias KEYS", "local k = KEYS k[1] = ARGV[1]", false},
	{"assign KEYS", "KEYS[1] = ARGV[1] .. ARGV[1]", false},
	{"callee as value", "local r = ('x').rep return r('x', 1e9)", false},
	{"other global", "return undefined", false},
	{"redis.log", "redis.log(redis.LOG_WARNING, 'x')", false},
	{"redis.sha1hex", "return redis.sha1hex('x')", false},
	{"method call", "local t = {} ; t:foo()", false},
	{"string method", "return ('x'):rep(10)", false},
	{"vararg", "return (...)", false},
	{"doubling a local", "local s = ARGV[1] s = s .. s s = s .. s return s", false},
	{"doubling replies", "return redis.call('get', KEYS[1]) .. redis.call('get', KEYS[1])", false},
	{"tostring in concat", "return tostring(ARGV[1]) .. 'x'", false},
	{"table field in concat", "local t = {ARGV[1]} return t[1] .. t[1]", false},
}

func TestBoundedClassification(t *testing.T) {
	e := New()
	for _, c := range boundedCases {
		t.Run(c.name, func(t *testing.T) {
			sha, err := e.Load([]byte(c.src))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got := e.Bounded(sha); got != c.bounded {
				t.Fatalf("Bounded(%q) = %v, want %v", c.src, got, c.bounded)
			}
			if got := e.Bounded(strings.ToUpper(sha)); got != c.bounded {
				t.Fatalf("Bounded of the upper-case sha = %v, want %v", got, c.bounded)
			}
		})
	}
}

// A bounded script is also short: straight-line code of more than
// maxBoundedCode instructions is not.
func TestBoundedLength(t *testing.T) {
	e := New()
	for _, c := range []struct {
		calls   int
		bounded bool
	}{{10, true}, {2000, false}} {
		src := strings.Repeat("redis.call('get', KEYS[1]) ", c.calls)
		sha, err := e.Load([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Bounded(sha); got != c.bounded {
			t.Errorf("%d calls: Bounded = %v, want %v", c.calls, got, c.bounded)
		}
	}
}

func TestBoundedUnknownScript(t *testing.T) {
	e := New()
	if e.Bounded(SHA1Hex([]byte("return 1"))) {
		t.Fatal("Bounded of a script not cached")
	}
	if _, err := e.Load([]byte("return (")); err == nil {
		t.Fatal("a script that does not compile was loaded")
	}
	if e.Bounded(SHA1Hex([]byte("return ("))) {
		t.Fatal("Bounded of a script that does not compile")
	}
}

// What the classification promises: a bounded script runs at most one VM
// instruction per instruction of its chunk, whatever its host answers.
func TestBoundedScriptsRunWithinTheirLength(t *testing.T) {
	host := HostFunc(func(args [][]byte) resp.Value {
		switch strings.ToLower(string(args[0])) {
		case "get":
			return resp.BulkString("token")
		case "pttl":
			return resp.Int(5000)
		}
		return resp.Int(1)
	})
	for _, c := range boundedCases {
		if !c.bounded {
			continue
		}
		e := New()
		sha, err := e.Load([]byte(c.src))
		if err != nil {
			t.Fatal(err)
		}
		budget := int64(len(e.lookup(sha).proto.Code))
		keys := [][]byte{[]byte("lock")}
		argv := [][]byte{[]byte("token"), []byte("1000"), []byte("0")}
		if v := e.Run(sha, keys, argv, host, Limits{MaxInstructions: budget}); IsBudgetError(v) {
			t.Errorf("%s: %d instructions were not enough: %s", c.name, budget, render(v))
		}
	}
}
