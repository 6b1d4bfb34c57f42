package compat

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestReadFrame checks the raw reader on every RESP2/RESP3 type: it must take
// exactly one frame, leave the next one unread, and re-encode losslessly.
func TestReadFrame(t *testing.T) {
	frames := []string{
		"+OK\r\n",
		"-ERR unknown command 'foo', with args beginning with: \r\n",
		":0\r\n",
		":-9223372036854775808\r\n",
		"$-1\r\n",
		"$0\r\n\r\n",
		"$5\r\nhe\r\no\r\n",
		"*-1\r\n",
		"*0\r\n",
		"*3\r\n$1\r\na\r\n:1\r\n*2\r\n_\r\n$-1\r\n",
		"_\r\n",
		",1.5\r\n",
		",inf\r\n",
		"#t\r\n",
		"#f\r\n",
		"!21\r\nSYNTAX invalid syntax\r\n",
		"=15\r\ntxt:Some string\r\n",
		"(3492890328409238509324850943850943825024385\r\n",
		"%2\r\n+first\r\n:1\r\n$6\r\nsecond\r\n%1\r\n+x\r\n~2\r\n#t\r\n#f\r\n",
		"~0\r\n",
		">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$3\r\nmsg\r\n",
		"|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n*2\r\n:2039123\r\n:9543892\r\n",
		"*1\r\n|1\r\n+ttl\r\n:100\r\n$1\r\nv\r\n",
	}
	for _, f := range frames {
		r := bufio.NewReader(strings.NewReader(f + "+NEXT\r\n"))
		got, err := readFrame(r)
		if err != nil || string(got) != f {
			t.Errorf("readFrame(%q) = %q, %v", f, got, err)
			continue
		}
		if next, err := readFrame(r); err != nil || string(next) != "+NEXT\r\n" {
			t.Errorf("after %q: next frame %q, %v", f, next, err)
		}
		v, err := parseValue([]byte(f))
		if err != nil {
			t.Errorf("parseValue(%q): %v", f, err)
			continue
		}
		if enc := v.encode(); !bytes.Equal(enc, []byte(f)) {
			t.Errorf("encode(parseValue(%q)) = %q", f, enc)
		}
	}

	bad := []string{"?x\r\n", "+OK\n", "$3\r\nabcd\r\n", ":x\r\n", "#x\r\n", "_x\r\n", "$-2\r\n", "*-2\r\n", "%-1\r\n", "\r\n"}
	for _, f := range bad {
		if got, err := readFrame(bufio.NewReader(strings.NewReader(f))); !errors.Is(err, errBadFrame) {
			t.Errorf("readFrame(%q) = %q, %v; want errBadFrame", f, got, err)
		}
	}

	// A clean EOF before any byte is io.EOF (the server closed); inside a
	// frame it is io.ErrUnexpectedEOF (closed after a partial reply).
	if _, err := readFrame(bufio.NewReader(strings.NewReader(""))); err != io.EOF {
		t.Errorf("empty input: %v, want io.EOF", err)
	}
	for _, f := range []string{"+OK", "$5\r\nab", "*2\r\n:1\r\n"} {
		if _, err := readFrame(bufio.NewReader(strings.NewReader(f))); err != io.ErrUnexpectedEOF {
			t.Errorf("readFrame(%q): %v, want io.ErrUnexpectedEOF", f, err)
		}
	}
}

func bulk(s string) string { return string(value{kind: '$', str: s}.encode()) }

// TestNormalizers pins the tolerances, so that a loosened normaliser shows up.
func TestNormalizers(t *testing.T) {
	same := func(n normalizer, r, o string) bool {
		a, b := n.fn([]byte(r), []byte(o))
		return bytes.Equal(a, b)
	}
	cases := []struct {
		n    normalizer
		r, o string
		want bool
	}{
		{ttlSeconds, ":100\r\n", ":99\r\n", true},
		{ttlSeconds, ":100\r\n", ":98\r\n", false},
		{ttlSeconds, ":-1\r\n", ":0\r\n", false},
		{ttlSeconds, ":-2\r\n", ":-2\r\n", true},
		{ttlMillis, ":100000\r\n", ":99751\r\n", true},
		{ttlMillis, ":100000\r\n", ":99749\r\n", false},
		{ttlMillis, ":5\r\n", "$1\r\n5\r\n", false},
		{clientID, ":3\r\n", ":12345\r\n", true},
		{clientID, ":3\r\n", "$1\r\n3\r\n", false},
		{unordered, "*2\r\n$1\r\nb\r\n$1\r\na\r\n", "*2\r\n$1\r\na\r\n$1\r\nb\r\n", true},
		{unordered, "*2\r\n$1\r\nb\r\n$1\r\na\r\n", "*2\r\n$1\r\na\r\n$1\r\na\r\n", false},
		{unordered, "*0\r\n", "*0\r\n", true},
		{helloIdentity,
			"%3\r\n$6\r\nserver\r\n$5\r\nredis\r\n$2\r\nid\r\n:3\r\n$7\r\nmodules\r\n*0\r\n",
			"%3\r\n$6\r\nserver\r\n$5\r\nredis\r\n$2\r\nid\r\n:9\r\n$7\r\nmodules\r\n*1\r\n+x\r\n", true},
		{helloIdentity,
			"*4\r\n$6\r\nserver\r\n$5\r\nredis\r\n$2\r\nid\r\n:3\r\n",
			"*4\r\n$6\r\nserver\r\n$5\r\nlockd\r\n$2\r\nid\r\n:3\r\n", false},
		{clientFields, bulk("id=3 addr=a:1 name=x\n"), bulk("id=777 addr=b:22 name=x\n"), true},
		{clientFields, bulk("id=3 addr=a:1 name=x\n"), bulk("id=3 addr=a:1 name=y\n"), false},
		{clientFields, "=25\r\ntxt:id=3 addr=a:1 name=x\n\r\n", "=27\r\ntxt:id=777 addr=b:2 name=x\n\r\n", true},
		{infoText, bulk("# Server\r\nredis_version:7\r\n"), bulk("# Server\nredis_version:8.4\n"), true},
		{infoText, bulk("# Server\r\nredis_version:7\r\n"), "=12\r\ntxt:# Server\r\n", false},
		{infoText, bulk("# Server\r\nredis_version:7\r\n"), bulk("# Server\r\nversion:7\r\n"), false},
		{serverTime, "*2\r\n$10\r\n1700000000\r\n$6\r\n123456\r\n", "*2\r\n$10\r\n1700000001\r\n$1\r\n7\r\n", true},
		{serverTime, "*2\r\n$10\r\n1700000000\r\n$6\r\n123456\r\n", "*2\r\n$10\r\n1700000009\r\n$1\r\n7\r\n", false},
	}
	for _, c := range cases {
		if got := same(c.n, c.r, c.o); got != c.want {
			t.Errorf("%s(%q, %q) equal = %v, want %v", c.n.name, c.r, c.o, got, c.want)
		}
	}
}
