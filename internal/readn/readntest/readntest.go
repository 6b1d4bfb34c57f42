// Package readntest provides, for tests of frame readers, the connection of
// a peer that announces a large frame and sends only its first bytes, and a
// measure of the heap the reader took meanwhile.
package readntest

import (
	"io"
	"net"
	"runtime"
	"sync"
	"time"
)

// Conn is the reader's end of such a connection. Read delivers Data (after
// the first Write, with HoldUntilWrite: a client's reader must see the reply
// only once its request is out), then blocks until Close; Starved is closed
// when a Read first finds nothing left, that is when the reader has taken
// every byte and waits for the rest of the frame. Writes are discarded.
type Conn struct {
	mu      sync.Mutex
	data    []byte
	wrote   chan struct{} // closed by the first Write
	starved chan struct{}
	closed  chan struct{}
	hold    bool
	once    sync.Once
	wonce   sync.Once
	sonce   sync.Once
}

// NewConn returns a Conn that delivers data, at once or, with
// holdUntilWrite, after the first Write.
func NewConn(data []byte, holdUntilWrite bool) *Conn {
	return &Conn{data: data, hold: holdUntilWrite, wrote: make(chan struct{}),
		starved: make(chan struct{}), closed: make(chan struct{})}
}

// Starved is closed once the reader has consumed Data and asks for more.
func (c *Conn) Starved() <-chan struct{} { return c.starved }

func (c *Conn) Read(p []byte) (int, error) {
	if c.hold {
		select {
		case <-c.wrote:
		case <-c.closed:
			return 0, net.ErrClosed
		}
	}
	c.mu.Lock()
	if len(c.data) > 0 {
		n := copy(p, c.data)
		c.data = c.data[n:]
		c.mu.Unlock()
		return n, nil
	}
	c.mu.Unlock()
	c.sonce.Do(func() { close(c.starved) })
	<-c.closed
	return 0, io.EOF
}

func (c *Conn) Write(p []byte) (int, error) {
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	default:
	}
	c.wonce.Do(func() { close(c.wrote) })
	return len(p), nil
}

// Close unblocks Read (io.EOF from then on).
func (c *Conn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

type addr struct{}

func (addr) Network() string { return "tcp" }
func (addr) String() string  { return "127.0.0.1:1" }

func (c *Conn) LocalAddr() net.Addr              { return addr{} }
func (c *Conn) RemoteAddr() net.Addr             { return addr{} }
func (c *Conn) SetDeadline(time.Time) error      { return nil }
func (c *Conn) SetReadDeadline(time.Time) error  { return nil }
func (c *Conn) SetWriteDeadline(time.Time) error { return nil }

// Listener accepts one Conn, then blocks until Close.
type Listener struct {
	conn   net.Conn
	once   sync.Once
	closed chan struct{}
	taken  chan struct{}
}

// NewListener returns a Listener whose first Accept returns c.
func NewListener(c net.Conn) *Listener {
	l := &Listener{conn: c, closed: make(chan struct{}), taken: make(chan struct{}, 1)}
	l.taken <- struct{}{}
	return l
}

func (l *Listener) Accept() (net.Conn, error) {
	select {
	case <-l.taken:
		return l.conn, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *Listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *Listener) Addr() net.Addr { return addr{} }

// HeapGrowth returns how much the live heap grew between before (called
// after a collection) and the moment starved is closed, waiting for it at
// most wait; ok is false when starved did not close in time.
func HeapGrowth(starved <-chan struct{}, wait time.Duration, start func()) (growth int64, ok bool) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start()
	select {
	case <-starved:
	case <-time.After(wait):
		return 0, false
	}
	runtime.ReadMemStats(&after)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc), true
}
