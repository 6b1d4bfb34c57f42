package fsm

import (
	"encoding/binary"
	"strconv"
	"strings"
	"testing"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/rdb"
)

// The DUMP and RESTORE samples for TestEveryKeyspaceRowHasAnExecutor.
func init() {
	rowSamples["dump"] = "DUMP k"
	rowSamples["restore"] = "RESTORE k 0 payload"
}

// migrating is a harness whose settings have FeatureMigration on.
func migrating(t *testing.T) *harness {
	h := newHarness(t)
	h.ks.settings.Features |= command.FeatureMigration
	return h
}

// dumpOf is the payload DUMP key answers, or fails the test.
func (h *harness) dumpOf(key string) string {
	h.t.Helper()
	v := h.ks.Read(command.Dump{Key: []byte(key)}, h.now, wall+h.now)
	if v.Str == nil || strings.HasPrefix(v.String(), "ERR") {
		h.t.Fatalf("DUMP %s = %v", key, v)
	}
	return string(v.Str)
}

// Every kind lockd holds survives DUMP then RESTORE under another key, TTL
// and all; the payload is rdb.EncodeDump's of the value.
func TestDumpRestoreRoundTrip(t *testing.T) {
	h := migrating(t)
	h.do("SET s hello")
	h.do("SET n 12345")
	h.do("HSET h f1 v1 f2 v2")
	h.do("ZADD z 2 b 1 a 3 c")
	h.do("RPUSH l x y z")
	reads := map[string]string{"s": "GET %s", "n": "GET %s", "h": "HGETALL %s", "z": "ZRANGE %s 0 -1 WITHSCORES", "l": "LRANGE %s 0 -1"}
	for _, key := range []string{"s", "n", "h", "z", "l"} {
		p := h.dumpOf(key)
		if got := h.doArgs("RESTORE", key+"2", "5000", p); got != "+OK\r\n" {
			t.Fatalf("RESTORE %s2 = %q", key, got)
		}
		read := reads[key]
		if a, b := h.do(strings.Replace(read, "%s", key, 1)), h.do(strings.Replace(read, "%s", key+"2", 1)); a != b {
			t.Errorf("%s: restored %q, want %q", key, b, a)
		}
		if got := h.do("PTTL " + key + "2"); got != ":5000\r\n" {
			t.Errorf("PTTL %s2 = %q", key, got)
		}
		if got := h.dumpOf(key + "2"); got != p {
			t.Errorf("DUMP %s2 = %q, want %q", key, got, p)
		}
	}
	if got, want := h.dumpOf("s"), string(rdb.EncodeDump(rdb.Value{Type: rdb.String, Str: []byte("hello")})); got != want {
		t.Errorf("DUMP s = %q, want %q", got, want)
	}
	if got := h.read("DUMP absent"); got != "$-1\r\n" {
		t.Errorf("DUMP absent = %q", got)
	}
	h.do("LOCK.ACQUIRE lk owner PX 10000")
	if got := h.read("DUMP lk"); got != "-"+errDumpLock+"\r\n" {
		t.Errorf("DUMP of a lock = %q", got)
	}
}

// RESTORE's checks in Redis's order, and its TTL forms.
func TestRestoreErrorsAndTTL(t *testing.T) {
	h := migrating(t)
	str := string(rdb.EncodeDump(rdb.Value{Type: rdb.String, Str: []byte("v")}))
	h.do("SET k old")
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"RESTORE", "k", "-1", "junk"}, "-BUSYKEY Target key name already exists.\r\n"},
		{[]string{"RESTORE", "new", "x", "junk"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"RESTORE", "new", "-1", "junk"}, "-ERR Invalid TTL value, must be >= 0\r\n"},
		{[]string{"RESTORE", "new", "0", "junk"}, "-ERR DUMP payload version or checksum are wrong\r\n"},
		{[]string{"RESTORE", "new", "0", str[:len(str)-1] + "x"}, "-ERR DUMP payload version or checksum are wrong\r\n"},
		{[]string{"RESTORE", "new", "0", str, "IDLETIME", "-1"}, "-ERR Invalid IDLETIME value, must be >= 0\r\n"},
		{[]string{"RESTORE", "new", "0", str, "FREQ", "256"}, "-ERR Invalid FREQ value, must be >= 0 and <= 255\r\n"},
		{[]string{"RESTORE", "new", "0", str, "FREQ", "1", "IDLETIME", "1"}, "-ERR syntax error\r\n"},
		{[]string{"RESTORE", "new", "0", str, "IDLETIME"}, "-ERR syntax error\r\n"},
		{[]string{"RESTORE", "new", "0", str, "NOPE"}, "-ERR syntax error\r\n"},
		{[]string{"EXISTS", "new"}, ":0\r\n"},
		{[]string{"RESTORE", "k", "0", str, "REPLACE", "IDLETIME", "5", "IDLETIME", "6"}, "+OK\r\n"},
		{[]string{"GET", "k"}, "$1\r\nv\r\n"},
		{[]string{"PTTL", "k"}, ":-1\r\n"},
		{[]string{"RESTORE", "abs", strconv.FormatInt(wall+h.now+7000, 10), str, "ABSTTL", "FREQ", "3"}, "+OK\r\n"},
		{[]string{"PTTL", "abs"}, ":7000\r\n"},
		// A TTL already past: OK, nothing created, the replaced key gone.
		{[]string{"RESTORE", "k", strconv.FormatInt(wall+h.now, 10), str, "ABSTTL", "REPLACE"}, "+OK\r\n"},
		{[]string{"EXISTS", "k"}, ":0\r\n"},
		{[]string{"RESTORE", "k", "9223372036854775807", str}, "+OK\r\n"},
		{[]string{"EXISTS", "k"}, ":0\r\n"},
	}
	for _, s := range steps {
		if got := h.doArgs(s.args...); got != s.want {
			t.Errorf("%q = %q, want %q", s.args, got, s.want)
		}
	}
}

// Types lockd does not hold are refused, naming the type; so is an empty
// collection (Redis: Bad data format).
func TestRestoreRefusedTypes(t *testing.T) {
	h := migrating(t)
	set := string(rdb.EncodeDump(rdb.Value{Type: rdb.Set, Set: [][]byte{[]byte("1"), []byte("2")}}))
	if got := h.doArgs("RESTORE", "s", "0", set); got != "-ERR lockd does not hold set values\r\n" {
		t.Errorf("RESTORE of a set = %q", got)
	}
	// An empty stream (RDB type 19: no listpacks, length 0, last id 0-0,
	// first id 0-0, max deleted id 0-0, 0 entries added, no groups).
	stream := withFooter([]byte{19, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	if got := h.doArgs("RESTORE", "x", "0", string(stream)); got != "-ERR lockd does not hold stream values\r\n" {
		t.Errorf("RESTORE of a stream = %q", got)
	}
	if got := h.doArgs("RESTORE", "x", "0", string(withFooter([]byte{4, 0}))); got != "-ERR Bad data format\r\n" {
		t.Errorf("RESTORE of an empty hash = %q", got)
	}
	if got := h.do("DBSIZE"); got != ":0\r\n" {
		t.Errorf("DBSIZE = %q after refused restores", got)
	}
}

// A value that would decode past MaxRestoreBytes (an LZF string of
// back-references, 264 bytes out for 3 in) is refused and changes nothing.
func TestRestoreTooLarge(t *testing.T) {
	h := migrating(t)
	n := MaxRestoreBytes/264 + 1
	lzf := make([]byte, 0, 2+3*n)
	lzf = append(lzf, 0, 'a') // a literal run of one byte
	for i := 0; i < n; i++ {
		lzf = append(lzf, 0xe0, 0xff, 0x00) // copy 264 bytes from 1 back
	}
	body := []byte{0, 0xc3} // a string, LZF-encoded
	body = appendLen32(body, len(lzf))
	body = appendLen32(body, 1+264*n)
	body = append(body, lzf...)
	if got := h.doArgs("RESTORE", "big", "0", string(withFooter(body))); got != "-"+errRestoreTooLarge+"\r\n" {
		t.Fatalf("RESTORE of %d bytes = %q", 1+264*n, got)
	}
	if !strings.Contains(errRestoreTooLarge, " "+strconv.Itoa(MaxRestoreBytes)+" ") {
		t.Errorf("%q does not name MaxRestoreBytes", errRestoreTooLarge)
	}
	if got := h.do("EXISTS big"); got != ":0\r\n" {
		t.Errorf("EXISTS big = %q", got)
	}
}

// With FeatureMigration off (a member may not know RESTORE entries), the
// state machine refuses a RESTORE and changes nothing.
func TestRestoreNeedsFeatureMigration(t *testing.T) {
	h := newHarness(t) // FeatureCollections only
	p := string(rdb.EncodeDump(rdb.Value{Type: rdb.String, Str: []byte("new")}))
	h.do("SET k old")
	v := h.watchVersion("k")
	want := "-" + ErrMigrationOff + "\r\n"
	for _, a := range [][]string{{"RESTORE", "k", "0", p, "REPLACE"}, {"RESTORE", "fresh", "0", p}} {
		if got := h.doArgs(a...); got != want {
			t.Errorf("%q = %q, want %q", a, got, want)
		}
	}
	if got := h.do("GET k"); got != "$3\r\nold\r\n" {
		t.Errorf("GET k = %q", got)
	}
	if got := h.do("EXISTS fresh"); got != ":0\r\n" {
		t.Errorf("EXISTS fresh = %q", got)
	}
	if h.watchVersion("k") != v {
		t.Errorf("k's WATCH version changed")
	}
	// DUMP is a read: it needs no feature.
	if got := h.dumpOf("k"); got != string(rdb.EncodeDump(rdb.Value{Type: rdb.String, Str: []byte("old")})) {
		t.Errorf("DUMP k = %q", got)
	}
}

// A list or sorted set RESTORE waits for FeatureCollections as their
// commands do.
func TestRestoreCollectionsOff(t *testing.T) {
	h := newHarness(t)
	h.ks.settings.Features = command.FeatureMigration
	p := string(rdb.EncodeDump(rdb.Value{Type: rdb.List, List: [][]byte{[]byte("a")}}))
	if got := h.doArgs("RESTORE", "l", "0", p); got != "-"+errCollectionsOff+"\r\n" {
		t.Errorf("RESTORE of a list = %q", got)
	}
}

// RESTORE is a write like any other: it serves a blocked pop, changes the
// key's WATCH version, and REPLACE over a lock tells its waiters.
func TestRestoreEffects(t *testing.T) {
	h := migrating(t)
	id := h.queued("BLPOP q 0")
	p := string(rdb.EncodeDump(rdb.Value{Type: rdb.List, List: [][]byte{[]byte("a"), []byte("b")}}))
	if got := h.doArgs("RESTORE", "q", "0", p); got != "+OK\r\n" {
		t.Fatalf("RESTORE q = %q", got)
	}
	if got, want := h.popWakes(), strconv.FormatUint(id, 10)+`:"*2\r\n$1\r\nq\r\n$1\r\na\r\n"`; got != want {
		t.Errorf("wakes = %s, want %s", got, want)
	}
	if got := h.do("LRANGE q 0 -1"); got != "*1\r\n$1\r\nb\r\n" {
		t.Errorf("LRANGE q = %q", got)
	}
	v := h.watchVersion("q")
	if got := h.doArgs("RESTORE", "q", "0", p, "REPLACE"); got != "+OK\r\n" {
		t.Fatalf("RESTORE q REPLACE = %q", got)
	}
	if h.watchVersion("q") == v {
		t.Errorf("RESTORE REPLACE left q's WATCH version at %d", v)
	}
	h.do("LOCK.ACQUIRE lk a PX 10000")
	w := h.queued("LOCK.ACQUIRE lk b PX 10000 WAIT 5000")
	h.wakes()
	s := string(rdb.EncodeDump(rdb.Value{Type: rdb.String, Str: []byte("v")}))
	if got := h.doArgs("RESTORE", "lk", "0", s, "REPLACE"); got != "+OK\r\n" {
		t.Fatalf("RESTORE lk REPLACE = %q", got)
	}
	if got, want := h.wakes(), strconv.FormatUint(w, 10)+"=0"; got != want {
		t.Errorf("lock waiter wakes = %q, want %q", got, want)
	}
	if got := h.do("TYPE lk"); got != "+string\r\n" {
		t.Errorf("TYPE lk = %q", got)
	}
}

// withFooter appends a DUMP footer (RDB version 10, Redis's CRC64) to body.
func withFooter(body []byte) []byte {
	return rdb.AppendFooter(append([]byte(nil), body...), rdb.Version)
}

// appendLen32 appends n as an RDB 32-bit length.
func appendLen32(b []byte, n int) []byte {
	return binary.BigEndian.AppendUint32(append(b, 0x80), uint32(n))
}
