package compat

import "sort"

// COMMAND INFO and COMMAND DOCS for every command lockd answers that Redis
// 7.0.15 also has (lockd's extensions, FENCE, DELEX, DIGEST, CLIENT SETINFO and
// CLIENT NO-TOUCH, are not in Redis 7.0.15). COMMAND, COMMAND COUNT and
// COMMAND LIST without a filter describe the whole server and cannot match.

// commandNames are the commands compared, containers included.
var commandNames = []string{
	// keyspace commands
	"dbsize", "decr", "decrby", "del", "exists", "expire", "expireat", "expiretime",
	"flushall", "get", "getdel", "getex", "getrange", "hdel", "hexists", "hget",
	"hgetall", "hincrby", "hkeys", "hlen", "hmget", "hmset", "hset", "hsetnx",
	"hvals", "incr", "incrby", "keys", "mget", "mset", "msetnx", "persist",
	"pexpire", "pexpireat", "pexpiretime", "psetex", "pttl", "publish", "scan",
	"set", "setex", "setnx", "strlen", "ttl", "type", "unlink",
	// keyspace containers (their subcommands are keyspace commands too)
	"memory", "object",
	// commands the front door answers
	"asking", "auth", "client", "cluster", "command", "config", "discard", "echo", "exec", "hello",
	"info", "multi", "ping", "psubscribe", "pubsub", "punsubscribe", "quit",
	"monitor", "readonly", "readwrite", "select", "slowlog", "subscribe", "time", "unsubscribe", "unwatch", "wait", "watch",
}

// sharedSubcommands are the subcommands lockd implements that Redis 7.0.15
// also has. A container's COMMAND INFO and COMMAND DOCS are compared on these
// only (see containerParts): Redis has more, lockd has two Redis 7.0.15 lacks.
var sharedSubcommands = []string{
	"client|getname", "client|help", "client|id", "client|info", "client|kill", "client|list",
	"client|no-evict", "client|setname",
	"cluster|help", "cluster|info", "cluster|keyslot", "cluster|myid", "cluster|nodes", "cluster|shards", "cluster|slots",
	"command|count", "command|docs", "command|help", "command|info", "command|list",
	"config|get", "config|help", "config|resetstat", "config|set",
	"slowlog|get", "slowlog|help", "slowlog|len", "slowlog|reset",
	"pubsub|channels", "pubsub|help", "pubsub|numpat", "pubsub|numsub",
	"memory|doctor", "memory|help", "memory|malloc-stats", "memory|purge", "memory|stats", "memory|usage",
	"object|encoding", "object|freq", "object|help", "object|idletime", "object|refcount",
}

var commandCases = buildCommandCases()

func buildCommandCases() []tcase {
	var cases []tcase
	for _, n := range commandNames {
		cases = append(cases, tcase{name: "INFO and DOCS " + n, steps: []step{
			cmd("COMMAND", "INFO", n).with(containerParts),
			cmd("COMMAND", "DOCS", n).with(docsParts),
		}})
	}
	for _, n := range sharedSubcommands {
		cases = append(cases, tcase{name: "INFO and DOCS " + n, steps: []step{
			cmd("COMMAND", "INFO", n),
			cmd("COMMAND", "DOCS", n).with(docsParts),
		}})
	}
	return append(cases,
		tcase{name: "INFO unknown names", steps: []step{
			cmd("COMMAND", "INFO", "nosuch"),
			cmd("COMMAND", "INFO", "client|nosuch"),
			cmd("COMMAND", "INFO", "get|x"),
			cmd("COMMAND", "INFO", "client|"),
			cmd("COMMAND", "INFO", "client|id|x"),
			cmd("COMMAND", "INFO", "object|nosuch", "object|", "object|encoding|x", "memory|usage|x"),
		}},
		tcase{name: "INFO several names", steps: []step{
			cmd("COMMAND", "INFO", "get", "nosuch", "SET", "Client|Id", "mset", "client|nosuch", "watch"),
			cmd("COMMAND", "INFO", "OBJECT|Encoding", "Memory|USAGE", "object|nosuch"),
			cmd("COMMAND", "INFO", "get", "get"),
		}},
		tcase{name: "DOCS unknown names", steps: []step{
			cmd("COMMAND", "DOCS", "nosuch"),
			cmd("COMMAND", "DOCS", "nosuch", "client|nosuch", "get|x"),
			cmd("COMMAND", "DOCS", "object|nosuch", "memory|", "object|help|x"),
		}},
		tcase{name: "DOCS several names", steps: []step{
			cmd("COMMAND", "DOCS", "get", "nosuch", "HMSET", "Client|Id", "del").with(docsParts),
		}},
		tcase{name: "COMMAND syntax", steps: []step{
			cmd("COMMAND", "NOSUCH"),
			cmd("COMMAND", "COUNT", "x"),
			cmd("COMMAND", "HELP", "x"),
		}},
	)
}

// containerParts compares a COMMAND INFO reply with each container's
// subcommands cut down to sharedSubcommands and sorted by name: Redis lists
// them in its hash table's order, which differs from one process to the next.
var containerParts = normalizer{"containerParts", both(func(raw []byte) []byte {
	v, err := parseValue(raw)
	if err != nil || v.kind != '*' {
		return raw
	}
	v.elems = append([]value(nil), v.elems...)
	for i, e := range v.elems {
		if e.kind != '*' || len(e.elems) != 10 || e.elems[9].kind != '*' {
			continue
		}
		var subs []value
		for _, s := range e.elems[9].elems {
			if len(s.elems) > 0 && isSharedSubcommand(s.elems[0].str) {
				subs = append(subs, s)
			}
		}
		sort.Slice(subs, func(i, j int) bool { return subs[i].elems[0].str < subs[j].elems[0].str })
		e.elems = append([]value(nil), e.elems...)
		e.elems[9] = value{kind: '*', elems: subs}
		v.elems[i] = e
	}
	return v.encode()
})}

// docsParts compares a COMMAND DOCS reply without the arguments and history
// trees (which lockd does not report), each container's subcommands cut down
// to sharedSubcommands and sorted by name.
var docsParts = normalizer{"docsParts", both(func(raw []byte) []byte {
	v, err := parseValue(raw)
	if err != nil || !v.isAggregate() || len(v.elems)%2 != 0 {
		return raw
	}
	return docsMap(v, false).encode()
})}

// docsMap rewrites a map of name → docs (a flat array in RESP2).
func docsMap(v value, subcommands bool) value {
	type entry struct{ name, docs value }
	var entries []entry
	for i := 0; i+1 < len(v.elems); i += 2 {
		name := v.elems[i]
		if subcommands && !isSharedSubcommand(name.str) {
			continue
		}
		entries = append(entries, entry{name, docsFields(v.elems[i+1])})
	}
	if subcommands {
		sort.Slice(entries, func(i, j int) bool { return entries[i].name.str < entries[j].name.str })
	}
	out := value{kind: v.kind}
	for _, e := range entries {
		out.elems = append(out.elems, e.name, e.docs)
	}
	return out
}

// docsFields rewrites one command's docs map.
func docsFields(v value) value {
	if !v.isAggregate() || len(v.elems)%2 != 0 {
		return v
	}
	out := value{kind: v.kind}
	for i := 0; i+1 < len(v.elems); i += 2 {
		k, val := v.elems[i], v.elems[i+1]
		switch k.str {
		case "arguments", "history":
			continue
		case "subcommands":
			val = docsMap(val, true)
		}
		out.elems = append(out.elems, k, val)
	}
	return out
}

func isSharedSubcommand(name string) bool {
	for _, s := range sharedSubcommands {
		if s == name {
			return true
		}
	}
	return false
}
