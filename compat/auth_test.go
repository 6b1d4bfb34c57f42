package compat

import (
	"strings"
	"testing"
)

// AUTH, HELLO … AUTH and ACL against a redis-server and a lockd that both run
// with a password on the default user (requirepass), compared byte for byte.
// These cases need their own pair of servers, so they run in TestCompatAuth,
// not in TestCompat's families. Every connection starts unauthenticated; a
// case that creates users deletes them at its end. Cases run in RESP2: a fresh
// connection cannot switch to RESP3 before it authenticates, so HELLO 3 AUTH
// is a step of its own.

const authPass = "sekret"

func TestCompatAuth(t *testing.T) {
	redisAddr := startRedis(t, "--requirepass", authPass)
	name, addr := startOther(t, authPass)
	t.Logf("comparing redis-server %s at %s with %s at %s (requirepass)", redisVersionAuthed(t, redisAddr), redisAddr, name, addr)
	e := &env{redis: &side{name: "redis", addr: redisAddr, pass: authPass}, other: &side{name: name, addr: addr, pass: authPass}}
	e.runCases(t, authCases)
}

// redisVersionAuthed is redisVersion on a server that needs AUTH.
func redisVersionAuthed(t *testing.T, addr string) string {
	c, err := dial(addr)
	if err != nil {
		t.Fatalf("redis: dial %s: %v", addr, err)
	}
	defer c.close()
	c.send(multibulk("AUTH", authPass))
	if o := c.read(replyTimeout); string(o.raw) != "+OK\r\n" {
		t.Fatalf("redis: AUTH answered %v", o)
	}
	c.send(multibulk("INFO", "server"))
	o := c.read(replyTimeout)
	v, err := parseValue(o.raw)
	if err != nil || !v.isBlob() {
		t.Fatalf("redis: INFO server answered %v", o)
	}
	return "(requirepass)"
}

// rs2 marks a case RESP2-only (see above).
func rs2(name string, steps ...step) tcase { return tcase{name: name, steps: steps, proto: 2} }

var authCases = []tcase{
	rs2("NOAUTH before AUTH",
		cmd("GET", "k"),
		cmd("PING"),
		cmd("CLIENT", "ID"),
		cmd("ACL", "WHOAMI"),
		cmd("NOSUCH", "x"),
		cmd("GET"),
		cmd("SET", "k", "v"),
		cmd("MULTI"),
	),
	rs2("AUTH",
		cmd("AUTH", "wrong"),
		cmd("AUTH", "default", "wrong"),
		cmd("AUTH", "nobody", authPass),
		cmd("AUTH", "a", "b", "c"),
		cmd("GET", "k"),
		cmd("AUTH", authPass),
		cmd("GET", "k"),
		cmd("ACL", "WHOAMI"),
		cmd("AUTH", "wrong"), // a failed AUTH keeps the connection's user
		cmd("GET", "k"),
		cmd("AUTH", "default", authPass),
		cmd("SET", "k", "v"),
		cmd("GET", "k"),
	),
	rs2("HELLO and AUTH",
		cmd("HELLO", "3"),
		cmd("HELLO"),
		cmd("HELLO", "2", "AUTH", "default", "wrong"),
		cmd("HELLO", "2", "AUTH", "default"),
		cmd("HELLO", "3", "AUTH", "default", authPass).with(helloIdentity),
		cmd("GET", "k"),
		cmd("ACL", "WHOAMI"),
		cmd("HELLO", "2", "AUTH", "nobody", "x"),
		cmd("ACL", "WHOAMI"),
	),
	// CVE-2021-32675: before AUTH succeeds a request may carry at most 10
	// arguments and 16 KB per bulk; past either the client gets a protocol
	// error and is closed, before the rest of the request is read.
	rs2("requests before AUTH are limited",
		cmd("GET", "a", "b", "c", "d", "e", "f", "g", "h", "i"), // 10 arguments: answered
		cmd("AUTH", "default", strings.Repeat("p", 16384)),      // 16 KB: answered
		raw("*11\r\n", 1).on(1).closes(),
		raw("*1\r\n$16385\r\n", 1).on(2).closes(),
		raw("*2\r\n$3\r\nSET\r\n$1048576\r\n", 1).on(3).closes(),
		raw("*1000000\r\n$3\r\nSET\r\n", 1).on(4).closes(),
		inline("GET a b c d e f g h i j k l"), // inline requests keep their 64 KB bound
		cmd("AUTH", authPass).on(5),
		cmd("MSET", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5", "f", "6").on(5),
		cmd("SET", "big", strings.Repeat("v", 20000)).on(5),
		cmd("GET", "big").on(5),
		cmd("DEL", "a", "b", "c", "d", "e", "f", "big").on(5),
	),
	rs2("a user limited to one namespace",
		cmd("AUTH", authPass),
		cmd("ACL", "SETUSER", "payouts", "on", ">payouts-pw", "~payouts/*", "+@all", "-@admin"),
		cmd("AUTH", "payouts", "wrong").on(1),
		cmd("GET", "payouts/a").on(1),
		cmd("AUTH", "payouts", "payouts-pw").on(1),
		cmd("ACL", "WHOAMI").on(1),
		cmd("SET", "payouts/a", "v", "NX", "PX", "100000").on(1),
		cmd("GET", "payouts/a").on(1),
		cmd("SET", "search/a", "v").on(1),
		cmd("GET", "search/a").on(1),
		cmd("DEL", "payouts/a", "search/a").on(1),
		cmd("MSET", "payouts/b", "1", "search/b", "2").on(1),
		cmd("MGET", "payouts/b", "search/b").on(1),
		cmd("EXISTS", "payouts/b").on(1),
		cmd("EVAL", "return 1", "1", "search/b").on(1),
		cmd("EVAL", "return 1", "1", "payouts/b").on(1),
		cmd("PUBLISH", "ch", "x").on(1),
		cmd("SUBSCRIBE", "ch").on(1),
		cmd("ACL", "LIST").on(1),
		cmd("ACL", "SETUSER", "payouts", "~*").on(1),
		cmd("CONFIG", "GET", "maxclients").on(1),
		cmd("MULTI").on(1),
		cmd("SET", "search/c", "v").on(1),
		cmd("SET", "payouts/c", "v").on(1),
		cmd("EXEC").on(1),
		// Changes apply to a connected user at once.
		cmd("ACL", "SETUSER", "payouts", "~search/*"),
		cmd("GET", "search/a").on(1),
		cmd("ACL", "SETUSER", "payouts", "-get"),
		cmd("GET", "search/a").on(1),
		cmd("ACL", "GETUSER", "payouts"),
		cmd("ACL", "LIST"),
		cmd("ACL", "USERS"),
		cmd("ACL", "DELUSER", "payouts"),
		cmd("ACL", "GETUSER", "payouts"),
		cmd("AUTH", "payouts", "payouts-pw").on(2),
	),
	rs2("a script runs with its caller's permissions",
		cmd("AUTH", authPass),
		cmd("SET", "search/s", "secret"),
		cmd("ACL", "SETUSER", "scripter", "on", ">scripter-pw", "~payouts/*", "+@all", "-@admin", "-del"),
		cmd("AUTH", "scripter", "scripter-pw").on(1),
		cmd("EVAL", "return redis.call('GET', 'search/s')", "0").on(1),
		cmd("EVAL", "return redis.pcall('GET', 'search/s')", "0").on(1),
		cmd("EVAL", "return redis.call('SET', 'search/s', 'x')", "0").on(1),
		cmd("EVAL", "return redis.call('SET', 'payouts/s', 'x')", "0").on(1),
		cmd("EVAL", "return redis.call('GET', 'payouts/s')", "0").on(1),
		cmd("EVAL", "return redis.call('DEL', 'payouts/s')", "0").on(1),
		cmd("EVAL_RO", "return redis.call('GET', 'search/s')", "0").on(1),
		cmd("EVAL_RO", "return redis.call('GET', 'payouts/s')", "0").on(1),
		cmd("GET", "search/s"),
		cmd("DEL", "search/s", "payouts/s"),
		cmd("ACL", "DELUSER", "scripter"),
	),
	rs2("a deleted user is disconnected",
		cmd("AUTH", authPass),
		cmd("ACL", "SETUSER", "gone", "on", "nopass", "+@all", "~*"),
		cmd("AUTH", "gone", "any").on(1),
		cmd("ACL", "WHOAMI").on(1),
		cmd("ACL", "DELUSER", "gone", "nobody"),
		poll("+PONG\r\n", "PING"),
		cmd("PING").on(1).closes(),
	),
	rs2("a disabled user",
		cmd("AUTH", authPass),
		cmd("ACL", "SETUSER", "off1", "off", ">p", "+@all", "~*"),
		cmd("AUTH", "off1", "p").on(1),
		cmd("ACL", "SETUSER", "off1", "on"),
		cmd("AUTH", "off1", "p").on(1),
		cmd("ACL", "SETUSER", "off1", "off"),
		cmd("ACL", "WHOAMI").on(1), // still authenticated, as in Redis
		cmd("AUTH", "off1", "p").on(2),
		cmd("ACL", "DELUSER", "off1"),
	),
	rs2("ACL SETUSER rules and how they read back",
		cmd("AUTH", authPass),
		cmd("ACL", "SETUSER", "bob"),
		cmd("ACL", "SETUSER", "carol", "on", "nopass", "~a", "~b", "&ch", "-@all", "+set"),
		cmd("ACL", "SETUSER", "dave", "on", ">x", "+@all", "-@dangerous"),
		cmd("ACL", "SETUSER", "erin", "on", "nopass", "+@read", "~*"),
		cmd("ACL", "SETUSER", "erin", "-get"),
		cmd("ACL", "SETUSER", "frank", "on", ">a", ">b", "<a", "allkeys", "allcommands", "allchannels"),
		cmd("ACL", "SETUSER", "frank", "nocommands", "resetkeys", "resetpass"),
		cmd("ACL", "SETUSER", "gus", "on", "#"+"2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881", "+acl|whoami", "+acl"),
		cmd("ACL", "SETUSER", "hal", "reset"),
		cmd("ACL", "SETUSER", "ivy", "on", ">p1", ">p2", "!"+"2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"),
		cmd("ACL", "SETUSER", "ivy", "on", ">p1", ">p2", "<p1", "~k:*", "+get", "+@hash"),
		cmd("ACL", "LIST"),
		cmd("ACL", "USERS"),
		cmd("ACL", "GETUSER", "bob"),
		cmd("ACL", "GETUSER", "carol"),
		cmd("ACL", "GETUSER", "dave"),
		cmd("ACL", "GETUSER", "frank"),
		cmd("ACL", "GETUSER", "ivy"),
		cmd("ACL", "GETUSER", "default"),
		cmd("ACL", "GETUSER", "nobody"),
		cmd("AUTH", "carol", "whatever").on(1),
		cmd("SET", "a", "1").on(1),
		cmd("GET", "a").on(1),
		cmd("SET", "c", "1").on(1),
		cmd("ACL", "DELUSER", "bob", "carol", "dave", "erin", "frank", "gus", "hal", "ivy"),
		cmd("ACL", "USERS"),
	),
	rs2("ACL SETUSER errors",
		cmd("AUTH", authPass),
		cmd("ACL", "SETUSER", "err", "+nosuch"),
		cmd("ACL", "SETUSER", "err", "+@nosuch"),
		cmd("ACL", "SETUSER", "err", "#abc"),
		cmd("ACL", "SETUSER", "err", "!abc"),
		cmd("ACL", "SETUSER", "err", "<nope"),
		cmd("ACL", "SETUSER", "err", "~x", "allkeys", "~y"),
		cmd("ACL", "SETUSER", "err", "&x", "allchannels", "&y"),
		cmd("ACL", "SETUSER", "err", "foo"),
		cmd("ACL", "SETUSER", "err", ""),
		cmd("ACL", "SETUSER", "err", "on", "+get", "bar"),
		cmd("ACL", "GETUSER", "err"), // a failed SETUSER creates nothing
		cmd("ACL", "SETUSER", "has space"),
		cmd("ACL", "SETUSER"),
		cmd("ACL", "DELUSER", "default"),
		cmd("ACL", "DELUSER", "nobody"),
		cmd("ACL", "GETUSER"),
		cmd("ACL", "WHOAMI", "x"),
		cmd("ACL", "NOSUCH"),
		cmd("ACL"),
		cmd("ACL", "CAT"),
		cmd("ACL", "CAT", "nosuch"),
		cmd("ACL", "GENPASS", "0"),
		cmd("ACL", "GENPASS", "x"),
		cmd("ACL", "GENPASS", "5000"),
	),
	// OBJECT's and MEMORY's subcommands are checked as themselves: their
	// categories (@read: object|encoding, memory|usage) and their own
	// command rules (+object|encoding), not the container's.
	rs2("ACL rules for OBJECT and MEMORY subcommands",
		cmd("AUTH", authPass),
		cmd("SET", "ok", "12345"),
		cmd("ACL", "SETUSER", "reader", "on", ">r", "+@read", "~*"),
		cmd("AUTH", "reader", "r").on(1),
		cmd("OBJECT", "ENCODING", "ok").on(1),
		cmd("MEMORY", "USAGE", "ok").on(1),
		cmd("OBJECT", "FREQ", "ok").on(1),
		cmd("OBJECT", "HELP").on(1),
		cmd("MEMORY", "STATS").on(1),
		cmd("OBJECT", "NOSUCH", "ok").on(1),
		cmd("OBJECT", "ENCODING").on(1),
		cmd("ACL", "SETUSER", "enc", "on", ">e", "+object|encoding", "~*"),
		cmd("AUTH", "enc", "e").on(2),
		cmd("OBJECT", "ENCODING", "ok").on(2),
		cmd("object", "encoding", "ok").on(2),
		cmd("OBJECT", "FREQ", "ok").on(2),
		cmd("OBJECT", "REFCOUNT", "ok").on(2),
		cmd("MEMORY", "USAGE", "ok").on(2),
		cmd("GET", "ok").on(2),
		cmd("MULTI").on(2),
		cmd("ACL", "SETUSER", "enc", "+multi", "+exec"),
		cmd("MULTI").on(2),
		cmd("OBJECT", "ENCODING", "ok").on(2),
		cmd("OBJECT", "FREQ", "ok").on(2),
		cmd("EXEC").on(2),
		cmd("ACL", "DELUSER", "reader", "enc"),
		cmd("DEL", "ok"),
	),
	rs2("COMMAND INFO and DOCS for AUTH, HELLO and ACL",
		cmd("AUTH", authPass),
		cmd("COMMAND", "INFO", "auth"),
		cmd("COMMAND", "INFO", "hello"),
		cmd("COMMAND", "INFO", "acl").with(containerParts),
		cmd("COMMAND", "INFO", "acl|setuser", "acl|getuser", "acl|deluser", "acl|list", "acl|users",
			"acl|whoami", "acl|cat", "acl|genpass", "acl|help"),
		cmd("COMMAND", "DOCS", "acl|setuser", "acl|getuser", "acl|deluser", "acl|list", "acl|users",
			"acl|whoami", "acl|cat", "acl|genpass", "acl|help").with(docsParts),
	),
}
