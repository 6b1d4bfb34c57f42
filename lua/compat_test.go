package lua

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/resp"
)

// The replies below were captured from a real Redis 7.0.15 (redis-server
// --port 6455 --save ''), each after FLUSHALL and the case's setup, by
// sending the redis-cli command in the comment and recording the raw reply
// bytes from the wire (RESP3 cases after HELLO 3, as redis-cli -3 does).
// TestRedisCompatLive re-checks them against a live server when
// LOCKD_REDIS_ADDR is set (e.g. LOCKD_REDIS_ADDR=127.0.0.1:6455).
//
// Cases where lockd deliberately or unavoidably differs are not here; they
// are in TestKnownDivergences and lua/DESIGN.md.

type compatCase struct {
	script     string
	proto      int
	keys, args []string
	setup      [][]string
	want       string
}

var (
	setupTypes  = [][]string{{"HSET", "h", "f1", "v1", "f2", "v2"}, {"SADD", "s", "a"}, {"ZADD", "z", "1.5", "m"}, {"SET", "k1", "v"}}
	setupString = [][]string{{"SET", "h", "v"}}
)

var compatCases = []compatCase{
	// redis-cli -p 6455 EVAL 'error(true)' 0
	{script: "error(true)",
		want: "-ERR true script: 4fafe2149f68a1618a3eef40aeef55f5af6951da, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'error(1.5)' 0
	{script: "error(1.5)",
		want: "-ERR user_script:1: 1.5 script: 660bab571284196b0f42ea4388a3e08ee28cff0b, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'loadstring(\'error("x")\')()' 0
	{script: "loadstring('error(\"x\")')()",
		want: "-ERR [string \"error(\"x\")\"]:1: x script: df8c44cd69e28ddbca8a8760f07fe8e4a985484b, on error(\"x\"):1.\r\n"},
	// redis-cli -p 6455 EVAL $'loadstring(\'local x = nil + 1\')()' 0
	{script: "loadstring('local x = nil + 1')()",
		want: "-ERR [string \"local x = nil + 1\"]:1: attempt to perform arithmetic on a nil value script: b396fd7bbc4715205925b6a27f4198db87e60ff7, on local x = nil + 1:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return {loadstring(\'return 1 +\')}' 0
	{script: "return {loadstring('return 1 +')}",
		want: "*0\r\n"},
	// redis-cli -p 6455 EVAL $'local function f() error(\'deep\') end\nlocal function g() f() end\ng()' 0
	{script: "local function f() error('deep') end\nlocal function g() f() end\ng()",
		want: "-ERR user_script:1: deep script: fcfe7b39a4bd241fc3b57a447bdf7decec15e500, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'\n\nerror(\'line3\')' 0
	{script: "\n\nerror('line3')",
		want: "-ERR user_script:3: line3 script: c315d966698a4a5bf1bb4c98e7a6827c242e143b, on @user_script:3.\r\n"},
	// redis-cli -p 6455 EVAL $'local t = setmetatable({}, {__index=function(t,k) error(\'idx\') end}); return t.x' 0
	{script: "local t = setmetatable({}, {__index=function(t,k) error('idx') end}); return t.x",
		want: "-ERR user_script:1: idx script: a1bbb39d10e3467c52fc7d6d05f7130757864b7e, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return coroutine.wrap(function() error(\'co\') end)()' 0
	{script: "return coroutine.wrap(function() error('co') end)()",
		want: "-ERR user_script:1: user_script:1: co script: d13c0aaadbc2095e68f1048e116ad06901d062c9, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'local co = coroutine.create(function() error(\'co\') end); return {coroutine.resume(co)}' 0
	{script: "local co = coroutine.create(function() error('co') end); return {coroutine.resume(co)}",
		want: "*2\r\n$-1\r\n$17\r\nuser_script:1: co\r\n"},
	// redis-cli -p 6455 EVAL $'local co = coroutine.create(function() error({err=\'X\'}) end); local ok, e = coroutine.resume(co); return e.err' 0
	{script: "local co = coroutine.create(function() error({err='X'}) end); local ok, e = coroutine.resume(co); return e.err",
		want: "$1\r\nX\r\n"},
	// redis-cli -p 6455 EVAL $'redis.call(\'set\', \'k1\', \'v\'); return redis.call(\'incr\', \'k1\')' 0
	{script: "redis.call('set', 'k1', 'v'); return redis.call('incr', 'k1')",
		want: "-ERR value is not an integer or out of range script: c3d38fb8f8c40137859c1bea829bc5cfb019ef02, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return redis.call(\'incr\', \'k1\', \'x\', \'y\')' 0
	{script: "return redis.call('incr', 'k1', 'x', 'y')",
		want: "-ERR Wrong number of args calling Redis command from script script: 836db92bc337414c61004dae038f144f399fe269, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'local x = 1 x()' 0
	{script: "local x = 1 x()",
		want: "-ERR user_script:1: attempt to call local 'x' (a number value) script: 5052c4cf4a72832ed3e77fa8d6da3068cf0545ab, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'local t = {} t.a.b.c = 1' 0
	{script: "local t = {} t.a.b.c = 1",
		want: "-ERR user_script:1: attempt to index field 'a' (a nil value) script: 54440668e460601be86a46cada636952ea88df19, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'local t = {} return t.a.b' 0
	{script: "local t = {} return t.a.b",
		want: "-ERR user_script:1: attempt to index field 'a' (a nil value) script: 42326c67aad50f3282f524d2107872e4a105501a, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'return #nil' 0
	{script: "return #nil",
		want: "-ERR user_script:1: attempt to get length of a nil value script: 6d6abd31d8721234b1ee1a830316ae36ef2693e2, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'local x return #x' 0
	{script: "local x return #x",
		want: "-ERR user_script:1: attempt to get length of local 'x' (a nil value) script: 72b884c60659edd57fac51cd1565cc78808d0c2b, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'return -{}' 0
	{script: "return -{}",
		want: "-ERR user_script:1: attempt to perform arithmetic on a table value script: 95c805f07fef0f190a24e3197cab48b4e80c185b, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'return {} < {}' 0
	{script: "return {} < {}",
		want: "-ERR user_script:1: attempt to compare two table values script: fe12717409b91d7c0c64c39528a098f1c423fefe, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return 1 < \'x\'' 0
	{script: "return 1 < 'x'",
		want: "-ERR user_script:1: attempt to compare number with string script: 6eb39b93a508ef218c3d802c1e5162ad876dfecf, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'return {} <= 1' 0
	{script: "return {} <= 1",
		want: "-ERR user_script:1: attempt to compare table with number script: d52ef159919d4d93351df301007d348e61613f19, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return \'a\' .. {}' 0
	{script: "return 'a' .. {}",
		want: "-ERR user_script:1: attempt to concatenate a table value script: 95977416906beda661539750606328a1ff5294bf, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'local t = {} return \'a\' .. t' 0
	{script: "local t = {} return 'a' .. t",
		want: "-ERR user_script:1: attempt to concatenate local 't' (a table value) script: bd56bc5a03214f0c38a5eb1a0187b02d524cd158, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return \'a\' .. nil' 0
	{script: "return 'a' .. nil",
		want: "-ERR user_script:1: attempt to concatenate a nil value script: a954e0524e4e64a9f26274ffcefea47159ca7c15, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return nil .. \'a\'' 0
	{script: "return nil .. 'a'",
		want: "-ERR user_script:1: attempt to concatenate a nil value script: 3d444276312333a483c3b0b674116ddd43688f09, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'for i=1,\'x\' do end' 0
	{script: "for i=1,'x' do end",
		want: "-ERR user_script:1: 'for' limit must be a number script: 163cb8f81c207e3864df64f1370aba060c0e49a1, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'for i=\'a\',2 do end' 0
	{script: "for i='a',2 do end",
		want: "-ERR user_script:1: 'for' initial value must be a number script: 8acccaf32658f40f8af08bf37600648449a08457, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'for i=1,2,{} do end' 0
	{script: "for i=1,2,{} do end",
		want: "-ERR user_script:1: 'for' step must be a number script: 2158068ab4bdc406d619c575015052c45dc28d1c, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'local t = {} t[nil] = 1' 0
	{script: "local t = {} t[nil] = 1",
		want: "-ERR user_script:1: table index is nil script: 6778efcbd383f7feed64ad3e17d5bda69d1de3a4, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'local t = {} t[0/0] = 1' 0
	{script: "local t = {} t[0/0] = 1",
		want: "-ERR user_script:1: table index is NaN script: bd360e1f93a31dbe3e18350f7989e7fddcf63e4a, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'local a = {} return a + 1' 0
	{script: "local a = {} return a + 1",
		want: "-ERR user_script:1: attempt to perform arithmetic on local 'a' (a table value) script: 109d88fe478f38109a1af4899a371397181d396e, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'local a = {} return 1 + a' 0
	{script: "local a = {} return 1 + a",
		want: "-ERR user_script:1: attempt to perform arithmetic on local 'a' (a table value) script: 75736e36816f02ba6aae43a889bdddf14e54d00a, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'local a = \'x\' return a + 1' 0
	{script: "local a = 'x' return a + 1",
		want: "-ERR user_script:1: attempt to perform arithmetic on local 'a' (a string value) script: 0c08afa40ffbd2e619ae66bb0417516b8d9d4753, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return (\'x\') + 1' 0
	{script: "return ('x') + 1",
		want: "-ERR user_script:1: attempt to perform arithmetic on a string value script: d2006a496019151ea3dec61b9fb568258abc0445, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'local s = \'x\' return s:bad()' 0
	{script: "local s = 'x' return s:bad()",
		want: "-ERR user_script:1: attempt to call method 'bad' (a nil value) script: 07c9026c0ef7f95945f7ddb9ad2de93c024dc081, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'return redis.nosuch()' 0
	{script: "return redis.nosuch()",
		want: "-ERR user_script:1: attempt to call field 'nosuch' (a nil value) script: 064c0d38ec6d45fb37cd950fd37e609359986738, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return string.nosuch(\'x\')' 0
	{script: "return string.nosuch('x')",
		want: "-ERR user_script:1: attempt to call field 'nosuch' (a nil value) script: 973055078e15fcc0f8beeeadfbda7f4d5531bfd3, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'local t = {} return t.x.y' 0
	{script: "local t = {} return t.x.y",
		want: "-ERR user_script:1: attempt to index field 'x' (a nil value) script: b1687cd1d4e82de9f4ad5ffbfa977992210c8594, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'local up = nil; local function f() return up.x end return f()' 0
	{script: "local up = nil; local function f() return up.x end return f()",
		want: "-ERR user_script:1: attempt to index upvalue 'up' (a nil value) script: e992c9a397391143323e61fd2ee5bba83d147a10, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'local up = nil; local function f() return up + 1 end return f()' 0
	{script: "local up = nil; local function f() return up + 1 end return f()",
		want: "-ERR user_script:1: attempt to perform arithmetic on upvalue 'up' (a nil value) script: ae94cb1dcaf10708bafe71dbf68c2fa24d04e21b, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'local t = {} t.x()' 0
	{script: "local t = {} t.x()",
		want: "-ERR user_script:1: attempt to call field 'x' (a nil value) script: c302249cfde29a240b7af46fbd7cd209e7dadd29, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'local t = {x=1} t.x()' 0
	{script: "local t = {x=1} t.x()",
		want: "-ERR user_script:1: attempt to call field 'x' (a number value) script: 4711e1f75eb764900c199e793386111dcdd5c323, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'local t = {} t:m()' 0
	{script: "local t = {} t:m()",
		want: "-ERR user_script:1: attempt to call method 'm' (a nil value) script: 72673625ea017967f196a834c1323a60116f6728, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'local function f(n) if n == 0 then return 0 end return 1 + f(n-1) end return f(100000)' 0
	{script: "local function f(n) if n == 0 then return 0 end return 1 + f(n-1) end return f(100000)",
		want: "-ERR user_script:1: stack overflow script: 74e5a6166caf5bfb61b46a6de353f45c29f33686, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'local function f(n) if n == 0 then return 0 end return 1 + f(n-1) end return f(15000)' 0
	{script: "local function f(n) if n == 0 then return 0 end return 1 + f(n-1) end return f(15000)",
		want: ":15000\r\n"},
	// redis-cli -p 6455 EVAL $'local s = string.rep(\'x\', 2^31) return #s' 0
	{script: "local s = string.rep('x', 2^31) return #s",
		want: ":0\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'x = 1' 0
	{script: "x = 1", setup: setupTypes,
		want: "-ERR user_script:1: Attempt to modify a readonly table script: 34bce5f775de97f557a34088509c8bfe1ea17e52, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return x' 0
	{script: "return x", setup: setupTypes,
		want: "-ERR user_script:1: Script attempted to access nonexistent global variable 'x' script: 03c387736bb5cc009ff35151572cee04677aa374, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return redis.call()' 0
	{script: "return redis.call()", setup: setupTypes,
		want: "-ERR Please specify at least one argument for this redis lib call script: 0a907e1429221a4d85516cab7fd219a82a9439d8, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.call(\'nosuch\')' 0
	{script: "return redis.call('nosuch')", setup: setupTypes,
		want: "-ERR Unknown Redis command called from script script: 206396248e12c6e742fd7296250433c8d7343b74, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.call(\'get\')' 0
	{script: "return redis.call('get')", setup: setupTypes,
		want: "-ERR Wrong number of args calling Redis command from script script: f187dee77f607f7cff00bbabc9df38507582c78d, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.call(\'get\', {})' 0
	{script: "return redis.call('get', {})", setup: setupTypes,
		want: "-ERR Lua redis lib command arguments must be strings or integers script: 4368e88f98d93af9caf358186e5fbf273374ee91, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.call(\'get\', true)' 0
	{script: "return redis.call('get', true)", setup: setupTypes,
		want: "-ERR Lua redis lib command arguments must be strings or integers script: 12c6851597ea39422dc179bc582fe8ba6af32595, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.call(\'get\', nil)' 0
	{script: "return redis.call('get', nil)", setup: setupTypes,
		want: "-ERR Lua redis lib command arguments must be strings or integers script: c08fc0abeafdf57380190a28c88ba671c0d91403, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.pcall(\'nosuch\')' 0
	{script: "return redis.pcall('nosuch')", setup: setupTypes,
		want: "-ERR Unknown Redis command called from script\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return redis.pcall()' 0
	{script: "return redis.pcall()", setup: setupTypes,
		want: "-ERR Please specify at least one argument for this redis lib call\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'error(\'boom\')' 0
	{script: "error('boom')", setup: setupTypes,
		want: "-ERR user_script:1: boom script: 82903a0434f1503e152f89c03c9acd881a0e8150, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'error({err=\'MY boom\'})' 0
	{script: "error({err='MY boom'})", setup: setupTypes,
		want: "-MY boom script: 4c2ee35ef37c857625d6ec6d812eab72377cfa97, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'error({err=\'boom\'})' 0
	{script: "error({err='boom'})", setup: setupTypes,
		want: "-boom script: b4008f1a5b8fc868d0c8eace17f627e4976c6595, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'error()' 0
	{script: "error()", setup: setupTypes,
		want: "-ERR nil script: aca90d914519fdb9825352bdc0befb59f7c8510f, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'error(nil)' 0
	{script: "error(nil)", setup: setupTypes,
		want: "-ERR nil script: c402aa49952c86c38f35fb311d54977d08f3bf01, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'error(12)' 0
	{script: "error(12)", setup: setupTypes,
		want: "-ERR user_script:1: 12 script: 531d78cb0a3022f46aa8fcca247caa61d303b321, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'error(\'boom\', 0)' 0
	{script: "error('boom', 0)", setup: setupTypes,
		want: "-ERR boom script: 90724e16396e5864c1184910ba6d7440461cee4f, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.error_reply(\'MY err\')' 0
	{script: "return redis.error_reply('MY err')", setup: setupTypes,
		want: "-MY err\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.error_reply(\'-MY err\')' 0
	{script: "return redis.error_reply('-MY err')", setup: setupTypes,
		want: "-MY err\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.error_reply(\'noSpace\')' 0
	{script: "return redis.error_reply('noSpace')", setup: setupTypes,
		want: "-ERR noSpace\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.status_reply(\'FINE\')' 0
	{script: "return redis.status_reply('FINE')", setup: setupTypes,
		want: "+FINE\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return {err=\'boom\'}' 0
	{script: "return {err='boom'}", setup: setupTypes,
		want: "-boom\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return {err=\'MY boom\'}' 0
	{script: "return {err='MY boom'}", setup: setupTypes,
		want: "-MY boom\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return 1 +' 0
	{script: "return 1 +", setup: setupTypes,
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'string.rep = 1' 0
	{script: "string.rep = 1", setup: setupTypes,
		want: "-ERR user_script:1: Attempt to modify a readonly table script: 940c4ef58b38d48840ecc8bd57aa6678317feccc, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'redis.x = 1' 0
	{script: "redis.x = 1", setup: setupTypes,
		want: "-ERR user_script:1: Attempt to modify a readonly table script: 0e3b052f72a1147275fd3ab2c8c15d4453b9010f, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL '_G.x = 1' 0
	{script: "_G.x = 1", setup: setupTypes,
		want: "-ERR user_script:1: Attempt to modify a readonly table script: e5cf4a26667af1721988fe8c9829d5cd2e26c62e, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'rawset(_G, \'x\', 1)' 0
	{script: "rawset(_G, 'x', 1)", setup: setupTypes,
		want: "-ERR Attempt to modify a readonly table script: e2c706419da183d6229a1230c3be09cc32cdeee0, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'setmetatable(_G, nil)' 0
	{script: "setmetatable(_G, nil)", setup: setupTypes,
		want: "-ERR Attempt to modify a readonly table script: 22fdd3b51da2d4bc6703d71d651cd782d8e5a35f, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return redis.sha1hex()' 0
	{script: "return redis.sha1hex()", setup: setupTypes,
		want: "-ERR wrong number of arguments script: 3c7ce947ae74a835cc575b6ee87fb27503cb7ba4, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.sha1hex(\'\')' 0
	{script: "return redis.sha1hex('')", setup: setupTypes,
		want: "$40\r\nda39a3ee5e6b4b0d3255bfef95601890afd80709\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return redis.sha1hex(1)' 0
	{script: "return redis.sha1hex(1)", setup: setupTypes,
		want: "$40\r\n356a192b7913b04c54574d18c28d46e6395428ab\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return redis.error_reply()' 0
	{script: "return redis.error_reply()", setup: setupTypes,
		want: "-ERR wrong number or type of arguments\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return redis.error_reply(1)' 0
	{script: "return redis.error_reply(1)", setup: setupTypes,
		want: "-ERR wrong number or type of arguments\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return redis.status_reply()' 0
	{script: "return redis.status_reply()", setup: setupTypes,
		want: "-ERR wrong number or type of arguments\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return redis.setresp(4)' 0
	{script: "return redis.setresp(4)", setup: setupTypes,
		want: "-ERR RESP version must be 2 or 3. script: 921c0a48021d97dfd5884aeea41875972c7804d9, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return redis.setresp()' 0
	{script: "return redis.setresp()", setup: setupTypes,
		want: "-ERR redis.setresp() requires one argument. script: 76da64e28014e7c9ad76db33c3918c53d81a3d7e, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return redis.log()' 0
	{script: "return redis.log()", setup: setupTypes,
		want: "-ERR redis.log() requires two arguments or more. script: 28e28bf25123668ac541f5eec91bf7ad3d2fe0bd, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.log(\'a\',\'b\')' 0
	{script: "return redis.log('a','b')", setup: setupTypes,
		want: "-ERR First argument must be a number (log level). script: 0b33418de8f38b54c447ba6772ee3d6d6309b011, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.log(99,\'b\')' 0
	{script: "return redis.log(99,'b')", setup: setupTypes,
		want: "-ERR Invalid debug level. script: 58192368e9b1973eb950ac67e5d8eb32cf6df27e, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.log(redis.LOG_WARNING,\'hi\', 1, nil, \'x\')' 0
	{script: "return redis.log(redis.LOG_WARNING,'hi', 1, nil, 'x')", setup: setupTypes,
		want: "$-1\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'getmetatable(\'\').__index = 1' 0
	{script: "getmetatable('').__index = 1", setup: setupTypes,
		want: "-ERR user_script:1: Attempt to modify a readonly table script: b6891165ebdc534f0f374ecfee85c5d46f13aac3, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'getmetatable(\'\').x = 1; return 1' 0
	{script: "getmetatable('').x = 1; return 1", setup: setupTypes,
		want: "-ERR user_script:1: Attempt to modify a readonly table script: 18d8164c1565100094777e2b3602fd58c03dd85b, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return getmetatable(string)' 0
	{script: "return getmetatable(string)", setup: setupTypes,
		want: "$-1\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return type(getmetatable(_G))' 0
	{script: "return type(getmetatable(_G))", setup: setupTypes,
		want: "$5\r\ntable\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return type(getmetatable(_G).__index)' 0
	{script: "return type(getmetatable(_G).__index)", setup: setupTypes,
		want: "$8\r\nfunction\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'table.insert(string, 1)' 0
	{script: "table.insert(string, 1)", setup: setupTypes,
		want: "-ERR Attempt to modify a readonly table script: 665a27be1dfc4d5eda6068dc8d831bb5fb63fa89, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'table.remove(redis)' 0
	{script: "table.remove(redis)", setup: setupTypes,
		want: "$-1\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'table.sort(_G)' 0
	{script: "table.sort(_G)", setup: setupTypes,
		want: "$-1\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return rawget(_G, \'redis\') ~= nil' 0
	{script: "return rawget(_G, 'redis') ~= nil", setup: setupTypes,
		want: ":1\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return redis.REDIS_VERSION' 0
	{script: "return redis.REDIS_VERSION", setup: setupTypes,
		want: "$6\r\n7.0.15\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return redis.REDIS_VERSION_NUM' 0
	{script: "return redis.REDIS_VERSION_NUM", setup: setupTypes,
		want: ":458767\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}' 0
	{script: "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}", setup: setupTypes,
		want: "*4\r\n:0\r\n:1\r\n:2\r\n:3\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL}' 0
	{script: "return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL}", setup: setupTypes,
		want: "*5\r\n:0\r\n:1\r\n:2\r\n:2\r\n:3\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return setmetatable(1, {})' 0
	{script: "return setmetatable(1, {})", setup: setupTypes,
		want: "-ERR user_script:1: bad argument #1 to 'setmetatable' (table expected, got number) script: cde81fee4cf25bd0b7dc3685af446d862fd43845, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'KEYS[1] = \'x\'; return KEYS[1]' 0
	{script: "KEYS[1] = 'x'; return KEYS[1]", setup: setupTypes,
		want: "$1\r\nx\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'KEYS = 1' 0
	{script: "KEYS = 1", setup: setupTypes,
		want: "-ERR user_script:1: Attempt to modify a readonly table script: 8726473c55e0c4527ed3b82564a764667277b20e, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return _VERSION' 0
	{script: "return _VERSION", setup: setupTypes,
		want: "$7\r\nLua 5.1\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return type(newproxy)' 0
	{script: "return type(newproxy)", setup: setupTypes,
		want: "-ERR user_script:1: Script attempted to access nonexistent global variable 'newproxy' script: 2db8cbf73e97a4b7d8d1a7ce472bf57302f0f369, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return type(load)' 0
	{script: "return type(load)", setup: setupTypes,
		want: "$8\r\nfunction\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return loadstring(\'return 1+1\')()' 0
	{script: "return loadstring('return 1+1')()", setup: setupTypes,
		want: ":2\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return load(\'return 1\')()' 0
	{script: "return load('return 1')()", setup: setupTypes,
		want: "-ERR user_script:1: bad argument #1 to 'load' (function expected, got string) script: 33069557cd4ca85d2ab40589e1813d3fd08dbe24, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'setfenv(1, {}); return 1' 0
	{script: "setfenv(1, {}); return 1", setup: setupTypes,
		want: "-ERR user_script:1: Script attempted to access nonexistent global variable 'setfenv' script: 411943d7ea3e18b890e091b07059e4568ed8b95c, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return getfenv(0) == _G' 0
	{script: "return getfenv(0) == _G", setup: setupTypes,
		want: "-ERR user_script:1: Script attempted to access nonexistent global variable 'getfenv' script: d1163fc9cbdbbb464ae54a152abcdc27e60c82d1, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return tostring(0/0)' 0
	{script: "return tostring(0/0)", setup: setupTypes,
		want: "$4\r\n-nan\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return tostring(1/0)' 0
	{script: "return tostring(1/0)", setup: setupTypes,
		want: "$3\r\ninf\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return 0/0' 0
	{script: "return 0/0", setup: setupTypes,
		want: ":-9223372036854775808\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return 1/0' 0
	{script: "return 1/0", setup: setupTypes,
		want: ":-9223372036854775808\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return -1/0' 0
	{script: "return -1/0", setup: setupTypes,
		want: ":-9223372036854775808\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return 2^63' 0
	{script: "return 2^63", setup: setupTypes,
		want: ":-9223372036854775808\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return -2^63' 0
	{script: "return -2^63", setup: setupTypes,
		want: ":-9223372036854775808\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return 2^64' 0
	{script: "return 2^64", setup: setupTypes,
		want: ":-9223372036854775808\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return 3.99' 0
	{script: "return 3.99", setup: setupTypes,
		want: ":3\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return -3.99' 0
	{script: "return -3.99", setup: setupTypes,
		want: ":-3\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return tostring(1e15)' 0
	{script: "return tostring(1e15)", setup: setupTypes,
		want: "$5\r\n1e+15\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return tostring(123456789012345)' 0
	{script: "return tostring(123456789012345)", setup: setupTypes,
		want: "$19\r\n1.2345678901234e+14\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return tostring(2^53)' 0
	{script: "return tostring(2^53)", setup: setupTypes,
		want: "$18\r\n9.007199254741e+15\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return tostring(0.1)' 0
	{script: "return tostring(0.1)", setup: setupTypes,
		want: "$3\r\n0.1\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return tostring(1/3)' 0
	{script: "return tostring(1/3)", setup: setupTypes,
		want: "$16\r\n0.33333333333333\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.call(\'hgetall\',\'h\')' 0
	{script: "return redis.call('hgetall','h')", setup: setupTypes,
		want: "*4\r\n$2\r\nf1\r\n$2\r\nv1\r\n$2\r\nf2\r\n$2\r\nv2\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'redis.setresp(3); local r = redis.call(\'hgetall\',\'h\'); return type(r.map)' 0
	{script: "redis.setresp(3); local r = redis.call('hgetall','h'); return type(r.map)", setup: setupTypes,
		want: "$5\r\ntable\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'redis.setresp(3); return redis.call(\'smembers\',\'s\')' 0
	{script: "redis.setresp(3); return redis.call('smembers','s')", setup: setupTypes,
		want: "*1\r\n$1\r\na\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'redis.setresp(3); return redis.call(\'zscore\',\'z\',\'m\')' 0
	{script: "redis.setresp(3); return redis.call('zscore','z','m')", setup: setupTypes,
		want: "$3\r\n1.5\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'redis.setresp(3); return type(redis.call(\'zscore\',\'z\',\'m\').double)' 0
	{script: "redis.setresp(3); return type(redis.call('zscore','z','m').double)", setup: setupTypes,
		want: "$6\r\nnumber\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'redis.setresp(3); return tostring(redis.call(\'zscore\',\'z\',\'m\').double)' 0
	{script: "redis.setresp(3); return tostring(redis.call('zscore','z','m').double)", setup: setupTypes,
		want: "$3\r\n1.5\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'redis.setresp(3); return tostring(redis.call(\'get\',\'nokey\'))' 0
	{script: "redis.setresp(3); return tostring(redis.call('get','nokey'))", setup: setupTypes,
		want: "$3\r\nnil\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return tostring(redis.call(\'get\',\'nokey\'))' 0
	{script: "return tostring(redis.call('get','nokey'))", setup: setupTypes,
		want: "$5\r\nfalse\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.call(\'zscore\',\'z\',\'m\')' 0
	{script: "return redis.call('zscore','z','m')", setup: setupTypes,
		want: "$3\r\n1.5\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return {1,2,nil,4}' 0
	{script: "return {1,2,nil,4}", setup: setupTypes,
		want: "*2\r\n:1\r\n:2\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return {1,2,false,4}' 0
	{script: "return {1,2,false,4}", setup: setupTypes,
		want: "*4\r\n:1\r\n:2\r\n$-1\r\n:4\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return {1,\'a\',{2,{3}},true}' 0
	{script: "return {1,'a',{2,{3}},true}", setup: setupTypes,
		want: "*4\r\n:1\r\n$1\r\na\r\n*2\r\n:2\r\n*1\r\n:3\r\n:1\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return true' 0
	{script: "return true", setup: setupTypes,
		want: ":1\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return false' 0
	{script: "return false", setup: setupTypes,
		want: "$-1\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return nil' 0
	{script: "return nil", setup: setupTypes,
		want: "$-1\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return {ok=\'fine\'}' 0
	{script: "return {ok='fine'}", setup: setupTypes,
		want: "+fine\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return {ok=1}' 0
	{script: "return {ok=1}", setup: setupTypes,
		want: "*0\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return {err=1}' 0
	{script: "return {err=1}", setup: setupTypes,
		want: "*0\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return {double=1.5}' 0
	{script: "return {double=1.5}", setup: setupTypes,
		want: "$3\r\n1.5\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return {map={a=1}}' 0
	{script: "return {map={a=1}}", setup: setupTypes,
		want: "*2\r\n$1\r\na\r\n:1\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return {set={a=true}}' 0
	{script: "return {set={a=true}}", setup: setupTypes,
		want: "*1\r\n$1\r\na\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return {big_number=\'123\'}' 0
	{script: "return {big_number='123'}", setup: setupTypes,
		want: "$3\r\n123\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return {verbatim_string={format=\'txt\', string=\'hello\'}}' 0
	{script: "return {verbatim_string={format='txt', string='hello'}}", setup: setupTypes,
		want: "$5\r\nhello\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.call(\'ping\')' 0
	{script: "return redis.call('ping')", setup: setupTypes,
		want: "+PONG\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return type(redis.call(\'ping\'))' 0
	{script: "return type(redis.call('ping'))", setup: setupTypes,
		want: "$5\r\ntable\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.call(\'ping\').ok' 0
	{script: "return redis.call('ping').ok", setup: setupTypes,
		want: "$4\r\nPONG\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.call(\'set\',\'k1\',\'v\')' 0
	{script: "return redis.call('set','k1','v')", setup: setupTypes,
		want: "+OK\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.pcall(\'incr\',\'h\')' 0
	{script: "return redis.pcall('incr','h')", setup: setupTypes,
		want: "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return type(redis.pcall(\'incr\',\'h\'))' 0
	{script: "return type(redis.pcall('incr','h'))", setup: setupTypes,
		want: "$5\r\ntable\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.pcall(\'incr\',\'h\').err' 0
	{script: "return redis.pcall('incr','h').err", setup: setupTypes,
		want: "$65\r\nWRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'local ok, e = pcall(redis.call, \'incr\', \'h\'); return {tostring(ok), e}' 0
	{script: "local ok, e = pcall(redis.call, 'incr', 'h'); return {tostring(ok), e}", setup: setupTypes,
		want: "*2\r\n$5\r\nfalse\r\n$65\r\nWRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'local ok, e = pcall(redis.call, \'nosuch\'); return {tostring(ok), e}' 0
	{script: "local ok, e = pcall(redis.call, 'nosuch'); return {tostring(ok), e}", setup: setupTypes,
		want: "*2\r\n$5\r\nfalse\r\n$44\r\nERR Unknown Redis command called from script\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'local ok, e = pcall(error, \'x\'); return {tostring(ok), e}' 0
	{script: "local ok, e = pcall(error, 'x'); return {tostring(ok), e}", setup: setupTypes,
		want: "*2\r\n$5\r\nfalse\r\n$1\r\nx\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'local ok, e = pcall(error, {a=1}); return {tostring(ok), type(e)}' 0
	{script: "local ok, e = pcall(error, {a=1}); return {tostring(ok), type(e)}", setup: setupTypes,
		want: "*2\r\n$5\r\nfalse\r\n$5\r\ntable\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'local ok, e = pcall(error, {err=\'X y\'}); return {tostring(ok), e}' 0
	{script: "local ok, e = pcall(error, {err='X y'}); return {tostring(ok), e}", setup: setupTypes,
		want: "*2\r\n$5\r\nfalse\r\n$3\r\nX y\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'local ok, e = pcall(function() local x = nil + 1 end); return {tostring(ok), e}' 0
	{script: "local ok, e = pcall(function() local x = nil + 1 end); return {tostring(ok), e}", setup: setupTypes,
		want: "*2\r\n$5\r\nfalse\r\n$59\r\nuser_script:1: attempt to perform arithmetic on a nil value\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'local ok, e = xpcall(function() error({err=\'X y\'}) end, function(e) return e end); return {tostring(ok), type(e)}' 0
	{script: "local ok, e = xpcall(function() error({err='X y'}) end, function(e) return e end); return {tostring(ok), type(e)}", setup: setupTypes,
		want: "*2\r\n$5\r\nfalse\r\n$5\r\ntable\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return {pcall()}' 0
	{script: "return {pcall()}", setup: setupTypes,
		want: "*2\r\n$-1\r\n$31\r\nattempt to call a boolean value\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return type(pcall())' 0
	{script: "return type(pcall())", setup: setupTypes,
		want: "$7\r\nboolean\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return {pcall(function() return 1, 2 end)}' 0
	{script: "return {pcall(function() return 1, 2 end)}", setup: setupTypes,
		want: "*3\r\n:1\r\n:1\r\n:2\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.call(\'set\', \'k1\', 1.5)' 0
	{script: "return redis.call('set', 'k1', 1.5)", setup: setupTypes,
		want: "+OK\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'redis.call(\'set\', \'k1\', 0.1); return redis.call(\'get\',\'k1\')' 0
	{script: "redis.call('set', 'k1', 0.1); return redis.call('get','k1')", setup: setupTypes,
		want: "$19\r\n0.10000000000000001\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'redis.call(\'set\', \'k1\', 1e20); return redis.call(\'get\',\'k1\')' 0
	{script: "redis.call('set', 'k1', 1e20); return redis.call('get','k1')", setup: setupTypes,
		want: "$5\r\n1e+20\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'redis.call(\'set\', \'k1\', 0/0); return redis.call(\'get\',\'k1\')' 0
	{script: "redis.call('set', 'k1', 0/0); return redis.call('get','k1')", setup: setupTypes,
		want: "$4\r\n-nan\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'redis.call(\'set\', \'k1\', 1/0); return redis.call(\'get\',\'k1\')' 0
	{script: "redis.call('set', 'k1', 1/0); return redis.call('get','k1')", setup: setupTypes,
		want: "$3\r\ninf\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'redis.call(\'set\', \'k1\', -0); return redis.call(\'get\',\'k1\')' 0
	{script: "redis.call('set', 'k1', -0); return redis.call('get','k1')", setup: setupTypes,
		want: "$2\r\n-0\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'redis.call(\'set\', \'k1\', 2^63); return redis.call(\'get\',\'k1\')' 0
	{script: "redis.call('set', 'k1', 2^63); return redis.call('get','k1')", setup: setupTypes,
		want: "$22\r\n9.2233720368547758e+18\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'redis.call(\'set\', \'k1\', 1e-5); return redis.call(\'get\',\'k1\')' 0
	{script: "redis.call('set', 'k1', 1e-5); return redis.call('get','k1')", setup: setupTypes,
		want: "$22\r\n1.0000000000000001e-05\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return redis.set_repl()' 0
	{script: "return redis.set_repl()", setup: setupTypes,
		want: "-ERR redis.set_repl() requires two arguments. script: 9504533b41060c143a92eb2f8878e77d33b6dc33, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return redis.set_repl(8)' 0
	{script: "return redis.set_repl(8)", setup: setupTypes,
		want: "-ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE. script: 186ef0ab02df6866cf837bcb124a0cff989e3d09, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return redis.set_repl(redis.REPL_ALL)' 0
	{script: "return redis.set_repl(redis.REPL_ALL)", setup: setupTypes,
		want: "$-1\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return redis.replicate_commands()' 0
	{script: "return redis.replicate_commands()", setup: setupTypes,
		want: ":1\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return redis.breakpoint()' 0
	{script: "return redis.breakpoint()", setup: setupTypes,
		want: "$-1\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.debug(\'x\')' 0
	{script: "return redis.debug('x')", setup: setupTypes,
		want: "$-1\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.acl_check_cmd(\'get\',\'x\')' 0
	{script: "return redis.acl_check_cmd('get','x')", setup: setupTypes,
		want: ":1\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return redis.acl_check_cmd()' 0
	{script: "return redis.acl_check_cmd()", setup: setupTypes,
		want: "-ERR Please specify at least one argument for this redis lib call script: 1124f33ad66e7866b4e0c1499a4c20fb5eb9c180, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.acl_check_cmd(\'get\', {})' 0
	{script: "return redis.acl_check_cmd('get', {})", setup: setupTypes,
		want: "-ERR Lua redis lib command arguments must be strings or integers script: 0aa2b5d2ac0199e1e8b769b3db96e8cbb91645fa, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return math.random(1,2,3)' 0
	{script: "return math.random(1,2,3)", setup: setupTypes,
		want: "-ERR user_script:1: wrong number of arguments script: 5cd983b5db563301a1c7ab05351573640323e7a9, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return math.random(0)' 0
	{script: "return math.random(0)", setup: setupTypes,
		want: "-ERR user_script:1: bad argument #1 to 'random' (interval is empty) script: 008bcb60f86ee36d26c67b641b46674578d9cba0, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return math.random(3,1)' 0
	{script: "return math.random(3,1)", setup: setupTypes,
		want: "-ERR user_script:1: bad argument #2 to 'random' (interval is empty) script: 68acc572476cae3f902bc415099bdefb8ea66576, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return math.random(\'a\')' 0
	{script: "return math.random('a')", setup: setupTypes,
		want: "-ERR user_script:1: bad argument #1 to 'random' (number expected, got string) script: 7205ebe49b6464ee5d22eebdcb2a5e44d4d40562, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'math.randomseed()' 0
	{script: "math.randomseed()", setup: setupTypes,
		want: "-ERR user_script:1: bad argument #1 to 'randomseed' (number expected, got no value) script: 6bd6400623e09987abdb24b82d64d67a81e99462, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return string.rep()' 0
	{script: "return string.rep()", setup: setupTypes,
		want: "-ERR user_script:1: bad argument #1 to 'rep' (string expected, got no value) script: 312a592c4be4cbcb6748209b815c8eb090f3ca71, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return string.rep(\'x\')' 0
	{script: "return string.rep('x')", setup: setupTypes,
		want: "-ERR user_script:1: bad argument #2 to 'rep' (number expected, got no value) script: 47d77d22ae4a022a28128d68e8457534cf85d7f7, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return string.rep(\'x\', -1)' 0
	{script: "return string.rep('x', -1)", setup: setupTypes,
		want: "$0\r\n\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return (\'x\'):bad()' 0
	{script: "return ('x'):bad()", setup: setupTypes,
		want: "-ERR user_script:1: attempt to call method 'bad' (a nil value) script: 60af801ca8aafcf91936a9a510ab2ceb6df30acc, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return math.floor(\'a\')' 0
	{script: "return math.floor('a')", setup: setupTypes,
		want: "-ERR user_script:1: bad argument #1 to 'floor' (number expected, got string) script: d8cf8c43cad6006645fc2a8d74071ac1ca197922, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return tostring()' 0
	{script: "return tostring()", setup: setupTypes,
		want: "-ERR user_script:1: bad argument #1 to 'tostring' (value expected) script: b3870418043f3698962b400fd4ccc5dd4e449625, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return ipairs()' 0
	{script: "return ipairs()", setup: setupTypes,
		want: "-ERR user_script:1: bad argument #1 to 'ipairs' (table expected, got no value) script: 6de33eb13609a71abf7df9036b0d27d1aca54c9c, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return select(0)' 0
	{script: "return select(0)", setup: setupTypes,
		want: "-ERR user_script:1: bad argument #1 to 'select' (index out of range) script: 70b55a93a3790ab47c0165baf2bf51e1f37155e2, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return unpack(1)' 0
	{script: "return unpack(1)", setup: setupTypes,
		want: "-ERR user_script:1: bad argument #1 to 'unpack' (table expected, got number) script: b4fe385926a1cccc5eccb3bccfed53bea683d51a, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return string.format(\'%d\', \'x\')' 0
	{script: "return string.format('%d', 'x')", setup: setupTypes,
		want: "-ERR user_script:1: bad argument #2 to 'format' (number expected, got string) script: cd4fadd5027450767b6391819f084394d5c4916f, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return string.sub()' 0
	{script: "return string.sub()", setup: setupTypes,
		want: "-ERR user_script:1: bad argument #1 to 'sub' (string expected, got no value) script: c4fdb02d1f07f7ae9db45e41fde95abd80cd25d5, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return string.format(\'%5\')' 0
	{script: "return string.format('%5')", setup: setupTypes,
		want: "-ERR user_script:1: bad argument #2 to 'format' (no value) script: b38712b388ccfb3ee22c8df075acd1c815e4edd2, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return string.format(\'%123d\', 1)' 0
	{script: "return string.format('%123d', 1)", setup: setupTypes,
		want: "-ERR user_script:1: invalid format (width or precision too long) script: 475062df53820d5b6542e3c4f4d7fdce9130e51a, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return string.format(\'%q\', \'a\\nb\\0\')' 0
	{script: "return string.format('%q', 'a\\nb\\0')", setup: setupTypes,
		want: "$10\r\n\"a\\\nb\\000\"\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return #string.format(\'%99d\', 1)' 0
	{script: "return #string.format('%99d', 1)", setup: setupTypes,
		want: ":99\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return tonumber(\'0x10\')' 0
	{script: "return tonumber('0x10')", setup: setupTypes,
		want: ":16\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return tonumber(\' 12 \')' 0
	{script: "return tonumber(' 12 ')", setup: setupTypes,
		want: ":12\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return tonumber(\'1e2\')' 0
	{script: "return tonumber('1e2')", setup: setupTypes,
		want: ":100\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return tonumber(\'nan\')' 0
	{script: "return tonumber('nan')", setup: setupTypes,
		want: ":-9223372036854775808\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return tostring(tonumber(\'inf\'))' 0
	{script: "return tostring(tonumber('inf'))", setup: setupTypes,
		want: "$3\r\ninf\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return tonumber(\'10\', 16)' 0
	{script: "return tonumber('10', 16)", setup: setupTypes,
		want: ":16\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return tonumber(\'z\', 36)' 0
	{script: "return tonumber('z', 36)", setup: setupTypes,
		want: ":35\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return tonumber(\'8\', 8)' 0
	{script: "return tonumber('8', 8)", setup: setupTypes,
		want: "$-1\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return tonumber(\'1\', 99)' 0
	{script: "return tonumber('1', 99)", setup: setupTypes,
		want: "-ERR user_script:1: bad argument #2 to 'tonumber' (base out of range) script: 5c995896944992e56c7d8a78db88e8fc3fe9579d, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return string.format(\'%5.2f|%g|%x|%X|%o|%c|%e|%i|%u\', 3.14159, 0.1, 255, 255, 8, 65, 12345.678, 42, 7)' 0
	{script: "return string.format('%5.2f|%g|%x|%X|%o|%c|%e|%i|%u', 3.14159, 0.1, 255, 255, 8, 65, 12345.678, 42, 7)", setup: setupTypes,
		want: "$38\r\n 3.14|0.1|ff|FF|10|A|1.234568e+04|42|7\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return string.format(\'%s %s %s\', 1, 0.1, 1e100)' 0
	{script: "return string.format('%s %s %s', 1, 0.1, 1e100)", setup: setupTypes,
		want: "$12\r\n1 0.1 1e+100\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return string.format(\'%d\', 3.7)' 0
	{script: "return string.format('%d', 3.7)", setup: setupTypes,
		want: "$1\r\n3\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return string.format(\'%d\', -3.7)' 0
	{script: "return string.format('%d', -3.7)", setup: setupTypes,
		want: "$2\r\n-3\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return string.format(\'%x\', -1)' 0
	{script: "return string.format('%x', -1)", setup: setupTypes,
		want: "$16\r\nffffffffffffffff\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return string.format(\'%5s|%-5s|\', \'ab\', \'cd\')' 0
	{script: "return string.format('%5s|%-5s|', 'ab', 'cd')", setup: setupTypes,
		want: "$12\r\n   ab|cd   |\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return string.format(\'%.3s\', \'abcdef\')' 0
	{script: "return string.format('%.3s', 'abcdef')", setup: setupTypes,
		want: "$3\r\nabc\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return string.format(\'%%\')' 0
	{script: "return string.format('%%')", setup: setupTypes,
		want: "$1\r\n%\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return string.format(\'%z\', 1)' 0
	{script: "return string.format('%z', 1)", setup: setupTypes,
		want: "-ERR user_script:1: invalid option '%z' to 'format' script: 1667d14dc9313782f44203e8cec02928dea37c59, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return string.format()' 0
	{script: "return string.format()", setup: setupTypes,
		want: "-ERR user_script:1: bad argument #1 to 'format' (string expected, got no value) script: ddb6e5ff8bc518fef03b57c74ce0c5114dc72779, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'math.randomseed(42); return {tostring(math.random()), math.random(1000)}' 0
	{script: "math.randomseed(42); return {tostring(math.random()), math.random(1000)}", setup: setupTypes,
		want: "*2\r\n$16\r\n0.74452500033403\r\n:343\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'local t={} for k,v in pairs(string) do t[#t+1]=k..\':\'..type(v) end table.sort(t) return table.concat(t, \' \')' 0
	{script: "local t={} for k,v in pairs(string) do t[#t+1]=k..':'..type(v) end table.sort(t) return table.concat(t, ' ')", setup: setupTypes,
		want: "$217\r\nbyte:function char:function dump:function find:function format:function gfind:function gmatch:function gsub:function len:function lower:function match:function rep:function reverse:function sub:function upper:function\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'local t={} for k,v in pairs(table) do t[#t+1]=k..\':\'..type(v) end table.sort(t) return table.concat(t, \' \')' 0
	{script: "local t={} for k,v in pairs(table) do t[#t+1]=k..':'..type(v) end table.sort(t) return table.concat(t, ' ')", setup: setupTypes,
		want: "$138\r\nconcat:function foreach:function foreachi:function getn:function insert:function maxn:function remove:function setn:function sort:function\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'local t={} for k,v in pairs(math) do t[#t+1]=k..\':\'..type(v) end table.sort(t) return table.concat(t, \' \')' 0
	{script: "local t={} for k,v in pairs(math) do t[#t+1]=k..':'..type(v) end table.sort(t) return table.concat(t, ' ')", setup: setupTypes,
		want: "$428\r\nabs:function acos:function asin:function atan2:function atan:function ceil:function cos:function cosh:function deg:function exp:function floor:function fmod:function frexp:function huge:number ldexp:function log10:function log:function max:function min:function mod:function modf:function pi:number pow:function rad:function random:function randomseed:function sin:function sinh:function sqrt:function tan:function tanh:function\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'local t={} for k,v in pairs(coroutine) do t[#t+1]=k..\':\'..type(v) end table.sort(t) return table.concat(t, \' \')' 0
	{script: "local t={} for k,v in pairs(coroutine) do t[#t+1]=k..':'..type(v) end table.sort(t) return table.concat(t, ' ')", setup: setupTypes,
		want: "$93\r\ncreate:function resume:function running:function status:function wrap:function yield:function\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'local t={} for k,v in pairs(bit) do t[#t+1]=k..\':\'..type(v) end table.sort(t) return table.concat(t, \' \')' 0
	{script: "local t={} for k,v in pairs(bit) do t[#t+1]=k..':'..type(v) end table.sort(t) return table.concat(t, ' ')", setup: setupTypes,
		want: "$174\r\narshift:function band:function bnot:function bor:function bswap:function bxor:function lshift:function rol:function ror:function rshift:function tobit:function tohex:function\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'local t={} for k,v in pairs(redis) do t[#t+1]=k..\':\'..type(v) end table.sort(t) return table.concat(t, \' \')' 0
	{script: "local t={} for k,v in pairs(redis) do t[#t+1]=k..':'..type(v) end table.sort(t) return table.concat(t, ' ')", setup: setupTypes,
		want: "$428\r\nLOG_DEBUG:number LOG_NOTICE:number LOG_VERBOSE:number LOG_WARNING:number REDIS_VERSION:string REDIS_VERSION_NUM:number REPL_ALL:number REPL_AOF:number REPL_NONE:number REPL_REPLICA:number REPL_SLAVE:number acl_check_cmd:function breakpoint:function call:function debug:function error_reply:function log:function pcall:function replicate_commands:function set_repl:function setresp:function sha1hex:function status_reply:function\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return tostring(math.pi) .. \' \' .. tostring(math.huge)' 0
	{script: "return tostring(math.pi) .. ' ' .. tostring(math.huge)", setup: setupTypes,
		want: "$19\r\n3.1415926535898 inf\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 -3 EVAL 'return {1,2,false,4}' 0
	{script: "return {1,2,false,4}", proto: 3, setup: setupTypes,
		want: "*4\r\n:1\r\n:2\r\n_\r\n:4\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 -3 EVAL 'return false' 0
	{script: "return false", proto: 3, setup: setupTypes,
		want: "_\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 -3 EVAL 'return true' 0
	{script: "return true", proto: 3, setup: setupTypes,
		want: ":1\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 -3 EVAL 'return nil' 0
	{script: "return nil", proto: 3, setup: setupTypes,
		want: "_\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 -3 EVAL 'return {double=1.5}' 0
	{script: "return {double=1.5}", proto: 3, setup: setupTypes,
		want: ",1.5\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 -3 EVAL 'return {map={a=1}}' 0
	{script: "return {map={a=1}}", proto: 3, setup: setupTypes,
		want: "%1\r\n$1\r\na\r\n:1\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 -3 EVAL 'return {set={a=true}}' 0
	{script: "return {set={a=true}}", proto: 3, setup: setupTypes,
		want: "~1\r\n$1\r\na\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 -3 EVAL $'return {verbatim_string={format=\'txt\', string=\'hello\'}}' 0
	{script: "return {verbatim_string={format='txt', string='hello'}}", proto: 3, setup: setupTypes,
		want: "=9\r\ntxt:hello\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 -3 EVAL 'redis.setresp(3); return false' 0
	{script: "redis.setresp(3); return false", proto: 3, setup: setupTypes,
		want: "#f\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 -3 EVAL 'redis.setresp(3); return true' 0
	{script: "redis.setresp(3); return true", proto: 3, setup: setupTypes,
		want: "#t\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 -3 EVAL $'return {ok=\'a\\r\\nb\'}' 0
	{script: "return {ok='a\\r\\nb'}", proto: 3, setup: setupTypes,
		want: "+a  b\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 -3 EVAL $'return {err=\'a\\r\\nb\'}' 0
	{script: "return {err='a\\r\\nb'}", proto: 3, setup: setupTypes,
		want: "-a  b\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 -3 EVAL $'return {err=\'\'}' 0
	{script: "return {err=''}", proto: 3, setup: setupTypes,
		want: "-\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 -3 EVAL $'return redis.error_reply(\'\')' 0
	{script: "return redis.error_reply('')", proto: 3, setup: setupTypes,
		want: "-ERR \r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 -3 EVAL $'return {err=\'-X y\'}' 0
	{script: "return {err='-X y'}", proto: 3, setup: setupTypes,
		want: "--X y\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 -3 EVAL $'return redis.status_reply(\'\')' 0
	{script: "return redis.status_reply('')", proto: 3, setup: setupTypes,
		want: "+\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 -3 EVAL $'return redis.call(\'hgetall\',\'h\')' 0
	{script: "return redis.call('hgetall','h')", proto: 3, setup: setupTypes,
		want: "*4\r\n$2\r\nf1\r\n$2\r\nv1\r\n$2\r\nf2\r\n$2\r\nv2\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 -3 EVAL $'redis.setresp(3); return redis.call(\'zscore\',\'z\',\'m\')' 0
	{script: "redis.setresp(3); return redis.call('zscore','z','m')", proto: 3, setup: setupTypes,
		want: ",1.5\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 -3 EVAL $'return redis.call(\'zscore\',\'z\',\'m\')' 0
	{script: "return redis.call('zscore','z','m')", proto: 3, setup: setupTypes,
		want: "$3\r\n1.5\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 -3 EVAL $'redis.setresp(3); return redis.call(\'smembers\',\'s\')' 0
	{script: "redis.setresp(3); return redis.call('smembers','s')", proto: 3, setup: setupTypes,
		want: "~1\r\n$1\r\na\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'redis.setresp(3); return true' 0
	{script: "redis.setresp(3); return true", setup: setupTypes,
		want: ":1\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'redis.setresp(3); return false' 0
	{script: "redis.setresp(3); return false", setup: setupTypes,
		want: ":0\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return {ok=\'a\\r\\nb\'}' 0
	{script: "return {ok='a\\r\\nb'}", setup: setupTypes,
		want: "+a  b\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return {err=\'a\\r\\nb\'}' 0
	{script: "return {err='a\\r\\nb'}", setup: setupTypes,
		want: "-a  b\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return {err=\'\'}' 0
	{script: "return {err=''}", setup: setupTypes,
		want: "-\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.error_reply(\'\')' 0
	{script: "return redis.error_reply('')", setup: setupTypes,
		want: "-ERR \r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return {err=\'-X y\'}' 0
	{script: "return {err='-X y'}", setup: setupTypes,
		want: "--X y\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'return redis.status_reply(\'\')' 0
	{script: "return redis.status_reply('')", setup: setupTypes,
		want: "+\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL 'return {KEYS[1], KEYS[2], ARGV[1], #KEYS, #ARGV}' 2 'a' 'b' 'x' 'y' 'z'
	{script: "return {KEYS[1], KEYS[2], ARGV[1], #KEYS, #ARGV}", keys: []string{"a", "b"}, args: []string{"x", "y", "z"}, setup: setupTypes,
		want: "*5\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nx\r\n:2\r\n:3\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'if redis.call(\'get\',KEYS[1]) == ARGV[1] then return redis.call(\'del\',KEYS[1]) else return 0 end' 1 'k1' 'v'
	{script: "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end", keys: []string{"k1"}, args: []string{"v"}, setup: setupTypes,
		want: ":1\r\n"},
	// redis-cli -p 6455 'HSET' 'h' 'f1' 'v1' 'f2' 'v2'; redis-cli -p 6455 'SADD' 's' 'a'; redis-cli -p 6455 'ZADD' 'z' '1.5' 'm'; redis-cli -p 6455 'SET' 'k1' 'v'; redis-cli -p 6455 EVAL $'if redis.call(\'get\',KEYS[1]) == ARGV[1] then return redis.call(\'del\',KEYS[1]) else return 0 end' 1 'k1' 'w'
	{script: "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end", keys: []string{"k1"}, args: []string{"w"}, setup: setupTypes,
		want: ":0\r\n"},
	// redis-cli -p 6455 EVAL 'return 1 +' 0
	{script: "return 1 +",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'if x then' 0
	{script: "if x then",
		want: "-ERR Error compiling script (new function): user_script:1: 'end' expected near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'x =' 0
	{script: "x =",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'local function' 0
	{script: "local function",
		want: "-ERR Error compiling script (new function): user_script:1: '<name>' expected near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL $'return \'abc' 0
	{script: "return 'abc",
		want: "-ERR Error compiling script (new function): user_script:1: unfinished string near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'return [[abc' 0
	{script: "return [[abc",
		want: "-ERR Error compiling script (new function): user_script:1: unfinished long string near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'x = 3 3' 0
	{script: "x = 3 3",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '3'\r\n"},
	// redis-cli -p 6455 EVAL 'return 0x' 0
	{script: "return 0x",
		want: "-ERR Error compiling script (new function): user_script:1: malformed number near '0x'\r\n"},
	// redis-cli -p 6455 EVAL $'f(\n)' 0
	{script: "f(\n)",
		want: "-ERR user_script:1: Script attempted to access nonexistent global variable 'f' script: 02870b9249e4e9d860ed067f85f9f80e87e3cedc, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'f\n(1)' 0
	{script: "f\n(1)",
		want: "-ERR Error compiling script (new function): user_script:2: ambiguous syntax (function call x new statement) near '('\r\n"},
	// redis-cli -p 6455 EVAL 'function f() return ... end' 0
	{script: "function f() return ... end",
		want: "-ERR Error compiling script (new function): user_script:1: cannot use '...' outside a vararg function near '...'\r\n"},
	// redis-cli -p 6455 EVAL 'break' 0
	{script: "break",
		want: "-ERR Error compiling script (new function): user_script:1: no loop to break near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'for i = 1 do end' 0
	{script: "for i = 1 do end",
		want: "-ERR Error compiling script (new function): user_script:1: ',' expected near 'do'\r\n"},
	// redis-cli -p 6455 EVAL 'return a.b:c' 0
	{script: "return a.b:c",
		want: "-ERR Error compiling script (new function): user_script:1: function arguments expected near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'local 1 = 2' 0
	{script: "local 1 = 2",
		want: "-ERR Error compiling script (new function): user_script:1: '<name>' expected near '1'\r\n"},
	// redis-cli -p 6455 EVAL 'return 1e' 0
	{script: "return 1e",
		want: "-ERR Error compiling script (new function): user_script:1: malformed number near '1e'\r\n"},
	// redis-cli -p 6455 EVAL $'return \'\\300\'' 0
	{script: "return '\\300'",
		want: "-ERR Error compiling script (new function): user_script:1: escape sequence too large near '''\r\n"},
	// redis-cli -p 6455 EVAL 'return { [1] = 2, ' 0
	{script: "return { [1] = 2, ",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'x = }' 0
	{script: "x = }",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '}'\r\n"},
	// redis-cli -p 6455 EVAL 'return not' 0
	{script: "return not",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL '@' 0
	{script: "@",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '@'\r\n"},
	// redis-cli -p 6455 EVAL 'return 1 end' 0
	{script: "return 1 end",
		want: "-ERR Error compiling script (new function): user_script:1: '<eof>' expected near 'end'\r\n"},
	// redis-cli -p 6455 EVAL 'x' 0
	{script: "x",
		want: "-ERR Error compiling script (new function): user_script:1: '=' expected near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'f() = 1' 0
	{script: "f() = 1",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '='\r\n"},
	// redis-cli -p 6455 EVAL 'a.b() = 1' 0
	{script: "a.b() = 1",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '='\r\n"},
	// redis-cli -p 6455 EVAL '(a) = 1' 0
	{script: "(a) = 1",
		want: "-ERR Error compiling script (new function): user_script:1: syntax error near '='\r\n"},
	// redis-cli -p 6455 EVAL 'for a b' 0
	{script: "for a b",
		want: "-ERR Error compiling script (new function): user_script:1: '=' or 'in' expected near 'b'\r\n"},
	// redis-cli -p 6455 EVAL 'for a, b = 1, 2 do end' 0
	{script: "for a, b = 1, 2 do end",
		want: "-ERR Error compiling script (new function): user_script:1: 'in' expected near '='\r\n"},
	// redis-cli -p 6455 EVAL 'function f(a, 1) end' 0
	{script: "function f(a, 1) end",
		want: "-ERR Error compiling script (new function): user_script:1: <name> or '...' expected near '1'\r\n"},
	// redis-cli -p 6455 EVAL 'function f(...) return ... end return f(1)' 0
	{script: "function f(...) return ... end return f(1)",
		want: "-ERR user_script:1: Attempt to modify a readonly table script: f2542d453dab38fbb526b70fa803380ac20c3e32, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'local t = {a = 1, b}' 0
	{script: "local t = {a = 1, b}",
		want: "-ERR user_script:1: Script attempted to access nonexistent global variable 'b' script: 8641033da7d7b1b001e6ac5bd4b6b24fb919ac92, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return "abc\ndef"' 0
	{script: "return \"abc\ndef\"",
		want: "-ERR Error compiling script (new function): user_script:1: unfinished string near '\"abc'\r\n"},
	// redis-cli -p 6455 EVAL '--[[ unfinished' 0
	{script: "--[[ unfinished",
		want: "-ERR Error compiling script (new function): user_script:1: unfinished long comment near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'return [==[ x ]=]' 0
	{script: "return [==[ x ]=]",
		want: "-ERR Error compiling script (new function): user_script:1: unfinished long string near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'return [=x' 0
	{script: "return [=x",
		want: "-ERR Error compiling script (new function): user_script:1: invalid long string delimiter near '[='\r\n"},
	// redis-cli -p 6455 EVAL 'return [[ a [[ b ]] ]]' 0
	{script: "return [[ a [[ b ]] ]]",
		want: "-ERR Error compiling script (new function): user_script:1: '<eof>' expected near ']'\r\n"},
	// redis-cli -p 6455 EVAL 'return 3..2' 0
	{script: "return 3..2",
		want: "-ERR Error compiling script (new function): user_script:1: malformed number near '3..2'\r\n"},
	// redis-cli -p 6455 EVAL 'return 0x1p4' 0
	{script: "return 0x1p4",
		want: ":16\r\n"},
	// redis-cli -p 6455 EVAL 'return 1.5e+' 0
	{script: "return 1.5e+",
		want: "-ERR Error compiling script (new function): user_script:1: malformed number near '1.5e+'\r\n"},
	// redis-cli -p 6455 EVAL 'while true do' 0
	{script: "while true do",
		want: "-ERR Error compiling script (new function): user_script:1: 'end' expected near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'repeat x = 1' 0
	{script: "repeat x = 1",
		want: "-ERR Error compiling script (new function): user_script:1: 'until' expected near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'repeat local x = 1 until' 0
	{script: "repeat local x = 1 until",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'if x then else' 0
	{script: "if x then else",
		want: "-ERR Error compiling script (new function): user_script:1: 'end' expected near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'do' 0
	{script: "do",
		want: "-ERR Error compiling script (new function): user_script:1: 'end' expected near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'return function() end end' 0
	{script: "return function() end end",
		want: "-ERR Error compiling script (new function): user_script:1: '<eof>' expected near 'end'\r\n"},
	// redis-cli -p 6455 EVAL 'local a <const> = 1' 0
	{script: "local a <const> = 1",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '<'\r\n"},
	// redis-cli -p 6455 EVAL 'x = ~1' 0
	{script: "x = ~1",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '~'\r\n"},
	// redis-cli -p 6455 EVAL 'x = 1 != 2' 0
	{script: "x = 1 != 2",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '!'\r\n"},
	// redis-cli -p 6455 EVAL 'return $' 0
	{script: "return $",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '$'\r\n"},
	// redis-cli -p 6455 EVAL $'return \'\\q\'' 0
	{script: "return '\\q'",
		want: "$1\r\nq\r\n"},
	// redis-cli -p 6455 EVAL $'return \'\\65\\066\'' 0
	{script: "return '\\65\\066'",
		want: "$2\r\nAB\r\n"},
	// redis-cli -p 6455 EVAL 'return #' 0
	{script: "return #",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'x = {' 0
	{script: "x = {",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'x = {1 2}' 0
	{script: "x = {1 2}",
		want: "-ERR Error compiling script (new function): user_script:1: '}' expected near '2'\r\n"},
	// redis-cli -p 6455 EVAL 'x.y.z' 0
	{script: "x.y.z",
		want: "-ERR Error compiling script (new function): user_script:1: '=' expected near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'return a:b' 0
	{script: "return a:b",
		want: "-ERR Error compiling script (new function): user_script:1: function arguments expected near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'local x = y z' 0
	{script: "local x = y z",
		want: "-ERR Error compiling script (new function): user_script:1: '=' expected near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'return ...' 0
	{script: "return ...",
		want: "$-1\r\n"},
	// redis-cli -p 6455 EVAL 'local function f() local function g() return ... end end' 0
	{script: "local function f() local function g() return ... end end",
		want: "-ERR Error compiling script (new function): user_script:1: cannot use '...' outside a vararg function near '...'\r\n"},
	// redis-cli -p 6455 EVAL 'return (1)(2)' 0
	{script: "return (1)(2)",
		want: "-ERR user_script:1: attempt to call a number value script: be37f1d904aa6472b026486dafddd5f0f8e9c1a5, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 't = { [1] }' 0
	{script: "t = { [1] }",
		want: "-ERR Error compiling script (new function): user_script:1: '=' expected near '}'\r\n"},
	// redis-cli -p 6455 EVAL 'return a[' 0
	{script: "return a[",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'goto x' 0
	{script: "goto x",
		want: "-ERR Error compiling script (new function): user_script:1: '=' expected near 'x'\r\n"},
	// redis-cli -p 6455 EVAL 'return 1;;' 0
	{script: "return 1;;",
		want: "-ERR Error compiling script (new function): user_script:1: '<eof>' expected near ';'\r\n"},
	// redis-cli -p 6455 EVAL '; return 1' 0
	{script: "; return 1",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near ';'\r\n"},
	// redis-cli -p 6455 EVAL 'return 1 ; x = 1' 0
	{script: "return 1 ; x = 1",
		want: "-ERR Error compiling script (new function): user_script:1: '<eof>' expected near 'x'\r\n"},
	// redis-cli -p 6455 EVAL $'return\n' 0
	{script: "return\n",
		want: "$-1\r\n"},
	// redis-cli -p 6455 EVAL $'local\n' 0
	{script: "local\n",
		want: "-ERR Error compiling script (new function): user_script:2: '<name>' expected near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL $'return 1 + \n\n\n' 0
	{script: "return 1 + \n\n\n",
		want: "-ERR Error compiling script (new function): user_script:4: unexpected symbol near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL $'local a = 1\nlocal b = 2\nreturn a +' 0
	{script: "local a = 1\nlocal b = 2\nreturn a +",
		want: "-ERR Error compiling script (new function): user_script:3: unexpected symbol near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL $'x = [[\nabc\n' 0
	{script: "x = [[\nabc\n",
		want: "-ERR Error compiling script (new function): user_script:3: unfinished long string near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL $'\n\nx = \'abc' 0
	{script: "\n\nx = 'abc",
		want: "-ERR Error compiling script (new function): user_script:3: unfinished string near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL $'return \'a\\' 0
	{script: "return 'a\\",
		want: "-ERR Error compiling script (new function): user_script:1: unfinished string near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'return "\"' 0
	{script: "return \"\\\"",
		want: "-ERR Error compiling script (new function): user_script:1: unfinished string near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'return 1e309' 0
	{script: "return 1e309",
		want: ":-9223372036854775808\r\n"},
	// redis-cli -p 6455 EVAL 'return 08' 0
	{script: "return 08",
		want: ":8\r\n"},
	// redis-cli -p 6455 EVAL 'return 1.2.3' 0
	{script: "return 1.2.3",
		want: "-ERR Error compiling script (new function): user_script:1: malformed number near '1.2.3'\r\n"},
	// redis-cli -p 6455 EVAL 'return .5' 0
	{script: "return .5",
		want: ":0\r\n"},
	// redis-cli -p 6455 EVAL 'return 5.' 0
	{script: "return 5.",
		want: ":5\r\n"},
	// redis-cli -p 6455 EVAL 'return a.1' 0
	{script: "return a.1",
		want: "-ERR Error compiling script (new function): user_script:1: '<eof>' expected near '.1'\r\n"},
	// redis-cli -p 6455 EVAL 'for i=1,2,3,4 do end' 0
	{script: "for i=1,2,3,4 do end",
		want: "-ERR Error compiling script (new function): user_script:1: 'do' expected near ','\r\n"},
	// redis-cli -p 6455 EVAL 'local x, = 1' 0
	{script: "local x, = 1",
		want: "-ERR Error compiling script (new function): user_script:1: '<name>' expected near '='\r\n"},
	// redis-cli -p 6455 EVAL 'return {,}' 0
	{script: "return {,}",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near ','\r\n"},
	// redis-cli -p 6455 EVAL 'return {1,,2}' 0
	{script: "return {1,,2}",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near ','\r\n"},
	// redis-cli -p 6455 EVAL 'function a.b:c.d() end' 0
	{script: "function a.b:c.d() end",
		want: "-ERR Error compiling script (new function): user_script:1: '(' expected near '.'\r\n"},
	// redis-cli -p 6455 EVAL 'function a:b:c() end' 0
	{script: "function a:b:c() end",
		want: "-ERR Error compiling script (new function): user_script:1: '(' expected near ':'\r\n"},
	// redis-cli -p 6455 EVAL 'return function(a, ...) end' 0
	{script: "return function(a, ...) end",
		want: "$-1\r\n"},
	// redis-cli -p 6455 EVAL 'return function(..., a) end' 0
	{script: "return function(..., a) end",
		want: "-ERR Error compiling script (new function): user_script:1: ')' expected near ','\r\n"},
	// redis-cli -p 6455 EVAL 'local t = {} t.1 = 2' 0
	{script: "local t = {} t.1 = 2",
		want: "-ERR Error compiling script (new function): user_script:1: '=' expected near '.1'\r\n"},
	// redis-cli -p 6455 EVAL 'x = 1 y = 2 = 3' 0
	{script: "x = 1 y = 2 = 3",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '='\r\n"},
	// redis-cli -p 6455 EVAL 'return not not' 0
	{script: "return not not",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'return - - 1' 0
	{script: "return - - 1",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL 'if x then elseif then end' 0
	{script: "if x then elseif then end",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near 'then'\r\n"},
	// redis-cli -p 6455 EVAL 'return 1 and' 0
	{script: "return 1 and",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'return (' 0
	{script: "return (",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'return )' 0
	{script: "return )",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near ')'\r\n"},
	// redis-cli -p 6455 EVAL 'return ]' 0
	{script: "return ]",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near ']'\r\n"},
	// redis-cli -p 6455 EVAL 'return }' 0
	{script: "return }",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '}'\r\n"},
	// redis-cli -p 6455 EVAL 'return ,' 0
	{script: "return ,",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near ','\r\n"},
	// redis-cli -p 6455 EVAL 'return =' 0
	{script: "return =",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '='\r\n"},
	// redis-cli -p 6455 EVAL 'return ==' 0
	{script: "return ==",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '=='\r\n"},
	// redis-cli -p 6455 EVAL 'return ..' 0
	{script: "return ..",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '..'\r\n"},
	// redis-cli -p 6455 EVAL 'return .' 0
	{script: "return .",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '.'\r\n"},
	// redis-cli -p 6455 EVAL 'return :' 0
	{script: "return :",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near ':'\r\n"},
	// redis-cli -p 6455 EVAL 'return ;' 0
	{script: "return ;",
		want: "$-1\r\n"},
	// redis-cli -p 6455 EVAL $'return \x01' 0
	{script: "return \x01",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near 'char(1)'\r\n"},
	// redis-cli -p 6455 EVAL $'return \xc2\x80' 0
	{script: "return \xc2\x80",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '\xc2'\r\n"},
	// redis-cli -p 6455 EVAL $'return \'abc\r\ndef\'' 0
	{script: "return 'abc\r\ndef'",
		want: "-ERR Error compiling script (new function): user_script:1: unfinished string near ''abc'\r\n"},
	// redis-cli -p 6455 'SET' 'h' 'v'; redis-cli -p 6455 EVAL $'redis.call(\'incr\',\n  \'h\',\n  \'x\')' 0
	{script: "redis.call('incr',\n  'h',\n  'x')", setup: setupString,
		want: "-ERR Wrong number of args calling Redis command from script script: 4d3ecd0c284437f6b00a82e288befaec78add0e3, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'SET' 'h' 'v'; redis-cli -p 6455 EVAL $'local x = redis.call(\'nosuch\',\n  \'h\')\nreturn x' 0
	{script: "local x = redis.call('nosuch',\n  'h')\nreturn x", setup: setupString,
		want: "-ERR Unknown Redis command called from script script: 456b399a46fc3999cda3e05713bbc53901e7c403, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'SET' 'h' 'v'; redis-cli -p 6455 EVAL $'return redis.call(\n\'nosuch\'\n)' 0
	{script: "return redis.call(\n'nosuch'\n)", setup: setupString,
		want: "-ERR Unknown Redis command called from script script: 42a9bb9d0fabcd88cf03ba323853474f97617dc4, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'SET' 'h' 'v'; redis-cli -p 6455 EVAL $'local t = {\n1,\n2,\nnil + 1\n}' 0
	{script: "local t = {\n1,\n2,\nnil + 1\n}", setup: setupString,
		want: "-ERR user_script:4: attempt to perform arithmetic on a nil value script: 47aca8981e9dc2259e06d63745f8f0652d4659d4, on @user_script:4.\r\n"},
	// redis-cli -p 6455 'SET' 'h' 'v'; redis-cli -p 6455 EVAL $'error(\n\'x\'\n)' 0
	{script: "error(\n'x'\n)", setup: setupString,
		want: "-ERR user_script:1: x script: 2a1d78cc4c51df558e7cf0f138d6caff60e29694, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'SET' 'h' 'v'; redis-cli -p 6455 EVAL $'if nil + 1 then\nend' 0
	{script: "if nil + 1 then\nend", setup: setupString,
		want: "-ERR user_script:1: attempt to perform arithmetic on a nil value script: 598862fd6e909d6d4026b88c6f30c7202177078f, on @user_script:1.\r\n"},
	// redis-cli -p 6455 'SET' 'h' 'v'; redis-cli -p 6455 EVAL $'local function f()\n  error(\'in f\')\nend\nf()' 0
	{script: "local function f()\n  error('in f')\nend\nf()", setup: setupString,
		want: "-ERR user_script:2: in f script: a2285ba71d1eeb5059c9d8ee50390ffc66ed7fb6, on @user_script:2.\r\n"},
	// redis-cli -p 6455 'SET' 'h' 'v'; redis-cli -p 6455 EVAL $'return {\n  redis.call(\'nosuch\')\n}' 0
	{script: "return {\n  redis.call('nosuch')\n}", setup: setupString,
		want: "-ERR Unknown Redis command called from script script: 6ce590adad764157c5470016ebb52333e549fe42, on @user_script:2.\r\n"},
	// redis-cli -p 6455 'SET' 'h' 'v'; redis-cli -p 6455 EVAL 'x = [[ a [[ b ]] ]]' 0
	{script: "x = [[ a [[ b ]] ]]", setup: setupString,
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near ']'\r\n"},
	// redis-cli -p 6455 EVAL $'return \'\\x41\'' 0
	{script: "return '\\x41'",
		want: "$3\r\nx41\r\n"},
	// redis-cli -p 6455 EVAL $'return \'\\0\'' 0
	{script: "return '\\0'",
		want: "$1\r\n\x00\r\n"},
	// redis-cli -p 6455 EVAL $'return #\'\\0\\00\\000\'' 0
	{script: "return #'\\0\\00\\000'",
		want: ":3\r\n"},
	// redis-cli -p 6455 EVAL $'return \'\\z  a\'' 0
	{script: "return '\\z  a'",
		want: "$4\r\nz  a\r\n"},
	// redis-cli -p 6455 EVAL $'return \'\\u{41}\'' 0
	{script: "return '\\u{41}'",
		want: "$5\r\nu{41}\r\n"},
	// redis-cli -p 6455 EVAL $'return \'a\\\nb\'' 0
	{script: "return 'a\\\nb'",
		want: "$3\r\na\nb\r\n"},
	// redis-cli -p 6455 EVAL $'return [[\nabc]]' 0
	{script: "return [[\nabc]]",
		want: "$3\r\nabc\r\n"},
	// redis-cli -p 6455 EVAL $'return [[\r\nabc]]' 0
	{script: "return [[\r\nabc]]",
		want: "$3\r\nabc\r\n"},
	// redis-cli -p 6455 EVAL $'return [==[\nabc]]]==]' 0
	{script: "return [==[\nabc]]]==]",
		want: "$5\r\nabc]]\r\n"},
	// redis-cli -p 6455 EVAL 'return 0x10' 0
	{script: "return 0x10",
		want: ":16\r\n"},
	// redis-cli -p 6455 EVAL 'return 0X1F' 0
	{script: "return 0X1F",
		want: ":31\r\n"},
	// redis-cli -p 6455 EVAL 'return 0xffffffffffffffff' 0
	{script: "return 0xffffffffffffffff",
		want: ":-9223372036854775808\r\n"},
	// redis-cli -p 6455 EVAL 'return 1e2' 0
	{script: "return 1e2",
		want: ":100\r\n"},
	// redis-cli -p 6455 EVAL 'return 1E-2 * 100' 0
	{script: "return 1E-2 * 100",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL 'return .5e1' 0
	{script: "return .5e1",
		want: ":5\r\n"},
	// redis-cli -p 6455 EVAL 'return 5e+2' 0
	{script: "return 5e+2",
		want: ":500\r\n"},
	// redis-cli -p 6455 EVAL 'return 0x.8p1' 0
	{script: "return 0x.8p1",
		want: "-ERR Error compiling script (new function): user_script:1: malformed number near '0x'\r\n"},
	// redis-cli -p 6455 EVAL 'return 9007199254740993' 0
	{script: "return 9007199254740993",
		want: ":9007199254740992\r\n"},
	// redis-cli -p 6455 EVAL $'return \'a\\tb\\vc\\fd\\ae\\bf\\rg\'' 0
	{script: "return 'a\\tb\\vc\\fd\\ae\\bf\\rg'",
		want: "$13\r\na\tb\x0bc\x0cd\x07e\x08f\rg\r\n"},
	// redis-cli -p 6455 EVAL $'return \'\\\\\'' 0
	{script: "return '\\\\'",
		want: "$1\r\n\\\r\n"},
	// redis-cli -p 6455 EVAL $'return "\\\'"' 0
	{script: "return \"\\'\"",
		want: "$1\r\n'\r\n"},
	// redis-cli -p 6455 EVAL $'return \'\\"\'' 0
	{script: "return '\\\"'",
		want: "$1\r\n\"\r\n"},
	// redis-cli -p 6455 EVAL $'return \'\\?\'' 0
	{script: "return '\\?'",
		want: "$1\r\n?\r\n"},
	// redis-cli -p 6455 EVAL $'return \'\\255\'' 0
	{script: "return '\\255'",
		want: "$1\r\n\xff\r\n"},
	// redis-cli -p 6455 EVAL $'return \'\\256\'' 0
	{script: "return '\\256'",
		want: "-ERR Error compiling script (new function): user_script:1: escape sequence too large near '''\r\n"},
	// redis-cli -p 6455 EVAL $'return #[[\n\n]]' 0
	{script: "return #[[\n\n]]",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL 'return --[[ c ]] 1' 0
	{script: "return --[[ c ]] 1",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL $'return --[==[ c\n ]==] 1' 0
	{script: "return --[==[ c\n ]==] 1",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL $'--x\nreturn 1' 0
	{script: "--x\nreturn 1",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL 'return 1 -- c' 0
	{script: "return 1 -- c",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL 'return 1 --[[ unclosed' 0
	{script: "return 1 --[[ unclosed",
		want: "-ERR Error compiling script (new function): user_script:1: unfinished long comment near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL 'return 2^-1074 > 0' 0
	{script: "return 2^-1074 > 0",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL 'return 1e-400 == 0' 0
	{script: "return 1e-400 == 0",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL 'return tostring(1e308*10)' 0
	{script: "return tostring(1e308*10)",
		want: "$3\r\ninf\r\n"},
	// redis-cli -p 6455 EVAL 'return 10 % 3, -10 % 3, 10 % -3, 5.5 % 2' 0
	{script: "return 10 % 3, -10 % 3, 10 % -3, 5.5 % 2",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL 'return {7 % 0 ~= 7 % 0}' 0
	{script: "return {7 % 0 ~= 7 % 0}",
		want: "*1\r\n:1\r\n"},
	// redis-cli -p 6455 EVAL 'return math.fmod(-10, 3)' 0
	{script: "return math.fmod(-10, 3)",
		want: ":-1\r\n"},
	// redis-cli -p 6455 EVAL 'return -10 % 3' 0
	{script: "return -10 % 3",
		want: ":2\r\n"},
	// redis-cli -p 6455 EVAL 'return 2^0.5 * 1000' 0
	{script: "return 2^0.5 * 1000",
		want: ":1414\r\n"},
	// redis-cli -p 6455 EVAL 'return 7 // 2' 0
	{script: "return 7 // 2",
		want: "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '/'\r\n"},
	// redis-cli -p 6455 EVAL 'return ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))' 0
	{script: "return ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL 'return ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))' 0
	{script: "return ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL 'return (((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1)))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))' 0
	{script: "return (((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1)))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL 'return ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))' 0
	{script: "return ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL 'return (((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1)))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))' 0
	{script: "return (((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1)))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))",
		want: "-ERR Error compiling script (new function): user_script:1: chunk has too many syntax levels\r\n"},
	// redis-cli -p 6455 EVAL 'return ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))' 0
	{script: "return ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))",
		want: "-ERR Error compiling script (new function): user_script:1: chunk has too many syntax levels\r\n"},
	// redis-cli -p 6455 EVAL 'do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end return 1' 0
	{script: "do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end return 1",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL 'do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end return 1' 0
	{script: "do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end return 1",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL 'do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end return 1' 0
	{script: "do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end return 1",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL 'do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end return 1' 0
	{script: "do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do do end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end end return 1",
		want: "-ERR Error compiling script (new function): user_script:1: chunk has too many syntax levels\r\n"},
	// redis-cli -p 6455 EVAL 'return --------------------------------------------------------------------------------------------------1' 0
	{script: "return --------------------------------------------------------------------------------------------------1",
		want: "$-1\r\n"},
	// redis-cli -p 6455 EVAL 'return ---------------------------------------------------------------------------------------------------1' 0
	{script: "return ---------------------------------------------------------------------------------------------------1",
		want: "$-1\r\n"},
	// redis-cli -p 6455 EVAL 'return ----------------------------------------------------------------------------------------------------1' 0
	{script: "return ----------------------------------------------------------------------------------------------------1",
		want: "$-1\r\n"},
	// redis-cli -p 6455 EVAL 'local a0,a1,a2,a3,a4,a5,a6,a7,a8,a9,a10,a11,a12,a13,a14,a15,a16,a17,a18,a19,a20,a21,a22,a23,a24,a25,a26,a27,a28,a29,a30,a31,a32,a33,a34,a35,a36,a37,a38,a39,a40,a41,a42,a43,a44,a45,a46,a47,a48,a49,a50,a51,a52,a53,a54,a55,a56,a57,a58,a59,a60,a61,a62,a63,a64,a65,a66,a67,a68,a69,a70,a71,a72,a73,a74,a75,a76,a77,a78,a79,a80,a81,a82,a83,a84,a85,a86,a87,a88,a89,a90,a91,a92,a93,a94,a95,a96,a97,a98,a99,a100,a101,a102,a103,a104,a105,a106,a107,a108,a109,a110,a111,a112,a113,a114,a115,a116,a117,a118,a119,a120,a121,a122,a123,a124,a125,a126,a127,a128,a129,a130,a131,a132,a133,a134,a135,a136,a137,a138,a139,a140,a141,a142,a143,a144,a145,a146,a147,a148,a149,a150,a151,a152,a153,a154,a155,a156,a157,a158,a159,a160,a161,a162,a163,a164,a165,a166,a167,a168,a169,a170,a171,a172,a173,a174,a175,a176,a177,a178,a179,a180,a181,a182,a183,a184,a185,a186,a187,a188,a189,a190,a191,a192,a193,a194,a195,a196,a197,a198,a199,a200 = 1 return 1' 0
	{script: "local a0,a1,a2,a3,a4,a5,a6,a7,a8,a9,a10,a11,a12,a13,a14,a15,a16,a17,a18,a19,a20,a21,a22,a23,a24,a25,a26,a27,a28,a29,a30,a31,a32,a33,a34,a35,a36,a37,a38,a39,a40,a41,a42,a43,a44,a45,a46,a47,a48,a49,a50,a51,a52,a53,a54,a55,a56,a57,a58,a59,a60,a61,a62,a63,a64,a65,a66,a67,a68,a69,a70,a71,a72,a73,a74,a75,a76,a77,a78,a79,a80,a81,a82,a83,a84,a85,a86,a87,a88,a89,a90,a91,a92,a93,a94,a95,a96,a97,a98,a99,a100,a101,a102,a103,a104,a105,a106,a107,a108,a109,a110,a111,a112,a113,a114,a115,a116,a117,a118,a119,a120,a121,a122,a123,a124,a125,a126,a127,a128,a129,a130,a131,a132,a133,a134,a135,a136,a137,a138,a139,a140,a141,a142,a143,a144,a145,a146,a147,a148,a149,a150,a151,a152,a153,a154,a155,a156,a157,a158,a159,a160,a161,a162,a163,a164,a165,a166,a167,a168,a169,a170,a171,a172,a173,a174,a175,a176,a177,a178,a179,a180,a181,a182,a183,a184,a185,a186,a187,a188,a189,a190,a191,a192,a193,a194,a195,a196,a197,a198,a199,a200 = 1 return 1",
		want: "-ERR Error compiling script (new function): user_script:1: main function has more than 200 local variables\r\n"},
	// redis-cli -p 6455 EVAL 'local a0,a1,a2,a3,a4,a5,a6,a7,a8,a9,a10,a11,a12,a13,a14,a15,a16,a17,a18,a19,a20,a21,a22,a23,a24,a25,a26,a27,a28,a29,a30,a31,a32,a33,a34,a35,a36,a37,a38,a39,a40,a41,a42,a43,a44,a45,a46,a47,a48,a49,a50,a51,a52,a53,a54,a55,a56,a57,a58,a59,a60,a61,a62,a63,a64,a65,a66,a67,a68,a69,a70,a71,a72,a73,a74,a75,a76,a77,a78,a79,a80,a81,a82,a83,a84,a85,a86,a87,a88,a89,a90,a91,a92,a93,a94,a95,a96,a97,a98,a99,a100,a101,a102,a103,a104,a105,a106,a107,a108,a109,a110,a111,a112,a113,a114,a115,a116,a117,a118,a119,a120,a121,a122,a123,a124,a125,a126,a127,a128,a129,a130,a131,a132,a133,a134,a135,a136,a137,a138,a139,a140,a141,a142,a143,a144,a145,a146,a147,a148,a149,a150,a151,a152,a153,a154,a155,a156,a157,a158,a159,a160,a161,a162,a163,a164,a165,a166,a167,a168,a169,a170,a171,a172,a173,a174,a175,a176,a177,a178,a179,a180,a181,a182,a183,a184,a185,a186,a187,a188,a189,a190,a191,a192,a193,a194,a195,a196,a197,a198 for i=1,2 do end return 1' 0
	{script: "local a0,a1,a2,a3,a4,a5,a6,a7,a8,a9,a10,a11,a12,a13,a14,a15,a16,a17,a18,a19,a20,a21,a22,a23,a24,a25,a26,a27,a28,a29,a30,a31,a32,a33,a34,a35,a36,a37,a38,a39,a40,a41,a42,a43,a44,a45,a46,a47,a48,a49,a50,a51,a52,a53,a54,a55,a56,a57,a58,a59,a60,a61,a62,a63,a64,a65,a66,a67,a68,a69,a70,a71,a72,a73,a74,a75,a76,a77,a78,a79,a80,a81,a82,a83,a84,a85,a86,a87,a88,a89,a90,a91,a92,a93,a94,a95,a96,a97,a98,a99,a100,a101,a102,a103,a104,a105,a106,a107,a108,a109,a110,a111,a112,a113,a114,a115,a116,a117,a118,a119,a120,a121,a122,a123,a124,a125,a126,a127,a128,a129,a130,a131,a132,a133,a134,a135,a136,a137,a138,a139,a140,a141,a142,a143,a144,a145,a146,a147,a148,a149,a150,a151,a152,a153,a154,a155,a156,a157,a158,a159,a160,a161,a162,a163,a164,a165,a166,a167,a168,a169,a170,a171,a172,a173,a174,a175,a176,a177,a178,a179,a180,a181,a182,a183,a184,a185,a186,a187,a188,a189,a190,a191,a192,a193,a194,a195,a196,a197,a198 for i=1,2 do end return 1",
		want: "-ERR Error compiling script (new function): user_script:1: main function has more than 200 local variables\r\n"},
	// redis-cli -p 6455 EVAL $'local function f()\n local a0,a1,a2,a3,a4,a5,a6,a7,a8,a9,a10,a11,a12,a13,a14,a15,a16,a17,a18,a19,a20,a21,a22,a23,a24,a25,a26,a27,a28,a29,a30,a31,a32,a33,a34,a35,a36,a37,a38,a39,a40,a41,a42,a43,a44,a45,a46,a47,a48,a49,a50,a51,a52,a53,a54,a55,a56,a57,a58,a59,a60,a61,a62,a63,a64,a65,a66,a67,a68,a69,a70,a71,a72,a73,a74,a75,a76,a77,a78,a79,a80,a81,a82,a83,a84,a85,a86,a87,a88,a89,a90,a91,a92,a93,a94,a95,a96,a97,a98,a99,a100,a101,a102,a103,a104,a105,a106,a107,a108,a109,a110,a111,a112,a113,a114,a115,a116,a117,a118,a119,a120,a121,a122,a123,a124,a125,a126,a127,a128,a129,a130,a131,a132,a133,a134,a135,a136,a137,a138,a139,a140,a141,a142,a143,a144,a145,a146,a147,a148,a149,a150,a151,a152,a153,a154,a155,a156,a157,a158,a159,a160,a161,a162,a163,a164,a165,a166,a167,a168,a169,a170,a171,a172,a173,a174,a175,a176,a177,a178,a179,a180,a181,a182,a183,a184,a185,a186,a187,a188,a189,a190,a191,a192,a193,a194,a195,a196,a197,a198,a199,a200 = 1 end return 1' 0
	{script: "local function f()\n local a0,a1,a2,a3,a4,a5,a6,a7,a8,a9,a10,a11,a12,a13,a14,a15,a16,a17,a18,a19,a20,a21,a22,a23,a24,a25,a26,a27,a28,a29,a30,a31,a32,a33,a34,a35,a36,a37,a38,a39,a40,a41,a42,a43,a44,a45,a46,a47,a48,a49,a50,a51,a52,a53,a54,a55,a56,a57,a58,a59,a60,a61,a62,a63,a64,a65,a66,a67,a68,a69,a70,a71,a72,a73,a74,a75,a76,a77,a78,a79,a80,a81,a82,a83,a84,a85,a86,a87,a88,a89,a90,a91,a92,a93,a94,a95,a96,a97,a98,a99,a100,a101,a102,a103,a104,a105,a106,a107,a108,a109,a110,a111,a112,a113,a114,a115,a116,a117,a118,a119,a120,a121,a122,a123,a124,a125,a126,a127,a128,a129,a130,a131,a132,a133,a134,a135,a136,a137,a138,a139,a140,a141,a142,a143,a144,a145,a146,a147,a148,a149,a150,a151,a152,a153,a154,a155,a156,a157,a158,a159,a160,a161,a162,a163,a164,a165,a166,a167,a168,a169,a170,a171,a172,a173,a174,a175,a176,a177,a178,a179,a180,a181,a182,a183,a184,a185,a186,a187,a188,a189,a190,a191,a192,a193,a194,a195,a196,a197,a198,a199,a200 = 1 end return 1",
		want: "-ERR Error compiling script (new function): user_script:2: function at line 1 has more than 200 local variables\r\n"},
	// redis-cli -p 6455 EVAL $'local u0 = 0\nlocal u1 = 1\nlocal u2 = 2\nlocal u3 = 3\nlocal u4 = 4\nlocal u5 = 5\nlocal u6 = 6\nlocal u7 = 7\nlocal u8 = 8\nlocal u9 = 9\nlocal u10 = 10\nlocal u11 = 11\nlocal u12 = 12\nlocal u13 = 13\nlocal u14 = 14\nlocal u15 = 15\nlocal u16 = 16\nlocal u17 = 17\nlocal u18 = 18\nlocal u19 = 19\nlocal u20 = 20\nlocal u21 = 21\nlocal u22 = 22\nlocal u23 = 23\nlocal u24 = 24\nlocal u25 = 25\nlocal u26 = 26\nlocal u27 = 27\nlocal u28 = 28\nlocal u29 = 29\nlocal u30 = 30\nlocal u31 = 31\nlocal u32 = 32\nlocal u33 = 33\nlocal u34 = 34\nlocal u35 = 35\nlocal u36 = 36\nlocal u37 = 37\nlocal u38 = 38\nlocal u39 = 39\nlocal u40 = 40\nlocal u41 = 41\nlocal u42 = 42\nlocal u43 = 43\nlocal u44 = 44\nlocal u45 = 45\nlocal u46 = 46\nlocal u47 = 47\nlocal u48 = 48\nlocal u49 = 49\nlocal u50 = 50\nlocal u51 = 51\nlocal u52 = 52\nlocal u53 = 53\nlocal u54 = 54\nlocal u55 = 55\nlocal u56 = 56\nlocal u57 = 57\nlocal u58 = 58\nlocal u59 = 59\nlocal u60 = 60\nlocal function f() return u0+u1+u2+u3+u4+u5+u6+u7+u8+u9+u10+u11+u12+u13+u14+u15+u16+u17+u18+u19+u20+u21+u22+u23+u24+u25+u26+u27+u28+u29+u30+u31+u32+u33+u34+u35+u36+u37+u38+u39+u40+u41+u42+u43+u44+u45+u46+u47+u48+u49+u50+u51+u52+u53+u54+u55+u56+u57+u58+u59+u60 end return f()' 0
	{script: "local u0 = 0\nlocal u1 = 1\nlocal u2 = 2\nlocal u3 = 3\nlocal u4 = 4\nlocal u5 = 5\nlocal u6 = 6\nlocal u7 = 7\nlocal u8 = 8\nlocal u9 = 9\nlocal u10 = 10\nlocal u11 = 11\nlocal u12 = 12\nlocal u13 = 13\nlocal u14 = 14\nlocal u15 = 15\nlocal u16 = 16\nlocal u17 = 17\nlocal u18 = 18\nlocal u19 = 19\nlocal u20 = 20\nlocal u21 = 21\nlocal u22 = 22\nlocal u23 = 23\nlocal u24 = 24\nlocal u25 = 25\nlocal u26 = 26\nlocal u27 = 27\nlocal u28 = 28\nlocal u29 = 29\nlocal u30 = 30\nlocal u31 = 31\nlocal u32 = 32\nlocal u33 = 33\nlocal u34 = 34\nlocal u35 = 35\nlocal u36 = 36\nlocal u37 = 37\nlocal u38 = 38\nlocal u39 = 39\nlocal u40 = 40\nlocal u41 = 41\nlocal u42 = 42\nlocal u43 = 43\nlocal u44 = 44\nlocal u45 = 45\nlocal u46 = 46\nlocal u47 = 47\nlocal u48 = 48\nlocal u49 = 49\nlocal u50 = 50\nlocal u51 = 51\nlocal u52 = 52\nlocal u53 = 53\nlocal u54 = 54\nlocal u55 = 55\nlocal u56 = 56\nlocal u57 = 57\nlocal u58 = 58\nlocal u59 = 59\nlocal u60 = 60\nlocal function f() return u0+u1+u2+u3+u4+u5+u6+u7+u8+u9+u10+u11+u12+u13+u14+u15+u16+u17+u18+u19+u20+u21+u22+u23+u24+u25+u26+u27+u28+u29+u30+u31+u32+u33+u34+u35+u36+u37+u38+u39+u40+u41+u42+u43+u44+u45+u46+u47+u48+u49+u50+u51+u52+u53+u54+u55+u56+u57+u58+u59+u60 end return f()",
		want: "-ERR Error compiling script (new function): user_script:62: function at line 62 has more than 60 upvalues\r\n"},
	// redis-cli -p 6455 EVAL $'local u0 = 0\nlocal u1 = 1\nlocal u2 = 2\nlocal u3 = 3\nlocal u4 = 4\nlocal u5 = 5\nlocal u6 = 6\nlocal u7 = 7\nlocal u8 = 8\nlocal u9 = 9\nlocal u10 = 10\nlocal u11 = 11\nlocal u12 = 12\nlocal u13 = 13\nlocal u14 = 14\nlocal u15 = 15\nlocal u16 = 16\nlocal u17 = 17\nlocal u18 = 18\nlocal u19 = 19\nlocal u20 = 20\nlocal u21 = 21\nlocal u22 = 22\nlocal u23 = 23\nlocal u24 = 24\nlocal u25 = 25\nlocal u26 = 26\nlocal u27 = 27\nlocal u28 = 28\nlocal u29 = 29\nlocal u30 = 30\nlocal u31 = 31\nlocal u32 = 32\nlocal u33 = 33\nlocal u34 = 34\nlocal u35 = 35\nlocal u36 = 36\nlocal u37 = 37\nlocal u38 = 38\nlocal u39 = 39\nlocal u40 = 40\nlocal u41 = 41\nlocal u42 = 42\nlocal u43 = 43\nlocal u44 = 44\nlocal u45 = 45\nlocal u46 = 46\nlocal u47 = 47\nlocal u48 = 48\nlocal u49 = 49\nlocal u50 = 50\nlocal u51 = 51\nlocal u52 = 52\nlocal u53 = 53\nlocal u54 = 54\nlocal u55 = 55\nlocal u56 = 56\nlocal u57 = 57\nlocal u58 = 58\nlocal u59 = 59\nlocal u60 = 60\nlocal function f() return u0+u1+u2+u3+u4+u5+u6+u7+u8+u9+u10+u11+u12+u13+u14+u15+u16+u17+u18+u19+u20+u21+u22+u23+u24+u25+u26+u27+u28+u29+u30+u31+u32+u33+u34+u35+u36+u37+u38+u39+u40+u41+u42+u43+u44+u45+u46+u47+u48+u49+u50+u51+u52+u53+u54+u55+u56+u57+u58+u59 end return f()' 0
	{script: "local u0 = 0\nlocal u1 = 1\nlocal u2 = 2\nlocal u3 = 3\nlocal u4 = 4\nlocal u5 = 5\nlocal u6 = 6\nlocal u7 = 7\nlocal u8 = 8\nlocal u9 = 9\nlocal u10 = 10\nlocal u11 = 11\nlocal u12 = 12\nlocal u13 = 13\nlocal u14 = 14\nlocal u15 = 15\nlocal u16 = 16\nlocal u17 = 17\nlocal u18 = 18\nlocal u19 = 19\nlocal u20 = 20\nlocal u21 = 21\nlocal u22 = 22\nlocal u23 = 23\nlocal u24 = 24\nlocal u25 = 25\nlocal u26 = 26\nlocal u27 = 27\nlocal u28 = 28\nlocal u29 = 29\nlocal u30 = 30\nlocal u31 = 31\nlocal u32 = 32\nlocal u33 = 33\nlocal u34 = 34\nlocal u35 = 35\nlocal u36 = 36\nlocal u37 = 37\nlocal u38 = 38\nlocal u39 = 39\nlocal u40 = 40\nlocal u41 = 41\nlocal u42 = 42\nlocal u43 = 43\nlocal u44 = 44\nlocal u45 = 45\nlocal u46 = 46\nlocal u47 = 47\nlocal u48 = 48\nlocal u49 = 49\nlocal u50 = 50\nlocal u51 = 51\nlocal u52 = 52\nlocal u53 = 53\nlocal u54 = 54\nlocal u55 = 55\nlocal u56 = 56\nlocal u57 = 57\nlocal u58 = 58\nlocal u59 = 59\nlocal u60 = 60\nlocal function f() return u0+u1+u2+u3+u4+u5+u6+u7+u8+u9+u10+u11+u12+u13+u14+u15+u16+u17+u18+u19+u20+u21+u22+u23+u24+u25+u26+u27+u28+u29+u30+u31+u32+u33+u34+u35+u36+u37+u38+u39+u40+u41+u42+u43+u44+u45+u46+u47+u48+u49+u50+u51+u52+u53+u54+u55+u56+u57+u58+u59 end return f()",
		want: ":1770\r\n"},
	// redis-cli -p 6455 EVAL $'return loadstring(\'return \' .. string.rep(\'(\', 195) .. \'1\' .. string.rep(\')\', 195))()' 0
	{script: "return loadstring('return ' .. string.rep('(', 195) .. '1' .. string.rep(')', 195))()",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL $'return {loadstring(\'return \' .. string.rep(\'(\', 199) .. \'1\' .. string.rep(\')\', 199))}' 0
	{script: "return {loadstring('return ' .. string.rep('(', 199) .. '1' .. string.rep(')', 199))}",
		want: "*0\r\n"},
	// redis-cli -p 6455 EVAL $'#!lua\nreturn 1' 0
	{script: "#!lua\nreturn 1",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL '#!lua' 0
	{script: "#!lua",
		want: "-ERR Invalid script shebang\r\n"},
	// redis-cli -p 6455 EVAL $'#!lua flags=no-writes\nreturn 1' 0
	{script: "#!lua flags=no-writes\nreturn 1",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL $'#!lua flags=bad\nreturn 1' 0
	{script: "#!lua flags=bad\nreturn 1",
		want: "-ERR Unexpected flag in script shebang: bad\r\n"},
	// redis-cli -p 6455 EVAL $'#!lua foo=bar\nreturn 1' 0
	{script: "#!lua foo=bar\nreturn 1",
		want: "-ERR Unknown lua shebang option: foo=bar\r\n"},
	// redis-cli -p 6455 EVAL $'#!python\nreturn 1' 0
	{script: "#!python\nreturn 1",
		want: "-ERR Unexpected engine in script shebang: #!python\r\n"},
	// redis-cli -p 6455 EVAL $'#! lua\nreturn 1' 0
	{script: "#! lua\nreturn 1",
		want: "-ERR Unexpected engine in script shebang: #!\r\n"},
	// redis-cli -p 6455 EVAL $'#!\nreturn 1' 0
	{script: "#!\nreturn 1",
		want: "-ERR Unexpected engine in script shebang: #!\r\n"},
	// redis-cli -p 6455 EVAL $'#!lua "unbalanced\nreturn 1' 0
	{script: "#!lua \"unbalanced\nreturn 1",
		want: "-ERR Invalid engine in script shebang\r\n"},
	// redis-cli -p 6455 EVAL $'#!lua flags=\nreturn 1' 0
	{script: "#!lua flags=\nreturn 1",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL $'#!lua flags=no-writes,,allow-oom\nreturn 1' 0
	{script: "#!lua flags=no-writes,,allow-oom\nreturn 1",
		want: "-ERR Unexpected flag in script shebang: \r\n"},
	// redis-cli -p 6455 EVAL $'#!lua name=x\nreturn 1' 0
	{script: "#!lua name=x\nreturn 1",
		want: "-ERR Unknown lua shebang option: name=x\r\n"},
	// redis-cli -p 6455 EVAL $'#!lua\nerror(\'x\')' 0
	{script: "#!lua\nerror('x')",
		want: "-ERR user_script:2: x script: f0363b84b71234131413165ce8dee0dbb5f9ce96, on @user_script:2.\r\n"},
	// redis-cli -p 6455 EVAL $'#!lua\n\nreturn 1 +' 0
	{script: "#!lua\n\nreturn 1 +",
		want: "-ERR Error compiling script (new function): user_script:3: unexpected symbol near '<eof>'\r\n"},
	// redis-cli -p 6455 EVAL $'#!lua flags=no-cluster,allow-cross-slot-keys,allow-stale,no-writes,allow-oom\nreturn 1' 0
	{script: "#!lua flags=no-cluster,allow-cross-slot-keys,allow-stale,no-writes,allow-oom\nreturn 1",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL $'#!lua\nreturn redis.call(\'set\',\'x\',\'y\')' 0
	{script: "#!lua\nreturn redis.call('set','x','y')",
		want: "+OK\r\n"},
	// redis-cli -p 6455 EVAL $'#!lua\nreturn redis.call(\'get\',\'x\')' 0
	{script: "#!lua\nreturn redis.call('get','x')",
		want: "$-1\r\n"},
	// redis-cli -p 6455 EVAL $'return 0.1 .. \'\'' 0
	{script: "return 0.1 .. ''",
		want: "$3\r\n0.1\r\n"},
	// redis-cli -p 6455 EVAL 'local function f(...) return type(arg) end return f(1)' 0
	{script: "local function f(...) return type(arg) end return f(1)",
		want: "$5\r\ntable\r\n"},
	// redis-cli -p 6455 EVAL $'return \'10\' + 1' 0
	{script: "return '10' + 1",
		want: ":11\r\n"},
	// redis-cli -p 6455 EVAL $'return \'0x10\' + 0' 0
	{script: "return '0x10' + 0",
		want: ":16\r\n"},
	// redis-cli -p 6455 EVAL $'return \' 5 \' * 2' 0
	{script: "return ' 5 ' * 2",
		want: ":10\r\n"},
	// redis-cli -p 6455 EVAL $'return \'1e2\' + 0' 0
	{script: "return '1e2' + 0",
		want: ":100\r\n"},
	// redis-cli -p 6455 EVAL $'return \'abc\' + 1' 0
	{script: "return 'abc' + 1",
		want: "-ERR user_script:1: attempt to perform arithmetic on a string value script: 3873d685c167fe7cb897e2e6baa1a014d9267373, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'return #{1, 2, nil, 4}' 0
	{script: "return #{1, 2, nil, 4}",
		want: ":4\r\n"},
	// redis-cli -p 6455 EVAL 'local t = {} t[1]=1 t[2]=2 t[4]=4 return #t' 0
	{script: "local t = {} t[1]=1 t[2]=2 t[4]=4 return #t",
		want: ":4\r\n"},
	// redis-cli -p 6455 EVAL $'return math.max(1, \'5\')' 0
	{script: "return math.max(1, '5')",
		want: ":5\r\n"},
	// redis-cli -p 6455 EVAL 'return string.rep(5, 2)' 0
	{script: "return string.rep(5, 2)",
		want: "$2\r\n55\r\n"},
	// redis-cli -p 6455 EVAL $'return (\'x\'):rep(\'3\')' 0
	{script: "return ('x'):rep('3')",
		want: "$3\r\nxxx\r\n"},
	// redis-cli -p 6455 EVAL $'return string.sub(\'hello\', \'2\', 3.9)' 0
	{script: "return string.sub('hello', '2', 3.9)",
		want: "$2\r\nel\r\n"},
	// redis-cli -p 6455 EVAL $'return string.byte(\'A\')' 0
	{script: "return string.byte('A')",
		want: ":65\r\n"},
	// redis-cli -p 6455 EVAL $'return {string.byte(\'abc\', 1, -1)}' 0
	{script: "return {string.byte('abc', 1, -1)}",
		want: "*3\r\n:97\r\n:98\r\n:99\r\n"},
	// redis-cli -p 6455 EVAL 'return string.char(72, 105)' 0
	{script: "return string.char(72, 105)",
		want: "$2\r\nHi\r\n"},
	// redis-cli -p 6455 EVAL $'return string.find(\'hello\', \'l\')' 0
	{script: "return string.find('hello', 'l')",
		want: ":3\r\n"},
	// redis-cli -p 6455 EVAL $'return {string.find(\'a.b\', \'.\', 1, true)}' 0
	{script: "return {string.find('a.b', '.', 1, true)}",
		want: "*2\r\n:2\r\n:2\r\n"},
	// redis-cli -p 6455 EVAL $'return string.format(\'%5.3s|%-8d|%+d|% d|%05d|%x|%#x|%#o|%e|%G\', \'abcdef\', 42, 7, 7, -42, 255, 255, 8, 0.000123, 1e-10)' 0
	{script: "return string.format('%5.3s|%-8d|%+d|% d|%05d|%x|%#x|%#o|%e|%G', 'abcdef', 42, 7, 7, -42, 255, 255, 8, 0.000123, 1e-10)",
		want: "$57\r\n  abc|42      |+7| 7|-0042|ff|0xff|010|1.230000e-04|1E-10\r\n"},
	// redis-cli -p 6455 EVAL $'return string.format(\'%10.4f|%-10.2e|%g|%g|%g\', math.pi, -12345.6789, 100000, 1000000, 1e-5)' 0
	{script: "return string.format('%10.4f|%-10.2e|%g|%g|%g', math.pi, -12345.6789, 100000, 1000000, 1e-5)",
		want: "$40\r\n    3.1416|-1.23e+04 |100000|1e+06|1e-05\r\n"},
	// redis-cli -p 6455 EVAL $'return string.format(\'%c%c%c\', 76, 117, 97)' 0
	{script: "return string.format('%c%c%c', 76, 117, 97)",
		want: "$3\r\nLua\r\n"},
	// redis-cli -p 6455 EVAL $'return string.format(\'%q\', 1/3)' 0
	{script: "return string.format('%q', 1/3)",
		want: "$18\r\n\"0.33333333333333\"\r\n"},
	// redis-cli -p 6455 EVAL $'return string.format(\'%d\', 2^53)' 0
	{script: "return string.format('%d', 2^53)",
		want: "$16\r\n9007199254740992\r\n"},
	// redis-cli -p 6455 EVAL $'return string.format(\'%.0f\', 0.5)' 0
	{script: "return string.format('%.0f', 0.5)",
		want: "$1\r\n0\r\n"},
	// redis-cli -p 6455 EVAL $'return string.format(\'%.0f\', 1.5)' 0
	{script: "return string.format('%.0f', 1.5)",
		want: "$1\r\n2\r\n"},
	// redis-cli -p 6455 EVAL $'return string.format(\'%5.1s|\', \'xyz\')' 0
	{script: "return string.format('%5.1s|', 'xyz')",
		want: "$6\r\n    x|\r\n"},
	// redis-cli -p 6455 EVAL $'return string.format(\'%#g\', 1)' 0
	{script: "return string.format('%#g', 1)",
		want: "$7\r\n1.00000\r\n"},
	// redis-cli -p 6455 EVAL $'return string.format(\'%#.3g\', 1)' 0
	{script: "return string.format('%#.3g', 1)",
		want: "$4\r\n1.00\r\n"},
	// redis-cli -p 6455 EVAL $'return string.format(\'%g\', 0/0)' 0
	{script: "return string.format('%g', 0/0)",
		want: "$4\r\n-nan\r\n"},
	// redis-cli -p 6455 EVAL $'return string.format(\'%f\', 1/0)' 0
	{script: "return string.format('%f', 1/0)",
		want: "$3\r\ninf\r\n"},
	// redis-cli -p 6455 EVAL $'return string.format(\'%s\', nil)' 0
	{script: "return string.format('%s', nil)",
		want: "-ERR user_script:1: bad argument #2 to 'format' (string expected, got nil) script: 26f8f7a3e95cdd62565575aed83f6787b72b4cf7, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'return tostring(nil) .. tostring(true)' 0
	{script: "return tostring(nil) .. tostring(true)",
		want: "$7\r\nniltrue\r\n"},
	// redis-cli -p 6455 EVAL $'return table.concat({1, 2.5, \'x\'}, \', \')' 0
	{script: "return table.concat({1, 2.5, 'x'}, ', ')",
		want: "$9\r\n1, 2.5, x\r\n"},
	// redis-cli -p 6455 EVAL 'return table.concat({1, {}, 3})' 0
	{script: "return table.concat({1, {}, 3})",
		want: "-ERR user_script:1: invalid value (table) at index 2 in table for 'concat' script: 1256855af13e156c2831028e4a486ab1d403bde8, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return table.concat({}, \'x\')' 0
	{script: "return table.concat({}, 'x')",
		want: "$0\r\n\r\n"},
	// redis-cli -p 6455 EVAL $'return table.concat({\'a\',\'b\',\'c\'}, \'-\', 2, 3)' 0
	{script: "return table.concat({'a','b','c'}, '-', 2, 3)",
		want: "$3\r\nb-c\r\n"},
	// redis-cli -p 6455 EVAL 'local t = {3,1,2} table.sort(t) return t' 0
	{script: "local t = {3,1,2} table.sort(t) return t",
		want: "*3\r\n:1\r\n:2\r\n:3\r\n"},
	// redis-cli -p 6455 EVAL $'local t = {\'b\',\'a\',\'c\'} table.sort(t, function(a,b) return a > b end) return t' 0
	{script: "local t = {'b','a','c'} table.sort(t, function(a,b) return a > b end) return t",
		want: "*3\r\n$1\r\nc\r\n$1\r\nb\r\n$1\r\na\r\n"},
	// redis-cli -p 6455 EVAL 'local t = {1,2,3} table.insert(t, 2, 9) return t' 0
	{script: "local t = {1,2,3} table.insert(t, 2, 9) return t",
		want: "*4\r\n:1\r\n:9\r\n:2\r\n:3\r\n"},
	// redis-cli -p 6455 EVAL 'local t = {1,2,3} return {table.remove(t), #t}' 0
	{script: "local t = {1,2,3} return {table.remove(t), #t}",
		want: "*2\r\n:3\r\n:2\r\n"},
	// redis-cli -p 6455 EVAL 'local t = {1,2,3} return {table.remove(t, 1), t[1]}' 0
	{script: "local t = {1,2,3} return {table.remove(t, 1), t[1]}",
		want: "*2\r\n:1\r\n:2\r\n"},
	// redis-cli -p 6455 EVAL 'return table.getn({1,2})' 0
	{script: "return table.getn({1,2})",
		want: ":2\r\n"},
	// redis-cli -p 6455 EVAL 'return table.maxn({1,nil,3})' 0
	{script: "return table.maxn({1,nil,3})",
		want: ":3\r\n"},
	// redis-cli -p 6455 EVAL $'return select(\'#\', 1, nil, 3)' 0
	{script: "return select('#', 1, nil, 3)",
		want: ":3\r\n"},
	// redis-cli -p 6455 EVAL $'return {select(2, \'a\', \'b\', \'c\')}' 0
	{script: "return {select(2, 'a', 'b', 'c')}",
		want: "*2\r\n$1\r\nb\r\n$1\r\nc\r\n"},
	// redis-cli -p 6455 EVAL $'return select(-1, \'a\', \'b\')' 0
	{script: "return select(-1, 'a', 'b')",
		want: "$1\r\nb\r\n"},
	// redis-cli -p 6455 EVAL 'return {unpack({1,2,3})}' 0
	{script: "return {unpack({1,2,3})}",
		want: "*3\r\n:1\r\n:2\r\n:3\r\n"},
	// redis-cli -p 6455 EVAL 'return {unpack({1,2,3}, 2)}' 0
	{script: "return {unpack({1,2,3}, 2)}",
		want: "*2\r\n:2\r\n:3\r\n"},
	// redis-cli -p 6455 EVAL 'return type(next({}))' 0
	{script: "return type(next({}))",
		want: "$3\r\nnil\r\n"},
	// redis-cli -p 6455 EVAL $'return rawequal(\'a\', \'a\')' 0
	{script: "return rawequal('a', 'a')",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL 'return rawlen' 0
	{script: "return rawlen",
		want: "-ERR user_script:1: Script attempted to access nonexistent global variable 'rawlen' script: ed47cb414b36a1a6d28657111c90e9969a0496fe, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'return math.floor(-3.5)' 0
	{script: "return math.floor(-3.5)",
		want: ":-4\r\n"},
	// redis-cli -p 6455 EVAL 'return math.ceil(-3.5)' 0
	{script: "return math.ceil(-3.5)",
		want: ":-3\r\n"},
	// redis-cli -p 6455 EVAL 'return tostring(math.sqrt(2))' 0
	{script: "return tostring(math.sqrt(2))",
		want: "$15\r\n1.4142135623731\r\n"},
	// redis-cli -p 6455 EVAL 'return tostring(math.abs(-0))' 0
	{script: "return tostring(math.abs(-0))",
		want: "$1\r\n0\r\n"},
	// redis-cli -p 6455 EVAL 'return math.max(3, 9, 1)' 0
	{script: "return math.max(3, 9, 1)",
		want: ":9\r\n"},
	// redis-cli -p 6455 EVAL 'return tostring(math.fmod(7, 3))' 0
	{script: "return tostring(math.fmod(7, 3))",
		want: "$1\r\n1\r\n"},
	// redis-cli -p 6455 EVAL 'return {math.modf(3.7)}' 0
	{script: "return {math.modf(3.7)}",
		want: "*2\r\n:3\r\n:0\r\n"},
	// redis-cli -p 6455 EVAL 'return tostring(math.log(100, 10))' 0
	{script: "return tostring(math.log(100, 10))",
		want: "$15\r\n4.6051701859881\r\n"},
	// redis-cli -p 6455 EVAL 'return tostring(math.log10(1000))' 0
	{script: "return tostring(math.log10(1000))",
		want: "$1\r\n3\r\n"},
	// redis-cli -p 6455 EVAL 'return tostring(math.exp(1))' 0
	{script: "return tostring(math.exp(1))",
		want: "$14\r\n2.718281828459\r\n"},
	// redis-cli -p 6455 EVAL 'return tostring(2^0.5)' 0
	{script: "return tostring(2^0.5)",
		want: "$15\r\n1.4142135623731\r\n"},
	// redis-cli -p 6455 EVAL 'return tostring(math.huge)' 0
	{script: "return tostring(math.huge)",
		want: "$3\r\ninf\r\n"},
	// redis-cli -p 6455 EVAL 'return tostring(-math.huge)' 0
	{script: "return tostring(-math.huge)",
		want: "$4\r\n-inf\r\n"},
	// redis-cli -p 6455 EVAL 'return math.frexp(8)' 0
	{script: "return math.frexp(8)",
		want: ":0\r\n"},
	// redis-cli -p 6455 EVAL 'return math.ldexp(1, 10)' 0
	{script: "return math.ldexp(1, 10)",
		want: ":1024\r\n"},
	// redis-cli -p 6455 EVAL 'return tostring(math.tan(1))' 0
	{script: "return tostring(math.tan(1))",
		want: "$15\r\n1.5574077246549\r\n"},
	// redis-cli -p 6455 EVAL 'return tostring(math.atan2(1, 2))' 0
	{script: "return tostring(math.atan2(1, 2))",
		want: "$16\r\n0.46364760900081\r\n"},
	// redis-cli -p 6455 EVAL 'return math.mod(7, 3)' 0
	{script: "return math.mod(7, 3)",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL 'return tostring(math.deg(math.pi))' 0
	{script: "return tostring(math.deg(math.pi))",
		want: "$3\r\n180\r\n"},
	// redis-cli -p 6455 EVAL 'return bit.band(0xff, 0x0f)' 0
	{script: "return bit.band(0xff, 0x0f)",
		want: ":15\r\n"},
	// redis-cli -p 6455 EVAL 'return bit.bor(1, 2, 4)' 0
	{script: "return bit.bor(1, 2, 4)",
		want: ":7\r\n"},
	// redis-cli -p 6455 EVAL 'return bit.bxor(5, 3)' 0
	{script: "return bit.bxor(5, 3)",
		want: ":6\r\n"},
	// redis-cli -p 6455 EVAL 'return bit.bnot(0)' 0
	{script: "return bit.bnot(0)",
		want: ":-1\r\n"},
	// redis-cli -p 6455 EVAL 'return bit.lshift(1, 31)' 0
	{script: "return bit.lshift(1, 31)",
		want: ":-2147483648\r\n"},
	// redis-cli -p 6455 EVAL 'return bit.rshift(-1, 28)' 0
	{script: "return bit.rshift(-1, 28)",
		want: ":15\r\n"},
	// redis-cli -p 6455 EVAL 'return bit.arshift(-256, 4)' 0
	{script: "return bit.arshift(-256, 4)",
		want: ":-16\r\n"},
	// redis-cli -p 6455 EVAL 'return bit.rol(0x12345678, 8)' 0
	{script: "return bit.rol(0x12345678, 8)",
		want: ":878082066\r\n"},
	// redis-cli -p 6455 EVAL 'return bit.ror(0x12345678, 8)' 0
	{script: "return bit.ror(0x12345678, 8)",
		want: ":2014458966\r\n"},
	// redis-cli -p 6455 EVAL 'return bit.tohex(255)' 0
	{script: "return bit.tohex(255)",
		want: "$8\r\n000000ff\r\n"},
	// redis-cli -p 6455 EVAL 'return bit.tohex(-1, -4)' 0
	{script: "return bit.tohex(-1, -4)",
		want: "$4\r\nFFFF\r\n"},
	// redis-cli -p 6455 EVAL 'return bit.bswap(0x12345678)' 0
	{script: "return bit.bswap(0x12345678)",
		want: ":2018915346\r\n"},
	// redis-cli -p 6455 EVAL 'return bit.tobit(2^32 + 5)' 0
	{script: "return bit.tobit(2^32 + 5)",
		want: ":5\r\n"},
	// redis-cli -p 6455 EVAL 'return bit.tobit(1.5)' 0
	{script: "return bit.tobit(1.5)",
		want: ":2\r\n"},
	// redis-cli -p 6455 EVAL 'return bit.tobit(2.5)' 0
	{script: "return bit.tobit(2.5)",
		want: ":2\r\n"},
	// redis-cli -p 6455 EVAL $'return bit.band(\'x\')' 0
	{script: "return bit.band('x')",
		want: "-ERR user_script:1: bad argument #1 to 'band' (number expected, got string) script: d35c9a1d4f4825ae2c0656c3cb8c9f397ca6d9b1, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'return bit.tohex(1, 20)' 0
	{script: "return bit.tohex(1, 20)",
		want: "$8\r\n00000001\r\n"},
	// redis-cli -p 6455 EVAL $'return string.upper(\'abc\') .. string.lower(\'DEF\') .. string.reverse(\'xyz\') .. string.len(\'hello\')' 0
	{script: "return string.upper('abc') .. string.lower('DEF') .. string.reverse('xyz') .. string.len('hello')",
		want: "$10\r\nABCdefzyx5\r\n"},
	// redis-cli -p 6455 EVAL $'return string.gsub(\'hello world\', \'o\', \'0\')' 0
	{script: "return string.gsub('hello world', 'o', '0')",
		want: "$11\r\nhell0 w0rld\r\n"},
	// redis-cli -p 6455 EVAL $'return {string.gsub(\'abc\', \'%w\', \'%0%0\')}' 0
	{script: "return {string.gsub('abc', '%w', '%0%0')}",
		want: "*2\r\n$6\r\naabbcc\r\n:3\r\n"},
	// redis-cli -p 6455 EVAL $'return {string.gsub(\'abc\', \'b\', {b = \'X\'})}' 0
	{script: "return {string.gsub('abc', 'b', {b = 'X'})}",
		want: "*2\r\n$3\r\naXc\r\n:1\r\n"},
	// redis-cli -p 6455 EVAL $'return {string.gsub(\'abc\', \'(b)\', function(c) return c:upper() end)}' 0
	{script: "return {string.gsub('abc', '(b)', function(c) return c:upper() end)}",
		want: "*2\r\n$3\r\naBc\r\n:1\r\n"},
	// redis-cli -p 6455 EVAL $'return {string.match(\'key:123\', \'(%a+):(%d+)\')}' 0
	{script: "return {string.match('key:123', '(%a+):(%d+)')}",
		want: "*2\r\n$3\r\nkey\r\n$3\r\n123\r\n"},
	// redis-cli -p 6455 EVAL $'local r = {} for w in string.gmatch(\'a b c\', \'%a\') do r[#r+1] = w end return r' 0
	{script: "local r = {} for w in string.gmatch('a b c', '%a') do r[#r+1] = w end return r",
		want: "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"},
	// redis-cli -p 6455 EVAL $'return string.find(\'abc\', \'[\')' 0
	{script: "return string.find('abc', '[')",
		want: "-ERR user_script:1: malformed pattern (missing ']') script: 52eefdf51a917058f63ec416a2655501f5a7bdcf, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return string.rep(\'ab\', 3, \',\')' 0
	{script: "return string.rep('ab', 3, ',')",
		want: "$6\r\nababab\r\n"},
	// redis-cli -p 6455 EVAL 'return tostring(1e100)' 0
	{script: "return tostring(1e100)",
		want: "$6\r\n1e+100\r\n"},
	// redis-cli -p 6455 EVAL 'return tostring(-1e-100)' 0
	{script: "return tostring(-1e-100)",
		want: "$7\r\n-1e-100\r\n"},
	// redis-cli -p 6455 EVAL 'return tostring(123456.789)' 0
	{script: "return tostring(123456.789)",
		want: "$10\r\n123456.789\r\n"},
	// redis-cli -p 6455 EVAL $'return 12345678901234 .. \'\'' 0
	{script: "return 12345678901234 .. ''",
		want: "$14\r\n12345678901234\r\n"},
	// redis-cli -p 6455 EVAL $'return tonumber(\'\')' 0
	{script: "return tonumber('')",
		want: "$-1\r\n"},
	// redis-cli -p 6455 EVAL $'return tonumber(\'  \')' 0
	{script: "return tonumber('  ')",
		want: "$-1\r\n"},
	// redis-cli -p 6455 EVAL $'return tonumber(\'1e\')' 0
	{script: "return tonumber('1e')",
		want: "$-1\r\n"},
	// redis-cli -p 6455 EVAL $'return tonumber(\'-0x10\')' 0
	{script: "return tonumber('-0x10')",
		want: ":-16\r\n"},
	// redis-cli -p 6455 EVAL $'return tonumber(\'10\', 2)' 0
	{script: "return tonumber('10', 2)",
		want: ":2\r\n"},
	// redis-cli -p 6455 EVAL $'return tonumber(\'ff\', 16)' 0
	{script: "return tonumber('ff', 16)",
		want: ":255\r\n"},
	// redis-cli -p 6455 EVAL $'return tonumber(\'-ff\', 16)' 0
	{script: "return tonumber('-ff', 16)",
		want: ":-9223372036854775808\r\n"},
	// redis-cli -p 6455 EVAL $'return tonumber(\'1.5\', 10)' 0
	{script: "return tonumber('1.5', 10)",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL 'return tonumber(nil)' 0
	{script: "return tonumber(nil)",
		want: "$-1\r\n"},
	// redis-cli -p 6455 EVAL 'return tonumber()' 0
	{script: "return tonumber()",
		want: "-ERR user_script:1: bad argument #1 to 'tonumber' (value expected) script: f4853cecaf5a268432ec56257ce33f680863445e, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'return tonumber({})' 0
	{script: "return tonumber({})",
		want: "$-1\r\n"},
	// redis-cli -p 6455 EVAL $'return tostring(tonumber(\'-inf\'))' 0
	{script: "return tostring(tonumber('-inf'))",
		want: "$4\r\n-inf\r\n"},
	// redis-cli -p 6455 EVAL $'return tonumber(\'0x1p3\')' 0
	{script: "return tonumber('0x1p3')",
		want: ":8\r\n"},
	// redis-cli -p 6455 EVAL $'return tonumber(\'infinity\') > 0' 0
	{script: "return tonumber('infinity') > 0",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL 'return coroutine.running()' 0
	{script: "return coroutine.running()",
		want: "$-1\r\n"},
	// redis-cli -p 6455 EVAL 'local co = coroutine.create(function(a) local b = coroutine.yield(a + 1) return b * 2 end) local _, x = coroutine.resume(co, 1) local _, y = coroutine.resume(co, 10) return {x, y, coroutine.status(co)}' 0
	{script: "local co = coroutine.create(function(a) local b = coroutine.yield(a + 1) return b * 2 end) local _, x = coroutine.resume(co, 1) local _, y = coroutine.resume(co, 10) return {x, y, coroutine.status(co)}",
		want: "*3\r\n:2\r\n:20\r\n$4\r\ndead\r\n"},
	// redis-cli -p 6455 EVAL 'local co = coroutine.create(function() end) coroutine.resume(co) return {coroutine.resume(co)}' 0
	{script: "local co = coroutine.create(function() end) coroutine.resume(co) return {coroutine.resume(co)}",
		want: "*2\r\n$-1\r\n$28\r\ncannot resume dead coroutine\r\n"},
	// redis-cli -p 6455 EVAL 'return coroutine.yield(1)' 0
	{script: "return coroutine.yield(1)",
		want: "-ERR attempt to yield across metamethod/C-call boundary script: c0c3d8a4cbcee35be6b566d6fb3a7a74f0fdcc6f, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'local f = coroutine.wrap(function() coroutine.yield(1) end) f() f() return f()' 0
	{script: "local f = coroutine.wrap(function() coroutine.yield(1) end) f() f() return f()",
		want: "-ERR user_script:1: cannot resume dead coroutine script: 8dcc3ab396b484b9a292972cf54fff32cbccec95, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'return {pcall(coroutine.create, print)}' 0
	{script: "return {pcall(coroutine.create, print)}",
		want: "-ERR user_script:1: Script attempted to access nonexistent global variable 'print' script: 89a382ae0583f83d814926d69332712626765ebe, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'return {pcall(string.rep)}' 0
	{script: "return {pcall(string.rep)}",
		want: "*2\r\n$-1\r\n$54\r\nbad argument #1 to '?' (string expected, got no value)\r\n"},
	// redis-cli -p 6455 EVAL $'return {pcall(string.rep, \'x\')}' 0
	{script: "return {pcall(string.rep, 'x')}",
		want: "*2\r\n$-1\r\n$54\r\nbad argument #2 to '?' (number expected, got no value)\r\n"},
	// redis-cli -p 6455 EVAL 'return select(2, pcall(error))' 0
	{script: "return select(2, pcall(error))",
		want: "$-1\r\n"},
	// redis-cli -p 6455 EVAL 'return {pcall(error, nil)}' 0
	{script: "return {pcall(error, nil)}",
		want: "*1\r\n$-1\r\n"},
	// redis-cli -p 6455 EVAL 'return {xpcall(function() return 1, 2 end, print)}' 0
	{script: "return {xpcall(function() return 1, 2 end, print)}",
		want: "-ERR user_script:1: Script attempted to access nonexistent global variable 'print' script: d2a27347d037a174241adf0aae21ee8dba4296ac, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return {xpcall(function() error(\'x\') end, function(m) return \'h:\' .. m end)}' 0
	{script: "return {xpcall(function() error('x') end, function(m) return 'h:' .. m end)}",
		want: "*2\r\n$-1\r\n$18\r\nh:user_script:1: x\r\n"},
	// redis-cli -p 6455 EVAL $'return {xpcall(nil, function(m) return \'h:\' .. m end)}' 0
	{script: "return {xpcall(nil, function(m) return 'h:' .. m end)}",
		want: "*2\r\n$-1\r\n$29\r\nh:attempt to call a nil value\r\n"},
	// redis-cli -p 6455 EVAL 'return {assert(1, 2, 3)}' 0
	{script: "return {assert(1, 2, 3)}",
		want: "*3\r\n:1\r\n:2\r\n:3\r\n"},
	// redis-cli -p 6455 EVAL 'assert(false)' 0
	{script: "assert(false)",
		want: "-ERR user_script:1: assertion failed! script: 2878c2ae3cafd05c022d4f19e4b521d97df409a2, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'assert(nil, \'msg\')' 0
	{script: "assert(nil, 'msg')",
		want: "-ERR user_script:1: msg script: 4793a8d9e7a612cce1b627528068a30822fa54b7, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'assert(false, 12)' 0
	{script: "assert(false, 12)",
		want: "-ERR user_script:1: 12 script: fe4a5ec4594940024ce243ad9138d0d1ce3c9141, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'assert()' 0
	{script: "assert()",
		want: "-ERR user_script:1: bad argument #1 to 'assert' (value expected) script: 63ae10d79f4a0c4781e4e9b2dacd5c9896a57556, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'local t = setmetatable({}, {__tostring = function() return \'T!\' end}) return tostring(t)' 0
	{script: "local t = setmetatable({}, {__tostring = function() return 'T!' end}) return tostring(t)",
		want: "$2\r\nT!\r\n"},
	// redis-cli -p 6455 EVAL $'local t = setmetatable({}, {__index = function(t, k) return k .. \'!\' end}) return t.x' 0
	{script: "local t = setmetatable({}, {__index = function(t, k) return k .. '!' end}) return t.x",
		want: "$2\r\nx!\r\n"},
	// redis-cli -p 6455 EVAL $'local t = setmetatable({}, {__metatable = \'locked\'}) return getmetatable(t)' 0
	{script: "local t = setmetatable({}, {__metatable = 'locked'}) return getmetatable(t)",
		want: "$6\r\nlocked\r\n"},
	// redis-cli -p 6455 EVAL $'local t = setmetatable({}, {__metatable = \'locked\'}) setmetatable(t, {})' 0
	{script: "local t = setmetatable({}, {__metatable = 'locked'}) setmetatable(t, {})",
		want: "-ERR user_script:1: cannot change a protected metatable script: 656b6d7d2ee4e5e74e6465d6ecee289169ed97cd, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'local t = setmetatable({}, {__call = function(self, a) return a * 2 end}) return t(21)' 0
	{script: "local t = setmetatable({}, {__call = function(self, a) return a * 2 end}) return t(21)",
		want: ":42\r\n"},
	// redis-cli -p 6455 EVAL 'local mt = {__add = function(a, b) return 42 end} local t = setmetatable({}, mt) return t + 1' 0
	{script: "local mt = {__add = function(a, b) return 42 end} local t = setmetatable({}, mt) return t + 1",
		want: ":42\r\n"},
	// redis-cli -p 6455 EVAL 'local mt = {__eq = function() return true end} local a = setmetatable({}, mt) local b = setmetatable({}, mt) return a == b' 0
	{script: "local mt = {__eq = function() return true end} local a = setmetatable({}, mt) local b = setmetatable({}, mt) return a == b",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL 'local mt = {__lt = function() return true end} local a = setmetatable({}, mt) return a < setmetatable({}, mt)' 0
	{script: "local mt = {__lt = function() return true end} local a = setmetatable({}, mt) return a < setmetatable({}, mt)",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL $'local mt = {__concat = function(a, b) return \'cc\' end} return setmetatable({}, mt) .. \'x\'' 0
	{script: "local mt = {__concat = function(a, b) return 'cc' end} return setmetatable({}, mt) .. 'x'",
		want: "$2\r\ncc\r\n"},
	// redis-cli -p 6455 EVAL 'local mt = {__unm = function() return 7 end} return -setmetatable({}, mt)' 0
	{script: "local mt = {__unm = function() return 7 end} return -setmetatable({}, mt)",
		want: ":7\r\n"},
	// redis-cli -p 6455 EVAL 'local t = setmetatable({}, {__newindex = function(t, k, v) rawset(t, k, v * 2) end}) t.a = 2 return t.a' 0
	{script: "local t = setmetatable({}, {__newindex = function(t, k, v) rawset(t, k, v * 2) end}) t.a = 2 return t.a",
		want: ":4\r\n"},
	// redis-cli -p 6455 EVAL $'return getmetatable(\'\').__index == string' 0
	{script: "return getmetatable('').__index == string",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL $'return (\'abc\'):upper()' 0
	{script: "return ('abc'):upper()",
		want: "$3\r\nABC\r\n"},
	// redis-cli -p 6455 EVAL 'return #KEYS' 0
	{script: "return #KEYS",
		want: ":0\r\n"},
	// redis-cli -p 6455 EVAL 'return ARGV' 0
	{script: "return ARGV",
		want: "*0\r\n"},
	// redis-cli -p 6455 EVAL 'return type(_G)' 0
	{script: "return type(_G)",
		want: "$5\r\ntable\r\n"},
	// redis-cli -p 6455 EVAL 'return _G._G == _G' 0
	{script: "return _G._G == _G",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL 'return _G.redis == redis' 0
	{script: "return _G.redis == redis",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL $'return string == getmetatable(\'\').__index' 0
	{script: "return string == getmetatable('').__index",
		want: ":1\r\n"},
	// redis-cli -p 6455 EVAL $'return {loadstring(\'return ...\')(1, 2)}' 0
	{script: "return {loadstring('return ...')(1, 2)}",
		want: "*2\r\n:1\r\n:2\r\n"},
	// redis-cli -p 6455 EVAL $'return {loadstring(\'syntax error here\')}' 0
	{script: "return {loadstring('syntax error here')}",
		want: "*0\r\n"},
	// redis-cli -p 6455 EVAL $'return {loadstring(\'x\', \'mychunk\')}' 0
	{script: "return {loadstring('x', 'mychunk')}",
		want: "*0\r\n"},
	// redis-cli -p 6455 EVAL $'return {loadstring(\'return 1 +\', \'=mine\')}' 0
	{script: "return {loadstring('return 1 +', '=mine')}",
		want: "*0\r\n"},
	// redis-cli -p 6455 EVAL $'return {loadstring(\'return 1 +\', \'@file.lua\')}' 0
	{script: "return {loadstring('return 1 +', '@file.lua')}",
		want: "*0\r\n"},
	// redis-cli -p 6455 EVAL 'return {load(function() return nil end)}' 0
	{script: "return {load(function() return nil end)}",
		want: "*1\r\n$-1\r\n"},
	// redis-cli -p 6455 EVAL $'local parts = {\'return \', \'4\', \'2\'} local i = 0 return load(function() i = i + 1 return parts[i] end)()' 0
	{script: "local parts = {'return ', '4', '2'} local i = 0 return load(function() i = i + 1 return parts[i] end)()",
		want: ":42\r\n"},
	// redis-cli -p 6455 EVAL 'return {load(function() return {} end)}' 0
	{script: "return {load(function() return {} end)}",
		want: "*0\r\n"},
	// redis-cli -p 6455 EVAL 'return unpack({}, 1, 8000)' 0
	{script: "return unpack({}, 1, 8000)",
		want: "-ERR user_script:1: too many results to unpack script: 5b1dac8de4fd064f21a51743e90e8ec7995a87c1, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'return #{unpack({}, 1, 7998)}' 0
	{script: "return #{unpack({}, 1, 7998)}",
		want: "-ERR user_script:1: too many results to unpack script: 5cba909eb1e4bc6d5a769fd34a8b4fff978b4b04, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return string.byte(string.rep(\'x\', 9000), 1, -1)' 0
	{script: "return string.byte(string.rep('x', 9000), 1, -1)",
		want: "-ERR user_script:1: stack overflow (string slice too long) script: 18c16b39594d14710e753dd25932eabdd0748b76, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return collectgarbage(\'bad\')' 0
	{script: "return collectgarbage('bad')",
		want: "-ERR user_script:1: bad argument #1 to 'collectgarbage' (invalid option 'bad') script: 76c87f2ae346c9f77c0637a3f32e5a7f34d2e55a, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL 'return collectgarbage()' 0
	{script: "return collectgarbage()",
		want: ":0\r\n"},
	// redis-cli -p 6455 EVAL $'return collectgarbage(\'step\')' 0
	{script: "return collectgarbage('step')",
		want: "$-1\r\n"},
	// redis-cli -p 6455 EVAL 'local t = {a=1} t.a = nil return next(t)' 0
	{script: "local t = {a=1} t.a = nil return next(t)",
		want: "$-1\r\n"},
	// redis-cli -p 6455 EVAL $'return string.find(\'abc\', \'a%\')' 0
	{script: "return string.find('abc', 'a%')",
		want: "-ERR user_script:1: malformed pattern (ends with '%') script: 6b875a16991b3d90f98d24a3f9e73028ca1f4aff, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return string.find(\'abc\', \'%f\')' 0
	{script: "return string.find('abc', '%f')",
		want: "-ERR user_script:1: missing '[' after '%f' in pattern script: fd0f72268f01136e562d49fa6d825c710c5b0a50, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return string.find(\'abc\', \'%fx\')' 0
	{script: "return string.find('abc', '%fx')",
		want: "-ERR user_script:1: missing '[' after '%f' in pattern script: 0b7435f309234f6b553a0ca2a7dfbf4b5a4f798f, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return string.find(\'a[b]\', \'%b[]\')' 0
	{script: "return string.find('a[b]', '%b[]')",
		want: ":2\r\n"},
	// redis-cli -p 6455 EVAL $'return string.find(\'abc\', \'%b\')' 0
	{script: "return string.find('abc', '%b')",
		want: "-ERR user_script:1: unbalanced pattern script: 5abc18984f07f4d34860ebf835a8593c2a03d0c4, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return string.find(\'abc\', \'[]]\')' 0
	{script: "return string.find('abc', '[]]')",
		want: "$-1\r\n"},
	// redis-cli -p 6455 EVAL $'return string.find(\'a]c\', \'[]]\')' 0
	{script: "return string.find('a]c', '[]]')",
		want: ":2\r\n"},
	// redis-cli -p 6455 EVAL $'return string.find(\'abc\', \'[^]\')' 0
	{script: "return string.find('abc', '[^]')",
		want: "-ERR user_script:1: malformed pattern (missing ']') script: b67f591e9982d593018ae534ae4dcd427d19df00, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return string.find(\'abc\', \'[a%]\')' 0
	{script: "return string.find('abc', '[a%]')",
		want: "-ERR user_script:1: malformed pattern (missing ']') script: eac955607cfc0297c36c2074c817676332cd092d, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return string.find(\'abc\', \'[\', 1, true)' 0
	{script: "return string.find('abc', '[', 1, true)",
		want: "$-1\r\n"},
	// redis-cli -p 6455 EVAL $'return string.match(\'abc\', \'(\')' 0
	{script: "return string.match('abc', '(')",
		want: "-ERR user_script:1: unfinished capture script: 381c1b114aa04d719cc079d81faf039c28a0ad73, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return string.match(\'abc\', \')\')' 0
	{script: "return string.match('abc', ')')",
		want: "-ERR user_script:1: invalid pattern capture script: 5220ef521cbfdde219a6191514b3bf0d5cf94780, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return string.gsub(\'abc\', \'%\', \'x\')' 0
	{script: "return string.gsub('abc', '%', 'x')",
		want: "-ERR user_script:1: malformed pattern (ends with '%') script: 9f39a04d9953b9d16eb4f88eb5885e8fa7206081, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return {string.byte(\'hello\', -3, -1)}' 0
	{script: "return {string.byte('hello', -3, -1)}",
		want: "*3\r\n:108\r\n:108\r\n:111\r\n"},
	// redis-cli -p 6455 EVAL $'return {string.byte(\'hello\', 10)}' 0
	{script: "return {string.byte('hello', 10)}",
		want: "*0\r\n"},
	// redis-cli -p 6455 EVAL $'return {string.byte(\'hello\', 0)}' 0
	{script: "return {string.byte('hello', 0)}",
		want: "*0\r\n"},
	// redis-cli -p 6455 EVAL $'return string.sub(\'hello\', 2)' 0
	{script: "return string.sub('hello', 2)",
		want: "$4\r\nello\r\n"},
	// redis-cli -p 6455 EVAL $'return string.sub(\'hello\', -3, -2)' 0
	{script: "return string.sub('hello', -3, -2)",
		want: "$2\r\nll\r\n"},
	// redis-cli -p 6455 EVAL $'return string.sub(\'hello\', 0, 100)' 0
	{script: "return string.sub('hello', 0, 100)",
		want: "$5\r\nhello\r\n"},
	// redis-cli -p 6455 EVAL $'return string.sub(\'hello\', 4, 2)' 0
	{script: "return string.sub('hello', 4, 2)",
		want: "$0\r\n\r\n"},
	// redis-cli -p 6455 EVAL $'return string.sub(\'hello\')' 0
	{script: "return string.sub('hello')",
		want: "-ERR user_script:1: bad argument #2 to 'sub' (number expected, got no value) script: 10e06b956e281f25f9da7cfa271142ea0bf6dcea, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return string.sub(\'hello\', \'x\')' 0
	{script: "return string.sub('hello', 'x')",
		want: "-ERR user_script:1: bad argument #2 to 'sub' (number expected, got string) script: 1f25c90b8f48add9e6e09ee9aaef34be32c58e6c, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return string.sub(\'hello\', \'2\', \'3\')' 0
	{script: "return string.sub('hello', '2', '3')",
		want: "$2\r\nel\r\n"},
	// redis-cli -p 6455 EVAL 'return table.concat({1, 2, nil, 3})' 0
	{script: "return table.concat({1, 2, nil, 3})",
		want: "-ERR user_script:1: invalid value (nil) at index 3 in table for 'concat' script: 40306fa64d88f3fe79aff641f2632d4f5e813d97, on @user_script:1.\r\n"},
	// redis-cli -p 6455 EVAL $'return (\'hello\'):sub(2, 3)' 0
	{script: "return ('hello'):sub(2, 3)",
		want: "$2\r\nel\r\n"},
	// redis-cli -p 6455 EVAL $'return (\'hello\'):byte()' 0
	{script: "return ('hello'):byte()",
		want: ":104\r\n"},
	// redis-cli -p 6455 EVAL 'return string.byte()' 0
	{script: "return string.byte()",
		want: "-ERR user_script:1: bad argument #1 to 'byte' (string expected, got no value) script: 30371f269decc301bbc519c7032935369e3d5607, on @user_script:1.\r\n"},
}

func bytesArgs(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// runCompat runs a case on a fresh Engine against host and renders the
// reply for the case's protocol.
func runCompat(e *Engine, host Host, c compatCase) string {
	proto := c.proto
	if proto == 0 {
		proto = 2
	}
	sha, err := e.Load([]byte(c.script))
	if err != nil {
		return string(resp.Append(nil, resp.Error(err.Error()), proto))
	}
	v := e.Run(sha, bytesArgs(c.keys), bytesArgs(c.args), host, Limits{})
	return string(resp.Append(nil, v, proto))
}

func TestRedisCompat(t *testing.T) {
	for i, c := range compatCases {
		h := newFakeHost()
		for _, s := range c.setup {
			h.Call(bytesArgs(s))
		}
		if got := runCompat(New(), h, c); got != c.want {
			t.Errorf("case %d %q (RESP%d)\n got %q\nwant %q", i, c.script, c.proto, got, c.want)
		}
	}
}

// TestRedisCompatLive checks the captured replies against a real Redis.
func TestRedisCompatLive(t *testing.T) {
	addr := os.Getenv("LOCKD_REDIS_ADDR") // a Redis 7.0 server of your own, or:
	if addr == "" {
		addr = startRedisServer(t)
	}
	for i, c := range compatCases {
		conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(conn)
		cmd := func(args ...string) string {
			fmt.Fprintf(conn, "*%d\r\n", len(args))
			for _, a := range args {
				fmt.Fprintf(conn, "$%d\r\n%s\r\n", len(a), a)
			}
			raw, err := readRawReply(r)
			if err != nil {
				t.Fatal(err)
			}
			return raw
		}
		if c.proto == 3 {
			cmd("HELLO", "3")
		}
		cmd("FLUSHALL")
		for _, s := range c.setup {
			cmd(s...)
		}
		args := append([]string{"EVAL", c.script, strconv.Itoa(len(c.keys))}, c.keys...)
		got := cmd(append(args, c.args...)...)
		conn.Close()
		if got != c.want {
			t.Errorf("case %d %q (RESP%d)\nredis %q\n want %q", i, c.script, c.proto, got, c.want)
		}
	}
}

// startRedisServer starts a throwaway redis-server (installed by make deps) on
// a free 127.0.0.1 port and returns its address once it answers PING.
func startRedisServer(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is required (make deps installs it): %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			fmt.Fprint(c, "PING\r\n")
			c.SetReadDeadline(time.Now().Add(time.Second))
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if line == "+PONG\r\n" {
				return addr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s did not answer PING within 10s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readRawReply reads one reply and returns its bytes as sent.
func readRawReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(line) < 3 {
		return "", fmt.Errorf("short line %q", line)
	}
	body := strings.TrimSuffix(line[1:], "\r\n")
	switch line[0] {
	case '$', '=', '!':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			return line, nil
		}
		buf := make([]byte, n+2)
		if _, err := ioReadFull(r, buf); err != nil {
			return "", err
		}
		return line + string(buf), nil
	case '*', '~', '>', '%', '|':
		n, _ := strconv.Atoi(body)
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		out := line
		for i := 0; i < n; i++ {
			s, err := readRawReply(r)
			if err != nil {
				return "", err
			}
			out += s
		}
		return out, nil
	}
	return line, nil
}

func ioReadFull(r *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
