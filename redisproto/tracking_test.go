package redisproto

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/raftstore/fsm"
	"github.com/lockd/lockd/resp"
)

// eventStore is an fsmStore that delivers each applied write's events to the
// server, as raftstore's apply path does (before the write's reply).
type eventStore struct {
	*fsmStore
	srv atomic.Pointer[Server]
	// afterRead, if set, runs right after each read is served, before its
	// reply goes back: a write applied there is the worst case for a cache.
	afterRead func()
}

func newEventStore() *eventStore { return &eventStore{fsmStore: newFSMStore()} }

func (s *eventStore) attach(srv *Server) {
	s.srv.Store(srv)
	s.mu.Lock()
	s.ks.SetEventFilter(srv.WantsEvents)
	s.mu.Unlock()
}

func (s *eventStore) Do(ctx context.Context, reqs []command.Request) []resp.Value {
	out := make([]resp.Value, len(reqs))
	for i, r := range reqs {
		out[i] = s.fsmStore.Do(ctx, reqs[i:i+1])[0]
		if !r.Spec.Writes() {
			if s.afterRead != nil {
				s.afterRead()
			}
			continue
		}
		s.mu.Lock()
		ev := s.ks.TakeEvents()
		s.mu.Unlock()
		if srv := s.srv.Load(); srv != nil {
			for _, e := range ev {
				srv.Publish(e.Channel, e.Message)
			}
		}
	}
	return out
}

func startTracking(t *testing.T) (*Server, *eventStore) {
	st := newEventStore()
	srv := startServer(t, Config{}, st)
	st.attach(srv)
	return srv, st
}

// readFrame3 appends one RESP2 or RESP3 frame, as sent, to out.
func readFrame3(r *bufio.Reader, out *[]byte) error {
	line, err := r.ReadBytes('\n')
	*out = append(*out, line...)
	if err != nil {
		return err
	}
	if len(line) < 3 {
		return fmt.Errorf("short line %q", line)
	}
	n, _ := strconv.Atoi(string(line[1 : len(line)-2]))
	switch line[0] {
	case '$', '=':
		if n < 0 {
			return nil
		}
		body := make([]byte, n+2)
		_, err := io.ReadFull(r, body)
		*out = append(*out, body...)
		return err
	case '%':
		n *= 2
		fallthrough
	case '*', '>', '~':
		for i := 0; i < n; i++ {
			if err := readFrame3(r, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// next reads one frame within 5 seconds.
func (c *client) next() string {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var out []byte
	if err := readFrame3(c.r, &out); err != nil {
		c.t.Fatalf("read: %v (after %q)", err, out)
	}
	return string(out)
}

func (c *client) send(args ...string) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(multibulk(args...)); err != nil {
		c.t.Fatal(err)
	}
}

// req parses a request as the front door does.
func req(t *testing.T, args ...string) command.Request {
	a := cmdArgs(args...)
	spec, ok := command.Lookup(a[0])
	if !ok {
		t.Fatalf("no command %q", args[0])
	}
	op, err := spec.Parse(a)
	if err != nil {
		t.Fatal(err)
	}
	return command.Request{Args: a, Op: op, Spec: spec}
}

func invalidation(keys ...string) string {
	return ">2\r\n$10\r\ninvalidate\r\n" + string(keysPayload(keys))
}

// TestTrackingChannelMatchesFSM: the state machine's tracking events (on
// command.TrackingChannel) decode, with command.TrackedKeys, to the keys the
// command changed, in order.
func TestTrackingChannelMatchesFSM(t *testing.T) {
	ks := fsm.New()
	ks.SetEventFilter(func(ch string) bool { return ch == command.TrackingChannel })
	ks.Apply(1, command.Entry{Kind: command.KindCommand, Args: cmdArgs("MSET", "a", "1", "b\x00\r\n", "2", "a", "3")})
	ev := ks.TakeEvents()
	if len(ev) != 1 || string(ev[0].Channel) != command.TrackingChannel {
		t.Fatalf("events %v", ev)
	}
	keys, ok := command.TrackedKeys(ev[0].Message)
	if !ok || fmt.Sprintf("%q", keys) != `["a" "b\x00\r\n" "a"]` {
		t.Fatalf("decoded %q", keys)
	}
	if _, ok := command.TrackedKeys([]byte{5, 'a'}); ok {
		t.Fatal("a truncated message decoded")
	}
	ks.SetEventFilter(func(string) bool { return false })
	ks.Apply(2, command.Entry{Kind: command.KindCommand, Args: cmdArgs("SET", "a", "1")})
	if ev := ks.TakeEvents(); len(ev) != 0 {
		t.Fatalf("events with nobody tracking: %v", ev)
	}
}

// TestTrackingNeverStale: a RESP3 client caches what GET answers and drops
// it on an invalidation, while another client writes the key as fast as it
// can, and a write is also applied right after every read is served, before
// its reply is queued (the store's afterRead: another node's write that this
// node applies at the worst moment). Once a write was acknowledged, the
// reader's next PING is answered only after the write's invalidation or
// after a GET that saw the write: the cache never holds a value older than
// the last acknowledged write once the PING's reply is read.
func TestTrackingNeverStale(t *testing.T) {
	srv, st := startTracking(t)
	var seq atomic.Int64
	var acked atomic.Int64
	write := func(do func(...string) string) bool {
		n := seq.Add(1)
		if got := do("SET", "k", strconv.FormatInt(n, 10)); got != okReply {
			t.Errorf("SET: %q", got)
			return false
		}
		for a := acked.Load(); a < n && !acked.CompareAndSwap(a, n); a = acked.Load() {
		}
		return true
	}
	st.afterRead = func() {
		write(func(args ...string) string {
			v := st.Do(context.Background(), []command.Request{req(t, args...)})[0]
			return string(resp.Append(nil, v, 2))
		})
	}
	r := dialClient(t, srv.Addr())
	r.send("HELLO", "3")
	r.next()
	if got := r.do("CLIENT", "TRACKING", "ON"); got != okReply {
		t.Fatalf("CLIENT TRACKING ON: %q", got)
	}
	w := dialClient(t, srv.Addr())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if !write(w.do) {
				return
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	cached, valid := int64(0), false
	apply := func(f string) bool { // false: not a push
		if !strings.HasPrefix(f, ">") {
			return false
		}
		if f != invalidation("k") {
			t.Fatalf("unexpected push %q", f)
		}
		valid = false
		return true
	}
	for round := 0; round < 300; round++ {
		r.send("GET", "k")
		for {
			f := r.next()
			if apply(f) {
				continue
			}
			if strings.HasPrefix(f, "$") {
				cached, _ = strconv.ParseInt(strings.Split(f, "\r\n")[1], 10, 64)
			} else {
				cached = 0
			}
			valid = true
			break
		}
		floor := acked.Load()
		r.send("PING")
		for f := r.next(); f != "+PONG\r\n"; f = r.next() {
			apply(f)
		}
		if valid && cached < floor {
			t.Fatalf("round %d: cached %d after write %d was acknowledged", round, cached, floor)
		}
	}
}

// TestTrackingForgetsClosedClients: a closed connection leaves the table,
// and with the last tracking client gone the state machine builds no more
// key events.
func TestTrackingForgetsClosedClients(t *testing.T) {
	srv, _ := startTracking(t)
	c := dialClient(t, srv.Addr())
	if got := c.do("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a"); got != okReply {
		t.Fatal(got)
	}
	if !srv.WantsEvents(command.TrackingChannel) {
		t.Fatal("no key events with a tracking client")
	}
	c.nc.Close()
	deadline := time.Now().Add(5 * time.Second)
	for srv.WantsEvents(command.TrackingChannel) {
		if time.Now().After(deadline) {
			t.Fatal("key events still wanted after the tracking client closed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	tr := srv.trk()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.clients) != 0 || len(tr.prefixes) != 0 {
		t.Fatalf("left behind: %d clients, %d prefixes", len(tr.clients), len(tr.prefixes))
	}
}

// TestTrackingTableLimit: past tracking-table-max-keys, keys are evicted
// with an invalidation, as Redis does; the key just read stays.
func TestTrackingTableLimit(t *testing.T) {
	srv, _ := startTracking(t)
	c := dialClient(t, srv.Addr())
	c.send("HELLO", "3")
	c.next()
	for _, args := range [][]string{{"CONFIG", "SET", "tracking-table-max-keys", "2"}, {"CLIENT", "TRACKING", "ON"}} {
		if got := c.do(args...); got != okReply {
			t.Fatalf("%v: %q", args, got)
		}
	}
	c.do("GET", "a")
	c.do("GET", "b")
	c.send("GET", "c")
	if got := c.next(); got != "_\r\n" {
		t.Fatalf("GET c: %q", got)
	}
	push := c.next()
	if push != invalidation("a") && push != invalidation("b") {
		t.Fatalf("eviction: %q", push)
	}
	tr := srv.trk()
	tr.mu.Lock()
	n := len(tr.keys)
	_, hasC := tr.keys["c"]
	tr.mu.Unlock()
	if n != 2 || !hasC {
		t.Fatalf("%d keys tracked (c: %v)", n, hasC)
	}
}

// TestTrackingClientList: CLIENT LIST shows tracking (t, B) and the
// redirection.
func TestTrackingClientList(t *testing.T) {
	srv, _ := startTracking(t)
	c := dialClient(t, srv.Addr())
	id := strings.TrimSuffix(strings.TrimPrefix(c.do("CLIENT", "ID"), ":"), "\r\n")
	c.do("CLIENT", "TRACKING", "ON", "BCAST", "REDIRECT", id)
	got := c.do("CLIENT", "INFO")
	if !strings.Contains(got, " flags=tB ") || !strings.Contains(got, " redir="+id+" ") {
		t.Fatalf("CLIENT INFO: %q", got)
	}
	c.do("CLIENT", "TRACKING", "OFF")
	if got := c.do("CLIENT", "INFO"); !strings.Contains(got, " flags=N ") || !strings.Contains(got, " redir=-1 ") {
		t.Fatalf("CLIENT INFO: %q", got)
	}
}
