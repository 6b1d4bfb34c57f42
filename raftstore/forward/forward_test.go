package forward

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func echo(_ context.Context, req []byte) []byte { return append([]byte("re:"), req...) }

// TestConcurrentCallersOwnAnswers: 100 callers in flight at once over at most
// two connections each get the answer to their own request, whatever the
// order in which the handlers finish.
func TestConcurrentCallersOwnAnswers(t *testing.T) {
	const callers = 100
	var arrived atomic.Int64
	all := make(chan struct{})
	h := func(ctx context.Context, req []byte) []byte {
		if arrived.Add(1) == callers {
			close(all)
		}
		select { // all requests are in flight before any is answered
		case <-all:
		case <-ctx.Done():
		}
		return echo(ctx, req)
	}
	srv := startServer(t, h, DefaultMaxFrame)
	c := NewClient(tcpDial, Options{MaxConnsPerAddr: 2, Timeout: 10 * time.Second})
	defer c.Close()

	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Go(func() {
			req := []byte(fmt.Sprintf("req-%d:", i))
			if i%10 == 0 { // big frames interleave with small ones
				req = append(req, bytes.Repeat([]byte{byte(i)}, 256<<10)...)
			}
			resp, err := c.Call(context.Background(), srv.addr, req)
			if err != nil {
				errs <- fmt.Errorf("caller %d: %w", i, err)
				return
			}
			if want := append([]byte("re:"), req...); !bytes.Equal(resp, want) {
				errs <- fmt.Errorf("caller %d got another answer (%d bytes, want %d)", i, len(resp), len(want))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := srv.ln.accepted.Load(); n < 1 || n > 2 {
		t.Errorf("server accepted %d connections, want 1 or 2", n)
	}
	t.Logf("%d callers over %d connections", callers, srv.ln.accepted.Load())
}

// TestServerKilledMidCall: calls in flight when the server dies get
// ErrUnknown; calls after it, once the client has seen the connections
// break, get ErrNotSent from the refused dial. A new server is then dialed
// lazily.
func TestServerKilledMidCall(t *testing.T) {
	const inFlight = 10
	arrived := make(chan struct{}, inFlight)
	h := func(ctx context.Context, req []byte) []byte {
		arrived <- struct{}{}
		<-ctx.Done() // never answers
		return nil
	}
	srv := startServer(t, h, DefaultMaxFrame)
	c := NewClient(tcpDial, Options{MaxConnsPerAddr: 2})
	defer c.Close()

	errs := make(chan error, inFlight)
	for i := range inFlight {
		go func() {
			_, err := c.Call(context.Background(), srv.addr, []byte(fmt.Sprint(i)))
			errs <- err
		}()
	}
	for range inFlight {
		recv(t, arrived, "requests to reach the handler")
	}
	srv.stop(t)
	for range inFlight {
		checkErr(t, recv(t, errs, "in-flight call to fail"), ErrUnknown)
	}
	waitUntil(t, "the client drops its broken connections", func() bool { return c.poolSize(srv.addr) == 0 })

	for range 3 {
		_, err := c.Call(context.Background(), srv.addr, []byte("after"))
		checkErr(t, err, ErrNotSent, syscall.ECONNREFUSED)
	}
	if n := c.poolSize(srv.addr); n != 0 {
		t.Fatalf("failed dials left %d connections in the pool", n)
	}

	// A server back on the same address is dialed on the next call.
	ln, err := net.Listen("tcp", srv.addr)
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", srv.addr, err)
	}
	startOn(t, ln, echo, DefaultMaxFrame)
	resp, err := c.Call(context.Background(), srv.addr, []byte("again"))
	if err != nil || string(resp) != "re:again" {
		t.Fatalf("Call after restart = %q, %v", resp, err)
	}
}

// TestSlowHandlerTimeout: a caller whose ctx ends while the handler runs gets
// ErrUnknown wrapping the ctx error; the connection stays usable and the late
// response is dropped.
func TestSlowHandlerTimeout(t *testing.T) {
	release := make(chan struct{})
	var slowDone atomic.Int64
	h := func(ctx context.Context, req []byte) []byte {
		if string(req) == "slow" {
			defer slowDone.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return []byte("late")
		}
		return echo(ctx, req)
	}
	srv := startServer(t, h, DefaultMaxFrame)

	t.Run("ctx deadline", func(t *testing.T) {
		c := NewClient(tcpDial, Options{MaxConnsPerAddr: 1})
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := c.Call(ctx, srv.addr, []byte("slow"))
		checkErr(t, err, ErrUnknown, context.DeadlineExceeded)
	})

	t.Run("Options.Timeout", func(t *testing.T) {
		c := NewClient(tcpDial, Options{MaxConnsPerAddr: 1, Timeout: 50 * time.Millisecond})
		defer c.Close()
		_, err := c.Call(context.Background(), srv.addr, []byte("slow"))
		checkErr(t, err, ErrUnknown, context.DeadlineExceeded)
	})

	t.Run("cancel then reuse", func(t *testing.T) {
		c := NewClient(tcpDial, Options{MaxConnsPerAddr: 1})
		defer c.Close()
		accepted := srv.ln.accepted.Load()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := c.Call(ctx, srv.addr, []byte("slow"))
			done <- err
		}()
		waitUntil(t, "the slow call is in flight", func() bool { return srv.ln.accepted.Load() == accepted+1 })
		waitUntil(t, "the slow call is written", func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			for _, cn := range c.pools[srv.addr] {
				cn.mu.Lock()
				n := len(cn.pending)
				cn.mu.Unlock()
				if n == 1 {
					return true
				}
			}
			return false
		})
		cancel()
		checkErr(t, recv(t, done, "cancelled call"), ErrUnknown, context.Canceled)

		resp, err := c.Call(context.Background(), srv.addr, []byte("fast"))
		if err != nil || string(resp) != "re:fast" {
			t.Fatalf("Call after a cancelled one = %q, %v", resp, err)
		}
		before := slowDone.Load()
		close(release) // the late response goes out first, to nobody
		waitUntil(t, "the slow handler returns", func() bool { return slowDone.Load() > before })
		resp, err = c.Call(context.Background(), srv.addr, []byte("fast2"))
		if err != nil || string(resp) != "re:fast2" {
			t.Fatalf("Call after a late response = %q, %v", resp, err)
		}
		if n := srv.ln.accepted.Load(); n != accepted+1 {
			t.Fatalf("the client dialed %d connections, want 1 (reused)", n-accepted)
		}
	})

	t.Run("ctx done before the call", func(t *testing.T) {
		d := &countingDialer{dial: tcpDial}
		c := NewClient(d.Dial, Options{})
		defer c.Close()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := c.Call(ctx, srv.addr, []byte("x"))
		checkErr(t, err, ErrNotSent, context.Canceled)
		if d.dials.Load() != 0 {
			t.Fatal("a call with a dead ctx dialed")
		}
	})

	t.Run("ctx ends during the dial", func(t *testing.T) {
		unblock := make(chan struct{})
		defer close(unblock)
		dial := func(ctx context.Context, addr string) (net.Conn, error) {
			select {
			case <-unblock:
			case <-ctx.Done():
			}
			return nil, errors.New("blackhole")
		}
		c := NewClient(dial, Options{})
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := c.Call(ctx, "blackhole:1", []byte("x"))
		checkErr(t, err, ErrNotSent, context.DeadlineExceeded)
	})
}

// stallingPeer is a fake server on a net.Pipe: it reads n bytes of what the
// client writes, then reads nothing more and never answers.
func stallingPeer(t *testing.T, n int) (Dialer, *atomic.Int64) {
	var dials atomic.Int64
	var mu sync.Mutex
	var peers []net.Conn
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range peers {
			p.Close()
		}
	})
	return func(ctx context.Context, addr string) (net.Conn, error) {
		dials.Add(1)
		c, s := net.Pipe()
		mu.Lock()
		peers = append(peers, s)
		mu.Unlock()
		go io.CopyN(io.Discard, s, int64(n))
		return c, nil
	}, &dials
}

// TestCancelDuringWrite: a write that blocks is interrupted by ctx. Until the
// whole frame is written the request is not sent (a partial frame is never
// handled); a partial frame breaks the stream, and the next call dials again,
// while a write that wrote nothing leaves the connection in use.
func TestCancelDuringWrite(t *testing.T) {
	req := bytes.Repeat([]byte{'x'}, 1000)
	whole := len(preamble) + headerLen + len(req)
	for _, tc := range []struct {
		name string
		read int
		want error
		keep bool // the connection is intact and reused
	}{
		{"nothing read", 0, ErrNotSent, true},
		{"part of the preamble read", 2, ErrNotSent, false},
		{"preamble and header read", len(preamble) + headerLen, ErrNotSent, false},
		{"all but one byte read", whole - 1, ErrNotSent, false},
		{"whole frame read, no answer", whole, ErrUnknown, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dial, dials := stallingPeer(t, tc.read)
			c := NewClient(dial, Options{MaxConnsPerAddr: 1})
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			_, err := c.Call(ctx, "peer", req)
			checkErr(t, err, tc.want, context.DeadlineExceeded)

			ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel2()
			c.Call(ctx2, "peer", req)
			wantDials := int64(2)
			if tc.keep {
				wantDials = 1
			}
			if n := dials.Load(); n != wantDials {
				t.Fatalf("%d dials, want %d", n, wantDials)
			}
		})
	}
}

// TestOversizedFrames: frames above the receiver's limit are refused.
func TestOversizedFrames(t *testing.T) {
	big := func(ctx context.Context, req []byte) []byte {
		if string(req) == "big" {
			return make([]byte, 2048)
		}
		return echo(ctx, req)
	}

	t.Run("request above the client's MaxFrame is not sent", func(t *testing.T) {
		srv := startServer(t, echo, DefaultMaxFrame)
		d := &countingDialer{dial: tcpDial}
		c := NewClient(d.Dial, Options{MaxFrame: 1024})
		defer c.Close()
		_, err := c.Call(context.Background(), srv.addr, make([]byte, 1025))
		checkErr(t, err, ErrNotSent, ErrFrameTooLarge)
		if d.dials.Load() != 0 {
			t.Fatal("an oversized request dialed")
		}
		if resp, err := c.Call(context.Background(), srv.addr, make([]byte, 1021)); err != nil || len(resp) != 1024 {
			t.Fatalf("Call at the limit = %d bytes, %v", len(resp), err)
		}
	})

	t.Run("response above the client's MaxFrame closes the connection", func(t *testing.T) {
		release := make(chan struct{})
		arrived := make(chan struct{}, 1)
		h := func(ctx context.Context, req []byte) []byte {
			if string(req) == "wait" {
				arrived <- struct{}{}
				<-release
			}
			return big(ctx, req)
		}
		srv := startServer(t, h, DefaultMaxFrame)
		defer close(release)
		c := NewClient(tcpDial, Options{MaxFrame: 1024, MaxConnsPerAddr: 1})
		defer c.Close()
		other := make(chan error, 1)
		go func() {
			_, err := c.Call(context.Background(), srv.addr, []byte("wait"))
			other <- err
		}()
		recv(t, arrived, "the other call to reach the handler")
		_, err := c.Call(context.Background(), srv.addr, []byte("big"))
		checkErr(t, err, ErrUnknown, ErrFrameTooLarge)
		checkErr(t, recv(t, other, "the other call"), ErrUnknown, ErrFrameTooLarge)
		waitUntil(t, "the client drops the connection", func() bool { return c.poolSize(srv.addr) == 0 })
		if resp, err := c.Call(context.Background(), srv.addr, []byte("small")); err != nil || string(resp) != "re:small" {
			t.Fatalf("Call on a new connection = %q, %v", resp, err)
		}
		if n := srv.ln.accepted.Load(); n != 2 {
			t.Fatalf("server accepted %d connections, want 2", n)
		}
	})

	t.Run("response above the server's max is an error frame", func(t *testing.T) {
		srv := startServer(t, big, 1024)
		c := NewClient(tcpDial, Options{})
		defer c.Close()
		_, err := c.Call(context.Background(), srv.addr, []byte("big"))
		checkErr(t, err, ErrUnknown, ErrFrameTooLarge)
		if resp, err := c.Call(context.Background(), srv.addr, []byte("small")); err != nil || string(resp) != "re:small" {
			t.Fatalf("next Call = %q, %v", resp, err)
		}
		if n := srv.ln.accepted.Load(); n != 1 {
			t.Fatalf("server accepted %d connections, want 1 (kept)", n)
		}
	})

	t.Run("request above the server's max closes the connection", func(t *testing.T) {
		var handled atomic.Int64
		srv := startServer(t, func(ctx context.Context, req []byte) []byte {
			handled.Add(1)
			return echo(ctx, req)
		}, 1024)
		c := NewClient(tcpDial, Options{MaxFrame: 4096})
		defer c.Close()
		_, err := c.Call(context.Background(), srv.addr, make([]byte, 2000))
		if !errors.Is(err, ErrUnknown) && !errors.Is(err, ErrNotSent) {
			t.Fatalf("err = %v, want ErrUnknown or ErrNotSent", err)
		}
		if handled.Load() != 0 {
			t.Fatal("the handler ran for an oversized request")
		}
	})

	// The server closes a raw connection that announces too big a frame,
	// without waiting for its payload.
	for _, tc := range []struct {
		name     string
		maxFrame int
		pre      []byte
		typ      byte
		n        uint32
	}{
		{"default max", DefaultMaxFrame, preamble[:], typeRequest, DefaultMaxFrame + 1},
		{"max 4 GiB", DefaultMaxFrame, preamble[:], typeRequest, 1<<32 - 1},
		{"small max", 1024, preamble[:], typeRequest, 1025},
		{"bad preamble", DefaultMaxFrame, []byte("RESP"), typeRequest, 1},
		{"response type from a client", DefaultMaxFrame, preamble[:], typeResponse, 1},
	} {
		t.Run("raw "+tc.name, func(t *testing.T) {
			srv := startServer(t, echo, tc.maxFrame)
			nc, err := net.Dial("tcp", srv.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			var h [headerLen]byte
			putHeader(&h, tc.typ, 0, 7)
			binary.BigEndian.PutUint32(h[:4], tc.n)
			if _, err := nc.Write(append(append([]byte{}, tc.pre...), h[:]...)); err != nil {
				t.Fatal(err)
			}
			nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, err := nc.Read(make([]byte, 1))
			if n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("Read = %d, %v; want the server to close the connection", n, err)
			}
		})
	}
}

// TestClose: Close fails calls in flight with ErrUnknown and calls waiting
// for a dial with ErrNotSent, both wrapping ErrClosed; later calls fail with
// ErrNotSent.
func TestClose(t *testing.T) {
	const inFlight = 5
	arrived := make(chan struct{}, inFlight)
	srv := startServer(t, func(ctx context.Context, req []byte) []byte {
		arrived <- struct{}{}
		<-ctx.Done()
		return nil
	}, DefaultMaxFrame)
	dialing := make(chan struct{}, 1)
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		if addr == "blackhole:1" {
			dialing <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return tcpDial(ctx, addr)
	}
	c := NewClient(dial, Options{})

	errs := make(chan error, inFlight)
	for range inFlight {
		go func() {
			_, err := c.Call(context.Background(), srv.addr, []byte("x"))
			errs <- err
		}()
	}
	for range inFlight {
		recv(t, arrived, "calls to reach the handler")
	}
	dialErr := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), "blackhole:1", []byte("x"))
		dialErr <- err
	}()
	recv(t, dialing, "the dial to start")

	if err := c.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	for range inFlight {
		checkErr(t, recv(t, errs, "in-flight call"), ErrUnknown, ErrClosed)
	}
	checkErr(t, recv(t, dialErr, "dialing call"), ErrNotSent, ErrClosed)
	_, err := c.Call(context.Background(), srv.addr, []byte("x"))
	checkErr(t, err, ErrNotSent, ErrClosed)
	if err := c.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

// TestCloseDuringWrite: over a net.Pipe whose peer reads nothing, one call
// blocks in its write and another waits for its turn to write; Close fails
// both with ErrNotSent.
func TestCloseDuringWrite(t *testing.T) {
	dial, _ := stallingPeer(t, 0)
	c := NewClient(dial, Options{MaxConnsPerAddr: 1})
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := c.Call(context.Background(), "peer", []byte("x"))
			errs <- err
		}()
	}
	waitUntil(t, "both calls are on the connection", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		conns := c.pools["peer"]
		return len(conns) == 1 && conns[0].users.Load() == 2 && len(conns[0].wsem) == 1
	})
	c.Close()
	for range 2 {
		checkErr(t, recv(t, errs, "call"), ErrNotSent, ErrClosed)
	}
}

// TestPipeTransport runs Serve behind a net.Pipe listener.
func TestPipeTransport(t *testing.T) {
	p := newPipeNet()
	srvDone := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { srvDone <- Serve(ctx, p, echo, nil) }()
	c := NewClient(p.Dial, Options{MaxConnsPerAddr: 2})
	defer c.Close()

	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			req := []byte(fmt.Sprint(i))
			resp, err := c.Call(context.Background(), "pipe", req)
			if err != nil || string(resp) != "re:"+string(req) {
				t.Errorf("call %d = %q, %v", i, resp, err)
			}
		})
	}
	wg.Wait()

	p.Close() // Serve returns when its listener is closed
	if err := recv(t, srvDone, "Serve to return"); err != nil {
		t.Fatalf("Serve = %v", err)
	}
	waitUntil(t, "the client sees its connections closed", func() bool { return c.poolSize("pipe") == 0 })
	_, err := c.Call(context.Background(), "pipe", []byte("x"))
	checkErr(t, err, ErrNotSent)
}

// TestEmptyPayloads: empty requests and responses are frames like others.
func TestEmptyPayloads(t *testing.T) {
	srv := startServer(t, func(ctx context.Context, req []byte) []byte { return nil }, DefaultMaxFrame)
	c := NewClient(tcpDial, Options{})
	defer c.Close()
	resp, err := c.Call(context.Background(), srv.addr, nil)
	if err != nil || len(resp) != 0 {
		t.Fatalf("Call = %q, %v", resp, err)
	}
}

func BenchmarkCall(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, func(_ context.Context, req []byte) []byte { return req }, nil) }()
	defer func() { cancel(); <-done }()

	for _, size := range []int{64, 64 << 10} {
		req := make([]byte, size)
		b.Run(fmt.Sprintf("serial/%dB", size), func(b *testing.B) {
			c := NewClient(tcpDial, Options{})
			defer c.Close()
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Call(context.Background(), ln.Addr().String(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("parallel/%dB", size), func(b *testing.B) {
			c := NewClient(tcpDial, Options{})
			defer c.Close()
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Call(context.Background(), ln.Addr().String(), req); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
