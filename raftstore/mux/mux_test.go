package mux

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitTimeout bounds every wait in these tests.
const waitTimeout = 10 * time.Second

// testLogger sends the mux's log to t.Log until the test ends.
func testLogger(t testing.TB) *slog.Logger {
	t.Helper()
	w := &testWriter{t: t}
	t.Cleanup(w.stop)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// testWriter forwards to t.Log and drops writes after the test ends, since
// late goroutines (raft's among them) must not call t.Log then.
type testWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) stop() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

// serve starts a Mux on 127.0.0.1 and closes it when the test ends, checking
// that Serve then returns nil.
func serve(t *testing.T, opts ...Option) *Mux {
	t.Helper()
	m, err := Listen("127.0.0.1:0", testLogger(t), opts...)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Serve() }()
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve returned %v after Close, want nil", err)
			}
		case <-time.After(waitTimeout):
			t.Errorf("Serve did not return within %v of Close", waitTimeout)
		}
	})
	return m
}

type acceptResult struct {
	conn net.Conn
	err  error
}

// acceptAsync runs one Accept on l in the background.
func acceptAsync(l *Layer) <-chan acceptResult {
	ch := make(chan acceptResult, 1)
	go func() {
		c, err := l.Accept()
		ch <- acceptResult{c, err}
	}()
	return ch
}

// accept waits for one connection on l.
func accept(t *testing.T, l *Layer) net.Conn {
	t.Helper()
	select {
	case r := <-acceptAsync(l):
		if r.err != nil {
			t.Fatalf("Accept(header %d): %v", l.Header(), r.err)
		}
		t.Cleanup(func() { r.conn.Close() })
		return r.conn
	case <-time.After(waitTimeout):
		t.Fatalf("Accept(header %d): nothing within %v", l.Header(), waitTimeout)
		return nil
	}
}

// dialRaw opens a plain TCP connection to m that sends nothing by itself.
func dialRaw(t *testing.T, m *Mux) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", m.Addr().String(), waitTimeout)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dialHeader opens a connection to m carrying header.
func dialHeader(t *testing.T, m *Mux, header byte) net.Conn {
	t.Helper()
	c, err := Dial(m.Addr().String(), header, waitTimeout)
	if err != nil {
		t.Fatalf("Dial(header %d): %v", header, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// expectClosedByPeer waits until the server side of c has been closed.
func expectClosedByPeer(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(waitTimeout))
	n, err := c.Read(make([]byte, 1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: still open after %v", what, waitTimeout)
	}
	if err == nil {
		t.Fatalf("%s: read %d bytes, want the connection closed", what, n)
	}
}

// expectOpen checks that the server has not closed c (a short read times out).
func expectOpen(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("%s: want still open (read timeout), got %v", what, err)
	}
	c.SetReadDeadline(time.Time{})
}

// TestLayersReceiveOnlyTheirConns dials two layers on one port concurrently
// and checks that each receives exactly its own connections, with the bytes
// after the header intact.
func TestLayersReceiveOnlyTheirConns(t *testing.T) {
	m := serve(t)
	layers := map[byte]*Layer{1: m.Handle(1), 2: m.Handle(2)}
	const perLayer = 20

	var wg sync.WaitGroup
	for h := range layers {
		for i := range perLayer {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := Dial(m.Addr().String(), h, waitTimeout)
				if err != nil {
					t.Errorf("Dial(%d): %v", h, err)
					return
				}
				defer c.Close()
				fmt.Fprintf(c, "h%d-c%02d\n", h, i)
				// Hold the conn open until the server side closes it.
				c.SetReadDeadline(time.Now().Add(waitTimeout))
				io.Copy(io.Discard, c)
			}()
		}
	}

	for h, l := range layers {
		seen := make(map[string]bool)
		for range perLayer {
			c := accept(t, l)
			c.SetReadDeadline(time.Now().Add(waitTimeout))
			buf := make([]byte, len("hX-cNN\n"))
			if _, err := io.ReadFull(c, buf); err != nil {
				t.Fatalf("layer %d: read: %v", h, err)
			}
			got := string(buf)
			if !strings.HasPrefix(got, fmt.Sprintf("h%d-c", h)) {
				t.Fatalf("layer %d received %q", h, got)
			}
			if seen[got] {
				t.Fatalf("layer %d received %q twice", h, got)
			}
			seen[got] = true
			c.Close()
		}
	}
	wg.Wait()
	for h, l := range layers {
		if n := len(l.queue); n != 0 {
			t.Fatalf("layer %d has %d extra connections queued", h, n)
		}
	}
}

// TestUnknownHeaderClosed checks that a connection whose header has no layer
// is closed, and that the port keeps serving the registered ones.
func TestUnknownHeaderClosed(t *testing.T) {
	m := serve(t)
	l := m.Handle(1)

	expectClosedByPeer(t, dialHeader(t, m, 9), "unknown header 9")

	c := dialHeader(t, m, 1)
	c.Write([]byte("ok"))
	got := accept(t, l)
	buf := make([]byte, 2)
	got.SetReadDeadline(time.Now().Add(waitTimeout))
	if _, err := io.ReadFull(got, buf); err != nil || string(buf) != "ok" {
		t.Fatalf("after an unknown header: read %q, %v", buf, err)
	}
}

// TestSilentDialerDoesNotBlock opens connections that never send a header and
// checks that a well-behaved dialer is served while they hang, that the
// silent ones are closed after the header timeout, and that the header
// deadline does not linger on the accepted connection.
func TestSilentDialerDoesNotBlock(t *testing.T) {
	const headerTimeout = time.Second
	m := serve(t, WithHeaderTimeout(headerTimeout))
	l := m.Handle(1)

	silent := make([]net.Conn, 5)
	for i := range silent {
		silent[i] = dialRaw(t, m)
	}
	start := time.Now()
	c := dialHeader(t, m, 1)
	got := accept(t, l)
	if elapsed := time.Since(start); elapsed >= headerTimeout {
		t.Fatalf("good dialer accepted after %v, not before the silent ones timed out", elapsed)
	}
	for i, s := range silent {
		expectOpen(t, s, fmt.Sprintf("silent conn %d before the header timeout", i))
	}

	for i, s := range silent {
		expectClosedByPeer(t, s, fmt.Sprintf("silent conn %d", i))
	}
	if elapsed := time.Since(start); elapsed < headerTimeout/2 {
		t.Fatalf("silent conns closed after %v, before the header timeout %v", elapsed, headerTimeout)
	}

	// The accepted conn outlived the header deadline and still reads.
	c.Write([]byte("x"))
	buf := make([]byte, 1)
	got.SetReadDeadline(time.Now().Add(waitTimeout))
	if _, err := io.ReadFull(got, buf); err != nil {
		t.Fatalf("read on accepted conn after the header timeout: %v", err)
	}
	got.SetReadDeadline(time.Time{})
}

// TestFullQueueRefusesNewConns checks that a layer whose owner does not
// Accept holds at most its queue length and refuses the rest, without
// affecting other layers.
func TestFullQueueRefusesNewConns(t *testing.T) {
	m := serve(t, WithQueueLen(1))
	slow, other := m.Handle(1), m.Handle(2)

	first := dialHeader(t, m, 1)
	first.Write([]byte("1"))
	deadline := time.Now().Add(waitTimeout)
	for len(slow.queue) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("first conn not queued within %v", waitTimeout)
		}
		time.Sleep(time.Millisecond)
	}

	expectClosedByPeer(t, dialHeader(t, m, 1), "conn beyond the queue")
	dialHeader(t, m, 2)
	accept(t, other)

	got := accept(t, slow)
	buf := make([]byte, 1)
	got.SetReadDeadline(time.Now().Add(waitTimeout))
	if _, err := io.ReadFull(got, buf); err != nil || buf[0] != '1' {
		t.Fatalf("queued conn: read %q, %v; want the first conn", buf, err)
	}
}

// TestCloseUnblocksAccept checks that Mux.Close returns pending Accepts with
// net.ErrClosed, closes queued connections, leaves accepted ones alone, and
// makes Serve return nil.
func TestCloseUnblocksAccept(t *testing.T) {
	m, err := Listen("127.0.0.1:0", testLogger(t), WithQueueLen(4))
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	served := make(chan error, 1)
	go func() { served <- m.Serve() }()
	l1, l2 := m.Handle(1), m.Handle(2)

	owned := dialHeader(t, m, 1)
	ownedSrv := accept(t, l1)
	queued := dialHeader(t, m, 2)
	deadline := time.Now().Add(waitTimeout)
	for len(l2.queue) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("conn not queued within %v", waitTimeout)
		}
		time.Sleep(time.Millisecond)
	}
	blocked := acceptAsync(l1)

	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case r := <-blocked:
		if !errors.Is(r.err, net.ErrClosed) {
			t.Fatalf("blocked Accept returned (%v, %v), want net.ErrClosed", r.conn, r.err)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("Accept still blocked %v after Close", waitTimeout)
	}
	for _, l := range []*Layer{l1, l2} {
		if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept(header %d) after Close: %v, want net.ErrClosed", l.Header(), err)
		}
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve after Close: %v, want nil", err)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("Serve still running %v after Close", waitTimeout)
	}
	expectClosedByPeer(t, queued, "queued conn")

	// The accepted conn is its owner's: still usable both ways.
	owned.Write([]byte("y"))
	buf := make([]byte, 1)
	ownedSrv.SetReadDeadline(time.Now().Add(waitTimeout))
	if _, err := io.ReadFull(ownedSrv, buf); err != nil {
		t.Fatalf("accepted conn after Close: %v", err)
	}

	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := m.Serve(); !errors.Is(err, ErrServing) {
		t.Fatalf("Serve again: %v, want ErrServing", err)
	}
	if _, err := m.Handle(3).Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept on a layer handled after Close: %v, want net.ErrClosed", err)
	}
	if _, err := net.DialTimeout("tcp", m.Addr().String(), time.Second); err == nil {
		t.Fatalf("port still accepting after Close")
	}
}

// TestLayerClose checks that closing one layer unblocks its Accept, leaves
// the others serving, and frees its header for a new layer.
func TestLayerClose(t *testing.T) {
	m := serve(t)
	l1, l2 := m.Handle(1), m.Handle(2)

	blocked := acceptAsync(l1)
	if err := l1.Close(); err != nil {
		t.Fatalf("Layer.Close: %v", err)
	}
	select {
	case r := <-blocked:
		if !errors.Is(r.err, net.ErrClosed) {
			t.Fatalf("Accept after Layer.Close: (%v, %v), want net.ErrClosed", r.conn, r.err)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("Accept still blocked %v after Layer.Close", waitTimeout)
	}
	expectClosedByPeer(t, dialHeader(t, m, 1), "conn for a closed layer")

	dialHeader(t, m, 2)
	accept(t, l2)

	again := m.Handle(1)
	dialHeader(t, m, 1)
	accept(t, again)
}

func TestHandleDuplicatePanics(t *testing.T) {
	m := serve(t)
	m.Handle(7)
	defer func() {
		if recover() == nil {
			t.Fatalf("second Handle(7) did not panic")
		}
	}()
	m.Handle(7)
}

// TestListenAddresses covers binding and advertising. Wildcard binds are
// refused before anything is bound, so the test only ever binds 127.0.0.1.
func TestListenAddresses(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("net.Listen: %v", err)
	}
	defer taken.Close()

	for _, tc := range []struct {
		name, bind, advertise string
		wantErr               error  // errors.Is, if set
		wantErrText           string // substring, if set
		wantAddr              string // if set; "bound" means the bound address
	}{
		{name: "loopback", bind: "127.0.0.1:0", wantAddr: "bound"},
		{name: "advertise", bind: "127.0.0.1:0", advertise: "node1.example:7379", wantAddr: "node1.example:7379"},
		{name: "wildcard v4", bind: "0.0.0.0:0", wantErr: ErrUnspecifiedAddr},
		{name: "wildcard v6", bind: "[::]:0", wantErr: ErrUnspecifiedAddr},
		{name: "empty host", bind: ":0", wantErr: ErrUnspecifiedAddr},
		{name: "advertise wildcard", bind: "127.0.0.1:0", advertise: "0.0.0.0:7379", wantErr: ErrUnspecifiedAddr},
		{name: "advertise empty host", bind: "127.0.0.1:0", advertise: ":7379", wantErr: ErrUnspecifiedAddr},
		{name: "advertise no port", bind: "127.0.0.1:0", advertise: "node1", wantErrText: "advertise address"},
		{name: "advertise port 0", bind: "127.0.0.1:0", advertise: "node1:0", wantErrText: "not a usable port"},
		{name: "port taken", bind: taken.Addr().String(), wantErrText: "peer port " + taken.Addr().String() + ": "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ListenAdvertise(tc.bind, tc.advertise, nil)
			if tc.wantErr != nil || tc.wantErrText != "" {
				if err == nil {
					m.Close()
					t.Fatalf("ListenAdvertise(%q, %q) succeeded, want an error", tc.bind, tc.advertise)
				}
				if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
					t.Fatalf("error %v, want %v", err, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErrText) {
					t.Fatalf("error %q does not contain %q", err, tc.wantErrText)
				}
				return
			}
			if err != nil {
				t.Fatalf("ListenAdvertise(%q, %q): %v", tc.bind, tc.advertise, err)
			}
			defer m.Close()
			want := tc.wantAddr
			if want == "bound" {
				want = m.BindAddr().String()
			}
			l := m.Handle(1)
			if m.Addr().String() != want || l.Addr().String() != want {
				t.Fatalf("Addr = %s, Layer.Addr = %s, want %s", m.Addr(), l.Addr(), want)
			}
		})
	}
}
