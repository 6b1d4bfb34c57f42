package raftstore

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
	"github.com/lockd/lockd/shard"
)

// A cluster created with Config.Engine runs every group on the node-wide
// engine: one log for all groups, no hashicorp/raft group directories,
// leaders spread, and every group serving through every node (forwarding
// to its leader), with fencing tokens.
func TestEngineNodeServesEveryGroup(t *testing.T) {
	const groups = 8
	c := newEngineCluster(t, 3, groups, 0)
	c.waitSpread()
	m := c.nodes[0].ShardMap()
	for i, nd := range c.nodes {
		if nd.engine == nil {
			t.Fatalf("%s runs no engine", nd.cfg.NodeID)
		}
		if _, err := os.Stat(filepath.Join(c.dirs[i], engineDir)); err != nil {
			t.Fatalf("%s: no engine log: %v", nd.cfg.NodeID, err)
		}
		if _, err := os.Stat(filepath.Join(c.dirs[i], "group-0")); err == nil {
			t.Fatalf("%s has a hashicorp/raft group directory", nd.cfg.NodeID)
		}
	}
	for g := range groups {
		name := keyIn(m, g, "lock")
		via, other := c.nodes[g%3], c.nodes[(g+1)%3]
		if v := ndo(via, "SET", name, "owner-"+strconv.Itoa(g), "NX", "PX", "30000"); v.String() != "OK" {
			t.Fatalf("group %d: SET NX through %s: %v", g, via.cfg.NodeID, v)
		}
		if v := ndo(other, "SET", name, "thief", "NX", "PX", "30000"); v.Kind != resp.KindNull {
			t.Fatalf("group %d: a second SET NX through %s: %v, want nil", g, other.cfg.NodeID, v)
		}
		if v := ndo(other, "GET", name); v.String() != "owner-"+strconv.Itoa(g) {
			t.Fatalf("group %d: GET through %s = %v", g, other.cfg.NodeID, v)
		}
		lock := keyIn(m, g, "fenced")
		tok := ndo(via, "LOCK.ACQUIRE", lock, "a", "PX", "30000")
		if tok.Kind != resp.KindInt {
			t.Fatalf("group %d: LOCK.ACQUIRE: %v", g, tok)
		}
		if v := ndo(other, "LOCK.RELEASE", lock, strconv.FormatInt(tok.Int, 10)); v.Int != 1 {
			t.Fatalf("group %d: LOCK.RELEASE: %v", g, v)
		}
		if tok2 := ndo(other, "LOCK.ACQUIRE", lock, "b", "PX", "30000"); tok2.Kind != resp.KindInt || tok2.Int <= tok.Int {
			t.Fatalf("group %d: the next grant's token %v, want > %d", g, tok2, tok.Int)
		}
	}
	if v := ndo(c.nodes[2], "DBSIZE"); v.Int != 2*groups {
		t.Fatalf("DBSIZE = %v, want %d", v, 2*groups)
	}
	for _, nd := range c.nodes {
		if n := nd.engine.Counters(); n.Saves == 0 || n.Frames == 0 {
			t.Fatalf("%s's engine saved %d times and sent %d frames", nd.cfg.NodeID, n.Saves, n.Frames)
		}
	}
}

// A group on the engine survives its leader's node stopping (another node
// takes over with every grant and token), the node's restart (it catches
// up, from a snapshot when the log was compacted meanwhile), and a restart
// of the whole cluster (state from snapshots and logs), without -engine on
// the restart: the data directory remembers.
func TestEngineNodeFailoverAndRestart(t *testing.T) {
	c := newEngineCluster(t, 3, 3, 64)
	c.waitSpread()
	m := c.nodes[0].ShardMap()
	want := map[string]string{}
	write := func(nd *Node, prefix string, n int) {
		t.Helper()
		for i := range n {
			k := prefix + strconv.Itoa(i)
			if v := ndo(nd, "SET", k, "v"+k); v.String() != "OK" {
				t.Fatalf("SET %s through %s: %v", k, nd.cfg.NodeID, v)
			}
			want[k] = "v" + k
		}
	}
	check := func(nd *Node) {
		t.Helper()
		for k, v := range want {
			if got := ndo(nd, "GET", k); got.String() != v {
				t.Fatalf("GET %s through %s = %v, want %s", k, nd.cfg.NodeID, got, v)
			}
		}
	}
	write(c.nodes[1], "before-", 200) // past the snapshot threshold in every group
	name := keyIn(m, 0, "held")
	tok := ndo(c.nodes[1], "LOCK.ACQUIRE", name, "me", "PX", "60000")
	if tok.Kind != resp.KindInt {
		t.Fatal(tok)
	}

	// n1 leads group 0 (spread); stop it.
	if !c.nodes[0].Group(0).IsLeader() {
		t.Fatal("n1 does not lead group 0 after the spread")
	}
	c.nodes[0].Close()
	waitFor(t, 20*time.Second, "n2 or n3 to lead group 0", func() bool {
		return c.nodes[1].Group(0).IsLeader() || c.nodes[2].Group(0).IsLeader()
	})
	if v := ndo(c.nodes[2], "LOCK.ACQUIRE", name, "other", "PX", "1000"); v.Kind != resp.KindNull {
		t.Fatalf("the lock had a second holder after the failover: %v", v)
	}
	if v := ndo(c.nodes[2], "LOCK.VALIDATE", name, strconv.FormatInt(tok.Int, 10)); v.Int != 1 {
		t.Fatalf("the lock is not held with its token after the failover: %v", v)
	}
	write(c.nodes[2], "during-", 200) // compacts the logs n1 missed
	check(c.nodes[1])

	// n1 comes back without -engine and catches up.
	c.engine = false
	c.start(0, 3)
	if c.nodes[0].engine == nil {
		t.Fatal("n1 restarted without the engine its data directory was created with")
	}
	waitFor(t, 20*time.Second, "n1 to apply what it missed", func() bool {
		for g := range 3 {
			if c.nodes[0].Group(g).Raft().AppliedIndex() < c.nodes[1].Group(g).Raft().CommitIndex() {
				return false
			}
		}
		return true
	})
	check(c.nodes[0])

	// The whole cluster restarts.
	for _, nd := range c.nodes {
		nd.Close()
	}
	for i := range c.nodes {
		c.start(i, 3)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, nd := range c.nodes {
		if err := nd.WaitServing(ctx); err != nil {
			t.Fatal(err)
		}
	}
	check(c.nodes[0])
	if v := ndo(c.nodes[0], "LOCK.RELEASE", name, strconv.FormatInt(tok.Int, 10)); v.Int != 1 {
		t.Fatalf("release after the restarts: %v", v)
	}
	if tok2 := ndo(c.nodes[1], "LOCK.ACQUIRE", name, "next", "PX", "1000"); tok2.Kind != resp.KindInt || tok2.Int <= tok.Int {
		t.Fatalf("token after the restarts %v, want > %d", tok2, tok.Int)
	}
}

// A slot moves between groups on the engine with its lock and token.
func TestEngineNodeMovesSlots(t *testing.T) {
	c := newEngineCluster(t, 3, 2, 0)
	m := c.nodes[0].ShardMap()
	name := keyIn(m, 0, "moving")
	slot := strconv.Itoa(int(shard.Slot([]byte(name))))
	tok := ndo(c.nodes[0], "LOCK.ACQUIRE", name, "me", "PX", "60000")
	if tok.Kind != resp.KindInt {
		t.Fatal(tok)
	}
	move := command.Request{Op: command.Admin{Action: "moveslots", ID: slot + "-" + slot, Addr: "1"}, Spec: command.AdminSpec}
	if v := c.nodes[2].Do(context.Background(), []command.Request{move})[0]; v.Kind != resp.KindInt || v.Int != 1 {
		t.Fatalf("MOVESLOTS: %v", v)
	}
	waitFor(t, 5*time.Second, "every node to route the name to group 1", func() bool {
		for _, nd := range c.nodes {
			if nd.groupOf([]byte(name)) != 1 {
				return false
			}
		}
		return true
	})
	if v := ndo(c.nodes[1], "LOCK.VALIDATE", name, strconv.FormatInt(tok.Int, 10)); v.Int != 1 {
		t.Fatalf("the moved lock is not held with its token: %v", v)
	}
}

// A node joins a cluster on the engine (RAFT ADD), takes its share of
// replicas and leaderships through the placement's moves (learner, voter,
// removal: membership changes carrying peer addresses), serves, and
// leaves again (RAFT REMOVE). Adding groups at run time is refused.
func TestEngineNodeJoinAndLeave(t *testing.T) {
	c := newEngineCluster(t, 3, 4, 0)
	c.waitSpread()
	c.joinAndLeave(func(n4 *Node) {
		if n4.engine == nil {
			t.Fatal("the joining node runs no engine")
		}
		grow := command.Request{Op: command.Admin{Action: "addgroups", ID: "1"}, Spec: command.AdminSpec}
		if v := c.nodes[1].Do(context.Background(), []command.Request{grow})[0]; !strings.Contains(v.String(), ErrEngine.Error()) {
			t.Fatalf("RAFT ADDGROUPS: %v, want %q", v, ErrEngine)
		}
	})
	for _, n := range c.nodes {
		if got := len(n.Group(0).Configuration()); got != 3 {
			t.Fatalf("%s: group 0 has %d members after the removal", n.cfg.NodeID, got)
		}
	}
}

// A group on the engine bounds its log in bytes as on hashicorp/raft
// (Config.LogBytes): a snapshot each time its share's half has been
// written, not one per write, and only the entries its newest half holds
// kept after one.
func TestEngineNodeLogBytes(t *testing.T) {
	const logBytes, value, writes = 256 << 10, 4 << 10, 200
	nd := openLoneNode(t, Config{ApplyTimeout: 3 * time.Second, Groups: 1, Engine: true, LogBytes: logBytes})
	val := strings.Repeat("v", value)
	for i := range writes {
		// Eight keys: the state stays smaller than the bound, which then
		// decides alone (a larger state's snapshot size raises it).
		if v := ndo(nd, "SET", "k"+strconv.Itoa(i%8), val); v.String() != "OK" {
			t.Fatalf("SET: %v", v)
		}
	}
	// logBytes/2 between snapshots: about writes*value/(logBytes/2) = 6.
	if n := nd.engine.Counters().Snapshots; n < 3 || n > 12 {
		t.Fatalf("%d snapshots for %d writes of %d bytes under a %d-byte bound, want about %d",
			n, writes, value, logBytes, writes*value/(logBytes/2))
	}
	first, err := nd.Group(0).Logs().FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	last := nd.Group(0).Raft().LastIndex()
	if kept := last - first + 1; first == 0 || kept > 2*(logBytes/2)/value {
		t.Fatalf("the log holds entries %d to %d (%d) after the snapshots, want at most %d", first, last, kept, 2*(logBytes/2)/value)
	}
}
