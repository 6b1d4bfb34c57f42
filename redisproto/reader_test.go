package redisproto

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

func readAll(t *testing.T, in string, lim Limits) ([]string, error) {
	t.Helper()
	r := newReader(iotest.OneByteReader(strings.NewReader(in)), lim)
	var out []string
	for {
		args, err := r.next(true)
		if err != nil {
			return out, err
		}
		var b bytes.Buffer
		for i, a := range args {
			if i > 0 {
				b.WriteByte('|')
			}
			b.Write(a)
		}
		out = append(out, b.String())
	}
}

func TestReaderRequests(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		err  string // "" = clean EOF
	}{
		{"*1\r\n$4\r\nPING\r\n", []string{"PING"}, ""},
		{"*2\r\n$3\r\nGET\r\n$0\r\n\r\n", []string{"GET|"}, ""},
		{"*3\r\n$3\r\nSET\r\n$3\r\na\r\n\r\n$1\r\n\x00\r\n", []string{"SET|a\r\n|\x00"}, ""},
		{"*0\r\n*-1\r\nPING\r\n", []string{"PING"}, ""},
		{"PING\r\n\r\n  \r\nECHO  a   b\n", []string{"PING", "ECHO|a|b"}, ""},
		{`SET "a b" 'c d' "\x41\n" '\''` + "\r\n", []string{"SET|a b|c d|A\n|'"}, ""},
		{`SET "" ''` + "\r\n", []string{"SET||"}, ""},
		{`ECHO a"b" c'd'` + "\r\n", []string{"ECHO|ab|cd"}, ""},
		{"ECHO a\x00b c\r\n", []string{"ECHO|a"}, ""},
		{`ECHO "a\qb\x4"` + "\r\n", []string{"ECHO|aqbx4"}, ""},
		{`ECHO "a"b` + "\r\n", nil, "Protocol error: unbalanced quotes in request"},
		{"*1\r\n$4\r\nPINGxx*1\r\n$4\r\nPING\r\n", []string{"PING", "PING"}, ""},
		{"*abc\r\n", nil, "Protocol error: invalid multibulk length"},
		{"*1\r\nx\r\n", nil, "Protocol error: expected '$', got 'x'"},
		{"*1\r\n$-1\r\n", nil, "Protocol error: invalid bulk length"},
		{"*1\r\n$536870913\r\n", nil, "Protocol error: invalid bulk length"},
		{"PING\r\nSET \"k v\r\n", []string{"PING"}, "Protocol error: unbalanced quotes in request"},
		{"ECHO 'a'b\r\n", nil, "Protocol error: unbalanced quotes in request"},
		{strings.Repeat("x", 70<<10), nil, "Protocol error: too big inline request"},
		{"*1\r\n$" + strings.Repeat("1", 70<<10), nil, "Protocol error: too big bulk count string"},
	}
	for _, c := range cases {
		got, err := readAll(t, c.in, Limits{})
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%q: commands %q, want %q", c.in, got, c.want)
		}
		switch {
		case c.err == "" && !errors.Is(err, io.EOF):
			t.Errorf("%q: err %v, want EOF", c.in, err)
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("%q: err %v, want %q", c.in, err, c.err)
		}
	}
}

func TestReaderLimits(t *testing.T) {
	lim := Limits{MaxBulkLen: 10, MaxMultibulkLen: 3}
	if _, err := readAll(t, "*2\r\n$3\r\nGET\r\n$11\r\nxxxxxxxxxxx\r\n", lim); err == nil || err.Error() != "Protocol error: invalid bulk length" {
		t.Fatalf("bulk over the limit: %v", err)
	}
	if _, err := readAll(t, "*4\r\n", lim); err == nil || err.Error() != "Protocol error: invalid multibulk length" {
		t.Fatalf("count over the limit: %v", err)
	}
	got, _ := readAll(t, "*2\r\n$3\r\nGET\r\n$10\r\nxxxxxxxxxx\r\n", lim)
	if len(got) != 1 {
		t.Fatalf("bulk at the limit rejected: %q", got)
	}
}

// A client that announces a huge bulk but sends little must not make the server
// allocate the announced size.
func TestReaderDoesNotPreallocate(t *testing.T) {
	r := newReader(strings.NewReader("*1\r\n$536870000\r\nabc"), Limits{})
	if _, err := r.next(true); !errors.Is(err, io.EOF) {
		t.Fatalf("err = %v, want EOF", err)
	}
	if len(r.buf) > 1<<20 {
		t.Fatalf("buffer grew to %d bytes for 3 bytes of data", len(r.buf))
	}
}

// A large value arriving in small pieces is parsed in linear time and intact.
func TestReaderLargeValue(t *testing.T) {
	val := strings.Repeat("v", 3<<20)
	in := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + "3145728" + "\r\n" + val + "\r\n"
	r := newReader(iotest.HalfReader(strings.NewReader(in)), Limits{})
	args, err := r.next(true)
	if err != nil || len(args) != 3 || string(args[2]) != val {
		t.Fatalf("got %d args, err %v", len(args), err)
	}
}

// chunkReader returns at most n bytes per Read, as a socket hands over what
// arrived.
type chunkReader struct {
	s string
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	k := min(len(p), c.n, len(c.s))
	copy(p, c.s[:k])
	c.s = c.s[k:]
	return k, nil
}

// A request of a million small arguments arriving in socket-sized reads is
// parsed intact, with memory allocated in proportion to its size: growing the
// buffer by one chunk per read copied it over and over (1.7 GB allocated for
// these 7 MB; 1.5 s, and under load more than a client waits).
func TestReaderManyArguments(t *testing.T) {
	const n = 1 << 20
	in := "*" + strconv.Itoa(n+1) + "\r\n$4\r\nECHO\r\n" + strings.Repeat("$1\r\na\r\n", n)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	args, err := newReader(&chunkReader{s: in, n: 64 << 10}, Limits{}).next(true)
	runtime.ReadMemStats(&after)
	if err != nil || len(args) != n+1 || string(args[0]) != "ECHO" {
		t.Fatalf("got %d args, err %v", len(args), err)
	}
	for i, a := range args[1:] {
		if string(a) != "a" {
			t.Fatalf("argument %d is %q", i+1, a)
		}
	}
	// Buffer, argument marks and the argument list: about 14 times the input.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32*uint64(len(in)) {
		t.Fatalf("parsing %d bytes allocated %d bytes", len(in), alloc)
	}
}

func FuzzReader(f *testing.F) {
	for _, s := range []string{"*1\r\n$4\r\nPING\r\n", "PING\r\n", `SET "a\x41" 'b'` + "\n", "*2\r\n$1\r\na\r\n$-5\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r := newReader(bytes.NewReader(in), Limits{MaxBulkLen: 1 << 16})
		for i := 0; i < 1000; i++ {
			if _, err := r.next(true); err != nil {
				return
			}
		}
	})
}
