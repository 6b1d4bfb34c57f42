package forward

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// blocker is a Handler whose requests "block" wait until their ctx ends or
// release is closed; other requests are echoed.
type blocker struct {
	started chan context.Context // a blocking handler began, with its ctx
	ended   chan error           // a blocking handler returned: its ctx's cause, nil if released
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{started: make(chan context.Context, 64), ended: make(chan error, 64), release: make(chan struct{})}
}

func (b *blocker) handle(ctx context.Context, req []byte) []byte {
	if string(req) != "block" {
		return echo(ctx, req)
	}
	b.started <- ctx
	select {
	case <-ctx.Done():
		b.ended <- context.Cause(ctx)
		return []byte("withdrawn")
	case <-b.release:
		b.ended <- nil
		return []byte("released")
	}
}

// mustEcho calls c with req and fails unless the answer is the echo.
func mustEcho(t *testing.T, c *Client, addr, req string) {
	t.Helper()
	resp, err := c.Call(context.Background(), addr, []byte(req))
	if err != nil || string(resp) != "re:"+req {
		t.Fatalf("Call(%q) = %q, %v; want %q", req, resp, err, "re:"+req)
	}
}

// TestCallCancelableCancelsHandler: when the caller of CallCancelable gives
// up, the server's handler sees its ctx end with ErrCanceledByCaller, and
// the connection goes on serving calls.
func TestCallCancelableCancelsHandler(t *testing.T) {
	b := newBlocker()
	srv := startServer(t, b.handle, DefaultMaxFrame)

	t.Run("ctx cancelled", func(t *testing.T) {
		d := &countingDialer{dial: tcpDial}
		c := NewClient(d.Dial, Options{MaxConnsPerAddr: 1})
		defer c.Close()
		resp, err := c.CallCancelable(context.Background(), srv.addr, []byte("x"))
		if err != nil || string(resp) != "re:x" {
			t.Fatalf("CallCancelable = %q, %v", resp, err)
		}

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := c.CallCancelable(ctx, srv.addr, []byte("block"))
			done <- err
		}()
		recv(t, b.started, "the handler to start")
		cancel()
		checkErr(t, recv(t, done, "the cancelled call"), ErrUnknown, context.Canceled)
		if cause := recv(t, b.ended, "the handler to see its ctx end"); !errors.Is(cause, ErrCanceledByCaller) {
			t.Fatalf("handler ctx cause = %v, want ErrCanceledByCaller", cause)
		}

		mustEcho(t, c, srv.addr, "after")
		if n := d.dials.Load(); n != 1 {
			t.Fatalf("%d dials, want 1 (the connection survives a cancel)", n)
		}
	})

	t.Run("Options.Timeout", func(t *testing.T) {
		c := NewClient(tcpDial, Options{MaxConnsPerAddr: 1, Timeout: 50 * time.Millisecond})
		defer c.Close()
		_, err := c.CallCancelable(context.Background(), srv.addr, []byte("block"))
		checkErr(t, err, ErrUnknown, context.DeadlineExceeded)
		recv(t, b.started, "the handler to start")
		if cause := recv(t, b.ended, "the handler to see its ctx end"); !errors.Is(cause, ErrCanceledByCaller) {
			t.Fatalf("handler ctx cause = %v, want ErrCanceledByCaller", cause)
		}
	})

	t.Run("many at once", func(t *testing.T) {
		const n = 20
		c := NewClient(tcpDial, Options{MaxConnsPerAddr: 2})
		defer c.Close()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, n)
		for range n {
			go func() {
				_, err := c.CallCancelable(ctx, srv.addr, []byte("block"))
				done <- err
			}()
		}
		for range n {
			recv(t, b.started, "the handlers to start")
		}
		cancel()
		for range n {
			checkErr(t, recv(t, done, "the cancelled calls"), ErrUnknown, context.Canceled)
		}
		for i := range n {
			if cause := recv(t, b.ended, fmt.Sprintf("handler %d of %d to see its ctx end", i+1, n)); !errors.Is(cause, ErrCanceledByCaller) {
				t.Fatalf("handler ctx cause = %v, want ErrCanceledByCaller", cause)
			}
		}
		mustEcho(t, c, srv.addr, "after")
	})
}

// TestCallSendsNoCancel: a plain Call that gives up leaves the handler
// running until its own end (servers that predate cancel frames would close
// the connection on one).
func TestCallSendsNoCancel(t *testing.T) {
	b := newBlocker()
	srv := startServer(t, b.handle, DefaultMaxFrame)
	d := &countingDialer{dial: tcpDial}
	c := NewClient(d.Dial, Options{MaxConnsPerAddr: 1})
	defer c.Close()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, srv.addr, []byte("block"))
		done <- err
	}()
	hctx := recv(t, b.started, "the handler to start")
	cancel()
	checkErr(t, recv(t, done, "the cancelled call"), ErrUnknown, context.Canceled)

	// The server reads a connection's frames in order: a cancel frame sent
	// before Call returned would have ended hctx before this call is handled.
	mustEcho(t, c, srv.addr, "probe")
	if err := hctx.Err(); err != nil {
		t.Fatalf("the handler's ctx ended (%v, cause %v) after a plain Call gave up", err, context.Cause(hctx))
	}
	close(b.release)
	if cause := recv(t, b.ended, "the released handler to return"); cause != nil {
		t.Fatalf("handler ended with ctx cause %v, want its own end", cause)
	}
	mustEcho(t, c, srv.addr, "after")
	if n := d.dials.Load(); n != 1 {
		t.Fatalf("%d dials, want 1", n)
	}
}

// rawPeer is a client connection to srv that writes and reads frames by hand.
type rawPeer struct {
	t  *testing.T
	nc net.Conn
}

func dialRaw(t *testing.T, addr string) *rawPeer {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write(preamble[:]); err != nil {
		t.Fatal(err)
	}
	return &rawPeer{t: t, nc: nc}
}

func (p *rawPeer) write(typ byte, id uint64, payload []byte) {
	p.t.Helper()
	if _, _, err := writeFrame(p.nc, nil, typ, id, payload); err != nil {
		p.t.Fatal(err)
	}
}

// read reads one frame (within the connection's 10s deadline).
func (p *rawPeer) read() (typ byte, id uint64, payload []byte, err error) {
	var h [headerLen]byte
	if _, err := io.ReadFull(p.nc, h[:]); err != nil {
		return 0, 0, nil, err
	}
	typ, n, id := parseHeader(&h)
	payload = make([]byte, n)
	_, err = io.ReadFull(p.nc, payload)
	return typ, id, payload, err
}

func (p *rawPeer) expect(id uint64, payload string) {
	p.t.Helper()
	typ, gotID, got, err := p.read()
	if err != nil || typ != typeResponse || gotID != id || string(got) != payload {
		p.t.Fatalf("read frame type %d id %d %q, %v; want response %d %q", typ, gotID, got, err, id, payload)
	}
}

// TestCancelFrames: cancel frames for finished or unknown ids are ignored;
// one for a running handler ends its ctx, and its response is still sent;
// the connection carries on. A cancel frame with a payload is a protocol
// error.
func TestCancelFrames(t *testing.T) {
	b := newBlocker()
	srv := startServer(t, b.handle, DefaultMaxFrame)

	t.Run("finished, unknown, running", func(t *testing.T) {
		p := dialRaw(t, srv.addr)
		p.write(typeRequest, 1, []byte("x"))
		p.expect(1, "re:x")
		p.write(typeCancel, 1, nil)  // finished
		p.write(typeCancel, 99, nil) // never sent
		p.write(typeCancel, 1, nil)
		p.write(typeRequest, 2, []byte("block"))
		hctx := recv(t, b.started, "the handler to start")
		p.write(typeRequest, 3, []byte("y"))
		p.expect(3, "re:y")
		if hctx.Err() != nil {
			t.Fatal("a cancel frame for another id ended the handler's ctx")
		}
		p.write(typeCancel, 2, nil)
		if cause := recv(t, b.ended, "the handler to see its ctx end"); !errors.Is(cause, ErrCanceledByCaller) {
			t.Fatalf("handler ctx cause = %v, want ErrCanceledByCaller", cause)
		}
		p.expect(2, "withdrawn")
		p.write(typeCancel, 2, nil) // finished now
		p.write(typeRequest, 4, []byte("z"))
		p.expect(4, "re:z")
	})

	t.Run("cancel frame with a payload", func(t *testing.T) {
		p := dialRaw(t, srv.addr)
		p.write(typeCancel, 1, []byte("?"))
		if typ, id, _, err := p.read(); !errors.Is(err, io.EOF) {
			t.Fatalf("read frame type %d id %d, %v; want the connection closed (EOF)", typ, id, err)
		}
	})
}

// holdConn is a connection whose write of a payload containing "gated"
// blocks until hold is closed.
type holdConn struct {
	net.Conn
	entered chan struct{}
	hold    chan struct{}
}

func (c *holdConn) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("gated")) {
		c.entered <- struct{}{}
		<-c.hold
	}
	return c.Conn.Write(p)
}

// TestCancelWaitsNotForAWrite: CallCancelable returns at once when its ctx
// ends while another call is writing; its cancel frame follows that write.
func TestCancelWaitsNotForAWrite(t *testing.T) {
	b := newBlocker()
	srv := startServer(t, b.handle, DefaultMaxFrame)
	hc := &holdConn{entered: make(chan struct{}, 1), hold: make(chan struct{})}
	var once sync.Once
	defer once.Do(func() { close(hc.hold) })
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		nc, err := tcpDial(ctx, addr)
		if err != nil {
			return nil, err
		}
		hc.Conn = nc
		return hc, nil
	}
	c := NewClient(dial, Options{MaxConnsPerAddr: 1})
	defer c.Close()

	ctx, cancel := context.WithCancel(context.Background())
	doneA := make(chan error, 1)
	go func() {
		_, err := c.CallCancelable(ctx, srv.addr, []byte("block"))
		doneA <- err
	}()
	hctx := recv(t, b.started, "the handler to start")

	type result struct {
		resp []byte
		err  error
	}
	doneB := make(chan result, 1)
	go func() {
		resp, err := c.Call(context.Background(), srv.addr, []byte("gated"))
		doneB <- result{resp, err}
	}()
	recv(t, hc.entered, "the gated write to begin")

	cancel()
	checkErr(t, recv(t, doneA, "the cancelled call, while another write is held"), ErrUnknown, context.Canceled)
	if hctx.Err() != nil {
		t.Fatal("the handler's ctx ended while the connection's writer was held")
	}
	once.Do(func() { close(hc.hold) })
	if r := recv(t, doneB, "the gated call"); r.err != nil || string(r.resp) != "re:gated" {
		t.Fatalf("gated Call = %q, %v", r.resp, r.err)
	}
	if cause := recv(t, b.ended, "the handler to see its ctx end"); !errors.Is(cause, ErrCanceledByCaller) {
		t.Fatalf("handler ctx cause = %v, want ErrCanceledByCaller", cause)
	}
	mustEcho(t, c, srv.addr, "after")
}

// TestCancelToStalledServer: a cancel frame the server does not read is
// dropped after about cancelWriteTimeout; the caller gets ErrUnknown and the
// connection, intact, stays in use.
func TestCancelToStalledServer(t *testing.T) {
	req := []byte("request")
	dial, dials := stallingPeer(t, len(preamble)+headerLen+len(req))
	c := NewClient(dial, Options{MaxConnsPerAddr: 1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.CallCancelable(ctx, "peer", req)
	checkErr(t, err, ErrUnknown, context.DeadlineExceeded)
	if took := time.Since(start); took > cancelWriteTimeout+5*time.Second {
		t.Fatalf("CallCancelable took %v to return, want about %v", took, cancelWriteTimeout)
	}

	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	_, err = c.Call(ctx2, "peer", req)
	checkErr(t, err, ErrNotSent, context.DeadlineExceeded)
	if n := dials.Load(); n != 1 {
		t.Fatalf("%d dials, want 1 (the connection kept)", n)
	}
}

// TestRunningBounded: a connection's map of running handlers holds one entry
// per running handler and none once they return; a reused id's entry belongs
// to the newer request.
func TestRunningBounded(t *testing.T) {
	r := &running{m: make(map[uint64]*runningCall)}
	var ctxs []context.Context
	var rcs []*runningCall
	for id := range uint64(maxInFlightPerConn) {
		ctx, cancel := context.WithCancelCause(context.Background())
		ctxs = append(ctxs, ctx)
		rcs = append(rcs, r.add(id, cancel))
	}
	if n := len(r.m); n != maxInFlightPerConn {
		t.Fatalf("%d entries for %d running handlers", n, maxInFlightPerConn)
	}
	r.cancel(7)
	r.cancel(1 << 40) // unknown
	for i, ctx := range ctxs {
		if cause := context.Cause(ctx); (i == 7) != errors.Is(cause, ErrCanceledByCaller) {
			t.Fatalf("handler %d: ctx cause %v", i, cause)
		}
	}
	for id, rc := range rcs {
		r.done(uint64(id), rc)
	}
	if n := len(r.m); n != 0 {
		t.Fatalf("%d entries after every handler returned, want 0", n)
	}

	ctxOld, cancelOld := context.WithCancelCause(context.Background())
	ctxNew, cancelNew := context.WithCancelCause(context.Background())
	defer cancelOld(nil)
	defer cancelNew(nil)
	old := r.add(5, cancelOld)
	newer := r.add(5, cancelNew)
	r.done(5, old)
	r.cancel(5)
	if ctxOld.Err() != nil || !errors.Is(context.Cause(ctxNew), ErrCanceledByCaller) {
		t.Fatalf("cancel of a reused id: old cause %v, new cause %v; want only the new one cancelled", context.Cause(ctxOld), context.Cause(ctxNew))
	}
	r.done(5, newer)
	if n := len(r.m); n != 0 {
		t.Fatalf("%d entries after every handler returned, want 0", n)
	}
}
