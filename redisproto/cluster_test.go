package redisproto

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
	"github.com/lockd/lockd/shard"
)

// fakeCluster is the shared truth of three nodes A, B, C running four groups
// over a map in which group 2 also owns slots 100-199: ranges 0-99 (g0),
// 100-199 (g2), 200-4095 (g0), 4096-8191 (g1), 8192-12287 (g2), 12288-16383
// (g3). Each node is a real door on its own viewStore.
type fakeCluster struct {
	mu      sync.Mutex
	m       shard.Map
	addrs   map[string]string // node id -> RESP address
	leaders [4]string         // group -> leader node id ("": none)
	members []string          // the nodes in the View (all of nodeIDs unless shrunk)
	stores  map[string]*viewStore
	servers map[string]*Server
}

var nodeIDs = []string{"A", "B", "C"}

// viewStore is one node's Store: it answers every request "served by <node>"
// and records what reached it; its View is the cluster's, seen from its node.
type viewStore struct {
	self  string
	cl    *fakeCluster
	views atomic.Int64 // ClusterView calls

	mu  sync.Mutex
	got []string // each request that reached Do, as "name arg1 arg2…"
}

func (s *viewStore) Do(_ context.Context, reqs []command.Request) []resp.Value {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]resp.Value, len(reqs))
	for i, r := range reqs {
		if tx, ok := r.Op.(command.Tx); ok {
			var parts []string
			elems := make([]resp.Value, len(tx.Cmds))
			for j, c := range tx.Cmds {
				parts = append(parts, joinArgs(c))
				elems[j] = resp.BulkString("served by " + s.self)
			}
			s.got = append(s.got, "exec ["+strings.Join(parts, "; ")+"]")
			out[i] = resp.Array(elems...)
			continue
		}
		s.got = append(s.got, joinArgs(r.Args))
		out[i] = resp.BulkString("served by " + s.self)
	}
	return out
}

func joinArgs(args [][]byte) string {
	var parts []string
	for _, a := range args {
		parts = append(parts, string(a))
	}
	return strings.Join(parts, " ")
}

func (s *viewStore) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

func (s *viewStore) ClusterView() shard.View {
	s.views.Add(1)
	return s.cl.view(s.self)
}

// Voters counts the nodes of the View, without counting a View call.
func (s *viewStore) Voters() int { return len(s.cl.view(s.self).Nodes) }

func (s *viewStore) Replicas() int         { return 1 }
func (s *viewStore) Stats() [][2]string    { return [][2]string{{"raft_term", "7"}} }
func (s *viewStore) KeyspaceInfo() string  { return "" }
func (s *viewStore) LockInfo() [][2]string { return nil }
func (s *viewStore) KillScripts() bool     { return false }

// startFakeCluster serves A, B and C with cfg; A leads groups 0 and 3, B
// group 1, C group 2.
func startFakeCluster(t *testing.T, cfg Config) *fakeCluster {
	t.Helper()
	m, _ := shard.NewMap(4)
	m, err := m.Assign(100, 199, 2)
	if err != nil {
		t.Fatal(err)
	}
	cl := &fakeCluster{m: m, addrs: map[string]string{}, stores: map[string]*viewStore{}, servers: map[string]*Server{},
		leaders: [4]string{"A", "B", "C", "A"}, members: nodeIDs}
	for _, id := range nodeIDs {
		st := &viewStore{self: id, cl: cl}
		s := startServer(t, cfg, st)
		cl.stores[id], cl.servers[id] = st, s
		cl.mu.Lock()
		cl.addrs[id] = s.Addr()
		cl.mu.Unlock()
	}
	return cl
}

// setLeaders changes the groups' leaders ("": the group has none).
func (cl *fakeCluster) setLeaders(l0, l1, l2, l3 string) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.leaders = [4]string{l0, l1, l2, l3}
}

// setMembers makes ids the cluster's only nodes, every group led by the
// first (one id: a single node; nodeIDs and setLeaders: the three again).
func (cl *fakeCluster) setMembers(ids ...string) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.members = ids
	cl.leaders = [4]string{ids[0], ids[0], ids[0], ids[0]}
}

// view is the cluster as node self sees it: every group has all the members
// as members, its leader first.
func (cl *fakeCluster) view(self string) shard.View {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	v := shard.View{Map: cl.m, Self: self}
	for i, id := range cl.members {
		v.Nodes = append(v.Nodes, shard.NodeAddress{ID: id, RESPAddr: cl.addrs[id], PeerAddr: "127.0.0.1:" + strconv.Itoa(7391+i)})
	}
	for _, l := range cl.leaders {
		var g shard.GroupView
		if l != "" {
			g.Members = append(g.Members, cl.member(l, true))
		}
		for _, id := range cl.members {
			if id != l {
				g.Members = append(g.Members, cl.member(id, false))
			}
		}
		v.Groups = append(v.Groups, g)
	}
	return v
}

func (cl *fakeCluster) member(id string, leader bool) shard.Member {
	return shard.Member{ID: id, RESPAddr: cl.addrs[id], PeerAddr: "peer-" + id, Leader: leader, Applied: 42}
}

// keyIn returns a key whose slot group g owns.
func (cl *fakeCluster) keyIn(t *testing.T, g int) string {
	t.Helper()
	for i := range 100000 {
		k := "key:" + strconv.Itoa(i)
		if cl.m.GroupOf([]byte(k)) == g {
			return k
		}
	}
	t.Fatalf("no key in group %d", g)
	return ""
}

func (cl *fakeCluster) client(t *testing.T, id string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: cl.addrs[id], MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestClusterSlotsFromView: one CLUSTER SLOTS entry per range of the map, in
// slot order, each with its group's leader first; a leaderless group's ranges
// are left out.
func TestClusterSlotsFromView(t *testing.T) {
	cl := startFakeCluster(t, Config{})
	ctx := testCtx(t)
	c := cl.client(t, "B")
	slots, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		from, to int
		nodes    string
	}
	var got []entry
	for _, s := range slots {
		var ns []string
		for _, n := range s.Nodes {
			for _, id := range nodeIDs {
				if n.Addr == cl.addrs[id] && n.ID == nodeID(id) {
					ns = append(ns, id)
				}
			}
		}
		got = append(got, entry{int(s.Start), int(s.End), strings.Join(ns, ",")})
	}
	want := []entry{{0, 99, "A,B,C"}, {100, 199, "C,A,B"}, {200, 4095, "A,B,C"}, {4096, 8191, "B,A,C"},
		{8192, 12287, "C,A,B"}, {12288, 16383, "A,B,C"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("CLUSTER SLOTS = %v\nwant %v", got, want)
	}

	cl.setLeaders("A", "B", "", "A")
	slots, err = c.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	var ranges []string
	for _, s := range slots {
		ranges = append(ranges, fmt.Sprintf("%d-%d", s.Start, s.End))
	}
	if r := strings.Join(ranges, " "); r != "0-99 200-4095 4096-8191 12288-16383" {
		t.Fatalf("CLUSTER SLOTS ranges with group 2 leaderless = %s", r)
	}
}

// TestClusterShardsFromView: one shard per group, its ranges flat, its
// leader the master.
func TestClusterShardsFromView(t *testing.T) {
	cl := startFakeCluster(t, Config{})
	ctx := testCtx(t)
	shards, err := cl.client(t, "C").ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range shards {
		var slots []string
		for _, r := range s.Slots {
			slots = append(slots, fmt.Sprintf("%d-%d", r.Start, r.End))
		}
		var nodes []string
		for _, n := range s.Nodes {
			id := ""
			for _, x := range nodeIDs {
				if n.ID == nodeID(x) && n.Endpoint == "127.0.0.1" && strconv.FormatInt(n.Port, 10) == strings.Split(cl.addrs[x], ":")[1] {
					id = x
				}
			}
			nodes = append(nodes, id+"/"+n.Role+"/"+n.Health+"/"+strconv.FormatInt(n.ReplicationOffset, 10))
		}
		got = append(got, strings.Join(slots, ",")+" "+strings.Join(nodes, ","))
	}
	want := []string{
		"0-99,200-4095 A/master/online/42,B/replica/online/42,C/replica/online/42",
		"4096-8191 B/master/online/42,A/replica/online/42,C/replica/online/42",
		"100-199,8192-12287 C/master/online/42,A/replica/online/42,B/replica/online/42",
		"12288-16383 A/master/online/42,B/replica/online/42,C/replica/online/42",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("CLUSTER SHARDS =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestClusterNodesFromView: every node is a master listing the ranges of the
// groups it leads; the asking node is flagged myself.
func TestClusterNodesFromView(t *testing.T) {
	cl := startFakeCluster(t, Config{})
	ctx := testCtx(t)
	line := func(id, flags, slots string, i int) string {
		return nodeID(id) + " " + cl.addrs[id] + "@" + strconv.Itoa(7391+i) + " " + flags + " - 0 0 7 connected" + slots
	}
	nodes, err := cl.client(t, "B").ClusterNodes(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	want := line("A", "master", " 0-99 200-4095 12288-16383", 0) + "\n" +
		line("B", "myself,master", " 4096-8191", 1) + "\n" +
		line("C", "master", " 100-199 8192-12287", 2) + "\n"
	if nodes != want {
		t.Fatalf("CLUSTER NODES on B =\n%s\nwant\n%s", nodes, want)
	}
	// B loses group 1 to C: B now leads nothing and lists no slots.
	cl.setLeaders("A", "C", "C", "A")
	nodes, err = cl.client(t, "A").ClusterNodes(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	want = line("A", "myself,master", " 0-99 200-4095 12288-16383", 0) + "\n" +
		line("B", "master", "", 1) + "\n" +
		line("C", "master", " 100-199 4096-12287", 2) + "\n"
	if nodes != want {
		t.Fatalf("CLUSTER NODES on A =\n%s\nwant\n%s", nodes, want)
	}
	if id, err := cl.client(t, "C").ClusterMyID(ctx).Result(); err != nil || id != nodeID("C") {
		t.Fatalf("CLUSTER MYID on C = %q, %v; want %s", id, err, nodeID("C"))
	}
}

// TestClusterInfoFromView: ok while every group has a leader; a leaderless
// group fails the cluster and its slots.
func TestClusterInfoFromView(t *testing.T) {
	cl := startFakeCluster(t, Config{})
	ctx := testCtx(t)
	c := cl.client(t, "A")
	info := func() map[string]string {
		t.Helper()
		s, err := c.ClusterInfo(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(s), "\r\n") {
			k, v, _ := strings.Cut(l, ":")
			out[k] = v
		}
		return out
	}
	check := func(what string, want map[string]string) {
		t.Helper()
		got := info()
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("%s: CLUSTER INFO %s = %q, want %q (%v)", what, k, got[k], v, got)
			}
		}
	}
	check("all led", map[string]string{"cluster_state": "ok", "cluster_slots_assigned": "16384", "cluster_slots_ok": "16384",
		"cluster_slots_fail": "0", "cluster_known_nodes": "3", "cluster_size": "3"})
	cl.setLeaders("A", "A", "", "A") // group 2: 100-199 and 8192-12287, 4196 slots
	check("group 2 leaderless", map[string]string{"cluster_state": "fail", "cluster_slots_assigned": "12188",
		"cluster_slots_ok": "12188", "cluster_slots_fail": "4196", "cluster_known_nodes": "3", "cluster_size": "1"})
}

// TestMovedOnClusterAwareConnection: a plain connection is served whatever
// the key; once it sends READONLY (or CLUSTER SLOTS), a key whose group
// another node leads is answered -MOVED, byte for byte as Redis, and never
// reaches the store. Keyless commands, keys this node leads, keys in several
// slots, leaderless groups and MULTI are never redirected.
func TestMovedOnClusterAwareConnection(t *testing.T) {
	cl := startFakeCluster(t, Config{})
	st := cl.stores["A"]
	kA, kB, kC := cl.keyIn(t, 0), cl.keyIn(t, 1), cl.keyIn(t, 2)
	movedB := "-MOVED " + strconv.Itoa(int(shard.Slot([]byte(kB)))) + " " + cl.addrs["B"] + "\r\n"
	served := "$11\r\nserved by A\r\n"

	c := dialClient(t, cl.servers["A"].Addr())
	if got := c.do("GET", kB); got != served {
		t.Fatalf("GET %s on a plain connection = %q, want it served", kB, got)
	}
	if n := st.views.Load(); n != 0 {
		t.Fatalf("a plain connection read the cluster View %d times", n)
	}
	if got := c.do("READONLY"); got != okReply {
		t.Fatalf("READONLY = %q", got)
	}
	before := len(st.received())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"GET", kB}, movedB},
		{[]string{"SET", kB, "v", "PX", "100"}, movedB},
		{[]string{"EVAL", "return 1", "1", kB}, movedB},
		{[]string{"LOCK.ACQUIRE", kB, "owner", "PX", "1000"}, movedB},
		{[]string{"GET", kB, "extra"}, "-ERR wrong number of arguments for 'get' command\r\n"},
		{[]string{"GET", kC}, "-MOVED " + strconv.Itoa(int(shard.Slot([]byte(kC)))) + " " + cl.addrs["C"] + "\r\n"},
	} {
		if got := c.do(tc.args...); got != tc.want {
			t.Fatalf("%q = %q, want %q", tc.args, got, tc.want)
		}
	}
	if got := st.received()[before:]; len(got) != 0 {
		t.Fatalf("redirected commands reached the store: %q", got)
	}
	for _, args := range [][]string{
		{"GET", kA},               // this node leads it
		{"DBSIZE"},                // keyless
		{"EVAL", "return 1", "0"}, // no keys
		{"DEL", kA, kB},           // several slots
		{"NAMESPACE.GET", kB},     // a prefix, not a key
	} {
		if got := c.do(args...); got != served {
			t.Fatalf("%q on an aware connection = %q, want it served", args, got)
		}
	}
	// Inside MULTI nothing is redirected: EXEC sends the queue to the store.
	for _, step := range [][2]string{{"MULTI", okReply}, {"GET " + kB, "+QUEUED\r\n"}, {"EXEC", "*1\r\n" + served}} {
		if got := c.do(strings.Fields(step[0])...); got != step[1] {
			t.Fatalf("%s = %q, want %q", step[0], got, step[1])
		}
	}
	if got := st.received(); got[len(got)-1] != "exec [GET "+kB+"]" {
		t.Fatalf("EXEC sent %q", got[len(got)-1])
	}
	// A group without a leader: served here (the store waits or forwards).
	cl.setLeaders("A", "", "C", "A")
	if got := c.do("GET", kB); got != served {
		t.Fatalf("GET %s with group 1 leaderless = %q, want it served", kB, got)
	}

	// CLUSTER SLOTS makes a connection aware too, and go-redis sees the error.
	cl.setLeaders("A", "B", "C", "A")
	rc := cl.client(t, "A")
	ctx := testCtx(t)
	if err := rc.Get(ctx, kB).Err(); err != nil {
		t.Fatalf("go-redis GET on a plain connection: %v", err)
	}
	aware := dialClient(t, cl.servers["A"].Addr())
	aware.do("CLUSTER", "SLOTS")
	if got := aware.do("GET", kB); got != movedB {
		t.Fatalf("GET after CLUSTER SLOTS = %q, want %q", got, movedB)
	}
}

// TestMovedInPipeline: the replies of a pipeline keep their order around
// redirected commands.
func TestMovedInPipeline(t *testing.T) {
	cl := startFakeCluster(t, Config{})
	kA, kB := cl.keyIn(t, 0), cl.keyIn(t, 1)
	c := dialClient(t, cl.servers["A"].Addr())
	c.do("ASKING")
	var req []byte
	for _, k := range []string{kA, kB, kA} {
		req = append(req, multibulk("GET", k)...)
	}
	c.nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(req); err != nil {
		t.Fatal(err)
	}
	var out []byte
	for range 3 {
		if err := readFrame(c.r, &out); err != nil {
			t.Fatal(err)
		}
	}
	served := "$11\r\nserved by A\r\n"
	want := served + "-MOVED " + strconv.Itoa(int(shard.Slot([]byte(kB)))) + " " + cl.addrs["B"] + "\r\n" + served
	if string(out) != want {
		t.Fatalf("pipeline = %q, want %q", out, want)
	}
}

// TestRedirectConfig: with Config.Redirect every connection is cluster-aware
// from its first command.
func TestRedirectConfig(t *testing.T) {
	cl := startFakeCluster(t, Config{Redirect: true})
	kB := cl.keyIn(t, 1)
	err := cl.client(t, "A").Get(testCtx(t), kB).Err()
	want := "MOVED " + strconv.Itoa(int(shard.Slot([]byte(kB)))) + " " + cl.addrs["B"]
	if err == nil || err.Error() != want {
		t.Fatalf("GET %s with Redirect = %v, want %s", kB, err, want)
	}
	if got := cl.stores["A"].received(); len(got) != 0 {
		t.Fatalf("the store saw %q", got)
	}
}

// TestClusterClientRoutesAndFollowsMoved: go-redis's ClusterClient, seeded
// with A only, sends each key to its group's leader from CLUSTER SLOTS, and
// after a leader change follows -MOVED to the new one.
func TestClusterClientRoutesAndFollowsMoved(t *testing.T) {
	cl := startFakeCluster(t, Config{Redirect: true})
	ctx := testCtx(t)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{cl.addrs["A"]}, MaxRedirects: 3})
	defer cc.Close()
	for g, want := range []string{"A", "B", "C", "A"} {
		k := cl.keyIn(t, g)
		if v, err := cc.Get(ctx, k).Result(); err != nil || v != "served by "+want {
			t.Fatalf("ClusterClient GET %s (group %d) = %q, %v; want served by %s", k, g, v, err, want)
		}
	}
	// C takes group 1 over; the client still believes B leads it. B keeps
	// serving while its cached View still says it leads (at most viewMaxAge;
	// a real store forwards meanwhile), then answers -MOVED, which the
	// client follows to C.
	cl.setLeaders("A", "C", "C", "A")
	kB := cl.keyIn(t, 1)
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, err := cc.Get(ctx, kB).Result()
		if err != nil {
			t.Fatalf("ClusterClient GET %s after the move: %v", kB, err)
		}
		if v == "served by C" {
			break
		}
		if v != "served by B" || time.Now().After(deadline) {
			t.Fatalf("ClusterClient GET %s after the move = %q; want served by C", kB, v)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// standaloneProbes are the cluster probes and what a standalone redis-server
// 7.0.15 answers them (checked byte for byte against it in compat/).
var standaloneProbes = []struct {
	args []string
	want string
}{
	{[]string{"CLUSTER", "SLOTS"}, "-" + errClusterDisabled + "\r\n"},
	{[]string{"CLUSTER", "SHARDS"}, "-" + errClusterDisabled + "\r\n"},
	{[]string{"CLUSTER", "NODES"}, "-" + errClusterDisabled + "\r\n"},
	{[]string{"CLUSTER", "INFO"}, "-" + errClusterDisabled + "\r\n"},
	{[]string{"CLUSTER", "MYID"}, "-" + errClusterDisabled + "\r\n"},
	{[]string{"cluster", "keyslot", "foo"}, "-" + errClusterDisabled + "\r\n"},
	{[]string{"CLUSTER", "HELP"}, "-" + errClusterDisabled + "\r\n"},
	{[]string{"READONLY"}, "-" + errClusterDisabled + "\r\n"},
	{[]string{"READWRITE"}, "-" + errClusterDisabled + "\r\n"},
	{[]string{"ASKING"}, "-" + errClusterDisabled + "\r\n"},
	{[]string{"CLUSTER", "KEYSLOT"}, "-ERR wrong number of arguments for 'cluster|keyslot' command\r\n"},
	{[]string{"CLUSTER", "SLOTS", "x"}, "-ERR wrong number of arguments for 'cluster|slots' command\r\n"},
	{[]string{"READONLY", "x"}, "-ERR wrong number of arguments for 'readonly' command\r\n"},
	{[]string{"CLUSTER", "FOO"}, "-ERR unknown subcommand 'FOO'. Try CLUSTER HELP.\r\n"},
	{[]string{"INFO", "cluster"}, "$30\r\n# Cluster\r\ncluster_enabled:0\r\n\r\n"},
}

// checkFace asserts, through a fresh connection to addr, HELLO's mode and
// INFO's redis_mode and cluster_enabled.
func checkFace(t *testing.T, addr, mode, enabled string) {
	t.Helper()
	c := dialClient(t, addr)
	if got := c.do("HELLO", "2"); !strings.Contains(got, "$4\r\nmode\r\n$"+strconv.Itoa(len(mode))+"\r\n"+mode+"\r\n") {
		t.Errorf("HELLO 2 = %q, want mode %s", got, mode)
	}
	if got := c.do("INFO", "server"); !strings.Contains(got, "\r\nredis_mode:"+mode+"\r\n") {
		t.Errorf("INFO server = %q, want redis_mode:%s", got, mode)
	}
	want := "# Cluster\r\ncluster_enabled:" + enabled + "\r\n"
	if got := c.do("INFO"); !strings.Contains(got, "\r\n"+want+"\r\n# Keyspace\r\n") {
		t.Errorf("INFO = %q, want %q before # Keyspace", got, want)
	}
}

// TestStandaloneFace: a node that is no cluster — a store without a View,
// or a View of one node — answers every cluster probe as a standalone
// redis-server does (cluster support disabled; arity and unknown-subcommand
// errors first), says mode standalone in HELLO and INFO, and cluster_enabled:0;
// READONLY there changes nothing (the connection is not made cluster-aware),
// and a probe queued in MULTI fails in EXEC's reply.
func TestStandaloneFace(t *testing.T) {
	cl := startFakeCluster(t, Config{})
	cl.setMembers("A")
	for name, addr := range map[string]string{
		"no view":    startServer(t, Config{}, newFSMStore()).Addr(),
		"one member": cl.servers["A"].Addr(),
	} {
		t.Run(name, func(t *testing.T) {
			c := dialClient(t, addr)
			for _, p := range standaloneProbes {
				if got := c.do(p.args...); got != p.want {
					t.Errorf("%q = %q, want %q", p.args, got, p.want)
				}
			}
			checkFace(t, addr, "standalone", "0")
			for _, step := range [][2]string{{"MULTI", okReply}, {"CLUSTER INFO", "+QUEUED\r\n"}, {"READONLY", "+QUEUED\r\n"},
				{"EXEC", "*2\r\n-" + errClusterDisabled + "\r\n-" + errClusterDisabled + "\r\n"}} {
				if got := c.do(strings.Fields(step[0])...); got != step[1] {
					t.Errorf("%s = %q, want %q", step[0], got, step[1])
				}
			}
		})
	}
	// The connection that sent READONLY on one node stays plain once the
	// cluster has three: it is served, never redirected.
	c := dialClient(t, cl.servers["A"].Addr())
	c.do("READONLY")
	cl.setMembers(nodeIDs...)
	cl.setLeaders("A", "B", "C", "A")
	kB := cl.keyIn(t, 1)
	if got := c.do("GET", kB); got != "$11\r\nserved by A\r\n" {
		t.Fatalf("GET %s after a refused READONLY = %q, want it served", kB, got)
	}
}

// TestClusterFace: a node of several says mode cluster and cluster_enabled:1;
// when the others are removed it turns standalone (CLUSTER SLOTS at once,
// HELLO and INFO within the cached View's age), and back again.
func TestClusterFace(t *testing.T) {
	cl := startFakeCluster(t, Config{})
	addr := cl.servers["B"].Addr()
	checkFace(t, addr, "cluster", "1")
	c := dialClient(t, addr)
	if got := c.do("CLUSTER", "KEYSLOT", "{user1000}.following"); got != ":3443\r\n" {
		t.Fatalf("CLUSTER KEYSLOT on a cluster = %q", got)
	}
	if got := c.do("INFO", "cluster"); got != "$30\r\n# Cluster\r\ncluster_enabled:1\r\n\r\n" {
		t.Fatalf("INFO cluster on a cluster = %q", got)
	}
	waitMode := func(mode string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(c.do("HELLO", "2"), "\r\n"+mode+"\r\n") {
			if time.Now().After(deadline) {
				t.Fatalf("HELLO still not mode %s after 5s", mode)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	cl.setMembers("B")
	if got := c.do("CLUSTER", "SLOTS"); got != "-"+errClusterDisabled+"\r\n" {
		t.Fatalf("CLUSTER SLOTS on a node left alone = %q", got)
	}
	waitMode("standalone")
	checkFace(t, addr, "standalone", "0")

	cl.setMembers(nodeIDs...)
	if got := c.do("CLUSTER", "MYID"); got != "$40\r\n"+nodeID("B")+"\r\n" {
		t.Fatalf("CLUSTER MYID with the others back = %q", got)
	}
	waitMode("cluster")
	checkFace(t, addr, "cluster", "1")
}
