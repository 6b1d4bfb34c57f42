package redisproto

import (
	"strings"
	"testing"
	"time"
)

// SLOWLOG GET lists the newest entries first and keeps at most
// slowlog-max-len of them; lowering the length drops the oldest.
func TestSlowlogNewestFirstAndBounded(t *testing.T) {
	s := startServer(t, Config{}, newFSMStore())
	c := dialClient(t, s.Addr())
	for _, cmd := range [][]string{
		{"CONFIG", "SET", "slowlog-log-slower-than", "0"},
		{"CONFIG", "SET", "slowlog-max-len", "3"},
		{"ECHO", "m1"}, {"ECHO", "m2"}, {"ECHO", "m3"}, {"ECHO", "m4"},
	} {
		c.do(cmd...)
	}
	got := c.do("SLOWLOG", "GET", "-1")
	i4, i3, i2 := strings.Index(got, "m4"), strings.Index(got, "m3"), strings.Index(got, "m2")
	if i4 < 0 || i3 < i4 || i2 < i3 || strings.Contains(got, "m1") || strings.Count(got, "ECHO") != 3 {
		t.Fatalf("SLOWLOG GET -1 with slowlog-max-len 3 after ECHO m1..m4 = %q; want the ECHOs of m4, m3, m2 in that order", got)
	}
	if got := c.do("SLOWLOG", "GET", "1"); !strings.Contains(got, "GET") || strings.Contains(got, "m4") {
		t.Fatalf("SLOWLOG GET 1 = %q; want only the newest entry, the SLOWLOG GET before it", got)
	}
	c.do("CONFIG", "SET", "slowlog-max-len", "1")
	if got := c.do("SLOWLOG", "LEN"); got != ":1\r\n" {
		t.Fatalf("SLOWLOG LEN after slowlog-max-len 1 = %q, want :1", got)
	}
	if got := c.do("SLOWLOG", "GET"); !strings.HasPrefix(got, "*1\r\n") || !strings.Contains(got, "LEN") {
		t.Fatalf("SLOWLOG GET after slowlog-max-len 1 = %q; want one entry, the SLOWLOG LEN before it", got)
	}
}

// BenchmarkSlowlogNote is one slow command noted in a full slow log (a
// pipeline's slow batch notes every command in it).
func BenchmarkSlowlogNote(b *testing.B) {
	var l slowlog
	l.init()
	l.slower = 0
	l.publish()
	c := &conn{addr: "127.0.0.1:1"}
	args := [][]byte{[]byte("LOCK.ACQUIRE"), []byte("lock:123456"), []byte("owner-123456"), []byte("PX"), []byte("3600000")}
	b.ReportAllocs()
	for b.Loop() {
		l.note(c, "lock.acquire", args, time.Millisecond)
	}
}
