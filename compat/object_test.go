package compat

import (
	"fmt"
	"strconv"
	"strings"
)

// OBJECT and MEMORY (command/object.go, raftstore/fsm/object.go). Byte for
// byte where Redis's answer is deterministic: OBJECT ENCODING of values
// written whole (lockd answers from the contents, Redis from the history:
// docs/compatibility.md), REFCOUNT, FREQ, the HELP texts, PURGE, every
// error. MEMORY USAGE is an estimate (memoryClose); IDLETIME reads Redis's
// one-second clock (idleSeconds); DOCTOR, MALLOC-STATS and STATS describe a
// process (anyText, statsFields).

// memoryClose accepts two MEMORY USAGE estimates within 10% of each other
// (nil and errors exactly).
var memoryClose = normalizer{"memoryClose", func(r, o []byte) ([]byte, []byte) {
	rv, ok1 := integer(r)
	ov, ok2 := integer(o)
	if ok1 && ok2 && rv > 0 && ov > 0 && ov*10 >= rv*9 && ov*10 <= rv*11 {
		return r, r
	}
	return r, o
}}

// idleSeconds: OBJECT IDLETIME of a key just written, 0 on lockd, 0 or 1 on
// Redis (its LRU clock ticks once a second).
var idleSeconds = normalizer{"idleSeconds", within(1)}

// anyText compares a text reply by its kind alone (verbatim, or bulk where
// the protocol has no verbatim type): the text describes the process.
var anyText = normalizer{"anyText", both(func(raw []byte) []byte {
	v, err := parseValue(raw)
	if err != nil || !v.isBlob() || v.kind == '+' {
		return raw
	}
	v.str = "<text>"
	if v.kind == '=' {
		v.str = "txt:<text>"
	}
	return v.encode()
})}

// anyString compares a text reply as a string of any kind: MEMORY
// MALLOC-STATS is jemalloc's report (verbatim) on Redis and Redis's text for
// a build without jemalloc (bulk) on lockd.
var anyString = normalizer{"anyString", both(func(raw []byte) []byte {
	if v, err := parseValue(raw); err == nil && v.isBlob() && v.kind != '+' {
		return []byte("$8\r\n<string>\r\n")
	}
	return raw
})}

// statsFields compares MEMORY STATS by its field names and value kinds.
var statsFields = normalizer{"statsFields", both(func(raw []byte) []byte {
	v, err := parseValue(raw)
	if err != nil || !v.isAggregate() || len(v.elems)%2 != 0 {
		return raw
	}
	v.elems = append([]value(nil), v.elems...)
	for i := 1; i < len(v.elems); i += 2 {
		e := v.elems[i]
		if e.isAggregate() {
			e.elems = append([]value(nil), e.elems...)
			for j := 1; j < len(e.elems); j += 2 {
				e.elems[j] = value{kind: '+', str: "<" + string(e.elems[j].kind) + ">"}
			}
			v.elems[i] = e
			continue
		}
		kind := string(e.kind)
		if e.kind == '$' { // a ratio, as RESP2 writes a double
			kind = ","
		}
		v.elems[i] = value{kind: '+', str: "<" + kind + ">"}
	}
	return v.encode()
})}

// fieldsCmd is HSET key with n fields "f<i>" whose values are vlen bytes.
func fieldsCmd(key string, n, vlen int) step {
	a := []string{"HSET", key}
	for i := 0; i < n; i++ {
		a = append(a, "f"+strconv.Itoa(i), strings.Repeat("v", vlen))
	}
	return cmd(a...)
}

// membersCmd is ZADD key with n members of mlen bytes, score i (a fraction
// when frac).
func membersCmd(key string, n, mlen int, frac bool) step {
	a := []string{"ZADD", key}
	for i := 0; i < n; i++ {
		score := strconv.Itoa(i)
		if frac {
			score += ".25"
		}
		a = append(a, score, fmt.Sprintf("%0*d", mlen, i))
	}
	return cmd(a...)
}

// elemsCmd is RPUSH key with n elements "<prefix><i>".
func elemsCmd(key string, n int, prefix string) step {
	a := []string{"RPUSH", key}
	for i := 0; i < n; i++ {
		a = append(a, prefix+strconv.Itoa(i))
	}
	return cmd(a...)
}

var objectSubcommands = []string{
	"object|encoding", "object|freq", "object|help", "object|idletime", "object|refcount",
	"memory|doctor", "memory|help", "memory|malloc-stats", "memory|purge", "memory|stats", "memory|usage",
}

var objectCases = func() []tcase {
	cases := []tcase{
		{name: "OBJECT ENCODING strings", steps: []step{
			cmd("OBJECT", "ENCODING", "missing"),
			cmd("SET", "s", "0"), cmd("OBJECT", "ENCODING", "s"),
			cmd("SET", "s", "-1"), cmd("OBJECT", "ENCODING", "s"),
			cmd("SET", "s", "9223372036854775807"), cmd("OBJECT", "ENCODING", "s"),
			cmd("SET", "s", "-9223372036854775808"), cmd("OBJECT", "ENCODING", "s"),
			cmd("SET", "s", "9223372036854775808"), cmd("OBJECT", "ENCODING", "s"),
			cmd("SET", "s", "007"), cmd("OBJECT", "ENCODING", "s"),
			cmd("SET", "s", "-0"), cmd("OBJECT", "ENCODING", "s"),
			cmd("SET", "s", "+1"), cmd("OBJECT", "ENCODING", "s"),
			cmd("SET", "s", " 1"), cmd("OBJECT", "ENCODING", "s"),
			cmd("SET", "s", "1.5"), cmd("OBJECT", "ENCODING", "s"),
			cmd("SET", "s", ""), cmd("OBJECT", "ENCODING", "s"),
			cmd("SET", "s", strings.Repeat("x", 44)), cmd("OBJECT", "ENCODING", "s"),
			cmd("SET", "s", strings.Repeat("x", 45)), cmd("OBJECT", "ENCODING", "s"),
			cmd("SET", "s", megabyte), cmd("object", "encoding", "s"),
			cmd("SET", "t", "12", "EX", "100"), cmd("OBJECT", "ENCODING", "t"),
			cmd("MSET", "a", "5", "b", "five"), cmd("OBJECT", "ENCODING", "a"), cmd("OBJECT", "ENCODING", "b"),
			cmd("INCR", "n"), cmd("OBJECT", "ENCODING", "n"),
			cmd("INCRBY", "n", "-100000"), cmd("OBJECT", "ENCODING", "n"),
		}},
		{name: "OBJECT ENCODING collections", steps: []step{
			cmd("HSET", "h", "f", "v"), cmd("OBJECT", "ENCODING", "h"),
			fieldsCmd("h64", 3, 64), cmd("OBJECT", "ENCODING", "h64"),
			fieldsCmd("h65", 3, 65), cmd("OBJECT", "ENCODING", "h65"),
			cmd("HSET", "hk", strings.Repeat("k", 65), "v"), cmd("OBJECT", "ENCODING", "hk"),
			fieldsCmd("h512", 512, 1), cmd("OBJECT", "ENCODING", "h512"),
			fieldsCmd("h513", 513, 1), cmd("OBJECT", "ENCODING", "h513"),
			cmd("ZADD", "z", "1", "m"), cmd("OBJECT", "ENCODING", "z"),
			membersCmd("z64", 2, 64, false), cmd("OBJECT", "ENCODING", "z64"),
			membersCmd("z65", 2, 65, false), cmd("OBJECT", "ENCODING", "z65"),
			membersCmd("z128", 128, 3, false), cmd("OBJECT", "ENCODING", "z128"),
			membersCmd("z129", 129, 3, false), cmd("OBJECT", "ENCODING", "z129"),
			cmd("RPUSH", "l", "a"), cmd("OBJECT", "ENCODING", "l"),
			elemsCmd("big", 5000, "element-"), cmd("OBJECT", "ENCODING", "big"),
		}},
		{name: "OBJECT REFCOUNT", steps: []step{
			cmd("OBJECT", "REFCOUNT", "missing"),
			cmd("SET", "s", "0"), cmd("OBJECT", "REFCOUNT", "s"),
			cmd("SET", "s", "9999"), cmd("OBJECT", "REFCOUNT", "s"),
			cmd("SET", "s", "10000"), cmd("OBJECT", "REFCOUNT", "s"),
			cmd("SET", "s", "-1"), cmd("OBJECT", "REFCOUNT", "s"),
			cmd("SET", "s", "v"), cmd("OBJECT", "REFCOUNT", "s"),
			cmd("SET", "s", strings.Repeat("x", 100)), cmd("OBJECT", "REFCOUNT", "s"),
			cmd("INCR", "n"), cmd("OBJECT", "REFCOUNT", "n"),
			cmd("INCRBY", "n", "20000"), cmd("OBJECT", "REFCOUNT", "n"),
			cmd("HSET", "h", "f", "1"), cmd("OBJECT", "REFCOUNT", "h"),
			cmd("ZADD", "z", "1", "m"), cmd("OBJECT", "REFCOUNT", "z"),
			cmd("RPUSH", "l", "1"), cmd("OBJECT", "REFCOUNT", "l"),
		}},
		{name: "OBJECT IDLETIME and FREQ", steps: []step{
			cmd("OBJECT", "IDLETIME", "missing"),
			cmd("OBJECT", "FREQ", "missing"),
			cmd("SET", "s", "v"),
			cmd("OBJECT", "IDLETIME", "s").with(idleSeconds),
			cmd("OBJECT", "FREQ", "s"),
			cmd("HSET", "h", "f", "v"),
			cmd("OBJECT", "FREQ", "h"),
		}},
		{name: "OBJECT HELP and errors", steps: []step{
			cmd("OBJECT", "HELP"),
			cmd("object", "help"),
			cmd("OBJECT"),
			cmd("OBJECT", "NOSUCH"),
			cmd("object", "nosuch", "k"),
			cmd("Object", "fo\x00o", "k"),
			cmd("OBJECT", strings.Repeat("x", 200)),
			cmd("OBJECT", "ENCODING"),
			cmd("OBJECT", "ENCODING", "a", "b"),
			cmd("OBJECT", "REFCOUNT"),
			cmd("OBJECT", "FREQ", "a", "b"),
			cmd("OBJECT", "IDLETIME"),
			cmd("OBJECT", "HELP", "x"),
		}},
		{name: "OBJECT in MULTI and scripts", steps: []step{
			cmd("SET", "s", "1"),
			cmd("MULTI"),
			cmd("OBJECT", "ENCODING", "s"),
			cmd("MEMORY", "USAGE", "s"),
			cmd("EXEC"),
			cmd("EVAL", "return redis.call('object', 'encoding', KEYS[1])", "1", "s"),
			cmd("EVAL", "return redis.call('object', 'refcount', KEYS[1])", "1", "s"),
			cmd("EVAL", "return redis.call('memory', 'usage', KEYS[1])", "1", "s"),
			cmd("EVAL", "return redis.pcall('object', 'encoding', KEYS[1])", "1", "missing"),
		}},
		{name: "MEMORY USAGE", steps: []step{
			cmd("MEMORY", "USAGE", "missing"),
			cmd("SET", "foo", "bar"), cmd("MEMORY", "USAGE", "foo"),
			cmd("SET", "n", "12345"), cmd("MEMORY", "USAGE", "n"),
			cmd("SET", "s40", strings.Repeat("x", 40)), cmd("MEMORY", "USAGE", "s40"),
			cmd("SET", "s100", strings.Repeat("x", 100)), cmd("MEMORY", "USAGE", "s100").with(memoryClose),
			cmd("SET", "s5000", strings.Repeat("x", 5000)), cmd("MEMORY", "USAGE", "s5000").with(memoryClose),
			cmd("SET", strings.Repeat("k", 40), "v"), cmd("MEMORY", "USAGE", strings.Repeat("k", 40)),
			cmd("HSET", "h", "f", "v"), cmd("MEMORY", "USAGE", "h"),
			fieldsCmd("h100", 100, 10), cmd("MEMORY", "USAGE", "h100").with(memoryClose),
			fieldsCmd("h1000", 1000, 10), cmd("MEMORY", "USAGE", "h1000").with(memoryClose),
			cmd("MEMORY", "USAGE", "h1000", "SAMPLES", "0").with(memoryClose),
			fieldsCmd("hv", 3, 100), cmd("MEMORY", "USAGE", "hv").with(memoryClose),
			cmd("ZADD", "z", "1", "m"), cmd("MEMORY", "USAGE", "z"),
			membersCmd("z100", 100, 8, true), cmd("MEMORY", "USAGE", "z100").with(memoryClose),
			// A skiplist's nodes have random heights: Redis's estimate from
			// 5 nodes varies from one run to the next, from every node not.
			membersCmd("z1000", 1000, 8, false),
			cmd("MEMORY", "USAGE", "z1000", "SAMPLES", "0").with(memoryClose),
			cmd("RPUSH", "l", "a", "b", "c"), cmd("MEMORY", "USAGE", "l"),
			elemsCmd("l5000", 5000, "element-"), cmd("MEMORY", "USAGE", "l5000").with(memoryClose),
			cmd("MEMORY", "USAGE", "l5000", "SAMPLES", "0").with(memoryClose),
			cmd("MEMORY", "USAGE", "l5000", "SAMPLES", "2", "SAMPLES", "1").with(memoryClose),
			cmd("RPUSH", "lbig", strings.Repeat("x", 10000), strings.Repeat("y", 10000)),
			cmd("MEMORY", "USAGE", "lbig").with(memoryClose),
			cmd("memory", "usage", "foo", "samples", "9223372036854775807"),
		}},
		{name: "MEMORY USAGE errors", steps: []step{
			cmd("SET", "foo", "bar"),
			cmd("MEMORY", "USAGE"),
			cmd("MEMORY", "USAGE", "foo", "SAMPLES"),
			cmd("MEMORY", "USAGE", "foo", "SAMPLES", "x"),
			cmd("MEMORY", "USAGE", "foo", "SAMPLES", "-1"),
			cmd("MEMORY", "USAGE", "foo", "SAMPLES", "1.5"),
			cmd("MEMORY", "USAGE", "foo", "SAMPLES", "99999999999999999999"),
			cmd("MEMORY", "USAGE", "foo", "NOSUCH"),
			cmd("MEMORY", "USAGE", "foo", "SAMPLES", "1", "x"),
			cmd("MEMORY", "USAGE", "missing", "SAMPLES", "-1"),
			cmd("MEMORY", "USAGE", "missing", "SAMPLES", "1"),
		}},
		{name: "MEMORY other subcommands", steps: []step{
			cmd("MEMORY", "HELP"),
			cmd("MEMORY", "PURGE"),
			cmd("MEMORY", "DOCTOR").with(anyText),
			cmd("MEMORY", "MALLOC-STATS").with(anyString),
			cmd("MEMORY", "STATS").with(statsFields),
			cmd("SET", "k", "v"),
			cmd("MEMORY", "STATS").with(statsFields),
			cmd("MEMORY"),
			cmd("MEMORY", "NOSUCH"),
			cmd("MEMORY", "STATS", "x"),
			cmd("MEMORY", "HELP", "x"),
			cmd("MEMORY", "PURGE", "x"),
		}},
	}
	for _, n := range objectSubcommands {
		cases = append(cases, tcase{name: "INFO and DOCS " + n, steps: []step{
			cmd("COMMAND", "INFO", n),
			cmd("COMMAND", "DOCS", n).with(docsParts),
		}})
	}
	return cases
}()
