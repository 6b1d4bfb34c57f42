//go:build linux

package redisproto

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// The attacks of issue 44 on the RESP door (items 3, 4, 5 and 7), each run
// against a server with the event loop and one with a goroutine per
// connection.

// bothModes runs f once with each way of serving connections.
func bothModes(t *testing.T, f func(t *testing.T, start func(Config, Store) *Server)) {
	t.Run("goroutine", func(t *testing.T) {
		f(t, func(cfg Config, st Store) *Server { return startServer(t, cfg, st) })
	})
	t.Run("loop", func(t *testing.T) {
		f(t, func(cfg Config, st Store) *Server { return startLoopServer(t, cfg, st) })
	})
}

// readAll reads what the server sends until it closes the connection or
// within waits (then the error is a timeout).
func readUntilClosed(nc net.Conn, within time.Duration) (string, error) {
	nc.SetReadDeadline(time.Now().Add(within))
	b, err := io.ReadAll(nc)
	return string(b), err
}

// Item 5: before AUTH succeeds a request may carry at most 10 arguments and
// 16 KB per bulk (Redis ≥ 6.2.6, CVE-2021-32675). The refusal comes as soon
// as the header announces more: a client without credentials cannot make
// the server buffer a large bulk.
func TestUnauthenticatedRequestLimits(t *testing.T) {
	bothModes(t, func(t *testing.T, start func(Config, Store) *Server) {
		s := start(Config{RequirePass: "sekret"}, newFSMStore())
		for _, tc := range []struct{ send, want string }{
			// A 1 MB bulk announced: refused before its bytes are sent.
			{"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048576\r\n", "-ERR Protocol error: unauthenticated bulk length\r\n"},
			{"*1\r\n$16385\r\n", "-ERR Protocol error: unauthenticated bulk length\r\n"},
			{"*11\r\n", "-ERR Protocol error: unauthenticated multibulk length\r\n"},
			// Four pipelined 512 MiB announcements: the first ends it.
			{strings.Repeat("*2\r\n$3\r\nGET\r\n$536870912\r\n", 4), "-ERR Protocol error: unauthenticated bulk length\r\n"},
		} {
			nc, err := net.DialTimeout("tcp", s.Addr(), 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			nc.Write([]byte(tc.send))
			got, err := readUntilClosed(nc, 5*time.Second)
			nc.Close()
			if got != tc.want || err != nil {
				t.Errorf("unauthenticated %q: got %q (%v), want %q and the connection closed", tc.send, got, err, tc.want)
			}
		}
		// At the limits, and past them once authenticated, requests are served.
		c := dialClient(t, s.Addr())
		if got := c.do("GET", "a", "b", "c", "d", "e", "f", "g", "h", "i"); got != "-ERR wrong number of arguments for 'get' command\r\n" {
			t.Errorf("10 arguments before AUTH: %q", got)
		}
		if got := c.do("AUTH", strings.Repeat("x", 16384)); !strings.HasPrefix(got, "-WRONGPASS") {
			t.Errorf("a 16 KB bulk before AUTH: %q", got)
		}
		if got := c.do("AUTH", "sekret"); got != okReply {
			t.Fatal(got)
		}
		if got := c.do("SET", "k", strings.Repeat("v", 1<<20)); got != okReply {
			t.Errorf("a 1 MB bulk after AUTH: %q", got)
		}
		if got := c.do("MSET", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5", "f", "6"); got != okReply {
			t.Errorf("13 arguments after AUTH: %q", got)
		}
	})
	// Without a password nobody is limited.
	s := startServer(t, Config{}, newFSMStore())
	c := dialClient(t, s.Addr())
	if got := c.do("SET", "k", strings.Repeat("v", 1<<20)); got != okReply {
		t.Errorf("no requirepass, 1 MB bulk: %q", got)
	}
}

// emfileListener fails its first fails accepts with EMFILE, as a process out
// of descriptors does.
type emfileListener struct {
	net.Listener
	fails atomic.Int32
}

func (l *emfileListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// Item 3: an accept that fails (out of descriptors) is retried after a pause,
// never the end of the accept loop and so of the node.
func TestAcceptErrorsRetried(t *testing.T) {
	s, err := Listen(Config{Addr: "127.0.0.1:0"}, newFSMStore())
	if err != nil {
		t.Fatal(err)
	}
	ln := &emfileListener{Listener: s.ln}
	ln.fails.Store(6)
	s.ln = ln
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	t.Cleanup(func() { s.Close() })
	c := dialClient(t, s.Addr())
	if got := c.do("PING"); got != "+PONG\r\n" {
		select {
		case err := <-served:
			t.Fatalf("PING after 6 failed accepts: %q; Serve returned %v", got, err)
		default:
			t.Fatalf("PING after 6 failed accepts: %q", got)
		}
	}
	if n := s.stats.acceptErrors.Load(); n != 6 {
		t.Errorf("accept errors counted: %d, want 6", n)
	}
	select {
	case err := <-served:
		t.Fatalf("Serve returned %v", err)
	default:
	}
	s.Close()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after Close")
	}
}

// Item 3: -timeout closes idle clients (not subscribers), and a client that
// does not authenticate in time is closed.
func TestClientTimeouts(t *testing.T) {
	bothModes(t, func(t *testing.T, start func(Config, Store) *Server) {
		s := start(Config{IdleTimeout: 500 * time.Millisecond}, newFSMStore())
		idle := dialClient(t, s.Addr())
		if got := idle.do("SET", "k", "v"); got != okReply {
			t.Fatal(got)
		}
		sub := dialClient(t, s.Addr())
		sub.nc.Write(multibulk("SUBSCRIBE", "ch"))
		var out []byte
		if err := readFrame(sub.r, &out); err != nil {
			t.Fatal(err)
		}
		busy := dialClient(t, s.Addr())
		busyErr := make(chan string, 1)
		go func() { // a client that keeps sending stays
			for range 25 {
				if got := busy.do("GET", "k"); got != "$1\r\nv\r\n" {
					busyErr <- got
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
			busyErr <- ""
		}()
		began := time.Now()
		got, err := readUntilClosed(idle.nc, 5*time.Second)
		if err != nil || got != "" {
			t.Fatalf("an idle client: %q, %v; want closed without a reply", got, err)
		}
		if took := time.Since(began); took < 450*time.Millisecond || took > 3*time.Second {
			t.Errorf("idle client closed after %v, want 500ms (the loop: up to a second later)", took)
		}
		if got := <-busyErr; got != "" {
			t.Fatalf("a client sending every 50ms: %q", got)
		}
		// A subscriber is not idle.
		if got := sub.do("PING"); got != "*2\r\n$4\r\npong\r\n$0\r\n\r\n" {
			t.Errorf("a subscriber after the timeout: %q", got)
		}
		if n := s.stats.idleTimeouts.Load(); n < 1 {
			t.Errorf("idle timeouts counted: %d", n)
		}

		a := start(Config{RequirePass: "sekret", AuthTimeout: 300 * time.Millisecond}, newFSMStore())
		anon := dialClient(t, a.Addr())
		if got := anon.do("GET", "k"); !strings.HasPrefix(got, "-NOAUTH") {
			t.Fatal(got)
		}
		authed := dialClient(t, a.Addr())
		if got := authed.do("AUTH", "sekret"); got != okReply {
			t.Fatal(got)
		}
		if got, err := readUntilClosed(anon.nc, 5*time.Second); err != nil || got != "" {
			t.Fatalf("a client that never authenticates: %q, %v; want closed", got, err)
		}
		time.Sleep(400 * time.Millisecond) // past the login deadline: the authenticated one stays
		if got := authed.do("PING"); got != "+PONG\r\n" {
			t.Errorf("an authenticated client after the login deadline: %q", got)
		}
		if n := a.stats.authTimeouts.Load(); n != 1 {
			t.Errorf("login timeouts counted: %d, want 1", n)
		}
	})
}

// blockingStore answers a blocking acquire after wait, or an error as soon
// as its context ends (the client went away); everything else from an FSM.
type blockingStore struct {
	*fsmStore
	wait time.Duration
}

func (s blockingStore) Do(ctx context.Context, reqs []command.Request) []resp.Value {
	for _, r := range reqs {
		if r.Blocks() {
			out := make([]resp.Value, len(reqs))
			select {
			case <-time.After(s.wait):
				for i := range out {
					out[i] = resp.Int(1)
				}
			case <-ctx.Done():
				for i := range out {
					out[i] = resp.Error("ERR the client went away")
				}
			}
			return out
		}
	}
	return s.fsmStore.Do(ctx, reqs)
}

// A client blocked in LOCK.ACQUIRE … WAIT is not idle: it is answered when
// its wait ends, well past -timeout, as Redis spares blocked clients.
func TestBlockedClientNotIdle(t *testing.T) {
	bothModes(t, func(t *testing.T, start func(Config, Store) *Server) {
		s := start(Config{IdleTimeout: 300 * time.Millisecond}, blockingStore{newFSMStore(), 1200 * time.Millisecond})
		c := dialClient(t, s.Addr())
		if got := c.do("PING"); got != "+PONG\r\n" { // a read with the deadline armed first
			t.Fatal(got)
		}
		c.nc.SetDeadline(time.Now().Add(5 * time.Second))
		if got := c.do("LOCK.ACQUIRE", "l", "me", "PX", "10000", "WAIT", "5000"); got != ":1\r\n" {
			t.Fatalf("a blocked acquire past -timeout: %q", got)
		}
	})
}

// heapSampler records the most heap in use while it runs.
type heapSampler struct {
	stop chan struct{}
	done chan struct{}
	peak atomic.Uint64
}

func sampleHeap() *heapSampler {
	h := &heapSampler{stop: make(chan struct{}), done: make(chan struct{})}
	runtime.GC()
	go func() {
		defer close(h.done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > h.peak.Load() {
				h.peak.Store(ms.HeapInuse)
			}
			select {
			case <-h.stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return h
}

func (h *heapSampler) end() uint64 {
	close(h.stop)
	<-h.done
	return h.peak.Load()
}

// totalAlloc is the bytes allocated by the process so far.
func totalAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// Item 4: the output buffer limit is enforced while replies are produced.
// MGET of a 1 MB value named 1,500 times is refused before it is built; a
// client that pipelines GETs of it and never reads is answered batch by
// batch and disconnected when it stops taking them; meanwhile PING on
// another connection answers at once. Memory stays within a small multiple
// of the limit (before: 1.5 GB built for the MGET, gigabytes for the
// pipeline).
func TestOutputLimitWhileProducing(t *testing.T) {
	const limit = 8 << 20
	bothModes(t, func(t *testing.T, start func(Config, Store) *Server) {
		s := start(Config{MaxOutputBuffer: limit, OutputStall: 300 * time.Millisecond}, newFSMStore())
		c := dialClient(t, s.Addr())
		big := strings.Repeat("x", 1<<20)
		if got := c.do("SET", "big", big); got != okReply {
			t.Fatal(got)
		}
		pinger := dialClient(t, s.Addr())
		stopPing := make(chan struct{})
		pinged := make(chan time.Duration, 1)
		go func() { // the slowest PING while the attacks run
			worst := time.Duration(0)
			defer func() { pinged <- worst }()
			for {
				select {
				case <-stopPing:
					return
				default:
				}
				began := time.Now()
				if got := pinger.do("PING"); got != "+PONG\r\n" {
					worst = time.Hour
					return
				}
				worst = max(worst, time.Since(began))
				time.Sleep(5 * time.Millisecond)
			}
		}()

		heap := sampleHeap()
		before := totalAlloc()

		// MGET big ×1500.
		mget := dialClient(t, s.Addr())
		args := []string{"MGET"}
		for range 1500 {
			args = append(args, "big")
		}
		mget.nc.Write(multibulk(args...))
		if n, err := io.Copy(io.Discard, io.LimitReader(readerWithin(mget.nc, 10*time.Second), 2*limit)); n != 0 || err != nil {
			t.Errorf("MGET big×1500: %d bytes (%v), want none and the connection closed", n, err)
		}
		mgetAlloc := totalAlloc() - before
		waitFor(t, "the MGET client is gone", func() bool { return s.Counters().Clients == 2 }) // c and pinger

		// 3,000 pipelined GETs big, never read.
		pipe, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer pipe.Close()
		waitFor(t, "the pipelining client is accepted", func() bool { return s.Counters().Clients == 3 })
		var reqs []byte
		for range 3000 {
			reqs = append(reqs, multibulk("GET", "big")...)
		}
		wrote := make(chan error, 1)
		go func() {
			pipe.SetWriteDeadline(time.Now().Add(10 * time.Second))
			_, err := pipe.Write(reqs)
			wrote <- err
		}()
		began := time.Now()
		var closed bool
		for !closed && time.Since(began) < 10*time.Second {
			// Wait (polling) until the server disconnects it: then its
			// socket reports the reset or end to a read of nothing.
			closed = s.Counters().Clients <= 2 // c and pinger
			time.Sleep(10 * time.Millisecond)
		}
		<-wrote
		close(stopPing)
		worst := <-pinged
		peak := heap.end()
		all := totalAlloc() - before
		t.Logf("MGET big×1500: %d MB allocated; 3,000 pipelined GETs: disconnected after %v; %d MB allocated in all; heap peak %d MB; slowest PING %v",
			mgetAlloc>>20, time.Since(began).Round(time.Millisecond), all>>20, peak>>20, worst)
		if !closed {
			t.Errorf("the client that pipelines GETs and never reads was not disconnected (clients: %d)", s.Counters().Clients)
		}
		if mgetAlloc > 4*limit {
			t.Errorf("MGET big×1500 allocated %d MB, want under 4× the %d MB limit", mgetAlloc>>20, limit>>20)
		}
		if all > 8*limit {
			t.Errorf("the attacks allocated %d MB, want under 8× the %d MB limit", all>>20, limit>>20)
		}
		if peak > 32<<20+4*limit {
			t.Errorf("heap in use peaked at %d MB", peak>>20)
		}
		if worst > time.Second {
			t.Errorf("PING on another connection took %v during the attacks", worst)
		}
		if n := s.stats.outputDisconnects.Load(); n < 2 {
			t.Errorf("output disconnects counted: %d, want 2", n)
		}

		// A client that pipelines more than the limit's worth and reads
		// gets every reply, whole and in order.
		reader := dialClient(t, s.Addr())
		const n = 40 // 40 MB of replies, five times the limit
		var req []byte
		for range n {
			req = append(req, multibulk("GET", "big")...)
		}
		go reader.nc.Write(req)
		reader.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
		want := "$" + strconv.Itoa(len(big)) + "\r\n" + big + "\r\n"
		for i := range n {
			var out []byte
			if err := readFrame(reader.r, &out); err != nil || string(out) != want {
				t.Fatalf("reply %d of a reading pipeline: %d bytes, %v", i, len(out), err)
			}
		}
	})
}

// readerWithin is nc with a read deadline within d.
func readerWithin(nc net.Conn, d time.Duration) io.Reader {
	nc.SetReadDeadline(time.Now().Add(d))
	return nc
}

// MGET and HMGET that name a key or field more than once are answered as
// Redis answers them, the store asked for each once.
func TestRepeatedNamesAnsweredOnce(t *testing.T) {
	bothModes(t, func(t *testing.T, start func(Config, Store) *Server) {
		st := newFSMStore()
		s := start(Config{}, st)
		c := dialClient(t, s.Addr())
		c.do("SET", "a", "1")
		c.do("HSET", "h", "f", "x", "g", "y")
		args := []string{"MGET"}
		want := ""
		for i := range 20 {
			k := []string{"a", "nosuch", "a", "h"}[i%4]
			args = append(args, k)
			if k == "a" {
				want += "$1\r\n1\r\n"
			} else {
				want += "$-1\r\n"
			}
		}
		if got := c.do(args...); got != "*20\r\n"+want {
			t.Errorf("MGET with repeats: %q", got)
		}
		hargs := []string{"HMGET", "h"}
		hwant := ""
		for i := range 12 {
			f := []string{"f", "g", "nosuch"}[i%3]
			hargs = append(hargs, f)
			hwant += map[string]string{"f": "$1\r\nx\r\n", "g": "$1\r\ny\r\n", "nosuch": "$-1\r\n"}[f]
		}
		if got := c.do(hargs...); got != "*12\r\n"+hwant {
			t.Errorf("HMGET with repeats: %q", got)
		}
		hargs[1] = "a"
		if got := c.do(hargs...); !strings.HasPrefix(got, "-WRONGTYPE") {
			t.Errorf("HMGET with repeats on a string: %q", got)
		}
	})
}

// replySize is exactly what resp.Append writes, in both protocols.
func TestReplySize(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var gen func(depth int) resp.Value
	gen = func(depth int) resp.Value {
		kinds := []resp.Kind{resp.KindNull, resp.KindNullArray, resp.KindSimple, resp.KindError, resp.KindInt, resp.KindBulk,
			resp.KindDouble, resp.KindBool, resp.KindVerbatim, resp.KindArray, resp.KindMap, resp.KindSet, resp.KindPush, 200}
		k := kinds[r.IntN(len(kinds))]
		v := resp.Value{Kind: k, Str: bytes.Repeat([]byte("a\r\n"), r.IntN(40)), Int: r.Int64() >> r.IntN(64) * int64(1-2*r.IntN(2)),
			Float: r.NormFloat64() * float64(r.IntN(1e6))}
		switch r.IntN(8) {
		case 0:
			v.Float = 1.0 / 3
		case 1:
			v.Int = -1 << 63
		}
		if depth < 4 && (k == resp.KindArray || k == resp.KindMap || k == resp.KindSet || k == resp.KindPush) {
			for range r.IntN(6) * 2 {
				v.Elems = append(v.Elems, gen(depth+1))
			}
		}
		return v
	}
	for i := range 20000 {
		v := gen(0)
		for _, proto := range []int{2, 3} {
			if got, want := replySize(&v, proto), int64(len(resp.Append(nil, v, proto))); got != want {
				t.Fatalf("value %d, RESP%d: replySize %d, resp.Append wrote %d: %+v", i, proto, got, want, v)
			}
		}
	}
}

// syncLog collects log lines while the server writes them.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Item 7: failed AUTHs are counted per address, logged without the password,
// and slowed down: past authFailFree failures in a window an address gets
// at most one answer per AuthFailDelay, across its connections, while other
// commands and other clients go on at full speed.
func TestAuthFailuresSlowedDown(t *testing.T) {
	const delay = 50 * time.Millisecond
	var logs syncLog
	s := startLoopServer(t, Config{RequirePass: "right-horse-battery", AuthFailDelay: delay,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, newFSMStore())
	c := dialClient(t, s.Addr())
	guess := func(c *client, i int) string { return c.do("AUTH", "guess-"+strconv.Itoa(i)) }
	began := time.Now()
	for i := range authFailFree {
		if got := guess(c, i); !strings.HasPrefix(got, "-WRONGPASS") {
			t.Fatal(got)
		}
	}
	free := time.Since(began)
	// Two connections from the same address share its pace.
	other := dialClient(t, s.Addr())
	const slowed = 10
	began = time.Now()
	var wg sync.WaitGroup
	for _, cl := range []*client{c, other} {
		wg.Go(func() {
			for i := range slowed / 2 {
				if got := guess(cl, 100+i); !strings.HasPrefix(got, "-WRONGPASS") {
					t.Errorf("a slowed guess: %q", got)
				}
			}
		})
	}
	// Meanwhile a PING on a third connection is not held up.
	pinger := dialClient(t, s.Addr())
	pingBegan := time.Now()
	if got := pinger.do("PING"); !strings.HasPrefix(got, "-NOAUTH") {
		t.Fatal(got)
	}
	pingTook := time.Since(pingBegan)
	wg.Wait()
	slow := time.Since(began)
	// The right password waits its turn too (a quick answer would tell it):
	// sent right behind a wrong one, its turn is a delay after the wrong
	// one's, which is no earlier than they were sent.
	began = time.Now()
	c.nc.SetDeadline(time.Now().Add(5 * time.Second))
	c.nc.Write(append(multibulk("AUTH", "wrong-again"), multibulk("AUTH", "right-horse-battery")...))
	var first, second []byte
	if err := readFrame(c.r, &first); err != nil || !strings.HasPrefix(string(first), "-WRONGPASS") {
		t.Fatalf("%q %v", first, err)
	}
	if err := readFrame(c.r, &second); err != nil || string(second) != okReply {
		t.Fatalf("%q %v", second, err)
	}
	rightTook := time.Since(began)
	t.Logf("%d failed AUTHs in %v (%.0f/s); then %d more on two connections in %v (%.1f/s); a wrong and the right one together: %v; PING meanwhile %v",
		authFailFree, free, float64(authFailFree)/free.Seconds(), slowed, slow, float64(slowed)/slow.Seconds(), rightTook, pingTook)
	if slow < (slowed-1)*delay {
		t.Errorf("%d guesses past the free ones took %v, want at least %v", slowed, slow, (slowed-1)*delay)
	}
	if rightTook < delay {
		t.Errorf("a wrong and the right password sent together were both answered within %v, before the right one's turn", rightTook)
	}
	if pingTook > 4*delay {
		t.Errorf("PING on another connection took %v", pingTook)
	}
	if got := s.SecurityCounters().AuthFailures; got != authFailFree+slowed+1 {
		t.Errorf("failures counted: %d, want %d", got, authFailFree+slowed+1)
	}
	out := logs.String()
	if strings.Contains(out, "guess-") || strings.Contains(out, "right-horse") {
		t.Errorf("a password reached the log:\n%s", out)
	}
	if !strings.Contains(out, "authentication failed") || !strings.Contains(out, "addr=127.0.0.1:") {
		t.Errorf("no log line names the failing address:\n%s", out)
	}
	if n := strings.Count(out, "authentication failed"); n > 3 {
		t.Errorf("%d log lines for %d failures in about a second: not rate-limited", n, authFailFree+slowed)
	}
}

// The limiter's bookkeeping, on a clock the test moves.
func TestAuthLimiter(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newAuthLimiter(time.Second, slog.New(slog.DiscardHandler))
	l.now = func() time.Time { return now }
	const addr = "10.0.0.1:5000"
	for range authFailFree {
		if wait, refused := l.admit(addr); wait != 0 || refused {
			t.Fatalf("before the free failures are used: wait %v refused %v", wait, refused)
		}
		l.fail(addr, "x", false)
	}
	for i := range int(authWaitMax/time.Second) + 1 { // turns 0 s … authWaitMax away
		wait, refused := l.admit("10.0.0.1:6000") // another port, the same address
		if refused || wait != time.Duration(i)*time.Second {
			t.Fatalf("throttled attempt %d: wait %v refused %v", i, wait, refused)
		}
	}
	if _, refused := l.admit(addr); !refused {
		t.Error("an attempt more than authWaitMax away was admitted")
	}
	if wait, refused := l.admit("10.0.0.2:1"); wait != 0 || refused {
		t.Errorf("another address: wait %v refused %v", wait, refused)
	}
	// IPv6 clients are counted by their /64.
	if addrKey("[2001:db8::1]:1") != addrKey("[2001:db8::2]:2") || addrKey("[2001:db8::1]:1") == addrKey("[2001:db8:0:1::1]:1") {
		t.Error("IPv6 addresses are not grouped by /64")
	}
	// Once the window and the queued turns are over, the address starts afresh.
	now = now.Add(authFailWindow + 20*time.Second)
	if wait, refused := l.admit(addr); wait != 0 || refused {
		t.Errorf("after the window: wait %v refused %v", wait, refused)
	}
	// The table is bounded.
	for i := range authAddrsMax + 10 {
		l.fail(net.JoinHostPort(net.IPv4(10, byte(i>>16), byte(i>>8), byte(i)).String(), "1"), "x", false)
	}
	if n := len(l.addrs); n > authAddrsMax {
		t.Errorf("%d addresses tracked, want at most %d", n, authAddrsMax)
	}
}

// HTTP credentials go through the same limiter.
func TestAuthenticateFrom(t *testing.T) {
	s := startServer(t, Config{RequirePass: "pw", AuthFailDelay: time.Hour}, newFSMStore())
	for range authFailFree {
		if _, err := s.AuthenticateFrom(context.Background(), "192.0.2.1:1", "default", "nope"); !errors.Is(err, ErrAuthFailed) {
			t.Fatal(err)
		}
	}
	_, err := s.AuthenticateFrom(context.Background(), "192.0.2.1:2", "default", "pw") // its turn: now
	if err != nil {
		t.Fatalf("first throttled attempt: %v", err)
	}
	_, err = s.AuthenticateFrom(context.Background(), "192.0.2.1:2", "default", "pw")
	var th AuthThrottledError
	if !errors.As(err, &th) || th.RetryAfter() <= authWaitMax {
		t.Fatalf("an attempt an hour away: %v", err)
	}
	if u, err := s.AuthenticateFrom(context.Background(), "192.0.2.9:1", "default", "pw"); err != nil || u.Name != "default" {
		t.Fatalf("another address: %v", err)
	}
}
