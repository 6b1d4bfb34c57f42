package test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// defaultGroups is the group count of a three-node cluster started with
// -peers and no -groups: one group per node.
const defaultGroups = 3

// clusterLayout is one consistent reading of a cluster's slot layout: the
// group leaders (every node agreeing, before and after the reads) and what
// CLUSTER SLOTS, SHARDS and NODES answered in between.
type clusterLayout struct {
	leaders []*clusterNode
	groups  []groupState // RAFT GROUPS on the node asked
	slots   []redis.ClusterSlot
	shards  [][]slotRange // by group, from CLUSTER SHARDS
	masters []string      // by group, the CLUSTER SHARDS master's node id
	nodes   string        // CLUSTER NODES
}

// readLayout reads the layout through nd (CLUSTER SLOTS through cc), again
// while a leader changed during the reads (the balance loops move leaders
// for a few seconds after a start), bounded. CLUSTER SHARDS and NODES go over
// fresh connections: they make their connection cluster-aware.
func readLayout(t *testing.T, ctx context.Context, cl *lockdCluster, cc *redis.ClusterClient, nd *clusterNode) clusterLayout {
	t.Helper()
	deadline := time.Now().Add(spreadTimeout)
	for {
		var l clusterLayout
		var err error
		before, views := cl.groupLeaders()
		if before != nil {
			l.groups, err = raftGroups(nd.addrs.resp)
		}
		if before != nil && err == nil {
			l.slots, err = cc.ClusterSlots(ctx).Result()
		}
		if before != nil && err == nil {
			l.shards, l.masters, err = shardsByGroup(nd.addrs.resp, len(before))
		}
		if before != nil && err == nil {
			l.nodes, err = clusterNodes(nd.addrs.resp)
		}
		if before != nil && err == nil {
			l.leaders, views = cl.groupLeaders()
			if slices.Equal(before, l.leaders) {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no stable slot layout within %v (last error %v): %s", spreadTimeout, err, views)
		}
		time.Sleep(pollEvery)
	}
}

// TestClusterAwareClients: a three-node cluster of three groups (the default:
// one per node) spreads the group leaders over the nodes and shows it to
// cluster-aware clients: CLUSTER SLOTS has one range per group whose first
// node is the group's leader, CLUSTER NODES three masters, CLUSTER SHARDS three shards,
// and a cluster-aware connection is sent -MOVED to the leader. go-redis's
// ClusterClient and a plain Client (forwarded, never redirected) take locks in
// every group at once; redis-cli -c works; a multi-key write across groups is
// refused with CROSSSLOT, while DEL across groups is split and counted.
func TestClusterAwareClients(t *testing.T) {
	cl := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leaders := cl.waitBalanced(spreadTimeout)
	if len(leaders) != defaultGroups {
		t.Fatalf("RAFT GROUPS lists %d groups, want %d (the default for a new cluster)", len(leaders), defaultGroups)
	}
	var seeds []string
	for _, nd := range cl.nodes {
		seeds = append(seeds, nd.addrs.resp)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds, MaxRedirects: 8})
	defer cc.Close()
	home := cl.nodes[1] // the plain client's node
	plain := redis.NewClient(&redis.Options{Addr: home.addrs.resp})
	defer plain.Close()

	// The layout: one range per group, led by the group's leader.
	l := readLayout(t, ctx, cl, cc, home)
	t.Logf("group leaders: %v (groups led per node %v)", nodeIDs(l.leaders), leadCounts(l.leaders))
	slices.SortFunc(l.slots, func(a, b redis.ClusterSlot) int { return a.Start - b.Start })
	if len(l.slots) != defaultGroups {
		t.Fatalf("CLUSTER SLOTS has %d ranges, want %d (one per group): %+v", len(l.slots), defaultGroups, l.slots)
	}
	seenGroup := map[int]bool{}
	for i, s := range l.slots {
		if (i == 0 && s.Start != 0) || (i > 0 && s.Start != l.slots[i-1].End+1) || (i == len(l.slots)-1 && s.End != 16383) {
			t.Errorf("CLUSTER SLOTS does not cover 0-16383 in consecutive ranges: %+v", l.slots)
		}
		g := groupOfSlot(l.shards, int64(s.Start))
		if g < 0 || !slices.Equal(l.shards[g], []slotRange{{int64(s.Start), int64(s.End)}}) || seenGroup[g] {
			t.Errorf("CLUSTER SLOTS range %d-%d is not exactly one group's slots in CLUSTER SHARDS %v", s.Start, s.End, l.shards)
			continue
		}
		seenGroup[g] = true
		if n := int64(s.End - s.Start + 1); l.groups[g].slots != n {
			t.Errorf("RAFT GROUPS says group %d holds %d slots; CLUSTER SLOTS gives it %d-%d", g, l.groups[g].slots, s.Start, s.End)
		}
		if len(s.Nodes) != 3 {
			t.Errorf("CLUSTER SLOTS range %d-%d lists %d nodes, want the leader and 2 replicas: %+v", s.Start, s.End, len(s.Nodes), s.Nodes)
			continue
		}
		if want := l.leaders[g]; s.Nodes[0].Addr != want.addrs.resp {
			t.Errorf("CLUSTER SLOTS range %d-%d (group %d) names %s first; RAFT GROUPS says %s (%s) leads", s.Start, s.End, g,
				s.Nodes[0].Addr, want.id, want.addrs.resp)
		}
		if s.Nodes[0].ID != l.masters[g] {
			t.Errorf("CLUSTER SLOTS range %d-%d names master %s, CLUSTER SHARDS %s", s.Start, s.End, s.Nodes[0].ID, l.masters[g])
		}
	}
	// CLUSTER NODES: every node a master ("myself" once: the node asked),
	// holding the slots of the groups it leads.
	lines := strings.Split(strings.TrimSpace(l.nodes), "\n")
	if len(lines) != 3 {
		t.Fatalf("CLUSTER NODES has %d lines, want 3:\n%s", len(lines), l.nodes)
	}
	myself := 0
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) < 8 {
			t.Fatalf("CLUSTER NODES line %q", line)
		}
		addr, _, _ := strings.Cut(f[1], "@")
		flags := strings.Split(f[2], ",")
		if !slices.Contains(flags, "master") {
			t.Errorf("CLUSTER NODES: %s is not a master: %q", addr, line)
		}
		if slices.Contains(flags, "myself") {
			myself++
			if addr != home.addrs.resp {
				t.Errorf("CLUSTER NODES through %s flags %s as myself", home.addrs.resp, addr)
			}
		}
		var want, got int64
		for g, ld := range l.leaders {
			if ld.addrs.resp == addr {
				want += l.groups[g].slots
			}
		}
		for _, r := range f[8:] {
			a, b, ok := strings.Cut(r, "-")
			from, _ := strconv.ParseInt(a, 10, 64)
			to := from
			if ok {
				to, _ = strconv.ParseInt(b, 10, 64)
			}
			got += to - from + 1
		}
		if got != want || want == 0 {
			t.Errorf("CLUSTER NODES gives %s %d slots, the groups it leads hold %d: %q", addr, got, want, line)
		}
	}
	if myself != 1 {
		t.Errorf("CLUSTER NODES flags %d lines as myself, want 1:\n%s", myself, l.nodes)
	}
	shards, err := cc.ClusterShards(ctx).Result()
	if err != nil || len(shards) != defaultGroups {
		t.Fatalf("CLUSTER SHARDS = %d shards (%v), want %d: %+v", len(shards), err, defaultGroups, shards)
	}
	info, err := plain.ClusterInfo(ctx).Result()
	if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:3") ||
		!strings.Contains(info, "cluster_size:3") {
		t.Fatalf("CLUSTER INFO = %q, %v", info, err)
	}
	if slot, err := plain.ClusterKeySlot(ctx, "{user1000}.following").Result(); err != nil || slot != 3443 {
		t.Fatalf("CLUSTER KEYSLOT = %d, %v", slot, err)
	}
	// The cluster face on every node: HELLO mode cluster, INFO redis_mode:cluster
	// and cluster_enabled:1 (which redis-py's RedisCluster checks).
	for _, nd := range cl.nodes {
		c := nd.proc.conn()
		if r := must(t, c, "HELLO", "2"); fields(r)["mode"].str != "cluster" {
			t.Errorf("HELLO 2 on %s = %v, want mode cluster", nd.id, r)
		}
		if r := must(t, c, "INFO", "server", "cluster"); !strings.Contains(r.str, "\r\nredis_mode:cluster\r\n") ||
			!strings.Contains(r.str, "# Cluster\r\ncluster_enabled:1\r\n") {
			t.Errorf("INFO server cluster on %s = %q, want redis_mode:cluster and cluster_enabled:1", nd.id, r.str)
		}
	}

	// Keys of a group another node leads: a cluster-aware connection is sent
	// there; a plain one is served.
	var probes []string
	for i := range 32 {
		probes = append(probes, fmt.Sprintf("probe:%d", i))
	}
	probeGroups := keyGroups(t, home.addrs.resp, probes...)
	checkMoved(t, cl, home, probes, probeGroups)

	// Both clients at once, 60 locks over every group.
	var names []string
	for i := range 60 {
		names = append(names, fmt.Sprintf("lock:%d", i))
	}
	groups := keyGroups(t, home.addrs.resp, names...)
	if gs := groupSet(groups); len(gs) != defaultGroups {
		t.Fatalf("the lock names span groups %v, want all %d", gs, defaultGroups)
	}
	var mu sync.Mutex
	tokens := map[string]int64{}
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	for who, do := range []func(context.Context, ...any) *redis.Cmd{cc.Do, plain.Do} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := who; i < len(names); i += 2 {
				tok, err := do(ctx, "LOCK.ACQUIRE", names[i], "w", "PX", "600000").Int64()
				if err != nil {
					errs <- fmt.Errorf("LOCK.ACQUIRE %s w PX 600000 through the %s client: %v", names[i], []string{"cluster", "plain"}[who], err)
					return
				}
				mu.Lock()
				tokens[names[i]] = tok
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, k := range names {
		for who, c := range map[string]doer{"cluster": cc, "plain": plain} {
			if v, err := c.Do(ctx, "LOCK.VALIDATE", k, tokens[k]).Int64(); v != 1 || err != nil {
				t.Errorf("LOCK.VALIDATE %s %d through the %s client = %d, %v; want 1", k, tokens[k], who, v, err)
			}
		}
		if _, err := plain.Do(ctx, "LOCK.ACQUIRE", k, "other", "PX", "1000").Int64(); !errors.Is(err, redis.Nil) {
			t.Errorf("a second LOCK.ACQUIRE %s (held by w) = %v; want nil (not granted)", k, err)
		}
	}

	// redis-cli in cluster mode: a write through one node, read through another.
	cli := func(nd *clusterNode, args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, "redis-cli", append([]string{"-c", "-h", "127.0.0.1", "-p", port(nd.addrs.resp)}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli -c %s: %q, %v", strings.Join(args, " "), out, err)
		}
		return strings.TrimSpace(string(out))
	}
	if out := cli(cl.nodes[0], "SET", "cli-key", "v1"); out != "OK" {
		t.Errorf("redis-cli -c SET cli-key v1 = %q", out)
	}
	if out := cli(cl.nodes[2], "GET", "cli-key"); out != "v1" {
		t.Errorf("redis-cli -c GET cli-key through another node = %q, want v1", out)
	}

	// Multi-key commands: across groups MSET is refused whole, DEL is split.
	a, b, c := "", "", ""
	for _, p := range probes {
		switch {
		case a == "":
			a = p
		case b == "" && probeGroups[p] != probeGroups[a]:
			b = p
		case c == "" && probeGroups[p] == probeGroups[a]:
			c = p
		}
	}
	if b == "" || c == "" {
		t.Fatalf("no probe keys in one group and in two groups among %v", probeGroups)
	}
	rc := home.proc.conn()
	rc.timeout = clusterOpTimeout
	if r, err := rc.do("MSET", a, "1", b, "2"); err != nil || !strings.HasPrefix(r.str, "CROSSSLOT") {
		t.Errorf("MSET %s 1 %s 2 (groups %d, %d) = %v, %v; want CROSSSLOT", a, b, probeGroups[a], probeGroups[b], r, err)
	}
	if n := mustInt(t, rc, "EXISTS", a, b); n != 0 {
		t.Errorf("EXISTS %s %s = %d after the refused MSET, want 0", a, b, n)
	}
	must(t, rc, "MSET", a, "1", c, "3") // one group, two slots: allowed
	must(t, rc, "SET", b, "2")
	if n := mustInt(t, rc, "DEL", a, b, c, "probe:none"); n != 3 {
		t.Errorf("DEL %s %s %s probe:none (over groups %d, %d) = %d, want 3", a, b, c, probeGroups[a], probeGroups[b], n)
	}
	if n := mustInt(t, rc, "EXISTS", a, b, c); n != 0 {
		t.Errorf("EXISTS %s %s %s after DEL = %d, want 0", a, b, c, n)
	}
}

// redisPyTimeout bounds one run of testdata/rediscluster.py.
const redisPyTimeout = 2 * time.Minute

// runRedisPy runs testdata/rediscluster.py under /usr/bin/python3 (Debian's
// python3-redis, which make deps installs) with args, bounded by
// redisPyTimeout, and fails the test unless it prints "ok".
func runRedisPy(t *testing.T, args ...string) {
	t.Helper()
	if err := exec.Command("/usr/bin/python3", "-c", "import redis.cluster").Run(); err != nil {
		t.Fatalf("/usr/bin/python3 cannot import redis.cluster (%v): install Debian's python3-redis (make deps)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), redisPyTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "/usr/bin/python3", append([]string{filepath.Join("testdata", "rediscluster.py")}, args...)...).CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "ok") {
		t.Fatalf("rediscluster.py %s: %v (context: %v)\n%s", strings.Join(args, " "), err, ctx.Err(), out)
	}
}

// TestRedisPyCluster: redis-py's RedisCluster (Python, not Go), seeded with
// every node of a three-node cluster, finds cluster mode enabled (INFO
// cluster_enabled:1) and the slot map (CLUSTER SLOTS), sets and reads keys of
// every group, takes and releases redis-py Locks (SET NX PX, Lua release and
// extend scripts) in every group; a plain redis.Redis on each node reads what
// it wrote. On a lone node RedisCluster is refused exactly as on a standalone
// redis-server (compat's TestRedisPyStandalone compares the two).
func TestRedisPyCluster(t *testing.T) {
	cl := startCluster(t, 3)
	cl.waitBalanced(spreadTimeout)
	args := []string{"cluster"}
	for _, nd := range cl.nodes {
		args = append(args, nd.addrs.resp)
	}
	runRedisPy(t, args...)
}

// checkMoved: through nd, a connection that sent READONLY (cluster-aware) is
// answered -MOVED slot leader-address for a key of a group another node leads,
// and a plain connection gets the value. Retried (bounded) while a leader
// moves meanwhile.
func checkMoved(t *testing.T, cl *lockdCluster, nd *clusterNode, keys []string, groups map[string]int) {
	t.Helper()
	deadline := time.Now().Add(spreadTimeout)
	for {
		ls := cl.waitGroupLeaders(leaderTimeout, "every group led", nil)
		key := ""
		for _, k := range keys {
			if ls[groups[k]] != nd {
				key = k
				break
			}
		}
		if key == "" {
			t.Fatalf("%s leads the groups of all of %v", nd.id, keys)
		}
		aware, plain := nd.proc.conn(), nd.proc.conn()
		must(t, aware, "READONLY")
		r, err := aware.do("GET", key)
		if err != nil {
			t.Fatalf("GET %s on a cluster-aware connection to %s: %v", key, nd.id, err)
		}
		slot := mustInt(t, plain, "CLUSTER", "KEYSLOT", key)
		want := fmt.Sprintf("MOVED %d %s", slot, ls[groups[key]].addrs.resp)
		if pr := must(t, plain, "GET", key); !pr.null {
			t.Errorf("GET %s on a plain connection to %s = %v, want nil", key, nd.id, pr)
		}
		if r.isErr() && r.str == want {
			return
		}
		if now, _ := cl.groupLeaders(); slices.Equal(now, ls) || time.Now().After(deadline) {
			t.Fatalf("GET %s (group %d, led by %s) on a cluster-aware connection to %s = %v, want -%s", key, groups[key],
				ls[groups[key]].id, nd.id, r, want)
		}
	}
}

// doer is a go-redis client.
type doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// clusterNodes reads CLUSTER NODES from addr on a fresh connection.
func clusterNodes(addr string) (string, error) {
	c, err := dialRESP(addr, infoTimeout)
	if err != nil {
		return "", err
	}
	defer c.close()
	r, err := c.do("CLUSTER", "NODES")
	if err == nil && r.kind != '$' {
		err = fmt.Errorf("CLUSTER NODES answered %v", r)
	}
	return r.str, err
}

// nodeIDs lists the ids of nodes.
func nodeIDs(ns []*clusterNode) []string {
	out := make([]string, len(ns))
	for i, nd := range ns {
		out[i] = nd.id
	}
	return out
}

// retryTryAgain sends a command until it is answered other than TRYAGAIN
// (a group whose new leader is not serving yet), bounded.
func retryTryAgain(t *testing.T, c *respConn, args ...string) reply {
	t.Helper()
	deadline := time.Now().Add(leaderTimeout)
	for {
		r, err := c.do(args...)
		if err != nil {
			t.Fatalf("%s: %v", strings.Join(args, " "), err)
		}
		if !isTryAgain(r) || time.Now().After(deadline) {
			return r
		}
		pace()
	}
}

// TestNodeKillMovesLeaders: SIGKILL of the node that leads the most groups of
// a three-node cluster of the default three groups; every group is soon led by one of the two
// live nodes, every lock taken before still validates with its token and
// refuses a second holder; the node, restarted on its data, leads groups
// again (the balance loops hand it its share).
func TestNodeKillMovesLeaders(t *testing.T) {
	cl := startCluster(t, 3)
	leaders := cl.waitBalanced(spreadTimeout)
	counts := leadCounts(leaders)
	victim := cl.nodes[0]
	for _, nd := range cl.nodes {
		if counts[nd.id] > counts[victim.id] {
			victim = nd
		}
	}
	live := cl.nodes[(victim.idx+1)%len(cl.nodes)]
	t.Logf("group leaders %v; %s leads %d groups and will be killed", nodeIDs(leaders), victim.id, counts[victim.id])

	var names []string
	for i := range 100 {
		names = append(names, fmt.Sprintf("kill:%d", i))
	}
	groups := keyGroups(t, live.addrs.resp, names...)
	if gs := groupSet(groups); len(gs) != len(leaders) {
		t.Fatalf("the lock names span groups %v, want all %d", gs, len(leaders))
	}
	c := live.proc.conn()
	c.timeout = clusterOpTimeout
	tokens := map[string]int64{}
	for _, k := range names {
		tokens[k] = mustInt(t, c, "LOCK.ACQUIRE", k, "holder", "PX", "600000")
	}

	killAt := time.Now()
	cl.kill(victim)
	leaders = cl.waitGroupLeaders(leaderTimeout, "every group led by a live node", func(ls []*clusterNode) bool {
		return !slices.Contains(ls, victim)
	})
	t.Logf("%v after the kill every group has a live leader: %v", time.Since(killAt).Round(time.Millisecond), nodeIDs(leaders))
	for _, k := range names {
		if r := retryTryAgain(t, c, "LOCK.VALIDATE", k, strconv.FormatInt(tokens[k], 10)); r.kind != ':' || r.n != 1 {
			t.Errorf("LOCK.VALIDATE %s %d (group %d) after the kill = %v, want 1", k, tokens[k], groups[k], r)
		}
		if r := retryTryAgain(t, c, "LOCK.ACQUIRE", k, "other", "PX", "1000"); !r.null {
			t.Errorf("a second LOCK.ACQUIRE %s (group %d) after the kill = %v, want nil (held)", k, groups[k], r)
		}
	}

	restartAt := time.Now()
	cl.restart(victim)
	leaders = cl.waitGroupLeaders(30*time.Second, victim.id+" leading a group again", func(ls []*clusterNode) bool {
		return slices.Contains(ls, victim)
	})
	t.Logf("%s restarted; leads groups again %v later: %v", victim.id, time.Since(restartAt).Round(time.Millisecond), nodeIDs(leaders))
	vc := victim.proc.conn()
	vc.timeout = clusterOpTimeout
	for _, k := range names {
		if r := retryTryAgain(t, vc, "LOCK.VALIDATE", k, strconv.FormatInt(tokens[k], 10)); r.kind != ':' || r.n != 1 {
			t.Errorf("LOCK.VALIDATE %s %d through the restarted %s = %v, want 1", k, tokens[k], victim.id, r)
		}
	}
}

// TestClusterCommandsRightAfterStart: a lone lockd asked for its cluster
// layout (or sent -MOVED-eligible commands after READONLY) as soon as it
// answers PING, before its groups have settled, answers as a standalone
// redis-server does (a single node shows no cluster: "cluster support
// disabled", and the GET after the refused READONLY is served) and keeps
// running. One process per command, so that each is reported.
func TestClusterCommandsRightAfterStart(t *testing.T) {
	const disabled = "(error) ERR This instance has cluster support disabled"
	for _, tc := range []struct {
		cmds [][]string
		want []string // each command's reply, as reply.String
	}{
		{[][]string{{"CLUSTER", "SLOTS"}}, []string{disabled}},
		{[][]string{{"CLUSTER", "SHARDS"}}, []string{disabled}},
		{[][]string{{"CLUSTER", "NODES"}}, []string{disabled}},
		{[][]string{{"CLUSTER", "INFO"}}, []string{disabled}},
		{[][]string{{"CLUSTER", "MYID"}}, []string{disabled}},
		{[][]string{{"READONLY"}, {"GET", "k"}}, []string{disabled, "(nil)"}},
	} {
		var parts []string
		for _, cmd := range tc.cmds {
			parts = append(parts, strings.Join(cmd, " "))
		}
		what := strings.Join(parts, ", then ")
		t.Run(strings.ReplaceAll(parts[0], " ", "-"), func(t *testing.T) {
			p := spawnPinged(t, "lockd", filepath.Join(t.TempDir(), "data"))
			c := p.conn()
			for i, cmd := range tc.cmds {
				r, err := c.do(cmd...)
				if err != nil {
					p.waitExit(time.Second)
					t.Fatalf("%s right after the start: %v; the process %s", what, err, exitNote(p))
				}
				if r.String() != tc.want[i] {
					t.Errorf("%s right after the start: %s = %v, want %s", what, strings.Join(cmd, " "), r, tc.want[i])
				}
			}
			if err := p.waitReady(opTimeout); err != nil {
				t.Fatalf("after %s: %v; the process %s", what, err, exitNote(p))
			}
		})
	}
}

// exitNote says whether p exited and, if so, its first panic line.
func exitNote(p *lockdProc) string {
	if !p.hasExited() {
		return "still runs"
	}
	out := p.stderr.String()
	if i := strings.Index(out, "panic:"); i >= 0 {
		line, _, _ := strings.Cut(out[i:], "\n")
		at := ""
		if j := strings.Index(out[i:], "raftstore/"); j >= 0 {
			at, _, _ = strings.Cut(out[i+j:], " ")
		}
		return fmt.Sprintf("exited (%v): %s at %s", p.cmd.ProcessState, line, at)
	}
	return fmt.Sprintf("exited (%v): %s", p.cmd.ProcessState, lastLine(out))
}

// TestRaftTransferMovesEveryGroup: RAFT TRANSFER id, sent to another node of a
// spread cluster (so the target already leads some groups), hands the target
// the leadership of every group and answers OK.
func TestRaftTransferMovesEveryGroup(t *testing.T) {
	cl := startCluster(t, 3)
	before := cl.waitBalanced(spreadTimeout)
	target := cl.nodes[2]
	// The target's own RAFT GROUPS, polled from before the command on, sees
	// it lead each group: the balance loops hand groups back to their
	// preferred leaders soon after, so a later look would miss some.
	seen := make([]bool, len(before))
	done := make(chan string, 1)
	var stop atomic.Bool
	go func() {
		deadline := time.Now().Add(leaderTimeout)
		var last string
		for !stop.Load() && time.Now().Before(deadline) {
			gs, err := raftGroups(target.addrs.resp)
			all := err == nil
			for _, g := range gs {
				if g.group < len(seen) {
					seen[g.group] = seen[g.group] || g.state == "leader"
					all = all && seen[g.group]
				}
			}
			if all {
				done <- ""
				return
			}
			last = fmt.Sprint(seen, err)
			time.Sleep(time.Millisecond)
		}
		done <- "groups seen led by the target (by group): " + last
	}()
	defer stop.Store(true)
	c := cl.nodes[0].proc.conn()
	c.timeout = clusterOpTimeout
	r, err := c.do("RAFT", "TRANSFER", target.id)
	if err != nil {
		t.Fatalf("RAFT TRANSFER %s: %v", target.id, err)
	}
	if r.kind != '+' || r.str != "OK" {
		t.Errorf("RAFT TRANSFER %s (group leaders %v) = %v, want OK", target.id, nodeIDs(before), r)
	}
	if miss := <-done; miss != "" {
		t.Errorf("after RAFT TRANSFER %s, %s does not lead every group within %v: %s", target.id, target.id, leaderTimeout, miss)
	}
}
