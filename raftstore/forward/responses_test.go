package forward

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"
)

// gatedConn is a net.Conn whose writes wait for the test: each Write blocks
// until gate has a value, then appends to got (or fails with fail).
type gatedConn struct {
	net.Conn // nil: only Write and Close are used
	gate     chan struct{}
	entered  chan struct{} // a Write began
	mu       sync.Mutex
	got      bytes.Buffer
	writes   int
	fail     error
	closed   bool
}

func (c *gatedConn) Write(p []byte) (int, error) {
	select {
	case c.entered <- struct{}{}:
	default:
	}
	<-c.gate
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	if c.fail != nil {
		return 0, c.fail
	}
	return c.got.Write(p)
}

func (c *gatedConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}

// TestResponsesShareWrites: while one handler writes, the others' responses
// queue and their handlers return at once; the writer then sends them too,
// every frame whole and in the order queued. A failed write closes the
// connection and later responses are dropped.
func TestResponsesShareWrites(t *testing.T) {
	nc := &gatedConn{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	r := &responses{nc: nc, log: slog.New(slog.DiscardHandler)}

	first := make(chan struct{})
	go func() {
		r.send(typeResponse, 1, []byte("one"))
		close(first)
	}()
	select {
	case <-nc.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the first response was not written")
	}
	for id := uint64(2); id <= 10; id++ {
		done := make(chan struct{})
		go func() {
			r.send(typeResponse, id, []byte{byte('a' + id)})
			close(done)
		}()
		select {
		case <-done: // queued behind the write under way, not waiting for it
		case <-time.After(5 * time.Second):
			t.Fatalf("response %d waited for another handler's write", id)
		}
	}
	close(nc.gate) // let every write through
	select {
	case <-first:
	case <-time.After(5 * time.Second):
		t.Fatal("the writing handler did not return")
	}

	rd := bytes.NewReader(nc.got.Bytes())
	for id := uint64(1); id <= 10; id++ {
		var h [headerLen]byte
		if _, err := io.ReadFull(rd, h[:]); err != nil {
			t.Fatalf("frame %d: %v", id, err)
		}
		typ, n, gotID := parseHeader(&h)
		p := make([]byte, n)
		if _, err := io.ReadFull(rd, p); err != nil {
			t.Fatalf("frame %d payload: %v", id, err)
		}
		want := []byte{byte('a' + id)}
		if id == 1 {
			want = []byte("one")
		}
		if typ != typeResponse || gotID != id || !bytes.Equal(p, want) {
			t.Fatalf("frame %d: type %d id %d payload %q, want type %d id %d payload %q", id, typ, gotID, p, typeResponse, id, want)
		}
	}
	if rd.Len() != 0 {
		t.Fatalf("%d bytes after the ten frames", rd.Len())
	}

	nc.mu.Lock()
	nc.fail = errors.New("connection reset")
	nc.mu.Unlock()
	r.send(typeResponse, 11, []byte("lost"))
	nc.mu.Lock()
	closed, writes := nc.closed, nc.writes
	nc.mu.Unlock()
	if !closed {
		t.Fatal("a failed write did not close the connection")
	}
	r.send(typeResponse, 12, []byte("dropped"))
	nc.mu.Lock()
	defer nc.mu.Unlock()
	if nc.writes != writes {
		t.Fatal("a response was written after a failed write")
	}
}
