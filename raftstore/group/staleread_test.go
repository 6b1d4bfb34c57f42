package group

import (
	"context"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/internal/clustertest"
	"github.com/lockd/lockd/resp"
)

// holdLink is a loopback proxy for the peer connections one node opens to
// another (Config.DialVia): it delivers everything until told to hold,
// then keeps back what the target answers (or, holding all, what either
// side sends) until released, as the network would for a paused process
// whose peers' answers wait in its socket buffers.
type holdLink struct {
	target string
	ln     net.Listener

	mu      sync.Mutex
	answers chan struct{} // closed while the target's bytes flow
	asks    chan struct{} // closed while the dialer's bytes flow
	conns   []net.Conn
	held    atomic.Int64 // the target's answers on Raft connections, read and not yet delivered
}

func newHoldLink(t *testing.T, target string) *holdLink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	open := make(chan struct{})
	close(open)
	l := &holdLink{target: target, ln: ln, answers: open, asks: open}
	go l.accept()
	return l
}

func (l *holdLink) accept() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", l.target)
		if err != nil {
			c.Close()
			continue
		}
		l.mu.Lock()
		l.conns = append(l.conns, c, s)
		l.mu.Unlock()
		var header atomic.Int32 // the connection's peer-port header, once sent
		header.Store(-1)
		go l.pump(c, s, func() chan struct{} { return l.asks }, func(b []byte) bool {
			header.CompareAndSwap(-1, int32(b[0]))
			return false
		})
		go l.pump(s, c, func() chan struct{} { return l.answers }, func([]byte) bool {
			return header.Load() == int32(headerRaft)
		})
	}
}

// pump copies src to dst, each chunk once gate (read at delivery) is open.
// The chunks that count says to count (read from src, not yet written) are
// in l.held.
func (l *holdLink) pump(src, dst net.Conn, gate func() chan struct{}, count func([]byte) bool) {
	defer dst.Close()
	type chunk struct {
		b       []byte
		counted bool
	}
	q := make(chan chunk, 4096)
	go func() {
		defer close(q)
		for {
			b := make([]byte, 32<<10)
			n, err := src.Read(b)
			if n > 0 {
				c := chunk{b[:n], count(b[:n])}
				if c.counted {
					l.held.Add(int64(n))
				}
				q <- c
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		l.mu.Lock()
		g := gate()
		l.mu.Unlock()
		<-g
		_, err := dst.Write(c.b)
		if c.counted {
			l.held.Add(-int64(len(c.b)))
		}
		if err != nil {
			src.Close()
			for range q { // until the reader sees the close
			}
			return
		}
	}
}

// hold keeps back the target's answers from now on, and the dialer's
// requests too when all is set.
func (l *holdLink) hold(all bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.answers = make(chan struct{})
	if all {
		l.asks = l.answers
	}
}

// release delivers what was held, and everything after it.
func (l *holdLink) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.answers:
	default:
		close(l.answers)
	}
	select {
	case <-l.asks:
	default:
		close(l.asks)
	}
}

func (l *holdLink) close() {
	l.release()
	l.ln.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.Close()
	}
}

// holdNet has a holdLink for every directed link of a cluster, made as
// each node first starts (cluster.tweak).
type holdNet struct {
	t     *testing.T
	mu    sync.Mutex
	links map[[2]int]*holdLink
}

func newHoldNet(t *testing.T) *holdNet {
	h := &holdNet{t: t, links: map[[2]int]*holdLink{}}
	t.Cleanup(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, l := range h.links {
			l.close()
		}
	})
	return h
}

// tweak routes node i's peer dials through the links from i.
func (h *holdNet) tweak(i int, cfg *Config) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cfg.DialVia = map[string]string{}
	for j, p := range cfg.Peers {
		if j == i {
			continue
		}
		l := h.links[[2]int{i, j}]
		if l == nil {
			l = newHoldLink(h.t, p.Addr)
			h.links[[2]int{i, j}] = l
		}
		cfg.DialVia[p.Addr] = l.ln.Addr().String()
	}
}

func (h *holdNet) link(from, to int) *holdLink {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.links[[2]int{from, to}]
}

func (h *holdNet) releaseAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range h.links {
		l.release()
	}
}

// TestDeposedLeaderServesNoStaleRead is the chaos campaign's stale read
// (CHAOS_SEED=22): a leader that a majority has replaced, but that has not
// heard of it yet, must not answer a read from its own state. The leader's
// followers' answers are held back (it is, to them, a paused process), the
// answers to the heartbeats they accepted before the election among them;
// one of them takes over (TimeoutNow, as in a leadership transfer) and
// overwrites the key; then the old leader is asked, and the held answers
// are delivered. Confirming leadership by any answer from a follower (as
// hashicorp/raft's VerifyLeader does) let the old leader answer with the
// overwritten value; a read must see the new value or be refused.
func TestDeposedLeaderServesNoStaleRead(t *testing.T) {
	h := newHoldNet(t)
	c := newClusterWith(t, 3, h.tweak)
	exercised := 0
	for attempt := 0; attempt < 8 && exercised < 3; attempt++ {
		if deposedLeaderRead(t, c, h, attempt) {
			exercised++
		}
	}
	if exercised == 0 {
		t.Log("the old leader had always stepped down before the read (a slow machine): the stale window was not exercised")
	}
}

// settledLeader waits until every node follows one leader that serves, in
// the leader's term, and returns it.
func settledLeader(t *testing.T, c *cluster) (int, *Store) {
	t.Helper()
	li := -1
	if !clustertest.Until(15*time.Second, 5*time.Millisecond, func() bool {
		li = -1
		for i := range c.peers {
			if c.node(i).IsLeader() {
				li = i
			}
		}
		if li < 0 {
			return false
		}
		term := c.node(li).raft.CurrentTerm()
		for i := range c.peers {
			s := c.node(i)
			if _, id := s.raft.LeaderWithID(); string(id) != c.peers[li].ID || s.raft.CurrentTerm() != term {
				return false
			}
		}
		return true
	}) {
		t.Fatal("the cluster did not settle on one leader")
	}
	return li, c.node(li)
}

// deposedLeaderRead runs one attempt of TestDeposedLeaderServesNoStaleRead
// and reports whether the old leader still led when it was asked.
func deposedLeaderRead(t *testing.T, c *cluster, h *holdNet, attempt int) bool {
	ctx := context.Background()
	defer h.releaseAll()
	li, old := settledLeader(t, c)
	if v := old.Do(ctx, []command.Request{req("SET", "k", "old")})[0]; v.String() != "OK" {
		t.Fatalf("SET k old = %v", v)
	}
	f1, f2 := (li+1)%3, (li+2)%3
	// The followers' links to the old leader carry nothing (it hears of
	// no election); its links to them deliver its requests and hold the
	// answers.
	for _, f := range []int{f1, f2} {
		h.link(f, li).hold(true)
		h.link(li, f).hold(false)
	}
	// An answer each follower gave while still following it.
	if !clustertest.Until(2*time.Second, time.Millisecond, func() bool {
		return h.link(li, f1).held.Load() > 0 && h.link(li, f2).held.Load() > 0
	}) {
		t.Fatal("no answer from the followers was held")
	}
	var out raft.TimeoutNowResponse
	if err := c.node(f2).trans.TimeoutNow(raft.ServerID(c.peers[f1].ID), raft.ServerAddress(c.peers[f1].Addr),
		&raft.TimeoutNowRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(c.peers[f2].ID), Addr: []byte(c.peers[f2].Addr)}}, &out); err != nil {
		t.Fatalf("TimeoutNow to %s: %v", c.peers[f1].ID, err)
	}
	var nl *Store
	if !clustertest.Until(5*time.Second, time.Millisecond, func() bool {
		for _, f := range []int{f1, f2} {
			if s := c.node(f); s.IsLeader() {
				nl = s
			}
		}
		return nl != nil
	}) {
		t.Fatal("the followers elected no leader")
	}
	if v := nl.Do(ctx, []command.Request{req("SET", "k", "new")})[0]; v.String() != "OK" {
		t.Logf("attempt %d: SET k new on the new leader = %v; not exercised", attempt, v)
		return false
	}
	stillLeads := old.raft.State() == raft.Leader && old.IsLeader()
	got := make(chan resp.Value, 1)
	go func() {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		got <- old.Do(rctx, []command.Request{req("GET", "k")})[0]
	}()
	// Once the read's confirmation waits for its answers, deliver the held
	// ones.
	var v resp.Value
	answered := false
	clustertest.Until(5*time.Second, 200*time.Microsecond, func() bool {
		if roundWaiting() {
			return true
		}
		select {
		case v = <-got:
			answered = true
			return true
		default:
			return false
		}
	})
	// Only the answers on the old leader's own links: what its followers
	// would tell it unasked stays held until it has answered.
	h.link(li, f1).release()
	h.link(li, f2).release()
	if !answered {
		v = <-got
	}
	if v.String() == "old" {
		t.Fatalf("attempt %d: the deposed leader %s answered GET k = %q after %s overwrote it (still leading when asked: %v)",
			attempt, c.peers[li].ID, v.String(), nl.cfg.NodeID, stillLeads)
	}
	t.Logf("attempt %d: deposed leader still leading when asked: %v; GET k = %v", attempt, stillLeads, v)
	return stillLeads
}

// roundWaiting reports whether a leadership confirmation round
// (startRoundLocked's goroutine) is blocked, waiting for its answers. Only
// one store of the test reads.
func roundWaiting() bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "startRoundLocked.func") && (strings.Contains(g, "[chan receive") || strings.Contains(g, "[select")) {
			return true
		}
	}
	return false
}

// A leader whose link to one of its two followers is held, in both
// directions (a paused follower), serves its reads on the other's answers,
// each well within a heartbeat timeout: a round does not wait for the
// silent voter, whether or not it was the one asked first. Each follower
// is stalled in turn, the other healthy.
func TestReadsServedPastAStalledFollower(t *testing.T) {
	h := newHoldNet(t)
	c := newClusterWith(t, 3, h.tweak)
	defer h.releaseAll()
	li, s := settledLeader(t, c)
	ctx := context.Background()
	if v := s.Do(ctx, []command.Request{req("SET", "k", "v")})[0]; v.String() != "OK" {
		t.Fatalf("SET k v = %v", v)
	}
	for _, f := range []int{(li + 1) % 3, (li + 2) % 3} {
		h.link(li, f).hold(true)
		h.link(f, li).hold(true)
		for i := range 10 {
			rctx, cancel := context.WithTimeout(ctx, heartbeatTimeout/2)
			v := s.Do(rctx, []command.Request{req("GET", "k")})[0]
			cancel()
			if v.String() != "v" {
				t.Fatalf("read %d with %s stalled: GET k = %v", i, c.peers[f].ID, v)
			}
		}
		h.releaseAll()
		settledLeader(t, c)
	}
}

// judgeFollowing counts an answer as yes only when it names the round's
// term, this node as leader and the voter asked; a TRYAGAIN (a lockd from
// before "following") is an old voter's; anything else is no answer.
func TestJudgeFollowing(t *testing.T) {
	ans := func(term int64, leader, id string) resp.Value {
		return resp.Array(resp.Int(term), resp.BulkString(leader), resp.BulkString(id))
	}
	for _, c := range []struct {
		name string
		v    resp.Value
		want answer
	}{
		{"follows", ans(7, "n1", "n2"), answerYes},
		{"later term", ans(8, "n1", "n2"), answerNo},
		{"earlier term", ans(6, "n1", "n2"), answerNo},
		{"another leader", ans(7, "n3", "n2"), answerNo},
		{"no leader", ans(7, "", "n2"), answerNo},
		{"another node at the address", ans(7, "n1", "n4"), answerNo},
		{"from before following", command.ErrorReply(ErrNotApplied), answerOld},
		{"syntax error", command.ErrorReply(command.ErrSyntax), answerNone},
		{"malformed", resp.Array(resp.Int(7)), answerNone},
	} {
		if got := judgeFollowing(c.v, 7, "n1", "n2"); got != c.want {
			t.Errorf("%s: judgeFollowing = %d, want %d", c.name, got, c.want)
		}
	}
}

// A round is decided as soon as a majority said yes, or as soon as the
// answers still out cannot make one; voters from before "following" make
// a fallback only when they are needed for the majority.
func TestTally(t *testing.T) {
	for _, c := range []struct {
		name      string
		voters    int
		answers   []answer
		decidedAt int // answers taken when decided
		confirmed bool
		fallback  bool
	}{
		{"lone voter", 1, nil, 0, true, false},
		{"three, first yes", 3, []answer{answerYes, answerNone}, 1, true, false},
		{"three, both no", 3, []answer{answerNo, answerNo}, 2, false, false},
		{"three, no then yes", 3, []answer{answerNo, answerYes}, 2, true, false},
		{"three, silent then old", 3, []answer{answerNone, answerOld}, 2, false, true},
		{"five, two no then yes", 5, []answer{answerNo, answerNo, answerYes, answerYes}, 4, true, false},
		{"five, three no", 5, []answer{answerNo, answerNo, answerNo, answerYes}, 3, false, false},
		{"five, yes old old", 5, []answer{answerYes, answerOld, answerNone, answerNo}, 4, false, true},
		{"five, yes yes old", 5, []answer{answerYes, answerOld, answerYes, answerNo}, 3, true, false},
	} {
		tl := tally{need: c.voters/2 + 1, yes: 1, pending: c.voters - 1}
		n := 0
		for !tl.decided() {
			tl.add(c.answers[n])
			n++
		}
		if n != c.decidedAt || tl.confirmed() != c.confirmed || tl.fallback() != c.fallback {
			t.Errorf("%s: decided after %d answers, confirmed %v, fallback %v; want %d, %v, %v",
				c.name, n, tl.confirmed(), tl.fallback(), c.decidedAt, c.confirmed, c.fallback)
		}
	}
}
