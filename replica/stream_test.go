package replica

import (
	"bytes"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lockd/lockd/rdb"
	"github.com/lockd/lockd/resp"
)

// chunkConn is a net.Conn that returns data at most chunk bytes a Read,
// then io.EOF. Only Read is used (the readers' timeout is 0).
type chunkConn struct {
	net.Conn
	data  []byte
	chunk int
}

func (c *chunkConn) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), c.chunk, len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func newTestReader(data []byte, chunk int) *reader {
	return newReader(&chunkConn{data: data, chunk: chunk}, new(atomic.Int64))
}

// TestParser parses a stream delivered in chunks of every size from 1 byte:
// the same commands and sizes each time, the parser resuming a command
// split anywhere.
func TestParser(t *testing.T) {
	big := strings.Repeat("v", 3*startBuf+5) // longer than the first buffer
	want := [][]string{
		{"SELECT", "1"},
		{"SET", "k", "a\r\nb\x00"},
		{},
		{"SET", "big", big},
		{"DEL", ""},
		{"PING"},
	}
	var stream []byte
	var sizes []int
	for _, args := range want {
		n := len(stream)
		if len(args) == 0 {
			stream = append(stream, "*0\r\n"...)
		} else {
			stream = resp.AppendCommand(stream, args...)
		}
		sizes = append(sizes, len(stream)-n)
	}
	for _, chunk := range []int{1, 2, 3, 7, 100, startBuf, len(stream)} {
		rd := newTestReader(stream, chunk)
		p := &parser{rd: rd, n: -1, bulk: -1}
		var got [][]string
		var gotSizes []int
		for {
			args, size, ok, err := p.next()
			if err != nil {
				t.Fatalf("chunk %d: %v", chunk, err)
			}
			if ok {
				s := []string{}
				for _, a := range args {
					s = append(s, string(a))
				}
				got = append(got, s)
				gotSizes = append(gotSizes, size)
				continue
			}
			if err := rd.fill(p.need); err != nil {
				if err != io.ErrUnexpectedEOF {
					t.Fatalf("chunk %d: %v", chunk, err)
				}
				break
			}
		}
		if len(got) != len(want) {
			t.Fatalf("chunk %d: %d commands, want %d", chunk, len(got), len(want))
		}
		for i := range want {
			if strings.Join(got[i], " ") != strings.Join(want[i], " ") || gotSizes[i] != sizes[i] {
				t.Fatalf("chunk %d: command %d is %.40q (%d bytes), want %.40q (%d bytes)",
					chunk, i, got[i], gotSizes[i], want[i], sizes[i])
			}
		}
		if len(rd.buf) > 2*(len(big)+64) {
			t.Errorf("chunk %d: the buffer grew to %d bytes for a %d-byte command", chunk, len(rd.buf), len(big))
		}
	}
}

// TestBodies reads an RDB body in both forms, delivered in chunks of every
// size: exactly the RDB's bytes, the stream after it left unread. The
// streamed RDB's bytes include a prefix of the mark.
func TestBodies(t *testing.T) {
	mark := []byte(testReplID)
	rdbBytes := []byte("REDIS0010" + testReplID[:39] + "\x00\xff" + testReplID[:20] + "tail")
	after := "*1\r\n$4\r\nPING\r\n"
	sized := append([]byte(nil), rdbBytes...)
	sized = append(sized, after...)
	marked := append(append(append([]byte(nil), rdbBytes...), mark...), after...)
	for _, chunk := range []int{1, 2, 39, 40, 41, 1000} {
		for _, form := range []string{"sized", "marked"} {
			var rd *reader
			var body io.Reader
			var read atomic.Int64
			if form == "sized" {
				rd = newTestReader(sized, chunk)
				body = &sizedBody{rd: rd, left: int64(len(rdbBytes)), leftStat: new(atomic.Int64), read: &read}
			} else {
				rd = newTestReader(marked, chunk)
				body = &markedBody{rd: rd, mark: mark, read: &read}
			}
			got, err := io.ReadAll(body)
			if err != nil {
				t.Fatalf("%s, chunk %d: %v", form, chunk, err)
			}
			if !bytes.Equal(got, rdbBytes) || read.Load() != int64(len(rdbBytes)) {
				t.Fatalf("%s, chunk %d: read %q (%d counted), want %q", form, chunk, got, read.Load(), rdbBytes)
			}
			rest, _ := io.ReadAll(rd)
			if string(rest) != after {
				t.Fatalf("%s, chunk %d: %q left after the body, want %q", form, chunk, rest, after)
			}
		}
	}
}

// nopSink is a Sink that keeps nothing.
type nopSink struct{ pos Position }

func (s *nopSink) Position() Position                        { return s.pos }
func (s *nopSink) BeginFull(context.Context, Position) error { return nil }
func (s *nopSink) Load(context.Context, rdb.Entry) error     { return nil }
func (s *nopSink) EndFull(context.Context, Position) error   { return nil }
func (s *nopSink) Apply(context.Context, []Command) error    { return nil }
func (s *nopSink) Advance(context.Context, Position) error   { return nil }

// BenchmarkFollow measures the stream's parsing and batching: SETs of
// 100-byte values arriving 16 KB a read, into a sink that does nothing.
func BenchmarkFollow(b *testing.B) {
	var stream []byte
	val := strings.Repeat("v", 100)
	for i := 0; len(stream) < 8<<20; i++ {
		stream = resp.AppendCommand(stream, "SET", "key:"+strconv.Itoa(i), val)
	}
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		l := New(Config{}, &nopSink{})
		rd := newTestReader(stream, startBuf)
		err := l.follow(context.Background(), rd, &writer{}, Position{})
		if err != io.ErrUnexpectedEOF {
			b.Fatal(err)
		}
	}
}
