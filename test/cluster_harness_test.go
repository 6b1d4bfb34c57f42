package test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/clustertest"
)

// Cluster bounds. Every wait polls, and every one is bounded by one of these.
const (
	// clusterOpTimeout bounds one request to a cluster node. It exceeds lockd's
	// ApplyTimeout (10s, raftstore.Config) so that lockd answers every request
	// itself: a request that the client gave up on could still be proposed later,
	// after a read had "resolved" its outcome.
	clusterOpTimeout = 15 * time.Second
	dialTimeout      = time.Second
	leaderTimeout    = 20 * time.Second // a cluster electing a leader that every node knows
	rejoinTimeout    = 20 * time.Second // a restarted node following the leader
	// Polls of INFO and the like are cheap; this bounds one of them.
	infoTimeout = 2 * time.Second
)

// clusterNode is one member of a test cluster. Its addresses and data
// directory stay the same across restarts (its peers know it by them).
type clusterNode struct {
	idx   int
	id    string
	addrs lockdAddrs // http ""
	dir   string
	gen   int          // processes started so far
	proc  *lockdProc   // the current process; nil while down
	up    atomic.Bool  // up and following or leading: clients may connect to it
	procs []*lockdProc // every process started for this node (but a chaos restart that lost its port)
}

// lockdCluster is a cluster of real lockd processes on 127.0.0.1. Only the
// goroutine that runs the test starts, kills and restarts nodes; load
// goroutines read only the fixed addresses and the up flags.
type lockdCluster struct {
	t     testing.TB
	nodes []*clusterNode
	peers string   // the -peers flag
	extra []string // more lockd flags for every node (-groups 4)
	// nodeArgs are more lockd flags for one node (-zone), by node id.
	nodeArgs map[string][]string
	slowMu   sync.Mutex
	slow     []string // requests through nodeConns that took longer than slowRequest
	// stopping is a process sent SIGTERM that may not have exited yet (see
	// awaitStopped).
	stopping atomic.Pointer[lockdProc]
}

// awaitStopped waits (bounded) until a process that was sent SIGTERM has
// exited. A client that lost its connection to such a process cannot learn the
// outcome of its request by reading until then: lockd's clean shutdown closes
// the client connections first and keeps applying their requests.
func (cl *lockdCluster) awaitStopped() {
	if p := cl.stopping.Load(); p != nil {
		select {
		case <-p.exited:
		case <-time.After(exitTimeout):
		}
	}
}

// startCluster starts n nodes with fresh data directories and waits until they
// agree on a leader for every group. A start that lost a port race is retried
// on fresh ports. extra flags go to every process (and its restarts).
func startCluster(t testing.TB, n int, extra ...string) *lockdCluster {
	t.Helper()
	for attempt := 1; ; attempt++ {
		cl := &lockdCluster{t: t, extra: extra}
		cl.layout(n, false)
		for _, nd := range cl.nodes {
			cl.spawn(nd)
		}
		raced := awaitReady(t, cl.nodes)
		if raced && attempt < startTries {
			t.Logf("cluster start lost a port race (attempt %d); retrying on other ports", attempt)
			for _, nd := range cl.nodes {
				nd.proc.kill()
			}
			continue
		}
		leader := cl.waitLeader(leaderTimeout)
		for _, nd := range cl.nodes {
			nd.up.Store(true)
		}
		t.Logf("cluster of %d up, leader %s (peers %s)", n, leader.id, cl.peers)
		return cl
	}
}

// layout gives cl n nodes on fresh addresses and data directories
// (clustertest.Make: n1…nN, each with a RESP and a peer address and, with
// http, an HTTP one; a data directory "data" that the process creates) and
// the -peers flag that names them.
func (cl *lockdCluster) layout(n int, http bool) {
	cl.t.Helper()
	l := clustertest.Make(cl.t, clustertest.Opts{Members: n, RESP: true, HTTP: http, DirName: "data"})
	for i, m := range l.Members {
		cl.nodes = append(cl.nodes, &clusterNode{idx: i, id: m.ID,
			addrs: lockdAddrs{resp: m.RESP, peer: m.Peer, http: m.HTTP}, dir: m.Dir})
	}
	cl.peers = l.PeersFlag()
}

// awaitReady waits until every node's process answers PING. It reports a
// start that lost a race for its ports (the caller retries on other ports);
// any other failure ends the test.
func awaitReady(t testing.TB, nodes []*clusterNode) (raced bool) {
	t.Helper()
	for _, nd := range nodes {
		if err := nd.proc.waitReady(readyTimeout); err != nil {
			if nd.proc.lostPortRace() {
				return true
			}
			t.Fatalf("%s: %v\nstderr:\n%s", nd.proc.name, err, nd.proc.stderr)
		}
	}
	return false
}

// spawn starts a process for nd and returns at once.
func (cl *lockdCluster) spawn(nd *clusterNode) {
	cl.t.Helper()
	nd.gen++
	args := append([]string{"-node-id", nd.id, "-peers", cl.peers, "-raft-logs"}, cl.extra...)
	args = append(args, cl.nodeArgs[nd.id]...)
	nd.proc = spawnLockdArgs(cl.t, fmt.Sprintf("%s.%d", nd.id, nd.gen), nd.dir, nd.addrs, args...)
	nd.procs = append(nd.procs, nd.proc)
}

// kill sends SIGKILL to nd's process and waits until it is gone.
func (cl *lockdCluster) kill(nd *clusterNode) {
	cl.t.Helper()
	nd.up.Store(false)
	nd.proc.kill()
	nd.proc = nil
}

// restart starts nd again on its data directory and addresses and waits until
// it is back in the cluster (waitRejoined). It returns the leader's id (its own when it leads).
func (cl *lockdCluster) restart(nd *clusterNode) string {
	cl.t.Helper()
	for attempt := 1; ; attempt++ {
		cl.spawn(nd)
		err := nd.proc.waitReady(readyTimeout)
		if err == nil {
			break
		}
		if nd.proc.lostPortRace() && attempt < startTries {
			// Its ports are fixed: something else holds one for a while.
			cl.t.Logf("%s: a port of %s is taken (attempt %d); retrying", nd.proc.name, nd.id, attempt)
			time.Sleep(100 * time.Millisecond) // back-off before the next attempt, not synchronisation
			continue
		}
		cl.t.Fatalf("%s: %v\nstderr:\n%s", nd.proc.name, err, nd.proc.stderr)
	}
	leader, err := cl.waitRejoined(nd, rejoinTimeout)
	if err != nil {
		cl.t.Fatalf("%s restarted but did not rejoin: %v", nd.proc.name, err)
	}
	nd.up.Store(true)
	return leader
}

// raftInfo reads INFO raft from addr on a fresh connection.
func raftInfo(addr string) (map[string]string, error) {
	c, err := dialRESP(addr, infoTimeout)
	if err != nil {
		return nil, err
	}
	defer c.close()
	r, err := c.do("INFO", "raft")
	if err != nil {
		return nil, err
	}
	if r.kind != '$' || r.null {
		return nil, fmt.Errorf("INFO raft answered %v", r)
	}
	out := map[string]string{}
	for _, line := range strings.Split(r.str, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.HasPrefix(k, "#") {
			out[k] = v
		}
	}
	return out, nil
}

// Running reports whether nd has a process (clustertest.Node).
func (nd *clusterNode) Running() bool { return nd.proc != nil }

// IsLeader reports whether nd's process says, on a fresh connection, that it
// leads (INFO raft's raft_state: group 0's role); false when it cannot be
// asked (clustertest.Node).
func (nd *clusterNode) IsLeader() bool {
	info, err := raftInfo(nd.addrs.resp)
	return err == nil && info["raft_state"] == "leader"
}

// running returns the nodes that have a process.
func (cl *lockdCluster) running() []*clusterNode {
	var out []*clusterNode
	for _, nd := range cl.nodes {
		if nd.Running() {
			out = append(out, nd)
		}
	}
	return out
}

func (cl *lockdCluster) byID(id string) *clusterNode {
	for _, nd := range cl.nodes {
		if nd.id == id {
			return nd
		}
	}
	return nil
}

// leaderNow reports group 0's leader (the group that opens sessions; INFO's
// raft_state and raft_leader describe it) once every group has a leader that
// every running node names and that says it leads; otherwise a description of
// what each node said. With one group (-groups 1) that is the cluster's one
// leader; with several, the other groups' leaders may be other nodes.
func (cl *lockdCluster) leaderNow() (*clusterNode, string) {
	ls, views := cl.groupLeaders()
	if ls == nil {
		return nil, views
	}
	return ls[0], ""
}

// waitLeader polls until every running node names the same running leader
// for every group, and returns group 0's (see leaderNow).
func (cl *lockdCluster) waitLeader(bound time.Duration) *clusterNode {
	cl.t.Helper()
	var nd *clusterNode
	var views string
	if !clustertest.Until(bound, pollEvery, func() bool {
		nd, views = cl.leaderNow()
		return nd != nil
	}) {
		cl.t.Fatalf("no leader that every running node agrees on within %v: %s", bound, views)
	}
	return nd
}

// waitRejoined polls until nd, restarted, is back in the cluster: a follower
// of a leader that leads, or itself the leader that another running node
// follows. A node that comes back may lead group 0 at once: the balancer
// hands each group to its preferred leader as soon as that node has caught
// up, and a restarted n1 is group 0's. It returns the leader's id.
func (cl *lockdCluster) waitRejoined(nd *clusterNode, bound time.Duration) (string, error) {
	return cl.waitMember(nd, bound, true)
}

// waitFollower polls until nd is a follower of a leader that leads. It returns
// the leader's id.
func (cl *lockdCluster) waitFollower(nd *clusterNode, bound time.Duration) (string, error) {
	return cl.waitMember(nd, bound, false)
}

// waitMember polls until nd follows a leader that leads or, with mayLead,
// leads with another running node following it. It returns the leader's id.
func (cl *lockdCluster) waitMember(nd *clusterNode, bound time.Duration, mayLead bool) (string, error) {
	var last, leader string
	exited := false
	if clustertest.Until(bound, pollEvery, func() bool {
		if exited = nd.proc.hasExited(); exited {
			return true
		}
		info, err := raftInfo(nd.addrs.resp)
		if err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprintf("state %s, leader %q", info["raft_state"], info["raft_leader"])
		switch info["raft_state"] {
		case "follower":
			if l := cl.byID(info["raft_leader"]); l != nil && l != nd && l.Running() && l.IsLeader() {
				leader = l.id
			}
		case "leader":
			if mayLead && cl.followedBy(nd) {
				leader = nd.id
			}
		}
		return leader != ""
	}) {
		if exited {
			return "", fmt.Errorf("exited (%v)", nd.proc.cmd.ProcessState)
		}
		return leader, nil
	}
	if mayLead {
		return "", fmt.Errorf("neither following a leader nor leading within %v (last: %s)", bound, last)
	}
	return "", fmt.Errorf("not a follower of a leader within %v (last: %s)", bound, last)
}

// followedBy reports whether another running node follows nd.
func (cl *lockdCluster) followedBy(nd *clusterNode) bool {
	for _, o := range cl.running() {
		if o == nd {
			continue
		}
		if oi, err := raftInfo(o.addrs.resp); err == nil && oi["raft_state"] == "follower" && oi["raft_leader"] == nd.id {
			return true
		}
	}
	return false
}

// transfer hands leadership to nd (RAFT TRANSFER, sent to nd, which forwards it
// to the leader) and waits until every node names nd.
func (cl *lockdCluster) transfer(nd *clusterNode) error {
	c, err := dialRESP(nd.addrs.resp, clusterOpTimeout)
	if err != nil {
		return err
	}
	defer c.close()
	deadline := time.Now().Add(leaderTimeout)
	for {
		if l, _ := cl.leaderNow(); l == nd {
			return nil
		}
		r, err := c.do("RAFT", "TRANSFER", nd.id)
		if err != nil {
			return fmt.Errorf("RAFT TRANSFER %s: %w", nd.id, err)
		}
		if r.isErr() {
			cl.t.Logf("RAFT TRANSFER %s: %v (retrying)", nd.id, r)
		}
		// Done (or refused): wait a while for every node to name nd.
		if clustertest.Until(2*time.Second, pollEvery, func() bool {
			l, _ := cl.leaderNow()
			return l == nd
		}) {
			return nil
		}
		if time.Now().After(deadline) {
			_, views := cl.leaderNow()
			return fmt.Errorf("%s does not lead %v after RAFT TRANSFER: %s", nd.id, leaderTimeout, views)
		}
	}
}

// membersLeader asks addr for RAFT MEMBERS and returns the member flagged as
// leader ("" if none).
func membersLeader(addr string) (string, error) {
	c, err := dialRESP(addr, infoTimeout)
	if err != nil {
		return "", err
	}
	defer c.close()
	r, err := c.do("RAFT", "MEMBERS")
	if err != nil {
		return "", err
	}
	if r.kind != '*' {
		return "", fmt.Errorf("RAFT MEMBERS answered %v", r)
	}
	for _, m := range r.elems {
		fields := map[string]reply{}
		for i := 0; i+1 < len(m.elems); i += 2 {
			fields[m.elems[i].str] = m.elems[i+1]
		}
		if l := fields["leader"]; l.n == 1 || l.str == "1" || l.str == "true" {
			return fields["id"].str, nil
		}
	}
	return "", nil
}

// raftTimeouts reads the Raft timeouts lockd configures from its source
// (raftstore/store.go: the rc.*Timeout assignments and the ApplyTimeout
// default); INFO does not report them.
func raftTimeouts() (string, error) {
	src, err := os.ReadFile(filepath.Join("..", "raftstore", "store.go"))
	if err != nil {
		return "", err
	}
	var parts []string
	for _, m := range regexp.MustCompile(`rc\.(\w*Timeout)\s*=\s*([^\n/]+)`).FindAllStringSubmatch(string(src), -1) {
		parts = append(parts, m[1]+"="+strings.ReplaceAll(strings.TrimSpace(m[2]), " ", ""))
	}
	if m := regexp.MustCompile(`cfg\.ApplyTimeout\s*=\s*([0-9][^\n/]*)`).FindStringSubmatch(string(src)); m != nil {
		parts = append(parts, "ApplyTimeout="+strings.ReplaceAll(strings.TrimSpace(m[1]), " ", ""))
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("no rc.*Timeout assignment found in raftstore/store.go")
	}
	return strings.Join(parts, " "), nil
}

// nodeConn is a client's connection to some node of the cluster; it reconnects,
// preferring its home node, to a node that is up. One goroutine uses it.
type nodeConn struct {
	cl   *lockdCluster
	home int
	only bool // dial the home node only
	c    *respConn
	node int
}

// do sends one request; on an I/O error the connection is dropped (the next do
// dials again). A nil error with no connection means no node could be dialed.
func (nc *nodeConn) do(args ...string) (reply, int, error) {
	if nc.c == nil {
		var lastErr error
		for i := range nc.cl.nodes {
			if nc.only && i > 0 {
				break
			}
			nd := nc.cl.nodes[(nc.home+i)%len(nc.cl.nodes)]
			if !nd.up.Load() {
				continue
			}
			c, err := dialRESP(nd.addrs.resp, dialTimeout)
			if err != nil {
				lastErr = err
				continue
			}
			c.timeout = clusterOpTimeout
			nc.c, nc.node = c, nd.idx
			break
		}
		if nc.c == nil {
			if lastErr == nil {
				lastErr = errNoNode
			}
			return reply{}, -1, errNotSent{lastErr}
		}
	}
	node := nc.node
	start := time.Now()
	r, err := nc.c.do(args...)
	if d := time.Since(start); d > slowRequest {
		what := r.String()
		if err != nil {
			what = err.Error()
		}
		nc.cl.slowMu.Lock()
		nc.cl.slow = append(nc.cl.slow, fmt.Sprintf("%s %s via %s at %s took %v: %s", args[0], args[1],
			nc.cl.nodes[node].id, start.Format("15:04:05.000"), d.Round(time.Millisecond), what))
		nc.cl.slowMu.Unlock()
	}
	if err != nil {
		nc.c.close()
		nc.c = nil
	}
	return r, node, err
}

// slowRequest: a request that took longer than this is logged (an election
// takes about a second at lockd's timeouts).
const slowRequest = 3 * time.Second

func (nc *nodeConn) close() {
	if nc.c != nil {
		nc.c.close()
		nc.c = nil
	}
}

var errNoNode = fmt.Errorf("no node is up")

// errNotSent: the request was never written (no connection): nothing happened.
type errNotSent struct{ err error }

func (e errNotSent) Error() string { return "not sent: " + e.err.Error() }
