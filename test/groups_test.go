package test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/shard"
)

// Raft groups as a client sees them. lockd runs several Raft groups per node
// (-groups: one per node by default for a cluster started with -peers, 1 for a lone
// node); a key belongs to a Redis Cluster slot and a slot to a group. Fencing
// tokens are indexes of the group's log: tokens of one name always grow, but
// two names in different groups may get the same token. These helpers read
// the groups through the commands a user has: RAFT GROUPS (per group: this
// node's state, the leader, indexes, slot count), INFO raft
// (shard_map_version), CLUSTER KEYSLOT and CLUSTER SHARDS (one shard per
// group that has a leader, in group order, with its slot ranges; on clusters
// of several nodes only: a lone node answers them as a standalone Redis).

// groupState is one group as RAFT GROUPS reports it on one node.
type groupState struct {
	group        int
	state        string // this node's role in the group: leader, follower, candidate
	leader       string // the leader's node id ("" while there is none)
	term         int64
	commitIndex  int64
	appliedIndex int64
	lastLogIndex int64
	voters       int64
	slots        int64
	members      []string // voter ids (RAFT GROUPS members)
	moving       string   // placement moves under way ("g3 +n7,…")
}

// fields reads a RESP2 map (a flat array of key, value pairs) into a map.
func fields(r reply) map[string]reply {
	out := map[string]reply{}
	for i := 0; i+1 < len(r.elems); i += 2 {
		out[r.elems[i].str] = r.elems[i+1]
	}
	return out
}

// raftGroups asks addr for RAFT GROUPS on a fresh connection.
func raftGroups(addr string) ([]groupState, error) {
	c, err := dialRESP(addr, infoTimeout)
	if err != nil {
		return nil, err
	}
	defer c.close()
	r, err := c.do("RAFT", "GROUPS")
	if err != nil {
		return nil, err
	}
	if r.kind != '*' || len(r.elems) == 0 {
		return nil, fmt.Errorf("RAFT GROUPS answered %v", r)
	}
	var out []groupState
	for i, e := range r.elems {
		f := fields(e)
		g := groupState{group: int(f["group"].n), state: f["state"].str, leader: f["leader"].str,
			term: f["term"].n, commitIndex: f["commit_index"].n, appliedIndex: f["applied_index"].n,
			lastLogIndex: f["last_log_index"].n, voters: f["voters"].n, slots: f["slots"].n}
		if m := f["members"].str; m != "" {
			g.members = strings.Split(m, ";")
		}
		g.moving = f["moving"].str
		if g.group != i {
			return nil, fmt.Errorf("RAFT GROUPS lists group %d in place %d: %v", g.group, i, r)
		}
		out = append(out, g)
	}
	return out, nil
}

// groupLeaders reports each group's leader when every running node names the
// same running node and that node says it leads; otherwise nil and what each
// node said.
func (cl *lockdCluster) groupLeaders() ([]*clusterNode, string) {
	var views []string
	var leaders []string
	agree := true
	for _, nd := range cl.running() {
		gs, err := raftGroups(nd.addrs.resp)
		if err != nil {
			views = append(views, fmt.Sprintf("%s: %v", nd.id, err))
			agree = false
			continue
		}
		var desc []string
		if leaders == nil {
			leaders = make([]string, len(gs))
		}
		if len(gs) != len(leaders) {
			agree = false
		}
		for _, g := range gs {
			desc = append(desc, fmt.Sprintf("g%d:%s/%s@%d(applied %d)", g.group, g.state, g.leader, g.term, g.appliedIndex))
			if g.group >= len(leaders) {
				continue
			}
			if g.leader == "" || (leaders[g.group] != "" && leaders[g.group] != g.leader) || (g.leader == nd.id && g.state != "leader") {
				agree = false
			}
			leaders[g.group] = g.leader
		}
		views = append(views, nd.id+": "+strings.Join(desc, " "))
	}
	if !agree || len(leaders) == 0 {
		return nil, strings.Join(views, "; ")
	}
	out := make([]*clusterNode, len(leaders))
	for g, id := range leaders {
		nd := cl.byID(id)
		if nd == nil || nd.proc == nil {
			return nil, strings.Join(views, "; ")
		}
		out[g] = nd
	}
	return out, strings.Join(views, "; ")
}

// waitGroupLeaders polls until every group has a leader that every running
// node agrees on, and ok(leaders) holds (nil: any).
func (cl *lockdCluster) waitGroupLeaders(bound time.Duration, what string, ok func([]*clusterNode) bool) []*clusterNode {
	cl.t.Helper()
	deadline := time.Now().Add(bound)
	for {
		ls, views := cl.groupLeaders()
		if ls != nil && (ok == nil || ok(ls)) {
			return ls
		}
		if time.Now().After(deadline) {
			cl.t.Fatalf("not %s within %v: %s", what, bound, views)
		}
		time.Sleep(pollEvery)
	}
}

// leadCounts counts the groups each node leads.
func leadCounts(ls []*clusterNode) map[string]int {
	out := map[string]int{}
	for _, nd := range ls {
		out[nd.id]++
	}
	return out
}

// spreadTimeout bounds how long the balance loops (every 2s on every node)
// take to spread the group leaders after a start or a restart: a few seconds
// usually, but a hand-over that fails waits 10 s (transferBackoff) before the
// group is tried again, and a loaded machine may need that more than once.
const spreadTimeout = 40 * time.Second

// waitBalanced waits until every group is led by its preferred leader: group
// g by the (g mod n)-th of the n nodes in id order (raftstore's
// preferredLeader), the layout the balance loops settle on and then leave
// alone while every node runs. A layout in which each node merely leads some
// groups may still be moving: a test that read one and then asked CLUSTER INFO
// found a group between two leaders (cluster_state:fail).
func (cl *lockdCluster) waitBalanced(bound time.Duration) []*clusterNode {
	cl.t.Helper()
	var ids []string
	for _, nd := range cl.nodes {
		ids = append(ids, nd.id)
	}
	slices.Sort(ids)
	return cl.waitGroupLeaders(bound, "every group led by its preferred leader", func(ls []*clusterNode) bool {
		for g, nd := range ls {
			if nd.id != ids[g%len(ids)] {
				return false
			}
		}
		return true
	})
}

// waitGroupsLed polls RAFT GROUPS on one process until every group has a
// leader (a lone node: until it leads them all). PING is answered at once, and
// a group's commands wait for its election, but /readyz and the like answer
// for every group.
func (p *lockdProc) waitGroupsLed(bound time.Duration) error {
	deadline := time.Now().Add(bound)
	var last string
	for time.Now().Before(deadline) {
		if p.hasExited() {
			return fmt.Errorf("exited (%v)", p.cmd.ProcessState)
		}
		gs, err := raftGroups(p.addr)
		if err == nil {
			last = ""
			for _, g := range gs {
				if g.leader == "" {
					last += fmt.Sprintf(" group %d (%s) has no leader;", g.group, g.state)
				}
			}
			if last == "" {
				return nil
			}
		} else {
			last = err.Error()
		}
		time.Sleep(pollEvery)
	}
	return fmt.Errorf("not every group has a leader within %v:%s", bound, last)
}

// slotRange is slots from..to, inclusive.
type slotRange struct{ from, to int64 }

func (r slotRange) String() string { return fmt.Sprintf("%d-%d", r.from, r.to) }

// shardsByGroup reads CLUSTER SHARDS from addr on a fresh connection (the
// command makes its connection cluster-aware) and returns each group's slot
// ranges and master node id; an error unless all groups are listed (each has
// a leader).
func shardsByGroup(addr string, groups int) ([][]slotRange, []string, error) {
	c, err := dialRESP(addr, infoTimeout)
	if err != nil {
		return nil, nil, err
	}
	defer c.close()
	r, err := c.do("CLUSTER", "SHARDS")
	if err != nil {
		return nil, nil, err
	}
	if r.kind != '*' || len(r.elems) != groups {
		return nil, nil, fmt.Errorf("CLUSTER SHARDS lists %d shards, want %d (one per group): %v", len(r.elems), groups, r)
	}
	ranges := make([][]slotRange, groups)
	masters := make([]string, groups)
	for g, sh := range r.elems {
		f := fields(sh)
		sl := f["slots"].elems
		for i := 0; i+1 < len(sl); i += 2 {
			ranges[g] = append(ranges[g], slotRange{sl[i].n, sl[i+1].n})
		}
		for _, n := range f["nodes"].elems {
			if nf := fields(n); nf["role"].str == "master" {
				masters[g] = nf["id"].str
			}
		}
	}
	return ranges, masters, nil
}

// groupOfSlot returns the group whose ranges hold slot (-1: none).
func groupOfSlot(ranges [][]slotRange, slot int64) int {
	for g, rs := range ranges {
		for _, r := range rs {
			if r.from <= slot && slot <= r.to {
				return g
			}
		}
	}
	return -1
}

// keySlot is CLUSTER KEYSLOT key.
func keySlot(t testing.TB, c *respConn, key string) int64 {
	t.Helper()
	return mustInt(t, c, "CLUSTER", "KEYSLOT", key)
}

// keyGroups asks addr which group holds each key while no slot has moved
// (INFO's shard_map_version is 1): the map then is the even split, group g
// holding the g-th run of consecutive slots, whose length RAFT GROUPS gives;
// shard.Slot gives each key's slot (a lone node, which shows no cluster,
// refuses CLUSTER KEYSLOT as a standalone Redis does; shard's tests check
// Slot against Redis's CLUSTER KEYSLOT). It fails the test on a moved map.
// (TestClusterAwareClients checks that CLUSTER SHARDS and SLOTS show the same
// ranges.)
func keyGroups(t testing.TB, addr string, keys ...string) map[string]int {
	t.Helper()
	info, err := raftInfo(addr)
	if err != nil {
		t.Fatalf("INFO raft on %s: %v", addr, err)
	}
	if v := info["shard_map_version"]; v != "1" {
		t.Fatalf("INFO raft on %s: shard_map_version is %q; the groups of keys are known here only for the first map (1)", addr, v)
	}
	gs, err := raftGroups(addr)
	if err != nil {
		t.Fatalf("RAFT GROUPS on %s: %v", addr, err)
	}
	ranges := evenSplit(gs)
	if ranges == nil {
		t.Fatalf("RAFT GROUPS on %s: the groups' slots do not add up to 16384: %+v", addr, gs)
	}
	out := map[string]int{}
	for _, k := range keys {
		out[k] = groupOfSlot(ranges, int64(shard.Slot([]byte(k))))
	}
	return out
}

// evenSplit is the first shard map from RAFT GROUPS's slot counts: each
// group's slots follow the previous group's (nil when they do not cover the
// 16384 slots).
func evenSplit(gs []groupState) [][]slotRange {
	out := make([][]slotRange, len(gs))
	var next int64
	for _, g := range gs {
		if g.slots <= 0 {
			return nil
		}
		out[g.group] = []slotRange{{next, next + g.slots - 1}}
		next += g.slots
	}
	if next != 16384 {
		return nil
	}
	return out
}

// groupSet lists the distinct groups of a keyGroups result, sorted.
func groupSet(m map[string]int) []int {
	var out []int
	for _, g := range m {
		if !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}

// tokenScope names the space a fencing token is unique in: the group of the
// key when it is known, else the key itself.
func tokenScope(groups map[string]int, name string) string {
	if g, ok := groups[name]; ok {
		return "group " + strconv.Itoa(g)
	}
	return "name " + name
}
