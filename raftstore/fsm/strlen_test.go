package fsm

import (
	"strings"
	"testing"

	"github.com/lockd/lockd/command"
)

// TestStrlen: STRLEN answers the length of a string value, 0 for a missing
// key, and WRONGTYPE for a hash or a lock, as Redis 7 does.
func TestStrlen(t *testing.T) {
	h := newHarness(t)
	if got := h.read("STRLEN missing"); got != num(0) {
		t.Errorf("STRLEN of a missing key = %q, want %q", got, num(0))
	}
	h.do("SET k hello")
	if got := h.read("strlen k"); got != num(5) {
		t.Errorf("strlen k = %q, want %q", got, num(5))
	}
	h.do("SET s 12345678901234567890")
	if got := h.read("STRLEN s"); got != num(20) {
		t.Errorf("STRLEN s = %q, want %q", got, num(20))
	}
	h.apply([][]byte{[]byte("SET"), []byte("e"), {}})
	if got := h.read("STRLEN e"); got != num(0) {
		t.Errorf("STRLEN of an empty string = %q, want %q", got, num(0))
	}
	h.apply([][]byte{[]byte("SET"), []byte("b"), []byte("\x00\xff\r\n")})
	if got := h.read("STRLEN b"); got != num(4) {
		t.Errorf("STRLEN of binary bytes = %q, want %q", got, num(4))
	}
	h.do("HSET h f v")
	h.do("LOCK.ACQUIRE l owner PX 60000")
	for _, key := range []string{"h", "l"} {
		if got, want := h.read("STRLEN "+key), "-"+string(command.ErrWrongType)+"\r\n"; got != want {
			t.Errorf("STRLEN %s = %q, want %q", key, got, want)
		}
	}
	h.do("SET t v PX 100")
	h.now += 200
	if got := h.read("STRLEN t"); got != num(0) {
		t.Errorf("STRLEN of an expired key = %q, want %q", got, num(0))
	}
}

// rowSamples is one valid request of every keyspace command: the FSM must
// have an executor for each (TestEveryKeyspaceRowHasAnExecutor).
var rowSamples = map[string]string{
	"set": "SET k v", "setnx": "SETNX k v", "setex": "SETEX k 10 v", "psetex": "PSETEX k 10000 v",
	"get": "GET k", "strlen": "STRLEN k", "getdel": "GETDEL k", "getex": "GETEX k", "del": "DEL k",
	"unlink": "UNLINK k", "exists": "EXISTS k", "expire": "EXPIRE k 10", "pexpire": "PEXPIRE k 10000",
	"expireat": "EXPIREAT k 4000000000", "pexpireat": "PEXPIREAT k 4000000000000", "ttl": "TTL k",
	"pttl": "PTTL k", "expiretime": "EXPIRETIME k", "pexpiretime": "PEXPIRETIME k", "persist": "PERSIST k",
	"type": "TYPE k", "delex": "DELEX k", "digest": "DIGEST k", "incr": "INCR n", "decr": "DECR n",
	"incrby": "INCRBY n 2", "decrby": "DECRBY n 2", "mget": "MGET k n", "mset": "MSET a 1 b 2",
	"msetnx": "MSETNX c 1 d 2", "getrange": "GETRANGE k 0 -1", "dbsize": "DBSIZE", "keys": "KEYS *",
	"scan": "SCAN 0", "flushall": "FLUSHALL", "hset": "HSET h f v", "hmset": "HMSET h f v",
	"hsetnx": "HSETNX h g v", "hdel": "HDEL h g", "hincrby": "HINCRBY h n 1", "hget": "HGET h f",
	"hmget": "HMGET h f", "hgetall": "HGETALL h", "hexists": "HEXISTS h f", "hlen": "HLEN h",
	"hkeys": "HKEYS h", "hvals": "HVALS h", "publish": "PUBLISH ch m", "fence": "FENCE k",
	"lock.acquire": "LOCK.ACQUIRE l o PX 60000", "lock.release": "LOCK.RELEASE l 1",
	"lock.extend": "LOCK.EXTEND l 1 60000", "lock.validate": "LOCK.VALIDATE l 1", "lock.info": "LOCK.INFO l",
	"lock.cancel": "LOCK.CANCEL l 7", "session.open": "SESSION.OPEN", "session.keepalive": "SESSION.KEEPALIVE 1",
	"session.close": "SESSION.CLOSE 1", "namespace.set": "NAMESPACE.SET ns: MAXTTL 1000",
	"namespace.get": "NAMESPACE.GET ns:", "namespace.list": "NAMESPACE.LIST", "namespace.del": "NAMESPACE.DEL ns:",
	"eval": "EVAL return 1 0", "evalsha": "EVALSHA e0e1f9fabfc9d4800c877a703b823ac0578ff8db 0",
	"eval_ro": "EVAL_RO return 1 0", "evalsha_ro": "EVALSHA_RO e0e1f9fabfc9d4800c877a703b823ac0578ff8db 0",
}

// TestEveryKeyspaceRowHasAnExecutor: every row of the command table that the
// FSM runs (command.HandlerFSM) has a sample here, parses, and reaches an
// executor of Keyspace.Exec, so adding a row without its handler fails.
func TestEveryKeyspaceRowHasAnExecutor(t *testing.T) {
	h := newHarness(t)
	for _, s := range command.Specs() {
		sample, ok := rowSamples[s.Name]
		if !ok {
			t.Errorf("%s: no sample request in rowSamples", s.Name)
			continue
		}
		a := args(sample)
		if _, spec, err := command.Parse(a); err != nil || spec != s {
			t.Errorf("%s: sample %q does not parse as its row (%v)", s.Name, sample, err)
			continue
		}
		if got := h.apply(a); strings.Contains(got, "no executor") {
			t.Errorf("%s: %s", s.Name, strings.TrimSpace(got))
		}
	}
	for name := range rowSamples {
		if s, ok := command.Lookup([]byte(name)); !ok || s.Handler != command.HandlerFSM {
			t.Errorf("rowSamples names %s, which is no keyspace row", name)
		}
	}
}
