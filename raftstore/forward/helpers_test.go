package forward

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return nc, err
}

type testServer struct {
	addr   string
	ln     *countingListener
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// startServer runs serve on a 127.0.0.1 listener until the test ends or
// stop is called.
func startServer(t *testing.T, h Handler, maxFrame int) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startOn(t, ln, h, maxFrame)
}

func startOn(t *testing.T, ln net.Listener, h Handler, maxFrame int) *testServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &testServer{addr: ln.Addr().String(), ln: &countingListener{Listener: ln}, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- serve(ctx, s.ln, h, nil, maxFrame) }()
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop stops the server as a crash would look to its clients: listener and
// connections closed at once. It waits for Serve to return.
func (s *testServer) stop(t *testing.T) {
	t.Helper()
	s.once.Do(func() {
		s.cancel()
		select {
		case err := <-s.done:
			if err != nil {
				t.Errorf("Serve returned %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not return within 10s of its ctx ending")
		}
	})
}

func tcpDial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// countingDialer wraps a Dialer and counts its dials.
type countingDialer struct {
	dial  Dialer
	dials atomic.Int64
}

func (d *countingDialer) Dial(ctx context.Context, addr string) (net.Conn, error) {
	d.dials.Add(1)
	return d.dial(ctx, addr)
}

// waitUntil polls cond until it holds, failing the test after 10s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// recv waits for a value from ch, failing the test after 10s.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// poolSize is the number of connections (dialing or open) c keeps to addr.
func (c *Client) poolSize(addr string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pools[addr])
}

// checkErr fails the test unless err wraps want and every one of also, and
// does not wrap the other of ErrNotSent and ErrUnknown.
func checkErr(t *testing.T, err, want error, also ...error) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want %v", want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want it to wrap %v", err, want)
	}
	other := ErrUnknown
	if want == ErrUnknown {
		other = ErrNotSent
	}
	if errors.Is(err, other) {
		t.Fatalf("err = %v wraps both ErrNotSent and ErrUnknown", err)
	}
	for _, a := range also {
		if !errors.Is(err, a) {
			t.Fatalf("err = %v, want it to wrap %v too", err, a)
		}
	}
}

// pipeNet connects Dialer and Listener through net.Pipe.
type pipeNet struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeNet() *pipeNet {
	return &pipeNet{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (p *pipeNet) Dial(ctx context.Context, addr string) (net.Conn, error) {
	c, s := net.Pipe()
	select {
	case p.conns <- s:
		return c, nil
	case <-p.closed:
		return nil, errors.New("pipe: connection refused")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *pipeNet) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.closed:
		return nil, net.ErrClosed
	}
}

func (p *pipeNet) Close() error {
	p.once.Do(func() { close(p.closed) })
	return nil
}

func (p *pipeNet) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }
