package fsm

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

func init() {
	// TestEveryKeyspaceRowHasAnExecutor's samples for OBJECT and MEMORY.
	rowSamples["object"] = "OBJECT ENCODING k"
	rowSamples["memory"] = "MEMORY USAGE k"
}

// TestObjectEncoding: OBJECT ENCODING is the encoding Redis 7.0.15 gives a
// value with these contents, at each boundary of its defaults.
func TestObjectEncoding(t *testing.T) {
	h := newHarness(t)
	strs := map[string]string{
		"0": "int", "-1": "int", "9223372036854775807": "int", "-9223372036854775808": "int",
		"9223372036854775808": "embstr", "007": "embstr", "-0": "embstr", "+1": "embstr", "1.5": "embstr",
		strings.Repeat("x", 44): "embstr", strings.Repeat("x", 45): "raw",
	}
	for v, want := range strs {
		h.apply([][]byte{[]byte("SET"), []byte("s"), []byte(v)})
		if got := h.read("OBJECT ENCODING s"); got != bulk(want) {
			t.Errorf("string %q: %q, want %s", v, got, want)
		}
	}
	hset := func(key string, n, vlen int) {
		a := [][]byte{[]byte("HSET"), []byte(key)}
		for i := 0; i < n; i++ {
			a = append(a, []byte("f"+strconv.Itoa(i)), []byte(strings.Repeat("v", vlen)))
		}
		h.apply(a)
	}
	hset("h512", 512, 64)
	hset("h513", 513, 1)
	hset("h65", 1, 65)
	zadd := func(key string, n, mlen int) {
		a := [][]byte{[]byte("ZADD"), []byte(key)}
		for i := 0; i < n; i++ {
			m := fmt.Sprintf("%0*d", mlen, i)
			a = append(a, []byte(strconv.Itoa(i)), []byte(m))
		}
		h.apply(a)
	}
	zadd("z128", 128, 64)
	zadd("z129", 129, 3)
	zadd("z65", 1, 65)
	h.do("RPUSH l a")
	h.do("LOCK.ACQUIRE lk o PX 60000")
	for key, want := range map[string]string{
		"h512": "listpack", "h513": "hashtable", "h65": "hashtable",
		"z128": "listpack", "z129": "skiplist", "z65": "skiplist",
		"l": "quicklist", "lk": "lock",
	} {
		if got := h.read("OBJECT ENCODING " + key); got != bulk(want) {
			t.Errorf("%s: %q, want %s", key, got, want)
		}
	}
	if got := h.read("OBJECT ENCODING missing"); got != "$-1\r\n" {
		t.Errorf("missing key: %q", got)
	}
}

// TestObjectOtherSubcommands: REFCOUNT (Redis's shared integers 0..9999),
// IDLETIME 0, FREQ's error, and nil for a missing key before any of them.
func TestObjectOtherSubcommands(t *testing.T) {
	h := newHarness(t)
	for v, want := range map[string]string{"0": ":2147483647", "9999": ":2147483647", "10000": ":1", "-1": ":1", "abc": ":1"} {
		h.apply(args("SET s " + v))
		if got := h.read("OBJECT REFCOUNT s"); got != want+"\r\n" {
			t.Errorf("REFCOUNT of %q: %q, want %s", v, got, want)
		}
	}
	h.do("HSET h f 1")
	for cmd, want := range map[string]string{
		"OBJECT REFCOUNT h": ":1\r\n", "OBJECT IDLETIME h": ":0\r\n",
		"OBJECT FREQ missing": "$-1\r\n", "OBJECT IDLETIME missing": "$-1\r\n", "OBJECT REFCOUNT missing": "$-1\r\n",
	} {
		if got := h.read(cmd); got != want {
			t.Errorf("%s: %q, want %q", cmd, got, want)
		}
	}
	if got := h.read("OBJECT FREQ h"); !strings.HasPrefix(got, "-ERR An LFU maxmemory policy is not selected") {
		t.Errorf("OBJECT FREQ: %q", got)
	}
	if got := h.read("OBJECT HELP"); !strings.HasPrefix(got, "*15\r\n+OBJECT <subcommand>") {
		t.Errorf("OBJECT HELP: %q", got)
	}
}

// TestMemoryUsage: the estimates are Redis's for small values (checked
// against redis-server 7.0.15), grow with the value, stay bounded in work
// with the default SAMPLES, and are nil for a missing key.
func TestMemoryUsage(t *testing.T) {
	h := newHarness(t)
	h.do("SET foo bar")
	h.do("SET n 12345")
	h.do("HSET h f v")
	for cmd, want := range map[string]string{
		"MEMORY USAGE foo": ":64\r\n", "MEMORY USAGE h": ":64\r\n", "MEMORY USAGE n": ":48\r\n", "MEMORY USAGE missing": "$-1\r\n",
	} {
		if got := h.read(cmd); got != want {
			t.Errorf("%s: %q, want %q", cmd, got, want)
		}
	}
	usage := func(cmd string) int {
		t.Helper()
		got := h.read(cmd)
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(got, ":"), "\r\n"))
		if err != nil {
			t.Fatalf("%s: %q", cmd, got)
		}
		return n
	}
	// A long list: the default SAMPLES measures 5 nodes and scales them
	// (redis-server 7.0.15: 3111784 sampled, 3110760 whole).
	const n = 200000
	a := [][]byte{[]byte("RPUSH"), []byte("big")}
	for i := 0; i < n; i++ {
		a = append(a, []byte("element-"+strconv.Itoa(i)))
	}
	h.apply(a)
	sampled, all := usage("MEMORY USAGE big"), usage("MEMORY USAGE big SAMPLES 0")
	if sampled != 3111784 || all != 3110760 {
		t.Errorf("list of %d: %d sampled, %d measured whole", n, sampled, all)
	}
	h.do("LOCK.ACQUIRE lk owner PX 60000")
	if got := usage("MEMORY USAGE lk"); got < 100 || got > 400 {
		t.Errorf("a lock record: %d", got)
	}
	for _, key := range []string{"h", "foo"} {
		if usage("MEMORY USAGE "+key+" SAMPLES 1") != usage("MEMORY USAGE "+key) {
			t.Errorf("%s: SAMPLES changes a small value's estimate", key)
		}
	}
}

// TestMallocSize pins jemalloc's size classes the estimates use.
func TestMallocSize(t *testing.T) {
	for n, want := range map[int]int{1: 8, 8: 8, 9: 16, 17: 32, 33: 48, 100: 112, 128: 128, 129: 160, 257: 320, 513: 640, 8193: 10240} {
		if got := mallocSize(n); got != want {
			t.Errorf("mallocSize(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestMemoryOtherSubcommands: lockd's answers to the subcommands that
// describe a Redis process.
func TestMemoryOtherSubcommands(t *testing.T) {
	h := newHarness(t)
	h.do("SET a 1")
	h.do("SET b 2")
	stats := h.read("MEMORY STATS")
	if !strings.HasPrefix(stats, "*56\r\n$14\r\npeak.allocated\r\n:0\r\n") ||
		!strings.Contains(stats, "$10\r\nkeys.count\r\n:2\r\n") || !strings.Contains(stats, "$4\r\ndb.0\r\n*6\r\n") {
		t.Errorf("MEMORY STATS: %q", stats)
	}
	for cmd, want := range map[string]string{
		"MEMORY PURGE":        "+OK\r\n",
		"MEMORY MALLOC-STATS": "$45\r\nStats not supported for the current allocator\r\n",
		"MEMORY DOCTOR":       "$105\r\nHi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n\r\n",
	} {
		if got := h.read(cmd); got != want {
			t.Errorf("%s: %q, want %q", cmd, got, want)
		}
	}
}
