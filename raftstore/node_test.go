package raftstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/internal/clustertest"
	"github.com/lockd/lockd/raftstore/group"
	"github.com/lockd/lockd/raftstore/group/grouptest"
	"github.com/lockd/lockd/resp"
	"github.com/lockd/lockd/shard"
)

// nodeCluster is an in-process cluster of sharded Nodes on loopback ports.
type nodeCluster struct {
	t     testing.TB
	peers []Peer
	dirs  []string
	nodes []*Node

	beforeLogWrite []func() error // node i's Config.BeforeLogWrite; nil: none
	auto           bool           // Config.AutoGroups: the group count follows the node count
	engine         bool           // Config.Engine: the groups run on the node-wide engine
	snapshotEvery  uint64         // Config.SnapshotThreshold (0: the default)
}

func newNodeCluster(t *testing.T, n, groups int) *nodeCluster { return newNodeClusterTB(t, n, groups) }

func newNodeClusterTB(t testing.TB, n, groups int, hooks ...func() error) *nodeCluster {
	c := &nodeCluster{t: t, nodes: make([]*Node, n), beforeLogWrite: hooks}
	c.launch(n, groups)
	return c
}

// newEngineCluster is newNodeCluster with every group on the node-wide
// engine (Config.Engine), each snapshotting every snapshotEvery entries (0:
// the default).
func newEngineCluster(t testing.TB, n, groups int, snapshotEvery uint64) *nodeCluster {
	c := &nodeCluster{t: t, nodes: make([]*Node, n), engine: true, snapshotEvery: snapshotEvery}
	c.launch(n, groups)
	return c
}

// launch lays out and starts the cluster's n nodes of groups groups, and
// waits (bounded) until each serves.
func (c *nodeCluster) launch(n, groups int) {
	t := c.t
	for i := range n {
		c.peers = append(c.peers, Peer{ID: fmt.Sprintf("n%d", i+1), Addr: clustertest.Addrs(t, 1)[0]})
		c.dirs = append(c.dirs, t.TempDir())
	}
	for i := range n {
		c.start(i, groups)
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			if nd != nil {
				nd.Close()
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, nd := range c.nodes {
		if err := nd.WaitServing(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// waitSpread waits (bounded) until every group is led by its preferred
// leader, the balance loop's goal.
func (c *nodeCluster) waitSpread() {
	if len(c.nodes[0].gs()) == 1 {
		return // one group: nothing is spread
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		spread := true
		for g := range c.nodes[0].gs() {
			pref, _ := preferredLeader(c.nodes[0].gs()[g].Configuration(), g)
			for _, nd := range c.nodes {
				if string(pref.ID) == nd.cfg.NodeID && !nd.gs()[g].IsLeader() {
					spread = false
				}
			}
		}
		if spread {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatal("group leaders did not spread within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *nodeCluster) start(i, groups int) {
	var hook func() error
	if c.beforeLogWrite != nil {
		hook = c.beforeLogWrite[i]
	}
	nd, err := OpenNode(Config{NodeID: c.peers[i].ID, DataDir: c.dirs[i], PeerAddr: c.peers[i].Addr, Peers: c.peers,
		ClientAddr: "127.0.0.1:" + strconv.Itoa(16000+i), ApplyTimeout: 3 * time.Second, Groups: groups, BeforeLogWrite: hook, AutoGroups: c.auto,
		Engine: c.engine, SnapshotThreshold: c.snapshotEvery})
	if err != nil {
		c.t.Fatalf("start %s: %v", c.peers[i].ID, err)
	}
	c.nodes[i] = nd
}

// openLoneNode opens a single-node Node with cfg (its NodeID, DataDir and
// PeerAddr filled in), waits (bounded) until it serves, and closes it when
// the test ends.
func openLoneNode(t *testing.T, cfg Config) *Node {
	t.Helper()
	cfg.NodeID, cfg.DataDir, cfg.PeerAddr = "n1", t.TempDir(), clustertest.Addrs(t, 1)[0]
	nd, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nd.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := nd.WaitServing(ctx); err != nil {
		t.Fatal(err)
	}
	return nd
}

// waitFor polls cond every 5 ms for at most limit (clustertest.WaitFor).
var waitFor = clustertest.WaitFor

// queueLength reads LOCK.INFO's queue_length through g (grouptest.QueueLength).
func queueLength(g *group.Store, name string) int64 { return grouptest.QueueLength(g, name) }

// req parses cmd as the front door would (grouptest.Req).
func req(cmd ...string) command.Request { return grouptest.Req(cmd...) }

func ndo(n *Node, cmd ...string) resp.Value {
	return n.Do(context.Background(), []command.Request{req(cmd...)})[0]
}

// keyIn returns a key that the map puts in group g.
func keyIn(m shard.Map, g int, prefix string) string {
	for i := 0; ; i++ {
		k := prefix + strconv.Itoa(i)
		if m.GroupOf([]byte(k)) == g {
			return k
		}
	}
}

func TestNodeRoutesAcrossGroups(t *testing.T) {
	c := newNodeCluster(t, 3, 4)
	n0, n1 := c.nodes[0], c.nodes[1]
	m := n0.ShardMap()
	if m.Groups != 4 {
		t.Fatalf("map has %d groups", m.Groups)
	}
	// Writes through one node are read through another, in every group.
	var keys []string
	for g := range 4 {
		k := keyIn(m, g, "k")
		keys = append(keys, k)
		if v := ndo(n0, "SET", k, "v"+k); v.String() != "OK" {
			t.Fatalf("SET %s: %v", k, v)
		}
	}
	for _, k := range keys {
		if v := ndo(n1, "GET", k); v.String() != "v"+k {
			t.Fatalf("GET %s through n2: %v", k, v)
		}
	}
	for g := range 4 {
		k := keys[g]
		found := false
		for _, nd := range c.nodes {
			s := nd.Group(g)
			if v := s.Do(context.Background(), []command.Request{req("GET", k)})[0]; v.String() == "v"+k {
				found = true
			}
		}
		if !found {
			t.Fatalf("key %s not in group %d", k, g)
		}
	}
	if v := ndo(n1, "DBSIZE"); v.Int != 4 {
		t.Fatalf("DBSIZE = %v, want 4", v)
	}
	if v := ndo(n1, "MSET", keys[0], "x", keys[1], "y"); v.String() != ErrCrossSlot {
		t.Fatalf("MSET across groups = %v", v)
	}
	if v := ndo(n1, "MGET", keys[2], "nope", keys[0]); len(v.Elems) != 3 || v.Elems[0].String() != "v"+keys[2] || v.Elems[1].Kind != resp.KindNull || v.Elems[2].String() != "v"+keys[0] {
		t.Fatalf("MGET across groups = %v", v)
	}
	// SCAN walks every group.
	seen := map[string]bool{}
	cursor := "0"
	for range 100 {
		v := ndo(n0, "SCAN", cursor, "COUNT", "1")
		for _, k := range v.Elems[1].Elems {
			seen[k.String()] = true
		}
		cursor = v.Elems[0].String()
		if cursor == "0" {
			break
		}
	}
	if len(seen) != 4 || cursor != "0" {
		t.Fatalf("SCAN saw %v, cursor %s", seen, cursor)
	}
	if v := ndo(n0, "DEL", keys[0], keys[1], keys[2], "nope"); v.Int != 3 {
		t.Fatalf("DEL across groups = %v", v)
	}
	if v := ndo(n2(c), "DBSIZE"); v.Int != 1 {
		t.Fatalf("DBSIZE after DEL = %v", v)
	}
}

func n2(c *nodeCluster) *Node { return c.nodes[2] }

func TestNodeSessionAcrossGroups(t *testing.T) {
	c := newNodeCluster(t, 3, 4)
	n := c.nodes[1]
	m := n.ShardMap()
	open := ndo(n, "SESSION.OPEN", "TTL", "5000")
	if open.IsError() {
		t.Fatal(open)
	}
	id := strconv.FormatInt(open.Elems[1].Int, 10)
	var names []string
	for g := range 4 {
		name := keyIn(m, g, "lock")
		names = append(names, name)
		if v := ndo(n, "LOCK.ACQUIRE", name, "me", "SESSION", id); v.Kind != resp.KindInt {
			t.Fatalf("acquire %s (group %d) with session: %v", name, g, v)
		}
	}
	if v := ndo(c.nodes[0], "SESSION.KEEPALIVE", id); v.Kind != resp.KindInt {
		t.Fatalf("keepalive: %v", v)
	}
	if v := ndo(c.nodes[2], "SESSION.CLOSE", id); v.Int != 4 {
		t.Fatalf("close released %v, want 4", v)
	}
	for _, name := range names {
		if v := ndo(n, "LOCK.ACQUIRE", name, "other", "PX", "1000"); v.Kind != resp.KindInt {
			t.Fatalf("%s still held after close: %v", name, v)
		}
	}
	if v := ndo(n, "SESSION.KEEPALIVE", id); !isNoSession(v) {
		t.Fatalf("keepalive after close: %v", v)
	}
}

func TestNodeMoveSlotsKeepsLocksAndTokens(t *testing.T) {
	c := newNodeCluster(t, 3, 2)
	n := c.nodes[0]
	m := n.ShardMap()
	name := keyIn(m, 0, "moving")
	slot := strconv.Itoa(int(shard.Slot([]byte(name))))
	// Push group 0's index well above group 1's, then take the lock.
	for i := range 50 {
		ndo(n, "SET", keyIn(m, 0, "pad"+strconv.Itoa(i)+"-"), "x")
	}
	tok := ndo(n, "LOCK.ACQUIRE", name, "me", "PX", "60000")
	if tok.Kind != resp.KindInt {
		t.Fatal(tok)
	}
	move := command.Request{Op: command.Admin{Action: "moveslots", ID: slot + "-" + slot, Addr: "1"}, Spec: command.AdminSpec}
	if v := c.nodes[2].Do(context.Background(), []command.Request{move})[0]; v.Kind != resp.KindInt || v.Int != 1 {
		t.Fatalf("MOVESLOTS: %v", v)
	}
	// Every node routes the name to group 1 now, and the lock came along.
	deadline := time.Now().Add(5 * time.Second)
	for _, nd := range c.nodes {
		for nd.groupOf([]byte(name)) != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("%s still routes %s to group %d", nd.cfg.NodeID, name, nd.groupOf([]byte(name)))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if v := ndo(c.nodes[1], "LOCK.VALIDATE", name, strconv.FormatInt(tok.Int, 10)); v.Int != 1 {
		t.Fatalf("the moved lock is not held with its token: %v", v)
	}
	if v := ndo(c.nodes[1], "LOCK.ACQUIRE", name, "other", "PX", "1000"); v.Kind != resp.KindNull {
		t.Fatalf("a second holder got the moved lock: %v", v)
	}
	if v := ndo(c.nodes[2], "LOCK.RELEASE", name, strconv.FormatInt(tok.Int, 10)); v.Int != 1 {
		t.Fatalf("release after the move: %v", v)
	}
	tok2 := ndo(c.nodes[1], "LOCK.ACQUIRE", name, "other", "PX", "1000")
	if tok2.Kind != resp.KindInt || tok2.Int <= tok.Int {
		t.Fatalf("token after the move %v, want > %d", tok2, tok.Int)
	}
	if v := ndo(c.nodes[0], "DBSIZE"); v.Int != 51 {
		t.Fatalf("DBSIZE after the move = %v, want 51", v)
	}
}

// A waiter queued on a name whose slot moves is queued again in the new group
// and granted there when the holder releases, with a larger token.
func TestNodeMoveRequeuesWaiter(t *testing.T) {
	c := newNodeCluster(t, 3, 2)
	n := c.nodes[0]
	m := n.ShardMap()
	name := keyIn(m, 0, "wait")
	slot := strconv.Itoa(int(shard.Slot([]byte(name))))
	tok := ndo(n, "LOCK.ACQUIRE", name, "a", "PX", "60000")
	if tok.Kind != resp.KindInt {
		t.Fatal(tok)
	}
	got := make(chan resp.Value, 1)
	go func() { got <- ndo(c.nodes[1], "LOCK.ACQUIRE", name, "b", "PX", "60000", "WAIT", "20000") }()
	waitFor(t, 10*time.Second, "the waiter to queue", func() bool { return queueLength(n.Group(0), name) == 1 })
	move := command.Request{Op: command.Admin{Action: "moveslots", ID: slot + "-" + slot, Addr: "1"}, Spec: command.AdminSpec}
	if v := c.nodes[2].Do(context.Background(), []command.Request{move})[0]; v.Int != 1 {
		t.Fatalf("MOVESLOTS: %v", v)
	}
	select {
	case v := <-got:
		t.Fatalf("the waiter was answered by the move itself: %v", v)
	default:
	}
	waitFor(t, 10*time.Second, "the waiter to queue again in group 1", func() bool { return queueLength(n.Group(1), name) == 1 })
	if v := ndo(c.nodes[2], "LOCK.RELEASE", name, strconv.FormatInt(tok.Int, 10)); v.Int != 1 {
		t.Fatalf("release: %v", v)
	}
	select {
	case v := <-got:
		if v.Kind != resp.KindInt || v.Int <= tok.Int {
			t.Fatalf("the re-queued waiter got %v, want a token above %d", v, tok.Int)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the re-queued waiter was never granted")
	}
}

// Keyless commands reach every group: FLUSHALL, SCRIPT LOAD (EVALSHA works on
// any group's keys), NAMESPACE.SET (enforced in every group); scripts and
// transactions over keys of several groups answer CROSSSLOT.
func TestNodeFanOutAndCrossSlot(t *testing.T) {
	c := newNodeCluster(t, 3, 4)
	n := c.nodes[1]
	m := n.ShardMap()
	keys := []string{keyIn(m, 0, "f"), keyIn(m, 1, "f"), keyIn(m, 2, "f"), keyIn(m, 3, "f")}
	load := command.Request{Op: command.ScriptLoad{Source: []byte("return redis.call('SET', KEYS[1], ARGV[1])")}, Spec: command.ScriptLoadSpec}
	if v := n.Do(context.Background(), []command.Request{load})[0]; v.IsError() {
		t.Fatal(v)
	}
	for _, k := range keys {
		if v := ndo(c.nodes[2], "EVALSHA", command.SHA1Hex([]byte("return redis.call('SET', KEYS[1], ARGV[1])")), "1", k, "x"); v.String() != "OK" {
			t.Fatalf("EVALSHA on %s (group %d): %v", k, m.GroupOf([]byte(k)), v)
		}
	}
	if v := ndo(n, "EVAL", "return 1", "2", keys[0], keys[1]); v.String() != ErrCrossSlot {
		t.Fatalf("EVAL over two groups: %v", v)
	}
	tx := command.Request{Op: command.Tx{Cmds: [][][]byte{{[]byte("SET"), []byte(keys[0]), []byte("1")}, {[]byte("SET"), []byte(keys[2]), []byte("1")}}}, Spec: command.TxSpec}
	if v := n.Do(context.Background(), []command.Request{tx})[0]; v.String() != ErrCrossSlot {
		t.Fatalf("EXEC over two groups: %v", v)
	}
	if v := ndo(n, "NAMESPACE.SET", "f", "MAXTTL", "1000"); v.IsError() {
		t.Fatal(v)
	}
	for _, k := range keys {
		if v := ndo(c.nodes[0], "LOCK.ACQUIRE", k+"lock", "me", "PX", "5000"); !v.IsError() {
			t.Fatalf("MAXTTL not enforced in group %d: %v", m.GroupOf([]byte(k+"lock")), v)
		}
	}
	if v := ndo(n, "FLUSHALL"); v.IsError() {
		t.Fatal(v)
	}
	if v := ndo(c.nodes[2], "DBSIZE"); v.Int != 0 {
		t.Fatalf("DBSIZE after FLUSHALL = %v", v)
	}
}

// When group 0 no longer knows a session (it expired there), the next
// keepalive answers NOSESSION and ends it in every group, freeing its locks.
func TestNodeSessionGoneInGroupZeroEndsEverywhere(t *testing.T) {
	c := newNodeCluster(t, 3, 2)
	n := c.nodes[0]
	m := n.ShardMap()
	open := ndo(n, "SESSION.OPEN", "TTL", "60000")
	id := strconv.FormatInt(open.Elems[1].Int, 10)
	name := keyIn(m, 1, "sess")
	if v := ndo(n, "LOCK.ACQUIRE", name, "me", "SESSION", id); v.Kind != resp.KindInt {
		t.Fatal(v)
	}
	if v := n.Group(0).Do(context.Background(), []command.Request{req("SESSION.CLOSE", id)})[0]; v.IsError() {
		t.Fatal(v)
	}
	if v := ndo(c.nodes[1], "SESSION.KEEPALIVE", id); !isNoSession(v) {
		t.Fatalf("keepalive of a session group 0 lost: %v", v)
	}
	if v := ndo(c.nodes[2], "LOCK.ACQUIRE", name, "other", "PX", "1000"); v.Kind != resp.KindInt {
		t.Fatalf("the session's lock in group 1 is still held: %v", v)
	}
}

// A node that joins a sharded cluster of 3 takes its share: with the default
// replication factor (3 for 4 nodes) the balancer on group 0's leader moves
// ⌊4·3/4⌋ = 3 replicas and one leadership onto it, every group keeping 3
// voters; a removed node's replicas go back to the others, which again host
// every group and lead their preferred ones.
func TestNodeJoinTakesItsShare(t *testing.T) {
	c := newNodeCluster(t, 3, 4)
	c.waitSpread()
	c.joinAndLeave(nil)
}

// joinAndLeave starts n4 with -join (Config.Engine as the cluster's), adds
// it with RAFT ADD, waits (bounded) until it holds its share of the 4 groups'
// replicas (3) and leads one, checks that it serves, runs between (nil: no
// check) with n4, then removes it with RAFT REMOVE and checks that the three
// lead every group again and still hold what n4 wrote.
func (c *nodeCluster) joinAndLeave(between func(n4 *Node)) {
	t := c.t
	c.peers = append(c.peers, Peer{ID: "n4", Addr: clustertest.Addrs(t, 1)[0]})
	c.dirs = append(c.dirs, t.TempDir())
	nd, err := OpenNode(Config{NodeID: "n4", DataDir: c.dirs[3], PeerAddr: c.peers[3].Addr, Join: true, Engine: c.engine,
		ClientAddr: "127.0.0.1:16003", ApplyTimeout: 3 * time.Second, Groups: 4})
	if err != nil {
		t.Fatal(err)
	}
	c.nodes = append(c.nodes, nd)
	add := command.Request{Op: command.Admin{Action: "add", ID: "n4", Addr: c.peers[3].Addr}, Spec: command.AdminSpec}
	// TRYAGAIN (a group between leaders: on a loaded machine the balance loop
	// may still be moving one) is safe to retry, as a client would.
	var v resp.Value
	waitFor(t, 15*time.Second, "RAFT ADD to answer other than TRYAGAIN", func() bool {
		v = c.nodes[1].Do(context.Background(), []command.Request{add})[0]
		return !strings.HasPrefix(v.String(), "TRYAGAIN ")
	})
	if v.IsError() {
		t.Fatalf("RAFT ADD: %v", v)
	}
	waitFor(t, 60*time.Second, "n4 to hold 3 replicas and lead 1 group, every group 3 voters", func() bool {
		held, leads := 0, 0
		for g := range 4 {
			servers, _ := nd.groupServers(g)
			if countVoters(servers) != 3 {
				return false
			}
			if nd.Group(g).Member() && slices.ContainsFunc(servers, func(s raft.Server) bool { return s.ID == "n4" && s.Suffrage == raft.Voter }) {
				held++
			}
			if nd.Group(g).IsLeader() {
				leads++
			}
		}
		return held == 3 && leads == 1
	})
	if v := ndo(nd, "SET", "joined", "yes"); v.String() != "OK" {
		t.Fatalf("SET through the new node: %v", v)
	}
	if v := ndo(c.nodes[0], "GET", "joined"); v.String() != "yes" {
		t.Fatalf("GET after the join: %v", v)
	}
	if between != nil {
		between(nd)
	}
	remove := command.Request{Op: command.Admin{Action: "remove", ID: "n4"}, Spec: command.AdminSpec}
	if v := c.nodes[0].Do(context.Background(), []command.Request{remove})[0]; v.IsError() {
		t.Fatalf("RAFT REMOVE: %v", v)
	}
	c.nodes = c.nodes[:3]
	nd.Close()
	c.waitSpread() // the three again lead every group, each its preferred ones
	if v := ndo(c.nodes[2], "GET", "joined"); v.String() != "yes" {
		t.Fatalf("GET after the removal: %v", v)
	}
}

// Config.MaxWriteBytes bounds what clients write, in every group, not the
// entries a node builds itself: a slot range holding more than a client may
// write in one command moves whole.
func TestNodeMaxWriteBytes(t *testing.T) {
	const most = 64 << 10
	nd := openLoneNode(t, Config{ApplyTimeout: 3 * time.Second, Groups: 2, MaxWriteBytes: most})
	m := nd.ShardMap()
	tag := keyIn(m, 0, "big")
	val := strings.Repeat("v", 40<<10)
	for _, g := range []int{0, 1} {
		if v := ndo(nd, "SET", keyIn(m, g, "huge"), strings.Repeat("v", most)); !strings.HasPrefix(v.String(), ErrTooLarge.Error()+": ") {
			t.Fatalf("group %d: SET of %d bytes = %.100q, want %s: …", g, most, v.String(), ErrTooLarge)
		}
	}
	for i := range 3 {
		if v := ndo(nd, "SET", "{"+tag+"}"+strconv.Itoa(i), val); v.String() != "OK" {
			t.Fatalf("SET %d: %v", i, v)
		}
	}
	slot := strconv.Itoa(int(shard.Slot([]byte(tag))))
	move := command.Request{Op: command.Admin{Action: "moveslots", ID: slot + "-" + slot, Addr: "1"}, Spec: command.AdminSpec}
	if v := nd.Do(context.Background(), []command.Request{move})[0]; v.Kind != resp.KindInt || v.Int != 1 {
		t.Fatalf("MOVESLOTS of %d bytes: %v", 3*len(val), v)
	}
	if g := nd.groupOf([]byte(tag)); g != 1 {
		t.Fatalf("the slot is in group %d after the move", g)
	}
	for i := range 3 {
		if v := ndo(nd, "GET", "{"+tag+"}"+strconv.Itoa(i)); v.String() != val {
			t.Fatalf("GET %d after the move: %d bytes", i, len(v.String()))
		}
	}
}

// A node created by -join never bootstraps a group, even when it is started
// again with -peers: it would found groups of its own beside the cluster's.
func TestJoinedNodeNeverBootstraps(t *testing.T) {
	dir := t.TempDir()
	addrs := clustertest.Addrs(t, 2)
	cfg := Config{NodeID: "n1", DataDir: dir, PeerAddr: addrs[0], Join: true, Groups: 2, ApplyTimeout: time.Second}
	nd, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	nd.Close()
	cfg.Join = false
	cfg.Peers = []Peer{{ID: "n1", Addr: addrs[0]}, {ID: "n2", Addr: addrs[1]}}
	nd, err = OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer nd.Close()
	for g := range 2 {
		if c := nd.Group(g).Configuration(); len(c) != 0 {
			t.Fatalf("group %d of a node that joined was bootstrapped on a restart with -peers: %v", g, c)
		}
	}
}

// A node bootstraps groups only at its first start: restarted with other
// -peers (or -replicas), it bootstraps no group it holds no state for (that
// group is other nodes'; a configuration of its own would be a second copy).
func TestRestartBootstrapsNothing(t *testing.T) {
	dir := t.TempDir()
	addrs := clustertest.Addrs(t, 2)
	peers := []Peer{{ID: "n1", Addr: addrs[0]}, {ID: "n2", Addr: addrs[1]}}
	cfg := Config{NodeID: "n1", DataDir: dir, PeerAddr: addrs[0], Peers: peers, Groups: 4, Replicas: 1, ApplyTimeout: time.Second}
	nd, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var others []int // the groups placed on n2 alone
	for g := range 4 {
		if len(nd.Group(g).Configuration()) == 0 {
			others = append(others, g)
		}
	}
	nd.Close()
	if len(others) == 0 {
		t.Fatal("the plan put every group on n1; the test needs one on n2")
	}
	cfg.Peers = peers[:1] // n1 alone now: every group's plan would be n1
	nd, err = OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer nd.Close()
	for _, g := range others {
		if c := nd.Group(g).Configuration(); len(c) != 0 {
			t.Fatalf("group %d, placed on n2, was bootstrapped on n1's restart with other -peers: %v", g, c)
		}
	}
}

// TestCutShortGrowthFinished: on a cluster whose group count follows its
// node count, a group added at runtime whose growth stopped once the map had
// grown and the group was bootstrapped (its leader of group 0 gone before the
// ACL replay and the slot moves, say) is given its share by group 0's leader:
// it gets its quarter of the slots, and the keys keep their values. (Three
// nodes and three groups: the node count asks for no growth of its own.)
func TestCutShortGrowthFinished(t *testing.T) {
	c := &nodeCluster{t: t, nodes: make([]*Node, 3), auto: true}
	c.launch(3, 3)
	c.waitSpread()
	var l *Node
	waitFor(t, 10*time.Second, "a leader of group 0", func() bool {
		for _, nd := range c.nodes {
			if nd.gs()[0].IsLeader() {
				l = nd
				return true
			}
		}
		return false
	})
	for i := range 100 {
		if v := ndo(l, "SET", "cut-"+strconv.Itoa(i), strconv.Itoa(i)); v.String() != "OK" {
			t.Fatalf("SET: %v", v)
		}
	}
	// The first two steps of RAFT ADDGROUPS 1, and no more.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l.growing.Add(1) // the balancer waits, as it does for a real ADDGROUPS
	l.moveMu.Lock()
	next, err := l.ShardMap().Grow(4)
	if err != nil {
		l.moveMu.Unlock()
		t.Fatal(err)
	}
	enc := next.Encode()
	v := l.proposeInternal(ctx, 0, command.KindShardMap, command.ShardMapArgs(enc))
	l.moveMu.Unlock()
	if v.IsError() {
		t.Fatalf("the grown map: %v", v)
	}
	l.noteShardMap(enc)
	if err := l.awaitOpened(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := l.bootstrapNew(ctx, 3, 4); err != nil {
		t.Fatal(err)
	}
	if l.ownsSlots(3) {
		t.Fatal("group 3 owns slots before anything moved them")
	}
	l.growing.Add(-1)
	waitFor(t, 60*time.Second, "group 3 to own its quarter of the slots", func() bool {
		m := l.ShardMap()
		return m.Owned()[3] >= shard.Slots/4-2
	})
	for i := range 100 {
		if v := ndo(c.nodes[(i%3)], "GET", "cut-"+strconv.Itoa(i)); v.String() != strconv.Itoa(i) {
			t.Fatalf("cut-%d after the slots moved: %v", i, v)
		}
	}
}
