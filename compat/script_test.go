package compat

// Scripting: EVAL/EVALSHA/_RO, SCRIPT, the Lua<->RESP conversions, redis.call
// and redis.pcall, error texts with their script suffix, and the commands a
// script may not run.

const cad = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`

var scriptCases = []tcase{
	{name: "EVAL conversions", steps: []step{
		cmd("EVAL", "return 1", "0"),
		cmd("EVAL", "return 3.99", "0"),
		cmd("EVAL", "return -3.99", "0"),
		cmd("EVAL", "return 'str'", "0"),
		cmd("EVAL", "return true", "0"),
		cmd("EVAL", "return false", "0"),
		cmd("EVAL", "return nil", "0"),
		cmd("EVAL", "return {1, 2, 3, 'x', {4, 'y'}}", "0"),
		cmd("EVAL", "return {1, 2, nil, 4}", "0"),
		cmd("EVAL", "return {}", "0"),
		cmd("EVAL", "return {ok='fine'}", "0"),
		cmd("EVAL", "return {err='bad thing'}", "0"),
		cmd("EVAL", "return {err='MYERR custom'}", "0"),
		cmd("EVAL", "return redis.status_reply('STATUS')", "0"),
		cmd("EVAL", "return redis.error_reply('MY error')", "0"),
		cmd("EVAL", "return redis.error_reply('no prefix')", "0"),
		cmd("EVAL", "return redis.sha1hex('')", "0"),
		cmd("EVAL", "return {KEYS[1], KEYS[2], ARGV[1], ARGV[2], #KEYS, #ARGV}", "2", "k1", "k2", "a1", "a2"),
		cmd("EVAL", "return 9007199254740993", "0"),
		cmd("EVAL", "return 1e100", "0"),
		cmd("EVAL", "return tostring(1e100)", "0"),
		cmd("EVAL", "return {1.5, 'a', true, false}", "0"),
	}},
	{name: "redis.call replies to Lua", steps: []step{
		cmd("SET", "s", "v"),
		cmd("HSET", "h", "f", "1"),
		cmd("EVAL", "return redis.call('get', 's')", "0"),
		cmd("EVAL", "return redis.call('get', 'missing')", "0"),
		cmd("EVAL", "return type(redis.call('get', 'missing'))", "0"),
		cmd("EVAL", "return redis.call('set', 'a', 1)", "0"),
		cmd("EVAL", "local r = redis.call('set', 'a', 1) return r['ok']", "0"),
		cmd("EVAL", "return redis.call('incr', 'n')", "0"),
		cmd("EVAL", "return redis.call('hgetall', 'h')", "0"),
		cmd("EVAL", "return redis.call('mget', 's', 'missing', 'a')", "0"),
		cmd("EVAL", "return redis.call('set', 'b', 3.5)", "0"),
		cmd("EVAL", "redis.call('set', 'c', 10) return redis.call('get', 'c')", "0"),
		cmd("EVAL", "redis.call('set', 'c', 1.25) return redis.call('get', 'c')", "0"),
		cmd("EVAL", "return redis.call('exists', 's', 'missing', 'h')", "0"),
		cmd("EVAL", "return redis.call('ping')", "0"),
		cmd("EVAL", "return redis.call('type', 'h')", "0"),
		cmd("EVAL", "return redis.call('pexpire', 's', 100000)", "0"),
		cmd("EVAL", "return redis.call('ttl', 's')", "0").with(ttlSeconds),
	}},
	{name: "RESP3 from scripts", proto: 3, steps: []step{
		cmd("HSET", "h", "f", "1", "g", "2"),
		// A map returned from Lua comes out in Lua's table order, which is
		// the interpreter's own: one field only, so the bytes are defined.
		cmd("HSET", "h1", "f", "1"),
		cmd("EVAL", "redis.setresp(3) return redis.call('hgetall', 'h1')", "0"),
		cmd("EVAL", "redis.setresp(3) local r = redis.call('hgetall', 'h') return r['map']['g']", "0"),
		cmd("EVAL", "redis.setresp(3) return redis.call('get', 'missing')", "0"),
		cmd("EVAL", "return redis.call('get', 'missing')", "0"),
		cmd("EVAL", "return true", "0"),
		cmd("EVAL", "return {double=3.5}", "0"),
		cmd("EVAL", "return {map={a=1}}", "0"),
		cmd("EVAL", "redis.setresp(4)", "0"),
	}},
	{name: "script errors", steps: []step{
		cmd("SET", "s", "v"),
		cmd("EVAL", "return redis.call('nosuch')", "0"),
		cmd("EVAL", "return redis.call('incr', 's')", "0"),
		cmd("EVAL", "return redis.pcall('incr', 's')", "0"),
		cmd("EVAL", "local r = redis.pcall('incr', 's') return r['err']", "0"),
		cmd("EVAL", "return redis.call('get')", "0"),
		cmd("EVAL", "return redis.call()", "0"),
		cmd("EVAL", "return redis.call('set', 'k', {})", "0"),
		cmd("EVAL", "return redis.call('subscribe', 'ch')", "0"),
		cmd("EVAL", "return redis.call('multi')", "0"),
		cmd("EVAL", "return redis.call('eval', 'return 1', '0')", "0"),
		cmd("EVAL", "error('boom')", "0"),
		cmd("EVAL", "error({err='TABLE err'})", "0"),
		cmd("EVAL", "x = 1", "0"),
		cmd("EVAL", "return y", "0"),
		cmd("EVAL", "return os.time()", "0"),
		cmd("EVAL", "return io", "0"),
		cmd("EVAL", "return loadfile", "0"),
		cmd("EVAL", "return 1 +", "0"),
		cmd("EVAL", "local t = nil return t.x", "0"),
		cmd("EVAL", "return redis.call('set', 'a', 'b', 'NX', 'XX')", "0"),
		cmd("EVAL", "return 1", "x"),
		cmd("EVAL", "return 1", "-1"),
		cmd("EVAL", "return 1", "2", "a"),
		cmd("EVAL", "return 1"),
		cmd("GET", "s"),
	}},
	{name: "EVALSHA and SCRIPT", steps: []step{
		cmd("SCRIPT", "FLUSH"),
		cmd("EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"),
		cmd("SCRIPT", "LOAD", "return 1"),
		cmd("SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "E0E1F9FABFC9D4800C877A703B823AC0578FF8DB", "abc"),
		cmd("EVALSHA", "E0E1F9FABFC9D4800C877A703B823AC0578FF8DB", "0"),
		cmd("EVALSHA_RO", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"),
		cmd("EVALSHA", "abc", "0"),
		cmd("SCRIPT", "LOAD", "return +"),
		cmd("EVAL", cad, "1", "lock", "me"),
		cmd("SCRIPT", "EXISTS", "cf0e94b2e9ffc7e04395cf88f7583fc309985910"),
		cmd("SET", "lock", "me"),
		cmd("EVALSHA", "cf0e94b2e9ffc7e04395cf88f7583fc309985910", "1", "lock", "me"),
		cmd("SET", "lock", "me"),
		cmd("SCRIPT", "FLUSH"), // a script run before is gone from the cache after a flush
		cmd("EVALSHA", "cf0e94b2e9ffc7e04395cf88f7583fc309985910", "1", "lock", "me"),
		cmd("GET", "lock"),
		cmd("SCRIPT", "FLUSH", "ASYNC"),
		cmd("SCRIPT", "FLUSH", "SYNC"),
		cmd("SCRIPT", "FLUSH", "x"),
		cmd("SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"),
		cmd("SCRIPT", "KILL"),
		cmd("SCRIPT"),
		cmd("SCRIPT", "FOO"),
		cmd("SCRIPT", "LOAD"),
		cmd("SCRIPT", "EXISTS"),
	}},
	{name: "read-only scripts", steps: []step{
		cmd("SET", "k", "v"),
		cmd("EVAL_RO", "return redis.call('get', KEYS[1])", "1", "k"),
		cmd("EVAL_RO", "return redis.call('set', KEYS[1], 'x')", "1", "k"),
		cmd("EVAL_RO", "return redis.call('del', KEYS[1])", "1", "k"),
		cmd("SCRIPT", "LOAD", "return redis.call('incr', 'n')"),
		cmd("EVALSHA_RO", "13d59bf45c06b30ad517603a2a8c76adfac50db3", "0"),
		cmd("GET", "k"),
	}},
	{name: "scripts are atomic and replicated writes", steps: []step{
		cmd("EVAL", "for i = 1, 100 do redis.call('incr', KEYS[1]) end return redis.call('get', KEYS[1])", "1", "n"),
		cmd("EVAL", "redis.call('set', KEYS[1], 'a') redis.call('incr', KEYS[1]) return 1", "1", "x"),
		cmd("GET", "x"),
		cmd("EVAL", "redis.call('hset', KEYS[1], 'owner', ARGV[1]) redis.call('pexpire', KEYS[1], ARGV[2]) return redis.call('hgetall', KEYS[1])", "1", "lockhash", "me", "30000"),
		cmd("PTTL", "lockhash").with(ttlMillis),
		cmd("EVAL", "return redis.call('publish', 'ch', 'm')", "0"),
	}},
	{name: "scripts in MULTI", steps: []step{
		cmd("MULTI"),
		cmd("EVAL", "return redis.call('set', KEYS[1], ARGV[1])", "1", "k", "v"),
		cmd("EVAL", "return redis.call('get', KEYS[1])", "1", "k"),
		cmd("EXEC"),
	}},
}

// everyCommandFromScripts calls every keyspace command lockd supports (that
// Redis 7.0 has) through redis.call, with the argument vectors below, in one
// case: the replies as Lua sees them and returns them must match Redis's.
var everyCommandFromScripts = func() []tcase {
	calls := [][]string{
		{"set", "s", "v"}, {"set", "s2", "v", "NX", "PX", "100000"}, {"setnx", "s3", "v"}, {"setex", "s4", "100", "v"},
		{"psetex", "s5", "100000", "v"}, {"get", "s"}, {"getdel", "s5"}, {"getex", "s", "PX", "100000"},
		{"del", "s4", "nope"}, {"unlink", "s3"}, {"exists", "s", "s2", "nope"}, {"expire", "s", "100"},
		{"pexpire", "s", "200000", "GT"}, {"expireat", "s2", "${unix+100}"}, {"pexpireat", "s2", "${unixms+100000}"},
		{"ttl", "nope"}, {"pttl", "nope"}, {"expiretime", "nope"}, {"pexpiretime", "nope"}, {"persist", "s"},
		{"type", "s"}, {"incr", "n"}, {"incrby", "n", "5"}, {"decr", "n"}, {"decrby", "n", "2"},
		{"mset", "a", "1", "b", "2"}, {"msetnx", "a", "1", "c", "3"}, {"mget", "a", "b", "nope"},
		{"getrange", "s", "0", "-1"}, {"dbsize"}, {"keys", "a*"}, {"scan", "0", "MATCH", "zz*"},
		{"hset", "h", "f", "1", "g", "2"}, {"hsetnx", "h", "f", "3"}, {"hmset", "h", "x", "y"}, {"hget", "h", "f"},
		{"hmget", "h", "f", "nope"}, {"hgetall", "h"}, {"hdel", "h", "x"}, {"hexists", "h", "g"},
		{"hincrby", "h", "f", "4"}, {"hlen", "h"}, {"hkeys", "h"}, {"hvals", "h"}, {"publish", "ch", "m"},
		{"flushall"}, {"dbsize"},
	}
	tc := tcase{name: "every command from a script"}
	for _, c := range calls {
		script := "return redis.call(ARGV[1]"
		for i := 2; i <= len(c); i++ {
			script += ", ARGV[" + string(rune('0'+i/10)) + string(rune('0'+i%10)) + "]"
		}
		script += ")"
		step := cmd(append([]string{"EVAL", script, "0"}, c...)...)
		if c[0] == "keys" {
			step = step.with(unordered)
		}
		tc.steps = append(tc.steps, step)
	}
	return []tcase{tc}
}()
