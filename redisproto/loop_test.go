//go:build linux

package redisproto

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// startLoopServer is startServer with the event loop enabled.
func startLoopServer(t *testing.T, cfg Config, st Store) *Server {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	s, err := Listen(cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnableEventLoop(); err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(func() { s.Close() })
	return s
}

// loopOwns reports whether the loop serves the connection id now.
func (s *Server) loopOwns(id int64) bool {
	s.loop.mu.Lock()
	defer s.loop.mu.Unlock()
	_, ok := s.loop.conns[id]
	return ok
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting until %s", what)
}

// converse sends chunks (pausing briefly between them, so that a request may
// arrive split) and returns everything the server sends until it closes the
// connection.
func converse(t *testing.T, addr string, chunks ...string) string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(&out, nc)
		done <- err
	}()
	for _, ch := range chunks {
		if _, err := nc.Write([]byte(ch)); err != nil {
			break // the server may close early (a protocol error)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatalf("reading: %v (after %q)", err, out.String())
	}
	return out.String()
}

func mb(args ...string) string { return string(multibulk(args...)) }

// The loop answers every client byte for byte as a connection's own goroutine
// does: keyspace commands, the local ones it hands to the goroutine (HELLO,
// MULTI, SUBSCRIBE, CLIENT, blocking acquires), errors, authentication,
// inline requests, requests split over several reads, protocol errors.
func TestLoopAnswersAsGoroutine(t *testing.T) {
	scripts := map[string][]string{
		"pipeline": {mb("SET", "a", "1") + mb("GET", "a") + mb("PING") + mb("INCR", "a") + mb("HELLO", "3") +
			mb("GET", "a") + mb("HELLO", "2") + mb("MULTI") + mb("SET", "b", "2") + mb("GET", "b") + mb("EXEC") +
			mb("GET", "b") + mb("ECHO", "x") + mb("QUIT")},
		"one by one": {mb("SET", "a", "1"), mb("CLIENT", "SETNAME", "n1"), mb("GET", "a"), mb("CLIENT", "GETNAME"),
			mb("DEL", "a"), mb("GET", "a"), mb("QUIT")},
		"inline":      {"SET c 3\r\nGET c\r\n", "EXISTS c\r\n\r\nQUIT\r\n"},
		"split":       splitEvery(mb("SET", "k", strings.Repeat("v", 100))+mb("GET", "k")+mb("PING")+mb("GET", "k")+mb("QUIT"), 7),
		"errors":      {mb("GET") + mb("FOO", "bar") + mb("SET", "a", "1", "BOGUS") + mb("INCR", "a") + mb("SET", "a", "x") + mb("INCR", "a") + mb("QUIT")},
		"bad request": {mb("SET", "a", "1") + mb("GET", "a") + "*1\r\n$x\r\n" + mb("GET", "a")},
		"bad inline":  {mb("GET", "a") + "GET \"a\r\n"},
		"locks": {mb("LOCK.ACQUIRE", "r", "o1", "PX", "60000") + mb("LOCK.ACQUIRE", "r", "o2", "PX", "60000", "WAIT", "50") +
			mb("LOCK.ACQUIRE", "q", "o1", "PX", "60000", "WAIT", "50") + mb("LOCK.RELEASE", "r", "1") + mb("GET", "r") + mb("QUIT")},
		"subscribe": {mb("SET", "s", "1") + mb("SUBSCRIBE", "ch") + mb("PING") + mb("UNSUBSCRIBE", "ch"), mb("GET", "s") + mb("QUIT")},
		"resp3":     {mb("HELLO", "3"), mb("HSET", "h", "f", "v") + mb("HGETALL", "h") + mb("GET", "nope"), mb("QUIT")},
	}
	for name, chunks := range scripts {
		t.Run(name, func(t *testing.T) {
			plain := startServer(t, Config{}, newFSMStore())
			looped := startLoopServer(t, Config{}, newFSMStore())
			want := converse(t, plain.Addr(), chunks...)
			got := converse(t, looped.Addr(), chunks...)
			if got != want {
				t.Fatalf("event loop answered\n%q\na connection's goroutine answered\n%q", got, want)
			}
			if len(want) == 0 {
				t.Fatal("no reply at all")
			}
		})
	}
	t.Run("requirepass", func(t *testing.T) {
		chunks := []string{mb("GET", "a") + mb("AUTH", "nope") + mb("GET", "a"), mb("AUTH", "pw"), mb("SET", "a", "1") + mb("GET", "a") + mb("QUIT")}
		plain := startServer(t, Config{RequirePass: "pw"}, newFSMStore())
		looped := startLoopServer(t, Config{RequirePass: "pw"}, newFSMStore())
		if got, want := converse(t, looped.Addr(), chunks...), converse(t, plain.Addr(), chunks...); got != want {
			t.Fatalf("event loop answered\n%q\na connection's goroutine answered\n%q", got, want)
		}
	})
}

// backToLoop sends c's connection commands the loop serves until the loop owns
// it again (its goroutine hands it back after handBackAfter of them).
func backToLoop(t *testing.T, s *Server, c *client, id int64, why string) {
	t.Helper()
	waitFor(t, "the loop owns the connection again "+why, func() bool {
		return c.do("EXISTS", "nokey") == ":0\r\n" && s.loopOwns(id)
	})
}

// clientID asks CLIENT ID.
func clientID(t *testing.T, c *client) int64 {
	t.Helper()
	got := c.do("CLIENT", "ID")
	id, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(got, ":"), "\r\n"), 10, 64)
	if err != nil {
		t.Fatalf("CLIENT ID: %q", got)
	}
	return id
}

func splitEvery(s string, n int) []string {
	var out []string
	for len(s) > n {
		out, s = append(out, s[:n]), s[n:]
	}
	return append(out, s)
}

// gateStore is an fsmStore whose Do records each batch's size and, while the
// gate is shut, waits for it to open.
type gateStore struct {
	*fsmStore
	mu      sync.Mutex
	sizes   []int
	shut    chan struct{} // nil: open
	entered chan struct{} // receives once per Do that waits at the gate
}

func (g *gateStore) Do(ctx context.Context, reqs []command.Request) []resp.Value {
	g.mu.Lock()
	g.sizes = append(g.sizes, len(reqs))
	shut := g.shut
	g.mu.Unlock()
	if shut != nil {
		g.entered <- struct{}{}
		<-shut
	}
	return g.fsmStore.Do(ctx, reqs)
}

func (g *gateStore) close() { g.mu.Lock(); g.shut = make(chan struct{}); g.mu.Unlock() }

// open opens the gate; an open gate stays open.
func (g *gateStore) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut != nil {
		close(g.shut)
		g.shut = nil
	}
}
func (g *gateStore) batchSizes() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.sizes...)
}

// The commands several clients send while a batch commits go to the store
// together, as one batch, and each client gets its own replies.
func TestLoopBatchesClients(t *testing.T) {
	g := &gateStore{fsmStore: newFSMStore(), entered: make(chan struct{}, 16)}
	s := startLoopServer(t, Config{}, g)
	var clients []*client
	for range 5 {
		c := dialClient(t, s.Addr())
		clients = append(clients, c)
		backToLoop(t, s, c, clientID(t, c), "after CLIENT ID")
	}
	g.mu.Lock()
	g.sizes = nil // count from here
	g.mu.Unlock()
	g.close()
	first := make(chan string, 1)
	go func() { first <- clients[0].do("SET", "k0", "v0") }()
	<-g.entered // the loop waits in Do
	for i, c := range clients[1:] {
		c.nc.Write(append(multibulk("SET", "k"+strconv.Itoa(i+1), "v"+strconv.Itoa(i+1)), multibulk("GET", "k"+strconv.Itoa(i+1))...))
	}
	g.open()
	if got := <-first; got != okReply {
		t.Fatalf("first client: %q", got)
	}
	for i, c := range clients[1:] {
		var out []byte
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if err := readFrame(c.r, &out); err == nil {
			err = readFrame(c.r, &out)
		}
		v := "v" + strconv.Itoa(i+1)
		if want := okReply + "$" + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n"; string(out) != want {
			t.Fatalf("client %d: %q, want %q", i+1, out, want)
		}
	}
	if sizes := g.batchSizes(); len(sizes) != 2 || sizes[0] != 1 || sizes[1] != 8 {
		t.Fatalf("store batches %v, want [1 8]: the four clients' requests in one", sizes)
	}
}

// A connection goes to a goroutine of its own for what the loop does not serve
// and comes back once it is plain again; a subscriber or an open MULTI stays
// with its goroutine.
func TestLoopHandsConnectionsBack(t *testing.T) {
	s := startLoopServer(t, Config{}, newFSMStore())
	c := dialClient(t, s.Addr())
	id := clientID(t, c)
	backToLoop(t, s, c, id, "after CLIENT ID")
	if got := c.do("MULTI"); got != okReply {
		t.Fatal(got)
	}
	if got := c.do("SET", "a", "1"); got != "+QUEUED\r\n" {
		t.Fatal(got)
	}
	if s.loopOwns(id) {
		t.Fatal("the loop took a connection inside MULTI")
	}
	if got := c.do("DISCARD"); got != okReply {
		t.Fatal(got)
	}
	backToLoop(t, s, c, id, "after DISCARD")
	if got := c.do("SUBSCRIBE", "ch"); !strings.HasPrefix(got, "*3\r\n$9\r\nsubscribe\r\n") {
		t.Fatal(got)
	}
	s.Publish([]byte("ch"), []byte("hello"))
	var msg []byte
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if err := readFrame(c.r, &msg); err != nil || string(msg) != "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n" {
		t.Fatalf("message %q, %v", msg, err)
	}
	if s.loopOwns(id) {
		t.Fatal("the loop took a subscriber")
	}
	if got := c.do("UNSUBSCRIBE"); !strings.HasPrefix(got, "*3\r\n$11\r\nunsubscribe\r\n") {
		t.Fatal(got)
	}
	backToLoop(t, s, c, id, "after UNSUBSCRIBE")
	if got := c.do("SET", "a", "2"); got != okReply {
		t.Fatal(got)
	}
	// A blocking acquire keeps the connection with its goroutine for
	// handBackAfter batches the loop could serve: a waiter that comes back
	// to waiting is not moved twice per wait.
	if got := c.do("LOCK.ACQUIRE", "l", "o", "PX", "60000", "WAIT", "100"); !strings.HasPrefix(got, ":") {
		t.Fatal(got)
	}
	for i := range handBackAfter {
		if s.loopOwns(id) {
			t.Fatalf("the loop took the waiter back after %d plain batches", i)
		}
		if got := c.do("EXISTS", "nokey"); got != ":0\r\n" {
			t.Fatal(got)
		}
	}
	waitFor(t, "the loop owns the connection after the plain batches", func() bool { return s.loopOwns(id) })
	if got := c.do("GET", "a"); got != "$1\r\n2\r\n" {
		t.Fatal(got)
	}
}

// openFDs counts the test process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// A connection moves between the loop and its goroutine many times, each
// time on a socket of the new owner's (the loop's descriptor, a net.Conn),
// with every request answered in order and no descriptor left behind.
func TestLoopMovesKeepNoDescriptor(t *testing.T) {
	s := startLoopServer(t, Config{}, newFSMStore())
	before := openFDs(t)
	c := dialClient(t, s.Addr())
	id := clientID(t, c)
	for round := range 8 {
		backToLoop(t, s, c, id, "round "+strconv.Itoa(round))
		v := strconv.Itoa(round)
		if got := c.do("SET", "k", v); got != okReply {
			t.Fatal(got)
		}
		if got := c.do("PING"); got != "+PONG\r\n" { // moves it to its goroutine
			t.Fatal(got)
		}
		for range handBackAfter {
			if got := c.do("GET", "k"); got != "$1\r\n"+v+"\r\n" {
				t.Fatalf("round %d: %q", round, got)
			}
		}
	}
	c.nc.Close()
	waitFor(t, "the server ends the connection", func() bool { return len(s.clients()) == 0 })
	if after := openFDs(t); after != before {
		t.Fatalf("%d descriptors open after the client left, %d before it came", after, before)
	}
}

// CLIENT KILL ends a connection the loop owns: its client reads the end, and
// CLIENT LIST no longer shows it.
func TestLoopClientKill(t *testing.T) {
	s := startLoopServer(t, Config{}, newFSMStore())
	victim, killer := dialClient(t, s.Addr()), dialClient(t, s.Addr())
	n := clientID(t, victim)
	id := strconv.FormatInt(n, 10)
	backToLoop(t, s, victim, n, "after CLIENT ID")
	if got := killer.do("CLIENT", "KILL", "ID", id); got != ":1\r\n" {
		t.Fatalf("CLIENT KILL: %q", got)
	}
	if !victim.closed() {
		t.Fatal("the killed client's connection stayed open")
	}
	waitFor(t, "CLIENT LIST no longer shows the killed client", func() bool {
		return !strings.Contains(killer.do("CLIENT", "LIST"), "id="+id+" ")
	})
}

// A batch that does not come back (a store waiting for a leader) does not
// hold up the loop's other clients: a PING is answered meanwhile, and the
// stalled clients get their replies once the store answers.
func TestLoopStalledBatchLetsOthersThrough(t *testing.T) {
	g := &gateStore{fsmStore: newFSMStore(), entered: make(chan struct{}, 4)}
	s := startLoopServer(t, Config{}, g)
	stalled, pinger := dialClient(t, s.Addr()), dialClient(t, s.Addr())
	for _, c := range []*client{stalled, pinger} {
		backToLoop(t, s, c, clientID(t, c), "after CLIENT ID")
	}
	g.close()
	stalled.nc.Write(multibulk("SET", "k", "v"))
	<-g.entered
	if got := pinger.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING while a batch stalls: %q", got)
	}
	pinger.nc.Write(multibulk("GET", "k")) // a batch of its own, stalled too
	<-g.entered
	g.open()
	for _, tc := range []struct {
		c    *client
		want []string
	}{{stalled, []string{okReply}}, {pinger, []string{"$1\r\nv\r\n", "$-1\r\n"}}} { // the two batches race
		var out []byte
		tc.c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if err := readFrame(tc.c.r, &out); err != nil || !slices.Contains(tc.want, string(out)) {
			t.Fatalf("after the store answered: %q, %v; want one of %q", out, err, tc.want)
		}
	}
	// Both go back to the loop later, as any connection its goroutine serves.
	backToLoop(t, s, stalled, clientID(t, stalled), "after the stall")
}

// Shutdown while a turn is stalled: the goroutine that became the loop in the
// stalled one's place ends, and the stalled turn's client still gets its
// reply before its connection closes.
func TestLoopShutdownDuringStall(t *testing.T) {
	g := &gateStore{fsmStore: newFSMStore(), entered: make(chan struct{}, 1)}
	s := startLoopServer(t, Config{}, g)
	c := dialClient(t, s.Addr())
	id := clientID(t, c)
	backToLoop(t, s, c, id, "after CLIENT ID")
	g.close()
	c.nc.Write(multibulk("SET", "k", "v"))
	<-g.entered
	waitFor(t, "the stalled turn's connection leaves the loop", func() bool { return !s.loopOwns(id) })
	other := dialClient(t, s.Addr()) // served by the loop's new goroutine
	if got := other.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING during the stall: %q", got)
	}
	shutdownAnswers(t, s, g, c, other)
}

// shutdownAnswers shuts s down while c's SET waits at g's gate, then opens
// it: c gets its reply, then c and others are closed, and Shutdown returns.
func shutdownAnswers(t *testing.T, s *Server, g *gateStore, c *client, others ...*client) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(5 * time.Second) }()
	waitFor(t, "Shutdown has begun", s.shuttingDown)
	g.open()
	var out []byte
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if err := readFrame(c.r, &out); err != nil || string(out) != okReply {
		t.Fatalf("reply %q, %v", out, err)
	}
	for _, cl := range append([]*client{c}, others...) {
		if !cl.closed() {
			t.Fatal("connection still open after Shutdown")
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Shutdown answers a request the loop is committing, then closes.
func TestLoopShutdownDrains(t *testing.T) {
	g := &gateStore{fsmStore: newFSMStore(), entered: make(chan struct{}, 1)}
	s := startLoopServer(t, Config{}, g)
	c := dialClient(t, s.Addr())
	g.close()
	c.nc.Write(multibulk("SET", "k", "v"))
	<-g.entered
	shutdownAnswers(t, s, g, c)
}

// A client that sends more than it reads gets every reply, whole and in order:
// what its socket does not take goes through its goroutine, and the loop takes
// the connection back afterwards.
func TestLoopSlowReader(t *testing.T) {
	s := startLoopServer(t, Config{}, newFSMStore())
	c := dialClient(t, s.Addr())
	big := strings.Repeat("x", 256<<10)
	if got := c.do("SET", "big", big); got != okReply {
		t.Fatal(got)
	}
	const n = 64 // 16 MiB of replies, more than loopback's socket buffers
	var req []byte
	for range n {
		req = append(req, multibulk("GET", "big")...)
	}
	c.nc.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.nc.Write(req); err != nil {
		t.Fatal(err)
	}
	want := "$" + strconv.Itoa(len(big)) + "\r\n" + big + "\r\n"
	for i := range n {
		var out []byte
		if err := readFrame(c.r, &out); err != nil || string(out) != want {
			t.Fatalf("reply %d: %d bytes, %v", i, len(out), err)
		}
	}
	backToLoop(t, s, c, clientID(t, c), "after the replies")
	if got := c.do("EXISTS", "big"); got != ":1\r\n" {
		t.Fatal(got)
	}

	// The same pipeline ended by a malformed request: every reply, then the
	// protocol error, then the end of the connection.
	slow := dialClient(t, s.Addr())
	slow.nc.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := slow.nc.Write(append(req, "*1\r\n$x\r\n"...)); err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(slow.r)
	if err != nil {
		t.Fatal(err)
	}
	if wantAll := strings.Repeat(want, n) + "-ERR Protocol error: invalid bulk length\r\n"; string(all) != wantAll {
		t.Fatalf("got %d bytes ending %q, want %d", len(all), all[max(0, len(all)-60):], len(wantAll))
	}
}

// partStore is a PartStore over a gateStore: a batch's requests on keys that
// begin "slow" go through the gate (a group without a leader, while it is
// shut); every other request is applied at once and reported through part
// before the slow ones wait (a group that answers), as raftstore.Node.DoParts
// reports a group's part. Each batch's keys are recorded.
type partStore struct {
	*gateStore
	mu      sync.Mutex
	batches [][]string
}

func (p *partStore) DoParts(ctx context.Context, reqs []command.Request, part func(idx []int, res []resp.Value)) []resp.Value {
	out := make([]resp.Value, len(reqs))
	var keys []string
	var slow []int
	var slowReqs []command.Request
	for i, r := range reqs {
		key := string(r.Args[1])
		keys = append(keys, key)
		if strings.HasPrefix(key, "slow") {
			slow, slowReqs = append(slow, i), append(slowReqs, r)
			continue
		}
		res := p.fsmStore.Do(ctx, reqs[i:i+1])
		out[i] = res[0]
		part([]int{i}, res)
	}
	p.mu.Lock()
	p.batches = append(p.batches, keys)
	p.mu.Unlock()
	if len(slow) > 0 {
		for j, v := range p.gateStore.Do(ctx, slowReqs) {
			out[slow[j]] = v
		}
	}
	return out
}

// Do is DoParts reporting no part: the same store to a loop that does not ask
// for parts.
func (p *partStore) Do(ctx context.Context, reqs []command.Request) []resp.Value {
	return p.DoParts(ctx, reqs, func([]int, []resp.Value) {})
}

// together reports whether keys a and b went to the store in one batch.
func (p *partStore) together(a, b string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, keys := range p.batches {
		if slices.Contains(keys, a) {
			return slices.Contains(keys, b)
		}
	}
	return false
}

// A turn that stalls on one part of its batch (a Raft group electing a
// leader) answers each of its connections once that connection's own
// requests are done: a client whose write shares the turn with a write that
// waits gets its reply after the stall, not when the waiting write is done.
//
// To put the two writes in one turn, a first write that waits holds the loop
// (a turn reads nothing while its batch commits, for up to stallAfter), and
// the two are sent meanwhile: the loop's next turn reads both. Where the
// test itself was held up past the stall and the two landed in different
// turns, the attempt is repeated with fresh keys (at most 5 times).
func TestLoopStalledTurnAnswersEachConnection(t *testing.T) {
	p := &partStore{gateStore: &gateStore{fsmStore: newFSMStore(), entered: make(chan struct{}, 8)}}
	s := startLoopServer(t, Config{}, p)
	t.Cleanup(p.open) // before the server closes: a failed attempt leaves no batch waiting
	holder, waiter, writer := dialClient(t, s.Addr()), dialClient(t, s.Addr()), dialClient(t, s.Addr())
	for attempt := 0; ; attempt++ {
		for _, c := range []*client{holder, waiter, writer} {
			backToLoop(t, s, c, clientID(t, c), "before the attempt")
		}
		n := strconv.Itoa(attempt)
		slowH, slowW, fast := "slow:h"+n, "slow:w"+n, "fast:"+n
		p.close()
		holder.nc.Write(multibulk("SET", slowH, "v"))
		<-p.entered // the loop's turn waits for the holder's write
		waiter.nc.Write(multibulk("SET", slowW, "v"))
		writer.nc.Write(multibulk("SET", fast, "v"))
		<-p.entered // the next turn's batch, with the waiter's write
		shared := p.together(slowW, fast)
		var out []byte
		if shared {
			out = out[:0]
			writer.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			if err := readFrame(writer.r, &out); err != nil || string(out) != okReply {
				t.Fatalf("the write sharing a stalled turn: %q, %v; want its reply while the other write waits", out, err)
			}
			out = out[:0]
			waiter.nc.SetReadDeadline(time.Now().Add(time.Millisecond))
			if err := readFrame(waiter.r, &out); err == nil {
				t.Fatalf("the waiting write was answered (%q) before the store did", out)
			}
		}
		p.open()
		answered := []*client{holder, waiter}
		if !shared {
			answered = append(answered, writer)
		}
		for _, c := range answered {
			out = out[:0]
			c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			if err := readFrame(c.r, &out); err != nil || string(out) != okReply {
				t.Fatalf("after the store answered: %q, %v", out, err)
			}
		}
		for _, key := range []string{slowH, slowW, fast} {
			if got := writer.do("GET", key); got != "$1\r\nv\r\n" {
				t.Fatalf("GET %s: %q", key, got)
			}
		}
		if shared {
			return
		}
		if attempt == 4 {
			t.Fatal("in 5 attempts the two writes never shared a turn")
		}
		t.Logf("attempt %d: the two writes landed in different turns; again", attempt)
	}
}
