package group

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/internal/clustertest"
	"github.com/lockd/lockd/raftstore/group/grouptest"
	"github.com/lockd/lockd/resp"
)

// cluster is an in-process cluster of Stores on loopback ports.
type cluster struct {
	t       *testing.T
	history []*history // per node: what its state machine applied
	mu      sync.Mutex // guards nodes
	peers   []Peer
	dirs    []string
	nodes   []*Store                 // nil while a node is down
	tweak   func(i int, cfg *Config) // adjusts node i's Config at each start; nil: none
}

func newCluster(t *testing.T, n int) *cluster { return newClusterWith(t, n, nil) }

// newClusterWith is newCluster with tweak applied to each node's Config.
func newClusterWith(t *testing.T, n int, tweak func(i int, cfg *Config)) *cluster {
	c := &cluster{t: t, nodes: make([]*Store, n), tweak: tweak}
	for _, m := range clustertest.Make(t, clustertest.Opts{Members: n}).Members {
		c.peers = append(c.peers, Peer{ID: m.ID, Addr: m.Peer})
		c.dirs = append(c.dirs, m.Dir)
		c.history = append(c.history, &history{holder: map[string]string{}})
	}
	for i := range c.nodes {
		c.start(i)
	}
	t.Cleanup(func() {
		for _, s := range c.running() {
			s.Close()
		}
	})
	return c
}

func (c *cluster) start(i int) {
	cfg := Config{NodeID: c.peers[i].ID, DataDir: c.dirs[i], PeerAddr: c.peers[i].Addr, Peers: c.peers,
		ApplyTimeout: 3 * time.Second, SnapshotThreshold: 100, TrailingLogs: 20, observe: c.history[i].observe}
	if c.tweak != nil {
		c.tweak(i, &cfg)
	}
	s, err := Open(cfg)
	if err != nil {
		c.t.Fatalf("start %s: %v", c.peers[i].ID, err)
	}
	c.mu.Lock()
	c.nodes[i] = s
	c.mu.Unlock()
}

// node returns node i, or nil while it is down.
func (c *cluster) node(i int) *Store {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i]
}

// running returns the nodes that are up.
func (c *cluster) running() []*Store {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Store
	for _, s := range c.nodes {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

// member is node i of a cluster as clustertest sees it: a nil Store is a
// node that is down.
type member struct{ *Store }

func (m member) Running() bool { return m.Store != nil }

// members returns every node, in order, as clustertest.Nodes.
func (c *cluster) members() []member {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]member, len(c.nodes))
	for i, s := range c.nodes {
		out[i] = member{s}
	}
	return out
}

// crash stops node i without handing leadership over.
func (c *cluster) crash(i int) {
	c.mu.Lock()
	s := c.nodes[i]
	c.nodes[i] = nil
	c.mu.Unlock()
	s.noHandover = true
	s.Close()
}

// leader waits for a node that leads and serves.
func (c *cluster) leader() (int, *Store) {
	c.t.Helper()
	i, m := clustertest.WaitLeader(c.t, 15*time.Second, c.members)
	return i, m.Store
}

// converge waits until every running node has applied the same index, then
// returns their snapshots, which must be byte-identical.
func (c *cluster) converge() {
	c.t.Helper()
	var idx []uint64
	if !clustertest.Until(20*time.Second, 20*time.Millisecond, func() bool {
		idx = nil
		var snaps [][]byte
		for _, s := range c.running() {
			s.m.mu.Lock()
			var buf bytes.Buffer
			s.m.ks.Snapshot().WriteTo(&buf)
			idx = append(idx, s.m.ks.Index())
			s.m.mu.Unlock()
			snaps = append(snaps, buf.Bytes())
		}
		for i := range idx {
			if idx[i] != idx[0] || !bytes.Equal(snaps[i], snaps[0]) {
				return false
			}
		}
		return true
	}) {
		c.t.Fatalf("replicas did not converge: applied indexes %v", idx)
	}
}

// req parses cmd as the front door would (grouptest.Req).
func req(cmd ...string) command.Request { return grouptest.Req(cmd...) }

// TestClusterFailover runs lock traffic, through every node, (SET NX PX FENCE, compare-and-delete
// release) on a 3-node cluster while the leader crashes, restarts and falls
// behind (catching up from a snapshot). Every acknowledged grant must survive,
// tokens per name must only grow, no name may be granted while held, and the
// replicas must end identical.
func TestClusterFailover(t *testing.T) {
	c := newCluster(t, 3)
	ctx := context.Background()
	const workers, names = 4, 6
	type grant struct {
		name  string
		owner string
		token int64
	}
	var mu sync.Mutex
	var acked []grant
	lastToken := map[string]int64{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				// Each worker talks to "its" node, which forwards to the leader
				// when it is a follower; while its node is down, to the leader.
				s := c.node(w % len(c.peers))
				if s == nil {
					_, s = c.leader()
				}
				name := fmt.Sprintf("lock:%d", (w+i)%names)
				owner := fmt.Sprintf("w%d-%d", w, i)
				v := s.Do(ctx, []command.Request{req("SET", name, owner, "NX", "PX", "60000", "FENCE")})[0]
				if v.Kind != resp.KindInt {
					if v.IsError() && testing.Verbose() {
						t.Logf("SET: %v", v)
					}
					continue // taken (nil) or failed (an error): either way nothing was acknowledged
				}
				mu.Lock()
				if v.Int <= lastToken[name] {
					t.Errorf("token %d for %s after %d", v.Int, name, lastToken[name])
				}
				lastToken[name] = v.Int
				acked = append(acked, grant{name, owner, v.Int})
				mu.Unlock()
				// Release with a compare-and-delete script, as redsync does.
				s.Do(ctx, []command.Request{req("EVAL", `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`, "1", name, owner)})
			}
		}(w)
	}
	waitGrants := func(n int) {
		var got int
		if !clustertest.Until(20*time.Second, 10*time.Millisecond, func() bool {
			mu.Lock()
			got = len(acked)
			mu.Unlock()
			return got >= n
		}) {
			for i, s := range c.running() {
				t.Logf("node %d ready=%v state=%v stats=%v", i, s.IsLeader(), s.raft.State(), s.raft.Stats())
			}
			t.Fatalf("only %d grants acknowledged, want %d", got, n)
		}
	}
	waitGrants(50)
	li, _ := c.leader()
	c.crash(li)
	mu.Lock()
	before := len(acked)
	mu.Unlock()
	waitGrants(before + 50)
	c.start(li) // the old leader comes back as a follower and catches up
	l2, _ := c.leader()
	follower := (l2 + 1) % 3
	c.crash(follower) // a follower falls behind past a snapshot...
	mu.Lock()
	before = len(acked)
	mu.Unlock()
	waitGrants(before + 300)
	c.start(follower) // ...and installs it
	close(stop)
	wg.Wait()
	c.converge()

	// Every replica's history: the FSM's state holds, for each name, the token of
	// the last grant if it is still held; no acknowledged grant may be missing a
	// token later than itself, and the final tokens must not be below the acks.
	_, s := c.leader()
	for name, tok := range lastToken {
		v := s.Do(ctx, []command.Request{req("FENCE", name)})[0]
		if v.Kind == resp.KindInt && v.Int < tok {
			t.Fatalf("%s: token %d present, but %d was acknowledged later", name, v.Int, tok)
		}
	}
	t.Logf("%d grants acknowledged across 2 crashes", len(acked))
	for i, h := range c.history {
		h.mu.Lock()
		if len(h.violations) > 0 {
			t.Errorf("node %d applied two holders: %v", i, h.violations)
		}
		if h.grants == 0 {
			t.Errorf("node %d applied no grants: the history check saw nothing", i)
		}
		h.mu.Unlock()
	}
	if !strings.Contains(fmt.Sprint(s.Stats()), "raft_state leader") {
		t.Fatalf("stats: %v", s.Stats())
	}
}

// history checks, on one replica, the lock traffic of the failover test as the
// state machine applies it: a grant (SET NX that wrote) of a name must never
// happen while another owner holds it, and a release (compare-and-delete that
// deleted) must be by the holder. A replica that restores a snapshot forgets
// what it saw before (the snapshot holds no history), and so does a replica
// that replays its log after a restart or skips indexes (entries the state
// machine never sees, such as barriers): its knowledge starts again there.
type history struct {
	mu         sync.Mutex
	last       uint64
	holder     map[string]string // name -> owner holding it now
	violations []string
	grants     int
}

func (h *history) observe(index uint64, e command.Entry, reply resp.Value) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if index != h.last+1 {
		h.holder = map[string]string{}
	}
	h.last = index
	if e.Kind != command.KindCommand || len(e.Args) < 3 {
		return
	}
	switch {
	case command.EqualFold(e.Args[0], "set") && reply.Kind == resp.KindInt:
		name, owner := string(e.Args[1]), string(e.Args[2])
		if cur, held := h.holder[name]; held {
			h.violations = append(h.violations, fmt.Sprintf("index %d: %s granted to %s while %s held it", index, name, owner, cur))
		}
		h.holder[name] = owner
		h.grants++
	case command.EqualFold(e.Args[0], "eval") && len(e.Args) >= 5 && reply.Kind == resp.KindInt && reply.Int == 1:
		name, owner := string(e.Args[3]), string(e.Args[4])
		if cur, held := h.holder[name]; held && cur != owner {
			h.violations = append(h.violations, fmt.Sprintf("index %d: %s released by %s while %s held it", index, name, owner, cur))
		}
		delete(h.holder, name)
	}
}

// TestJoinAndRemove adds a fourth node to a running cluster with one admin
// operation (sent to a follower, which forwards it), lets it catch up, then
// removes it.
func TestJoinAndRemove(t *testing.T) {
	c := newCluster(t, 3)
	ctx := context.Background()
	_, leader := c.leader()
	for i := 0; i < 50; i++ {
		leader.Do(ctx, []command.Request{req("SET", fmt.Sprintf("k%d", i), "v")})
	}
	n4, err := Open(Config{NodeID: "n4", DataDir: t.TempDir(), PeerAddr: "127.0.0.1:0", Join: true, ApplyTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer n4.Close()
	li, _ := c.leader()
	follower := c.node((li + 1) % 3)
	add := command.Request{Op: command.Admin{Action: "add", ID: "n4", Addr: n4.PeerAddr()}, Spec: command.AdminSpec}
	if v := follower.Do(ctx, []command.Request{add})[0]; v.String() != "OK" {
		t.Fatalf("RAFT ADD through a follower: %v", v)
	}
	var n int
	if !clustertest.Until(15*time.Second, 10*time.Millisecond, func() bool {
		n4.m.mu.RLock()
		n, _ = n4.m.ks.Counts(n4.m.ks.Now())
		n4.m.mu.RUnlock()
		return n == 50
	}) {
		t.Fatalf("the new node holds %d keys, want 50", n)
	}
	// The new member serves clients too (forwarding to the leader).
	if v := n4.Do(ctx, []command.Request{req("GET", "k7")})[0]; v.String() != "v" {
		t.Fatalf("GET through the new node: %v", v)
	}
	members := follower.Do(ctx, []command.Request{{Op: command.Admin{Action: "members"}, Spec: command.AdminSpec}})[0]
	if len(members.Elems) != 4 {
		t.Fatalf("RAFT MEMBERS after the join: %d members", len(members.Elems))
	}
	rm := command.Request{Op: command.Admin{Action: "remove", ID: "n4"}, Spec: command.AdminSpec}
	if v := leader.Do(ctx, []command.Request{rm})[0]; v.String() != "OK" {
		t.Fatalf("RAFT REMOVE: %v", v)
	}
	members = follower.Do(ctx, []command.Request{{Op: command.Admin{Action: "members"}, Spec: command.AdminSpec}})[0]
	if len(members.Elems) != 3 {
		t.Fatalf("RAFT MEMBERS after the removal: %d members", len(members.Elems))
	}
}

// TestSessionSurvivesFailover: a session's locks survive a leader crash; the new
// leader knows the session (it is replicated) and gives it a full TTL, so a
// keepalive through any node keeps it.
func TestSessionSurvivesFailover(t *testing.T) {
	c := newCluster(t, 3)
	ctx := context.Background()
	li, leader := c.leader()
	open := leader.Do(ctx, []command.Request{req("SESSION.OPEN", "TTL", "5000")})[0]
	if open.Kind != resp.KindMap {
		t.Fatalf("SESSION.OPEN: %v", open)
	}
	id := fmt.Sprint(open.Elems[1].Int)
	tok := leader.Do(ctx, []command.Request{req("LOCK.ACQUIRE", "job", "w1", "SESSION", id)})[0]
	if tok.Kind != resp.KindInt {
		t.Fatalf("acquire: %v", tok)
	}
	c.crash(li)
	_, nl := c.leader()
	for i := range c.peers {
		s := c.node(i)
		if s == nil {
			continue
		}
		if v := s.Do(ctx, []command.Request{req("SESSION.KEEPALIVE", id)})[0]; v.Int != 5000 {
			t.Fatalf("keepalive through node %d after the failover: %v", i, v)
		}
		if v := s.Do(ctx, []command.Request{req("LOCK.VALIDATE", "job", fmt.Sprint(tok.Int))})[0]; v.Int != 1 {
			t.Fatalf("lock lost in the failover (node %d): %v", i, v)
		}
	}
	if v := nl.Do(ctx, []command.Request{req("LOCK.ACQUIRE", "job", "w2", "PX", "1000")})[0]; v.Kind != resp.KindNull {
		t.Fatalf("another owner got the session's lock after the failover: %v", v)
	}
}
