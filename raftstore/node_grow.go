package raftstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/internal/durable"
	"github.com/lockd/lockd/placement"
	"github.com/lockd/lockd/raftstore/group"
	"github.com/lockd/lockd/resp"
	"github.com/lockd/lockd/shard"
)

// More groups at runtime (RAFT ADDGROUPS n, issue 49). Group 0's leader:
//
//  1. replicates a shard map with the larger group count (the new groups own
//     no slot yet); every node, applying it, opens the new groups' Stores,
//     empty, before it routes by the map (ensureGroups), and records the
//     count in GROUPS;
//  2. waits until every node has them open, picks each new group's voters
//     with placement.Rebalance (the least loaded nodes, spread over zones) and
//     has the first of them bootstrap the group with that configuration (the
//     "bootstrap" admin request); the others, empty, vote for it and learn
//     the configuration from its log;
//  3. copies the cluster-wide state the other groups hold (ACL users,
//     namespaces) into each new group, as the commands that made it;
//  4. moves slots to each new group, its even share, from the groups that own
//     the most (the slot moves of RAFT MOVESLOTS).
//
// A group added at runtime is never bootstrapped from -peers: a node that
// missed step 2 waits to be added (bootGroups remembers the count the
// directory was created with).

// bootGroupsFile records, in a data directory whose group count grew, the
// count it was created with: only those groups may be bootstrapped from
// -peers.
const bootGroupsFile = "GROUPS.created"

// autoGroupsFile marks a data directory whose group count follows the node
// count (Config.AutoGroups): written at creation, before GROUPS.
const autoGroupsFile = "GROUPS.auto"

// finishGrowth runs on group 0's leader (placeStep), on a cluster whose
// group count follows its node count: a group added at runtime that owns no
// slot yet, though it has a leader, is a growth cut short after the map grew
// (group 0's leadership moved, a node stopped). It gets what addGroups would
// have given it: the ACL users and namespaces (replayed; the same commands
// again change nothing) and its even share of the slots. finished reports
// whether it tried. A cluster with an explicit -groups is left to its
// operator (RAFT MOVESLOTS), who may have emptied a group on purpose.
func (n *Node) finishGrowth(ctx context.Context) (finished bool, err error) {
	if !n.autoGroups {
		return false, nil
	}
	count := len(n.gs())
	for g := bootGroups(n.cfg.DataDir, count); g < count; g++ {
		if n.ownsSlots(g) {
			continue
		}
		if _, leader := n.groupServers(g); leader == "" {
			continue // not led (yet): nothing can move to it
		}
		n.log.Info("giving a group added at runtime its share", "group", g)
		if err := n.copyClusterState(ctx, g); err != nil {
			return true, fmt.Errorf("copying the ACL and namespaces to group %d: %w", g, err)
		}
		if v := n.takeShare(ctx, g, count); v.IsError() {
			return true, fmt.Errorf("moving slots to group %d: %s", g, v.String())
		}
		return true, nil
	}
	return false, nil
}

// growWithNodes runs on group 0's leader (placeStep): on a cluster whose
// group count follows its node count, it adds groups (RAFT ADDGROUPS) while
// nodes (group 0's members, less those being drained) outnumber them, up to
// MaxGroups. Never fewer groups: a node that leaves takes none away. grew
// reports whether it tried. The target is the count, not a difference, so a
// growth cut short is never doubled by the next tick.
func (n *Node) growWithNodes(ctx context.Context, nodes int) (grew bool, err error) {
	have, want := len(n.gs()), min(nodes, MaxGroups)
	if !n.autoGroups || have >= want || n.growRefusal(want-have) != "" {
		return false, nil // e.g. following a Redis master: ADDGROUPS waits for REPLICAOF NO ONE
	}
	n.log.Info("the cluster has more nodes than groups: adding groups", "groups", have, "nodes", nodes)
	if v := n.addGroups(ctx, want-have); v.IsError() {
		return true, fmt.Errorf("adding groups to follow the node count: %s", v.String())
	}
	return true, nil
}

// bootGroups is the group count dataDir was created with (n when it never
// grew).
func bootGroups(dataDir string, n int) int {
	b, err := os.ReadFile(filepath.Join(dataDir, bootGroupsFile))
	if err != nil {
		return n
	}
	if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v >= 1 && v <= n {
		return v
	}
	return n
}

// ensureGroups opens the groups of a map of count groups this node lacks,
// empty and waiting to be bootstrapped or added, and records the new count
// in the data directory (first the count it was created with). Called by the
// apply of group 0's shard map before the map is used for routing.
func (n *Node) ensureGroups(count int) error {
	n.growMu.Lock()
	defer n.growMu.Unlock()
	select {
	case <-n.closed:
		return group.ErrClosed // Close took the groups it closes
	default:
	}
	cur := n.gs()
	if count <= len(cur) {
		return nil
	}
	if count > MaxGroups {
		return fmt.Errorf("%w: %d (at most %d)", ErrGroups, count, MaxGroups)
	}
	if n.sharedLog == nil {
		return fmt.Errorf("%w: a node created with one group cannot add groups", ErrGroups)
	}
	if n.engine != nil {
		return fmt.Errorf("%w: adding groups: %w", ErrGroups, ErrEngine)
	}
	dir := n.cfg.DataDir
	if _, err := os.Stat(filepath.Join(dir, bootGroupsFile)); err != nil {
		if err := durable.WriteFile(filepath.Join(dir, bootGroupsFile), []byte(strconv.Itoa(len(cur))+"\n"), 0o644); err != nil {
			return err
		}
	}
	next := slices.Clone(cur)
	for g := len(cur); g < count; g++ {
		st, err := n.openGroup(g, count, nil, true)
		if err != nil {
			for _, s := range next[len(cur):] {
				s.Close()
			}
			return fmt.Errorf("opening group %d: %w", g, err)
		}
		next = append(next, st)
	}
	err := durable.WriteFile(filepath.Join(dir, groupsFile), []byte(strconv.Itoa(count)+"\n"), 0o644)
	if err == nil {
		err = durable.SyncDir(dir)
	}
	if err != nil {
		for _, s := range next[len(cur):] {
			s.Close()
		}
		return err
	}
	n.groups.Store(&next)
	n.members.SetGroups(next)
	n.log.Info("opened groups added to the cluster", "groups", count)
	return nil
}

// growWait bounds each wait of RAFT ADDGROUPS (every node opening the new
// groups, each new group electing its leader).
const growWait = 30 * time.Second

// growRefusal is why RAFT ADDGROUPS k cannot run now (an error reply's
// text), or "" when it can.
func (n *Node) growRefusal(k int) string {
	old := len(n.gs())
	switch {
	case k < 1 || old+k > MaxGroups:
		return fmt.Sprintf("ERR the cluster has %d groups: it can add 1 to %d", old, MaxGroups-old)
	case n.sharedLog == nil:
		return "ERR a cluster created with one group cannot add groups"
	case n.engine != nil:
		return "ERR adding groups is " + ErrEngine.Error()
	}
	if master, _ := n.gs()[0].Replication(); master != "" {
		return "ERR groups are not added while the cluster follows a Redis master (REPLICAOF NO ONE first)"
	}
	return ""
}

// addGroups runs RAFT ADDGROUPS k on group 0's leader (nodeAdmin
// "addgroups"); it answers the new group count.
func (n *Node) addGroups(ctx context.Context, k int) resp.Value {
	n.growing.Add(1) // no hand-over of group 0 meanwhile (balanceLoop, placeStep)
	defer n.growing.Add(-1)
	old := len(n.gs())
	want := old + k
	if refusal := n.growRefusal(k); refusal != "" {
		return resp.Error(refusal)
	}
	// Every node must answer (and run a lockd with placement) before the
	// map grows: a node that cannot open the new groups would leave them
	// without voters.
	for end := time.Now().Add(growWait); ; {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		n.refreshAddrs(rctx)
		cancel()
		if _, _, ok := n.placeNodes(); ok {
			break
		}
		if time.Now().After(end) || !n.pause(ctx, 200*time.Millisecond) {
			return resp.Error("ERR a node has not answered lately, or runs a lockd without placement: groups are added only while every node answers")
		}
	}
	// 1. The map with the larger count, applied here first.
	n.moveMu.Lock()
	if err := n.gs()[0].ReadBarrier(ctx); err != nil {
		n.moveMu.Unlock()
		return command.ErrorReply(err)
	}
	n.loadShardMap()
	m := n.ShardMap()
	next, err := m.Grow(want)
	if err != nil {
		n.moveMu.Unlock()
		return resp.Error("ERR " + err.Error())
	}
	enc := next.Encode()
	v := n.proposeInternal(ctx, 0, command.KindShardMap, command.ShardMapArgs(enc))
	n.moveMu.Unlock()
	if v.IsError() {
		return v
	}
	n.noteShardMap(enc)
	if len(n.gs()) < want {
		return resp.Error("ERR this node could not open the new groups (see its log)")
	}
	// 2. Every node has them open; voters bootstrap each.
	if err := n.awaitOpened(ctx, want-1); err != nil {
		return resp.Error("ERR " + err.Error())
	}
	if err := n.bootstrapNew(ctx, old, want); err != nil {
		return resp.Error("ERR " + err.Error())
	}
	// 3. ACL users and namespaces, as in the other groups.
	for g := old; g < want; g++ {
		if err := n.copyClusterState(ctx, g); err != nil {
			return resp.Error(fmt.Sprintf("ERR copying the ACL and namespaces to group %d: %v", g, err))
		}
	}
	// 4. Slots: each new group its even share, from the groups owning most.
	for g := old; g < want; g++ {
		if v := n.takeShare(ctx, g, want); v.IsError() {
			// Never a refusal (TRYAGAIN): the router runs a refused request
			// again, and this one must not add groups twice.
			return resp.Error(fmt.Sprintf("ERR the groups were added; moving slots to group %d failed: %s (RAFT MOVESLOTS moves them)", g, v.String()))
		}
	}
	return resp.Int(int64(want))
}

// awaitOpened waits until every node of group 0 has group g open (its Store
// answers a status call on g's connection header).
func (n *Node) awaitOpened(ctx context.Context, g int) error {
	end := time.Now().Add(growWait)
	for _, srv := range n.gs()[0].Configuration() {
		if string(srv.ID) == n.cfg.NodeID {
			continue
		}
		for {
			if _, _, ok := n.memberStatus(ctx, g, string(srv.Address)); ok {
				break
			}
			if time.Now().After(end) || !n.pause(ctx, 100*time.Millisecond) {
				return fmt.Errorf("node %s has not opened group %d", srv.ID, g)
			}
		}
	}
	return nil
}

// bootstrapNew picks the voters of the new groups old..want-1 (the Adds
// placement.Rebalance gives them, its target leader first) and has each voter
// bootstrap its group with that configuration, then waits for their leaders.
func (n *Node) bootstrapNew(ctx context.Context, old, want int) error {
	var nodes []placement.Node
	var peerAddr map[string]string
	for end := time.Now().Add(growWait); ; {
		var ok bool
		if nodes, peerAddr, ok = n.placeNodes(); ok {
			break
		}
		if time.Now().After(end) || !n.pause(ctx, 200*time.Millisecond) {
			return errors.New("a node has not answered lately: groups are placed only while every node answers")
		}
	}
	cur, ok := n.currentPlacement(old)
	if !ok {
		return errors.New("a group has no leader")
	}
	for range want - old {
		cur.Groups = append(cur.Groups, placement.Group{})
	}
	moves, err := placement.Rebalance(cur, nodes, replicasFor(n.cfg.Replicas, len(nodes)), n.homes(nodes))
	if err != nil {
		return err
	}
	voters := make([][]string, want)
	for _, m := range moves {
		if m.Group >= old && m.Add != "" {
			voters[m.Group] = append(voters[m.Group], m.Add)
		}
	}
	for g := old; g < want; g++ {
		if len(voters[g]) == 0 {
			return fmt.Errorf("no voters for group %d", g)
		}
		var conf []string
		for _, id := range voters[g] {
			conf = append(conf, id+"="+peerAddr[id])
		}
		// One voter bootstraps with the whole configuration: the others,
		// empty, grant it their votes (hashicorp/raft votes for any
		// candidate while it has no configuration) and learn the
		// configuration from its log. Asking each to bootstrap would race
		// with the first one's election (a vote sets a term: then it can no
		// longer bootstrap).
		spec := strings.Join(conf, ",")
		first := voters[g][0]
		var err error
		if first == n.cfg.NodeID {
			err = n.gs()[g].Bootstrap(spec)
		} else {
			err = n.callAdmin(ctx, g, peerAddr[first], command.EncodeRequests([]command.Request{{Op: command.Admin{Action: "bootstrap", Addr: spec}, Spec: command.AdminSpec}}))
		}
		if err != nil {
			return fmt.Errorf("bootstrapping group %d on %s: %w", g, first, err)
		}
		n.log.Info("bootstrapped a group added at runtime", "group", g, "voters", voters[g])
	}
	for g := old; g < want; g++ {
		for end := time.Now().Add(growWait); ; {
			if addr, _ := n.groupLeaderAddr(ctx, g); addr != "" {
				break
			}
			n.forgetLeader(g, "")
			if time.Now().After(end) || !n.pause(ctx, 100*time.Millisecond) {
				return fmt.Errorf("group %d elected no leader", g)
			}
			n.remoteLeader(ctx, g, true)
		}
	}
	return nil
}

// callAdmin sends the encoded admin request req to group g's Store on the
// node at addr and reports an error reply.
func (n *Node) callAdmin(ctx context.Context, g int, addr string, req []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	b, err := n.gs()[g].Call(ctx, addr, req)
	if err != nil {
		return err
	}
	v, _, err := resp.ReadValue(b)
	if err != nil {
		return err
	}
	if len(v.Elems) == 1 && v.Elems[0].IsError() {
		return errors.New(v.Elems[0].String())
	}
	return nil
}

// copyClusterState writes group 0's ACL users and namespaces into group g as
// the commands that make them (ACL SETUSER … reset <rules>, NAMESPACE.SET
// with every option), so that g checks and limits as the other groups do.
// Script caches are not copied: an EVALSHA of a script not loaded since
// answers NOSCRIPT there, and clients send EVAL.
func (n *Node) copyClusterState(ctx context.Context, g int) error {
	run := func(gr int, args ...string) (resp.Value, error) {
		bs := make([][]byte, len(args))
		for i, a := range args {
			bs[i] = []byte(a)
		}
		r, err := group.ParseRequest("", bs)
		if err != nil {
			return resp.Value{}, err
		}
		v := n.doRetrying(ctx, gr, []command.Request{r})[0]
		if v.IsError() {
			return v, errors.New(v.String())
		}
		return v, nil
	}
	for _, u := range n.ACL().Users() {
		f := aclTokens(u.Describe())
		if len(f) < 2 || f[0] != "user" {
			continue
		}
		if _, err := run(g, append([]string{"ACL", "SETUSER", f[1], "reset"}, f[2:]...)...); err != nil {
			return err
		}
	}
	list, err := run(0, "NAMESPACE.LIST")
	if err != nil {
		return err
	}
	for _, p := range list.Elems {
		prefix := p.String()
		info, err := run(0, "NAMESPACE.GET", prefix)
		if err != nil || info.Kind == resp.KindNull {
			continue
		}
		opt := map[string]string{}
		for i := 0; i+1 < len(info.Elems); i += 2 {
			opt[info.Elems[i].String()] = info.Elems[i+1].String()
		}
		args := []string{"NAMESPACE.SET", prefix}
		for _, k := range []string{"maxttl", "defaultttl", "maxwaiters", "rate", "lockdelay", "safety", "fencedby"} {
			if v, ok := opt[k]; ok && v != "" {
				args = append(args, strings.ToUpper(k), v)
			}
		}
		if _, err := run(g, args...); err != nil {
			return err
		}
	}
	return nil
}

// aclTokens splits an ACL LIST line into its rules, keeping a selector
// "(…)" whole.
func aclTokens(line string) []string {
	var out []string
	depth := 0
	for _, w := range strings.Fields(line) {
		if depth > 0 {
			out[len(out)-1] += " " + w
		} else {
			out = append(out, w)
		}
		depth += strings.Count(w, "(") - strings.Count(w, ")")
	}
	return out
}

// takeShare moves group g's even share of the slots (Slots/count) to it,
// from the groups that own the most, a contiguous run at a time.
func (n *Node) takeShare(ctx context.Context, g, count int) resp.Value {
	want := shard.Slots / count
	start := time.Now()
	for {
		n.loadShardMap()
		m := n.ShardMap()
		owned := make([]int, count)
		var last = make([]shard.Range, count) // each group's last range
		for _, r := range m.Ranges() {
			owned[r.Group] += int(r.To-r.From) + 1
			last[r.Group] = r
		}
		need := want - owned[g]
		if need <= 0 {
			return resp.OK
		}
		src := 0
		for i := range owned {
			if i != g && owned[i] > owned[src] || src == g {
				src = i
			}
		}
		give := min(need, owned[src]-want, int(last[src].To-last[src].From)+1)
		if give <= 0 {
			return resp.OK // every other group is at its share
		}
		to := last[src].To
		from := to - uint16(give) + 1
		if v := n.moveSlots(ctx, from, to, g); v.IsError() {
			// A refused move changed nothing: try it again (an election,
			// a group between leaders), within growWait.
			if !isRefused(v) || time.Since(start) > growWait || !n.pause(ctx, 100*time.Millisecond) {
				return v
			}
		}
	}
}
