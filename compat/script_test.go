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
	// A SHA that is not 40 characters is NOSCRIPT before numkeys is read.
	{name: "EVALSHA checks the SHA first", steps: []step{
		cmd("EVALSHA", "abc", "x"),
		cmd("EVALSHA", "abc", "5"),
		cmd("EVALSHA_RO", "abc", "x"),
		cmd("EVALSHA", "0123456789012345678901234567890123456789", "x"),
		cmd("EVALSHA", "0123456789012345678901234567890123456789", "5"),
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
	// An EVALSHA sent right behind the EVAL that loads its script, in one
	// write: the EVAL is not applied yet when the EVALSHA reaches the leader.
	{name: "EVALSHA pipelined after its EVAL", steps: []step{
		pipeline(a("EVAL", "return 'pipelined-1'", "0"), a("EVALSHA", scriptSHA("return 'pipelined-1'"), "0"),
			a("EVALSHA", scriptSHA("return 'never-loaded'"), "0")),
		pipeline(a("EVAL", "return redis.call('incr', KEYS[1])", "1", "pn"), a("EVALSHA", scriptSHA("return redis.call('incr', KEYS[1])"), "1", "pn"),
			a("GET", "pn")),
	}},
	// SCRIPT EXISTS answers the cache as it stands at its place in the
	// transaction; a SCRIPT LOAD makes the script available to the EVALSHA
	// queued after it.
	{name: "SCRIPT inside MULTI", steps: []step{
		cmd("MULTI"),
		cmd("SCRIPT", "EXISTS", scriptSHA("return 'tx-1'"), scriptSHA("return 'tx-2'")),
		cmd("EVAL", "return 'tx-1'", "0"),
		cmd("SCRIPT", "EXISTS", scriptSHA("return 'tx-1'"), scriptSHA("return 'tx-2'")),
		cmd("SCRIPT", "LOAD", "return 'tx-2'"),
		cmd("EVALSHA", scriptSHA("return 'tx-2'"), "0"),
		cmd("SCRIPT", "EXISTS", scriptSHA("return 'tx-1'"), scriptSHA("return 'tx-2'")),
		cmd("SCRIPT", "FLUSH"),
		cmd("SCRIPT", "EXISTS", scriptSHA("return 'tx-1'"), scriptSHA("return 'tx-2'")),
		cmd("EXEC"),
		cmd("SCRIPT", "EXISTS", scriptSHA("return 'tx-1'"), scriptSHA("return 'tx-2'")),
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

// patternCases runs Lua's pattern functions (string.find, match, gmatch,
// gfind, gsub) over subjects and patterns that exercise captures, anchors,
// classes, sets, %b, %f, back references and empty matches, and the error
// texts of malformed patterns, which Lua raises only when the match reaches
// the bad part. lockd runs its own matcher (lua/pattern.go), so every reply
// must be Redis's byte for byte.
var patternCases = func() []tcase {
	pairs := [][2]string{
		{"hello world", "o"}, {"hello world", "(o)(r)"}, {"hello world", "^hello"}, {"hello world", "world$"},
		{"hello world", "^world"}, {"a$b", "$b"}, {"a$b", "a$"}, {"key:123:x", "(%a+):(%d+)"},
		{"  trim me  ", "^%s*(.-)%s*$"}, {"f(a(b)c)d", "%b()"}, {"f(a(b)c", "%b()"}, {"THE (quick) fox", "%f[%a]%a+"},
		{"THE (quick) fox", "%f[%l]%a+"}, {"the end", "%f[%w]%w+$"}, {"THE END", "%f[%z]"}, {"abc", ""},
		{"abc", "()"}, {"abc", "()a()"}, {"aaa", "a-"}, {"aaa", "a*"}, {"aaa", "a+?"}, {"aaab", "a-b"},
		{"xaaay", "(a*)"}, {"abab", "(ab)%1"}, {"abcabc", "(a)(b)(c)%3"}, {"abcabc", "(a)()%2"}, {"a.b", "."},
		{"a.b", "%."}, {"a]b", "[]]"}, {"a-b", "[a-]"}, {"a-b", "[%a-]+"}, {"a^b", "[b^]"}, {"x^y", "^^"},
		{"hello", "[^aeiou]+"}, {"Ab1 _\t!", "%w"}, {"Ab1 _\t!", "%W+"}, {"Ab1 _\t!", "%p"}, {"Ab1 _\t!", "%s"},
		{"A1f", "%x+"}, {"ABc", "%u+"}, {"ABc", "%l"}, {"a,b,,c", "([^,]*)"}, {"one two  three", "%S+"},
		{"x=1, y=2", "(%w+)=(%w+)"}, {"[[x]]", "%[(.-)%]"}, {"aXbXc", "X"}, {"abc", "b*"}, {"abc", "[a-c]+"},
		{"a1b2", "[%d]"}, {"a-z", "[z-a]"}, {"((a))", "%((.*)%)"}, {"a.b.c", "(.-)%.(.*)"}, {"aaa", "^a-$"},
		{"12ab", "^(%d+)(%a*)$"}, {"x", "x?x?x"}, {"ab", "a?b?c?"}, {"a+b", "a+b"}, {"a+b", "a%+b"},
	}
	tc := tcase{name: "pattern functions"}
	for _, p := range pairs {
		for _, script := range []string{
			"return {string.find(ARGV[1], ARGV[2])}",
			"return {string.match(ARGV[1], ARGV[2])}",
			"local r = {} for a, b in string.gmatch(ARGV[1], ARGV[2]) do r[#r+1] = tostring(a) .. '|' .. tostring(b) end return r",
			"return {string.gsub(ARGV[1], ARGV[2], '<%0>')}",
			"return {string.gsub(ARGV[1], ARGV[2], '%1')}",
			"return {string.gsub(ARGV[1], ARGV[2], function(...) return '[' .. select('#', ...) .. ']' end)}",
		} {
			tc.steps = append(tc.steps, cmd("EVAL", script, "0", p[0], p[1]))
		}
	}
	edge := tcase{name: "pattern edge cases and errors"}
	for _, script := range []string{
		// Malformed patterns fail only where the match reaches them.
		"return string.find('abc', '[a')",
		"return string.find('abc', 'x[')",
		"return string.find('xabc', 'x[')",
		"return string.find('abc', 'x%')",
		"return string.find('abc', 'c%')",
		"return string.match('abc', 'z(')",
		"return string.match('abc', '(')",
		"return string.match('abc', '%1')",
		"return string.match('abc', '(a)%2')",
		"return string.match('abc', '(a%1)')",
		"return string.find('abc', '%bx')",
		"return string.find('abc', 'z%bx')",
		"return string.find('abc', '%f[a')",
		"return string.match('abc', string.rep('()', 32))",
		"return string.match('abc', string.rep('()', 33))",
		"return string.gsub('abc', '(b)', '%2')",
		"return {string.gsub('abc', 'b', '%1')}",
		"return {string.gsub('abc', 'b', '%')}",
		"return {string.gsub('abc', 'b', 'x%y%%')}",
		"return {string.gsub('abc', 'b', {})}",
		"return {string.gsub('abc', 'b', {b = 'B'})}",
		"return {string.gsub('abc', '(b)()', {b = 7})}",
		"return string.gsub('abc', 'b', {b = {}})",
		"return {string.gsub('abc', 'b', function() return false end)}",
		"return {string.gsub('abc', 'b', function() return 5.5 end)}",
		"return string.gsub('abc', 'b', function() return {} end)",
		"return string.gsub('abc', 'b', true)",
		"return string.gsub('abc', 'b')",
		"return {string.gsub('abc', '', '-')}",
		"return {string.gsub('abc', '.', 'x', 2)}",
		"return {string.gsub('abc', '.', 'x', -1)}",
		"return {string.gsub('abc', '^.', 'x')}",
		"return {string.gsub('hello world', '%w+', '%0 %0', 1)}",
		"return {string.gsub('abc', 'b', 1.5)}",
		"return {string.gsub(12345, 3, 9)}",
		"return {string.find('abc', 'b', -1)}",
		"return {string.find('abc', 'b', -2)}",
		"return {string.find('abc', 'b', 10)}",
		"return {string.find('abc', '', 10)}",
		"return {string.find('abc', '', 4)}",
		"return {string.find('abc', 'c', -100)}",
		"return {string.find('a.b', '.', 2, true)}",
		"return {string.find('a.b', '.', 2, false)}",
		"return {string.find('a.b', '.', 2, nil)}",
		"return {string.find(12345, 3)}",
		"return {string.find('abc', 'b', '2')}",
		"return string.find('abc', 'b', 'x')",
		"return string.find(nil, 'a')",
		"return string.match('abc')",
		"return {('abc'):find('b')}",
		"return ('abc'):gsub()",
		"return {string.find('a\\0b', '\\0')}",
		"return {string.find('a\\0b', '%z')}",
		"return {string.find('a\\0b', 'b\\0.')}",
		"return {string.find('ab\\0.', 'b\\0.')}",
		"return {string.match('a\\0b', '.%z(.)')}",
		"return {string.gsub('a\\0b', '%z', '0')}",
		"local r = {} for w in string.gmatch('^a^a', '^a') do r[#r+1] = w end return r",
		"local r = {} for w in string.gmatch('abc', 'x*') do r[#r+1] = w end return #r",
		"local r = {} for k, v in string.gfind('a=1,b=2', '(%w)=(%w)') do r[#r+1] = k .. v end return r",
		"local f = string.gmatch('ab', '.') f() f() return {f(), f()}",
		"return string.gmatch('abc')",
		"return string.gfind == string.gmatch",
		"return {string.match('  x', '()x()')}",
		"return {string.match('hello', '.-(l+)(.*)')}",
		"return {string.find('hello', 'l+')}",
		// The other functions lockd writes itself to charge their work.
		"return string.upper('caf\\195\\169 \\255x')",
		"return string.lower('CAF\\195\\137 X')",
		"return string.reverse('ab\\0c')",
		"return {string.upper(12), string.reverse(1.5), string.lower(-0.25)}",
		"return string.upper()",
		"return ('x'):rep(3):upper()",
		"return table.maxn({1, 2, [10] = 3, [2.5] = 4, [-7] = 1, x = 5})",
		"return table.maxn({})",
		"return table.maxn('x')",
		"local t = {1, 2, 3, 4} table.remove(t, 1) return t",
		"local t = {1, 2, 3, 4} return {table.remove(t, 2), #t}",
		"local t = {3, 1, 2} table.sort(t) return t",
		"local t = {} for i = 1, 5 do table.insert(t, 1, i) end return t",
		"return table.concat({1, 'a', 2.5}, '-', 2, 3)",
		"return redis.sha1hex(string.rep('a', 1000))",
		"return string.format('%5s|%-3d', 'ab', 7)",
		"return #string.rep('ab', 100000)",
	} {
		edge.steps = append(edge.steps, cmd("EVAL", script, "0"))
	}
	return []tcase{tc, edge}
}()
