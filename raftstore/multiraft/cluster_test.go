package multiraft

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockd/lockd/raftstore/logstore"
	"github.com/lockd/lockd/raftstore/mux"
)

// memNet delivers frames between the nodes of one process; a cut link drops
// them, as a partition would.
type memNet struct {
	mu    sync.RWMutex
	nodes map[uint64]*Node
	cut   map[[2]uint64]bool
}

type memLink struct {
	net  *memNet
	from uint64
}

func (l memLink) Send(to uint64, frame []byte) {
	l.net.mu.RLock()
	n, cut := l.net.nodes[to], l.net.cut[[2]uint64{l.from, to}]
	l.net.mu.RUnlock()
	if n != nil && !cut {
		_ = n.Receive(frame) // Receive copies what it keeps
	}
}

// isolate cuts (or, with on false, mends) every link to and from id.
func (m *memNet) isolate(id uint64, on bool, ids []uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, o := range ids {
		if o != id {
			m.cut[[2]uint64{id, o}], m.cut[[2]uint64{o, id}] = on, on
		}
	}
}

// kv is a test state machine: SET k v, answering with the value before.
type kv struct {
	mu       sync.Mutex
	m        map[string]string
	indexes  []uint64
	restores int
}

func (s *kv) Apply(cmds []Command) []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]any, len(cmds))
	for i, c := range cmds {
		k, v, _ := strings.Cut(string(c.Data), "=")
		out[i] = s.m[k]
		s.m[k] = v
		s.indexes = append(s.indexes, c.Index)
	}
	return out
}

func (s *kv) Snapshot() (func() ([]byte, error), error) {
	s.mu.Lock()
	m := maps.Clone(s.m)
	s.mu.Unlock()
	return func() ([]byte, error) { return json.Marshal(m) }, nil
}

func (s *kv) Restore(data []byte) error {
	m := map[string]string{}
	if data != nil {
		if err := json.Unmarshal(data, &m); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m, s.indexes = m, nil
	s.restores++
	return nil
}

func (s *kv) snapshot() (map[string]string, []uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.m), slices.Clone(s.indexes)
}

type cluster struct {
	t      testing.TB
	ids    []uint64
	groups int
	net    *memNet
	dirs   map[uint64]string
	nodes  map[uint64]*Node
	shs    map[uint64]*logstore.Shared
	sms    map[uint64][]*kv
	tune   func(*Config) // applied to every node's Config (nil: defaults)
	voters []uint64      // the groups' first voters (nil: ids)
	// bare: start passes no voters, as a restart that knows nothing but
	// its storage.
	bare bool
	// contexts are the first voters' member contexts (GroupConfig.Members).
	contexts map[uint64][]byte

	// overTCP: the nodes talk through NetTransports on peer ports (mux)
	// at addrs (kept across restarts), not memNet.
	overTCP bool
	addrs   map[uint64]string
	closers map[uint64]func()

	// mu guards nodes, shs and sms for tests whose clients run while nodes
	// stop and start (node); the others read them from the test goroutine.
	mu sync.RWMutex
}

// node returns node id (nil while it is stopped) and its state machines.
func (c *cluster) node(id uint64) (*Node, []*kv) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.nodes[id], c.sms[id]
}

func newCluster(t testing.TB, nodes, groups int) *cluster {
	return newClusterWith(t, nodes, groups, nil)
}

func newClusterWith(t testing.TB, nodes, groups int, tune func(*Config)) *cluster {
	return newClusterOver(t, nodes, groups, tune, false)
}

func newClusterOver(t testing.TB, nodes, groups int, tune func(*Config), overTCP bool) *cluster {
	c := &cluster{t: t, groups: groups, tune: tune, overTCP: overTCP,
		addrs: map[uint64]string{}, closers: map[uint64]func(){},
		net:  &memNet{nodes: map[uint64]*Node{}, cut: map[[2]uint64]bool{}},
		dirs: map[uint64]string{}, nodes: map[uint64]*Node{}, shs: map[uint64]*logstore.Shared{},
		sms: map[uint64][]*kv{}}
	root := t.TempDir()
	for i := range nodes {
		id := uint64(i + 1)
		c.ids = append(c.ids, id)
		c.dirs[id] = filepath.Join(root, fmt.Sprint(id))
	}
	c.voters = slices.Clone(c.ids)
	c.contexts = map[uint64][]byte{}
	for _, id := range c.ids {
		c.contexts[id] = fmt.Appendf(nil, "node-%d", id)
	}
	for _, id := range c.ids {
		c.start(id)
	}
	t.Cleanup(func() {
		for _, id := range c.ids {
			if c.nodes[id] != nil {
				c.stop(id)
			}
		}
	})
	return c
}

// start opens node id's store and starts its replicas of every group, with
// empty state machines (a restarted node applies its log again).
func (c *cluster) start(id uint64) {
	sh, err := logstore.OpenShared(c.dirs[id], logstore.Options{})
	if err != nil {
		c.t.Fatal(err)
	}
	cfg := Config{ID: id, Storage: NewLogStorage(sh), Transport: memLink{c.net, id},
		Tick: 2 * time.Millisecond, ElectionTicks: 50, HeartbeatTicks: 5}
	var serve func(*Node)
	if c.overTCP {
		cfg.Transport, serve = c.listen(id)
	}
	if c.tune != nil {
		c.tune(&cfg)
	}
	n, err := NewNode(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	var sms []*kv
	for g := range c.groups {
		sm := &kv{m: map[string]string{}}
		sms = append(sms, sm)
		var voters []uint64 // a node that joins later starts empty
		if slices.Contains(c.voters, id) && !c.bare {
			voters = c.voters
		}
		gc := GroupConfig{Voters: voters, SM: sm}
		if voters != nil {
			gc.Members = c.contexts
		}
		if err := n.AddGroup(Group(g), gc); err != nil {
			c.t.Fatal(err)
		}
	}
	c.net.mu.Lock()
	c.net.nodes[id] = n
	c.net.mu.Unlock()
	c.mu.Lock()
	c.nodes[id], c.shs[id], c.sms[id] = n, sh, sms
	c.mu.Unlock()
	n.Start()
	if serve != nil {
		serve(n)
	}
}

// listen opens node id's peer port (at its address of before, if any) and
// returns its transport and what starts serving it.
func (c *cluster) listen(id uint64) (Transport, func(*Node)) {
	addr := c.addrs[id]
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var m *mux.Mux
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if m, err = mux.Listen(addr, nil); err == nil || time.Now().After(deadline) {
			break // a restart may find the old port briefly in use
		}
	}
	if err != nil {
		c.t.Fatal(err)
	}
	c.addrs[id] = m.Addr().String()
	tr := NewNetTransport(m.Handle('M'), func(to uint64) (string, bool) {
		a, ok := c.addrs[to]
		return a, ok
	}, nil)
	go m.Serve()
	c.closers[id] = func() {
		_ = tr.Close()
		_ = m.Close()
	}
	return tr, func(n *Node) { go tr.Serve(n) }
}

// join starts a new node, with empty replicas of every group, for the
// groups to add.
func (c *cluster) join(id uint64) {
	c.ids = append(c.ids, id)
	c.dirs[id] = filepath.Join(filepath.Dir(c.dirs[c.ids[0]]), fmt.Sprint(id))
	c.start(id)
}

func (c *cluster) stop(id uint64) {
	c.net.mu.Lock()
	delete(c.net.nodes, id)
	c.net.mu.Unlock()
	c.nodes[id].Stop()
	if f := c.closers[id]; f != nil {
		f()
	}
	if err := c.shs[id].Close(); err != nil {
		c.t.Error(err)
	}
	c.mu.Lock()
	c.nodes[id], c.shs[id] = nil, nil
	c.mu.Unlock()
}

// spread makes node g mod n lead group g (as lockd spreads leaders) and
// waits, bounded, until every running node agrees on every group's leader.
func (c *cluster) spread() map[Group]uint64 {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	wait := 300 * time.Millisecond // doubled at each try: a campaign restarts the election under way, which a loaded machine needs longer for
	for next := time.Now(); ; time.Sleep(5 * time.Millisecond) {
		leads, ok := c.leaders()
		want := true
		for g := range c.groups {
			if leads[Group(g)] != c.preferred(Group(g)) {
				want = false
			}
		}
		if ok && want {
			return leads
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("leaders not spread: %v", leads)
		}
		if time.Now().After(next) {
			for g := range c.groups {
				p := c.preferred(Group(g))
				l := c.leader(Group(g))
				switch {
				case c.nodes[p] == nil || l == p:
				case l != 0: // a live leader: the others refuse a campaign (PreVote)
					c.nodes[l].TransferLeadership(Group(g), p)
				default:
					c.nodes[p].Campaign(Group(g))
				}
			}
			next = time.Now().Add(wait)
			wait = min(2*wait, 3*time.Second)
		}
	}
}

func (c *cluster) preferred(g Group) uint64 { return c.voters[int(g)%len(c.voters)] }

// leaders returns each group's leader as the running nodes see it, and
// whether they all agree and the leader leads (not a stale view).
func (c *cluster) leaders() (map[Group]uint64, bool) {
	leads := map[Group]uint64{}
	ok := true
	for g := range c.groups {
		var seen uint64
		for _, id := range c.ids {
			n := c.nodes[id]
			if n == nil {
				continue
			}
			st, _ := n.Status(Group(g))
			l := st.Lead
			if l == 0 || (seen != 0 && l != seen) {
				ok = false
			}
			seen = l
		}
		leads[Group(g)] = seen
		if n := c.nodes[seen]; seen == 0 || n == nil {
			ok = false
		} else if st, _ := n.Status(Group(g)); !st.Leading {
			ok = false
		}
	}
	return leads, ok
}

// leader returns a running node that leads g (0: none does).
func (c *cluster) leader(g Group) uint64 {
	for _, id := range c.ids {
		if n := c.nodes[id]; n != nil && leading(n, g) {
			return id
		}
	}
	return 0
}

// leading reports whether n leads g.
func leading(n *Node, g Group) bool {
	st, _ := n.Status(g)
	return st.Leading
}

// waitLeader waits, bounded, for a running node that leads g.
func (c *cluster) waitLeader(g Group) uint64 {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for ; time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if id := c.leader(g); id != 0 {
			return id
		}
	}
	c.t.Fatalf("group %d: no leader", g)
	return 0
}

// converge waits, bounded, until every running node's state machine of every
// group holds want[g], and checks each applied its indexes in order, once.
func (c *cluster) converge(want []map[string]string) {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		diff := ""
		for _, id := range c.ids {
			if c.nodes[id] == nil {
				continue
			}
			for g, sm := range c.sms[id] {
				got, idx := sm.snapshot()
				if !slices.IsSorted(idx) || len(slices.Compact(slices.Clone(idx))) != len(idx) {
					c.t.Fatalf("node %d group %d applied indexes out of order or twice: %v", id, g, idx)
				}
				if !maps.Equal(got, want[g]) {
					diff = fmt.Sprintf("node %d group %d: %d keys, want %d", id, g, len(got), len(want[g]))
				}
			}
		}
		if diff == "" {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatal(diff)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestGroupsReplicateThroughOneDriver: 3 nodes × 8 groups, leaders spread;
// every acknowledged proposal is applied on every node, in log order, once,
// and each proposer gets its own entry's result.
func TestGroupsReplicateThroughOneDriver(t *testing.T) {
	c := newCluster(t, 3, 8)
	leads := c.spread()
	want := make([]map[string]string, c.groups)
	for g := range want {
		want[g] = map[string]string{}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range c.groups {
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n := c.nodes[leads[Group(g)]]
				for i := range 25 {
					k := fmt.Sprintf("k%d", w)
					old, err := n.Propose(ctxT(t), Group(g), fmt.Appendf(nil, "%s=%d", k, i))
					if err != nil {
						t.Errorf("group %d: %v", g, err)
						return
					}
					if wantOld := map[bool]string{true: "", false: fmt.Sprint(i - 1)}[i == 0]; old != wantOld {
						t.Errorf("group %d %s: previous value %q, want %q", g, k, old, wantOld)
					}
					mu.Lock()
					want[g][k] = fmt.Sprint(i)
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	c.converge(want)

	// One Save and at most two frames per peer (before and after it) a turn.
	for _, id := range c.ids {
		n := c.nodes[id]
		if saves, turns, frames := n.Saves.Load(), n.Turns.Load(), n.Frames.Load(); saves > turns || frames > turns*4 {
			t.Errorf("node %d: %d saves, %d frames in %d turns", id, saves, frames, turns)
		}
	}
}

// TestRefusals: a proposal or read at a follower, or for a group the node
// does not hold, is refused with a typed outcome and changes nothing.
func TestRefusals(t *testing.T) {
	c := newCluster(t, 3, 2)
	leads := c.spread()
	follower := c.ids[(int(leads[0]))%3] // the node after group 0's leader
	n := c.nodes[follower]
	if _, err := n.Propose(ctxT(t), 0, []byte("a=1")); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("propose at a follower: %v, want ErrNotLeader", err)
	}
	if err := n.Read(ctxT(t), 0); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("read at a follower: %v, want ErrNotLeader", err)
	}
	if _, err := n.Propose(ctxT(t), 9, []byte("a=1")); !errors.Is(err, ErrNoGroup) {
		t.Fatalf("propose to a group the node lacks: %v, want ErrNoGroup", err)
	}
	if err := n.AddGroup(0, GroupConfig{Voters: c.ids, SM: &kv{m: map[string]string{}}}); !errors.Is(err, ErrGroupExists) {
		t.Fatalf("AddGroup again: %v, want ErrGroupExists", err)
	}
	c.converge([]map[string]string{{}, {}})
}

// TestRestartRecovers: every node stops and starts again with empty state
// machines; each group's log on disk gives every node back every
// acknowledged write, and the groups take new writes.
func TestRestartRecovers(t *testing.T) {
	c := newCluster(t, 3, 4)
	leads := c.spread()
	want := make([]map[string]string, c.groups)
	for g := range c.groups {
		want[g] = map[string]string{}
		for i := range 20 {
			k := fmt.Sprintf("g%d-%d", g, i)
			if _, err := c.nodes[leads[Group(g)]].Propose(ctxT(t), Group(g), []byte(k+"=v")); err != nil {
				t.Fatal(err)
			}
			want[g][k] = "v"
		}
	}
	for _, id := range c.ids {
		c.stop(id)
	}
	c.bare = true // the groups' voters come from storage alone
	for _, id := range c.ids {
		c.start(id)
	}
	leads = c.spread()
	c.converge(want)
	for g := range c.groups {
		if _, err := c.nodes[leads[Group(g)]].Propose(ctxT(t), Group(g), []byte("after=restart")); err != nil {
			t.Fatal(err)
		}
		want[g]["after"] = "restart"
	}
	c.converge(want)
}

// TestFailover: the leader of every group it leads is cut off; the others
// elect new leaders that keep every acknowledged write and take new ones; a
// proposal made to the cut-off leader is not acknowledged, and its read is
// refused; back on the network it catches up and its entry is gone.
func TestFailover(t *testing.T) {
	c := newCluster(t, 3, 3)
	leads := c.spread()
	want := []map[string]string{{}, {}, {}}
	for g := range c.groups {
		if _, err := c.nodes[leads[Group(g)]].Propose(ctxT(t), Group(g), []byte("before=1")); err != nil {
			t.Fatal(err)
		}
		want[g]["before"] = "1"
	}
	old := leads[0]
	c.net.isolate(old, true, c.ids)

	// The cut-off leader cannot commit: the proposal fails (leadership lost
	// once CheckQuorum steps it down) or times out, and a read is refused.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.nodes[old].Read(ctx, 0); err == nil { // while it still thinks it leads
		t.Fatal("a leader cut off from its followers confirmed a read")
	}
	if _, err := c.nodes[old].Propose(ctx, 0, []byte("lost=1")); err == nil {
		t.Fatal("a leader cut off from its followers acknowledged a proposal")
	}

	var newLead uint64
	deadline := time.Now().Add(20 * time.Second)
	for newLead == 0 || newLead == old {
		if time.Now().After(deadline) {
			t.Fatal("no new leader for group 0")
		}
		time.Sleep(5 * time.Millisecond)
		for _, id := range c.ids {
			if id != old && leading(c.nodes[id], 0) {
				newLead = id
			}
		}
	}
	if _, err := c.nodes[newLead].Propose(ctxT(t), 0, []byte("after=2")); err != nil {
		t.Fatal(err)
	}
	want[0]["after"] = "2"
	if err := c.nodes[newLead].Read(ctxT(t), 0); err != nil {
		t.Fatal(err)
	}
	// Back on the network, the old leader's unreplicated entry gives way to
	// the new leader's log: it applies nowhere.
	c.net.isolate(old, false, c.ids)
	c.converge(want)
}

// TestReadSeesAcknowledgedWrites: a write acknowledged at the leader is in
// the leader's state machine once a Read that started after it returns.
func TestReadSeesAcknowledgedWrites(t *testing.T) {
	c := newCluster(t, 3, 2)
	leads := c.spread()
	for g := range c.groups {
		n := c.nodes[leads[Group(g)]]
		sm := c.sms[leads[Group(g)]][g]
		for i := range 20 {
			if _, err := n.Propose(ctxT(t), Group(g), fmt.Appendf(nil, "x=%d", i)); err != nil {
				t.Fatal(err)
			}
			if err := n.Read(ctxT(t), Group(g)); err != nil {
				t.Fatal(err)
			}
			if got, _ := sm.snapshot(); got["x"] != fmt.Sprint(i) {
				t.Fatalf("group %d: read after write %d saw %q", g, i, got["x"])
			}
		}
	}
}

// failingStorage fails every Save once fail is set.
type failingStorage struct {
	Storage
	fail atomic.Bool
}

var errDiskGone = errors.New("disk gone (test)")

func (s *failingStorage) Save(ups []Update) error {
	if s.fail.Load() {
		return errDiskGone
	}
	return s.Storage.Save(ups)
}

// TestDiskFailureHalts: a node whose disk write fails stops: its waiting
// proposal fails with ErrStopped wrapping the disk's error, Err says why,
// Done closes, and the rest of the cluster elects another leader and goes on.
func TestDiskFailureHalts(t *testing.T) {
	var broken *failingStorage
	c := newClusterWith(t, 3, 1, func(cfg *Config) {
		if cfg.ID == 1 {
			broken = &failingStorage{Storage: cfg.Storage}
			cfg.Storage = broken
		}
	})
	c.spread() // node 1 leads group 0
	want := []map[string]string{{}}
	c.write(0, "a", 5, want[0])
	broken.fail.Store(true)
	_, err := c.nodes[1].Propose(ctxT(t), 0, []byte("b=1"))
	if !errors.Is(err, ErrStopped) || !errors.Is(err, errDiskGone) {
		t.Fatalf("proposal at a node whose disk failed: %v, want ErrStopped wrapping the disk's error", err)
	}
	if !errors.Is(c.nodes[1].Err(), errDiskGone) {
		t.Fatalf("Err() = %v", c.nodes[1].Err())
	}
	select {
	case <-c.nodes[1].Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the halted node's driver did not stop")
	}
	c.net.isolate(1, true, c.ids)
	var lead uint64
	for deadline := time.Now().Add(20 * time.Second); lead == 0 || lead == 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no new leader")
		}
		lead = 0
		for _, id := range c.ids[1:] {
			if leading(c.nodes[id], 0) {
				lead = id
			}
		}
	}
	if _, err := c.nodes[lead].Propose(ctxT(t), 0, []byte("c=1")); err != nil {
		t.Fatal(err)
	}
}
