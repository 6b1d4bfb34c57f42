package test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/clustertest"
)

// Bounds of TestClusterBlockedPops.
const (
	bpopElements = 2000 // distinct elements pushed, over both producers
	// bpopTimeout is each blocking pop's timeout ("2": seconds).
	bpopTimeout = "2"
	// bpopClientTimeout bounds one blocking pop's request and reply on the
	// client's side. It exceeds what lockd takes at most to settle a pop
	// whose entry's outcome was lost with its leader (group/bpop.go: a
	// POP.CANCEL through the next leader, ApplyTimeout + ElectionWait, and
	// the pop's own timeout, up to maxPopTries times), so lockd always
	// answers first: a client that gave up would lose, as in Redis, an
	// element served to it as it left.
	bpopClientTimeout = 90 * time.Second
	bpopProduceFor    = 3 * time.Minute  // the producers' whole run
	bpopDrainFor      = 30 * time.Second // the consumers emptying the lists after the producers
	bpopProgressFor   = time.Minute      // the producers reaching the kill's or the restart's mark
)

// bpopLists are the lists the producers push to; bpopDone is BLMOVE's
// destination, itself popped by the BLPOP consumers.
var (
	bpopLists = []string{"q0", "q1", "q2"}
	bpopDone  = "done"
)

// bpopConsumer is one client blocked, again and again, in one kind of
// blocking pop through one node; it records what each reply gave it.
type bpopConsumer struct {
	name string
	addr string
	args []string // the pop, as sent
	move bool     // BLMOVE: the reply is the element moved to bpopDone

	mu     sync.Mutex
	conn   *respConn
	popped []bpopTaken // BLPOP/BRPOP replies
	moved  []string    // BLMOVE replies
	errs   []string    // error replies and I/O errors, in order
	pops   int         // requests answered
}

// bpopTaken is an element a BLPOP or BRPOP reply gave, and the list it came from.
type bpopTaken struct{ key, elem string }

// setConn swaps the consumer's connection (closing the old one).
func (c *bpopConsumer) setConn(rc *respConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.conn.close()
	}
	c.conn = rc
}

// run pops until stop, reconnecting to its node after an I/O error.
func (c *bpopConsumer) run(stop *atomic.Bool) {
	var rc *respConn
	for !stop.Load() {
		if rc == nil {
			var err error
			if rc, err = dialRESP(c.addr, dialTimeout); err != nil {
				c.note("dial: " + err.Error())
				time.Sleep(50 * time.Millisecond) // back-off before the next dial
				continue
			}
			rc.timeout = bpopClientTimeout
			c.setConn(rc)
		}
		r, err := rc.do(c.args...)
		c.mu.Lock()
		switch {
		case err != nil:
			c.errs = append(c.errs, fmt.Sprintf("I/O: %v", err))
		case r.isErr():
			c.errs = append(c.errs, r.str)
		case r.null:
			// the timeout
		case c.move && r.kind == '$':
			c.moved = append(c.moved, r.str)
		case !c.move && r.kind == '*' && len(r.elems) == 2:
			c.popped = append(c.popped, bpopTaken{r.elems[0].str, r.elems[1].str})
		default:
			c.errs = append(c.errs, "unexpected reply "+r.String())
		}
		c.pops++
		c.mu.Unlock()
		if err != nil {
			rc.close()
			rc = nil
			c.setConn(nil)
			continue
		}
		if r.isErr() {
			pace() // back-off after a refused pop
		}
	}
}

func (c *bpopConsumer) note(s string) {
	c.mu.Lock()
	c.errs = append(c.errs, s)
	c.mu.Unlock()
}

// bpopProducer pushes its elements, one RPUSH each, through one node.
type bpopProducer struct {
	addr  string
	elems []string

	mu    sync.Mutex
	conn  *respConn
	acked map[string]bool // the push's reply was an integer
	maybe map[string]bool // the push's outcome is unknown (UNKNOWNOUTCOME, an I/O error)
	tries int             // TRYAGAIN replies, each tried again
	errs  []string        // other error replies
	done  atomic.Int64    // elements settled (acknowledged or unknown)
}

func (p *bpopProducer) setConn(rc *respConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil {
		p.conn.close()
	}
	p.conn = rc
}

// run pushes every element, element i to bpopLists[i%3]. A push refused with
// TRYAGAIN (nothing applied) is sent again; one with any other outcome but an
// integer reply is unknown, and the producer goes on with the next element.
func (p *bpopProducer) run(stop *atomic.Bool, deadline time.Time) {
	var rc *respConn
	for i := 0; i < len(p.elems) && !stop.Load() && time.Now().Before(deadline); {
		if rc == nil {
			var err error
			if rc, err = dialRESP(p.addr, dialTimeout); err != nil {
				time.Sleep(50 * time.Millisecond) // back-off before the next dial
				continue
			}
			rc.timeout = clusterOpTimeout
			p.setConn(rc)
		}
		e := p.elems[i]
		r, err := rc.do("RPUSH", bpopLists[i%len(bpopLists)], e)
		p.mu.Lock()
		switch {
		case err != nil:
			p.maybe[e] = true
			p.errs = append(p.errs, fmt.Sprintf("RPUSH %s: I/O: %v", e, err))
		case r.kind == ':':
			p.acked[e] = true
		case isTryAgain(r):
			p.tries++
			p.mu.Unlock()
			pace() // back-off before the retry
			continue
		default:
			p.maybe[e] = true
			p.errs = append(p.errs, fmt.Sprintf("RPUSH %s: %v", e, r))
		}
		p.mu.Unlock()
		p.done.Add(1)
		i++
		if err != nil {
			rc.close()
			rc = nil
			p.setConn(nil)
		}
	}
}

// TestClusterBlockedPops: on three lockd processes with one Raft group,
// clients connected to the two followers block in BLPOP, BRPOP and BLMOVE
// (2 s timeouts, looping) on three lists, while two producers push 2,000
// distinct elements through the same two followers; midway the leader is
// killed with SIGKILL, and later restarted on its data and handed the
// leadership back (RAFT TRANSFER: a second leader change). When the producers are
// done the consumers empty the lists. Then, with what is left read through
// the leader: every element whose push was acknowledged was popped exactly
// once (by a BLPOP or BRPOP whose reply the client got) or is still in a
// list; no element was popped twice or is both popped and left; nothing was
// popped that was never pushed; every element a BLMOVE reply moved went to
// its destination (and from there was popped or is left), and nothing
// reached the destination but through a BLMOVE reply. An element whose push
// had an unknown outcome may be anywhere once, or nowhere.
//
// raftstore/group's TestBlockedPopsSurviveLeaderCrash is the in-process
// version (one list, BLPOP, pushes through one follower, no restart); this
// one goes through RESP, real processes and SIGKILL.
func TestClusterBlockedPops(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-process cluster under a leader kill")
	}
	cl := startCluster(t, 3, "-groups", "1")
	leader := cl.waitLeader(leaderTimeout)
	var followers []*clusterNode
	for _, nd := range cl.nodes {
		if nd != leader {
			followers = append(followers, nd)
		}
	}
	t.Logf("leader %s; clients on %s and %s", leader.id, followers[0].id, followers[1].id)

	// Three consumers on each follower: BLPOP over every list (bpopDone
	// last), BRPOP over them the other way, BLMOVE from q1 to bpopDone.
	var consumers []*bpopConsumer
	for _, f := range followers {
		consumers = append(consumers,
			&bpopConsumer{name: "BLPOP@" + f.id, addr: f.addrs.resp,
				args: append(append([]string{"BLPOP"}, bpopLists...), bpopDone, bpopTimeout)},
			&bpopConsumer{name: "BRPOP@" + f.id, addr: f.addrs.resp,
				args: []string{"BRPOP", "q2", "q1", "q0", bpopTimeout}},
			&bpopConsumer{name: "BLMOVE@" + f.id, addr: f.addrs.resp, move: true,
				args: []string{"BLMOVE", "q1", bpopDone, "RIGHT", "LEFT", bpopTimeout}})
	}
	var producers []*bpopProducer
	for _, f := range followers {
		producers = append(producers, &bpopProducer{addr: f.addrs.resp, acked: map[string]bool{}, maybe: map[string]bool{}})
	}
	for i := range bpopElements {
		p := producers[i%len(producers)]
		p.elems = append(p.elems, fmt.Sprintf("e%04d", i))
	}

	var stopConsumers, stopProducers atomic.Bool
	var cwg, pwg sync.WaitGroup
	defer func() { // on every way out: end the goroutines, bounded by closing their connections
		stopProducers.Store(true)
		stopConsumers.Store(true)
		for _, c := range consumers {
			c.setConn(nil)
		}
		for _, p := range producers {
			p.setConn(nil)
		}
		cwg.Wait()
		pwg.Wait()
	}()
	for _, c := range consumers {
		cwg.Add(1)
		go func() { defer cwg.Done(); c.run(&stopConsumers) }()
	}
	start := time.Now()
	for _, p := range producers {
		pwg.Add(1)
		go func() { defer pwg.Done(); p.run(&stopProducers, start.Add(bpopProduceFor)) }()
	}
	settled := func() int64 {
		var n int64
		for _, p := range producers {
			n += p.done.Load()
		}
		return n
	}
	awaitProgress := func(n int64, what string) {
		t.Helper()
		if !clustertest.Until(bpopProgressFor, pollEvery, func() bool { return settled() >= n }) {
			t.Fatalf("the producers settled %d of %d pushes within %v, want %d before %s", settled(), bpopElements, bpopProgressFor, n, what)
		}
	}

	awaitProgress(bpopElements*3/10, "the kill")
	killAt := time.Now()
	t.Logf("%v: %d pushes settled; SIGKILL to the leader %s", killAt.Sub(start).Round(time.Millisecond), settled(), leader.id)
	cl.kill(leader)
	awaitProgress(bpopElements*6/10, "the restart")
	t.Logf("%v: %d pushes settled; restarting %s", time.Since(start).Round(time.Millisecond), settled(), leader.id)
	now := cl.restart(leader)
	t.Logf("%v: %s is back, %s leads; handing the leadership back to %s (RAFT TRANSFER)",
		time.Since(start).Round(time.Millisecond), leader.id, now, leader.id)
	if err := cl.transfer(leader); err != nil {
		t.Fatalf("%v", err)
	}
	t.Logf("%v: %s leads again (%d pushes settled)", time.Since(start).Round(time.Millisecond), leader.id, settled())
	pwg.Wait()
	produced := time.Now()
	t.Logf("%v: the producers are done (%d settled)", produced.Sub(start).Round(time.Millisecond), settled())

	// The consumers empty the lists, read through the leader.
	var lastLen string
	drained := clustertest.Until(bpopDrainFor, 50*time.Millisecond, func() bool {
		n, err := bpopLengths(cl)
		lastLen = fmt.Sprint(n, err)
		return err == nil && n == 0
	})
	if !drained {
		t.Errorf("the blocked pops did not empty the lists within %v of the last push (elements left: %s)", bpopDrainFor, lastLen)
	}
	stopConsumers.Store(true)
	consumersDone := make(chan struct{})
	go func() { cwg.Wait(); close(consumersDone) }()
	select {
	case <-consumersDone:
	case <-time.After(bpopClientTimeout):
		t.Fatalf("the consumers did not stop within %v (a pop unanswered)", bpopClientTimeout)
	}
	left, err := bpopLeft(cl)
	if err != nil {
		t.Fatalf("reading what is left: %v", err)
	}
	checkBlockedPops(t, producers, consumers, left)
	cl.slowMu.Lock()
	if len(cl.slow) > 0 {
		t.Logf("slow requests: %q", cl.slow)
	}
	cl.slowMu.Unlock()
}

// bpopLengths is the total length of the lists, read through the leader.
func bpopLengths(cl *lockdCluster) (int64, error) {
	left, err := bpopLeft(cl)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, elems := range left {
		n += int64(len(elems))
	}
	return n, nil
}

// bpopLeft reads every list (LRANGE key 0 -1) through the group's leader,
// retrying (bounded) while there is none or it refuses with TRYAGAIN.
func bpopLeft(cl *lockdCluster) (map[string][]string, error) {
	deadline := time.Now().Add(leaderTimeout)
	var last error
	for time.Now().Before(deadline) {
		ls, views := cl.groupLeaders()
		if ls == nil {
			last = fmt.Errorf("no leader: %s", views)
			pace()
			continue
		}
		out, err := lrangeAll(ls[0].addrs.resp)
		if err == nil {
			return out, nil
		}
		last = err
		pace()
	}
	return nil, last
}

func lrangeAll(addr string) (map[string][]string, error) {
	c, err := dialRESP(addr, clusterOpTimeout)
	if err != nil {
		return nil, err
	}
	defer c.close()
	out := map[string][]string{}
	for _, key := range append(slices.Clone(bpopLists), bpopDone) {
		r, err := c.do("LRANGE", key, "0", "-1")
		if err != nil {
			return nil, err
		}
		if r.kind != '*' {
			return nil, fmt.Errorf("LRANGE %s 0 -1 through %s = %v", key, addr, r)
		}
		for _, e := range r.elems {
			out[key] = append(out[key], e.str)
		}
	}
	return out, nil
}

// checkBlockedPops checks the accounting of TestClusterBlockedPops (see
// there) and logs its numbers.
func checkBlockedPops(t *testing.T, producers []*bpopProducer, consumers []*bpopConsumer, left map[string][]string) {
	t.Helper()
	acked, maybe := map[string]bool{}, map[string]bool{}
	tries := 0
	var pushErrs []string
	for _, p := range producers {
		p.mu.Lock()
		for e := range p.acked {
			acked[e] = true
		}
		for e := range p.maybe {
			maybe[e] = true
		}
		tries += p.tries
		pushErrs = append(pushErrs, p.errs...)
		p.mu.Unlock()
	}
	// Where each element ended: "popped from K by C" or "left in K", and
	// which BLMOVE replies moved it.
	ends := map[string][]string{}
	movedBy := map[string][]string{}
	var popErrs []string
	popped, moved, pops := 0, 0, 0
	for _, c := range consumers {
		c.mu.Lock()
		for _, tk := range c.popped {
			ends[tk.elem] = append(ends[tk.elem], fmt.Sprintf("popped from %s by %s", tk.key, c.name))
		}
		for _, e := range c.moved {
			movedBy[e] = append(movedBy[e], c.name)
		}
		for _, e := range c.errs {
			popErrs = append(popErrs, c.name+": "+e)
		}
		popped += len(c.popped)
		moved += len(c.moved)
		pops += c.pops
		c.mu.Unlock()
	}
	nleft := 0
	for key, elems := range left {
		for _, e := range elems {
			ends[e] = append(ends[e], "left in "+key)
			nleft++
		}
	}
	t.Logf("pushes: %d acknowledged, %d unknown, %d TRYAGAIN tried again; pops answered %d: %d popped, %d moved; %d left %v",
		len(acked), len(maybe), tries, pops, popped, moved, nleft, left)
	if len(pushErrs) > 0 {
		t.Logf("push errors: %q", pushErrs)
	}
	if len(popErrs) > 0 {
		t.Logf("pop errors: %q", popErrs)
	}

	var bad []string
	all := map[string]bool{}
	for e := range ends {
		all[e] = true
	}
	for e := range movedBy {
		all[e] = true
	}
	for e := range acked {
		all[e] = true
	}
	names := make([]string, 0, len(all))
	for e := range all {
		names = append(names, e)
	}
	sort.Strings(names)
	for _, e := range names {
		end, by := ends[e], movedBy[e]
		inDone := len(end) == 1 && (end[0] == "left in "+bpopDone || strings.HasPrefix(end[0], "popped from "+bpopDone+" "))
		switch {
		case !acked[e] && !maybe[e]:
			bad = append(bad, fmt.Sprintf("%s was never pushed, yet: %q, moved by %q", e, end, by))
		case len(end) > 1:
			bad = append(bad, fmt.Sprintf("%s (pushed, acknowledged %v) ended more than once: %q", e, acked[e], end))
		case len(by) > 1:
			bad = append(bad, fmt.Sprintf("%s was moved by more than one BLMOVE reply: %q", e, by))
		case acked[e] && len(end) == 0:
			bad = append(bad, fmt.Sprintf("%s (acknowledged) is lost: no pop's reply had it, no list holds it (moved by %q)", e, by))
		case len(by) == 1 && len(end) == 0:
			bad = append(bad, fmt.Sprintf("%s was moved to %s by %s, and then no pop's reply had it, no list holds it", e, bpopDone, by[0]))
		case len(by) == 1 && !inDone:
			bad = append(bad, fmt.Sprintf("%s was moved to %s by %s but ended %q", e, bpopDone, by[0], end[0]))
		case len(by) == 0 && inDone:
			bad = append(bad, fmt.Sprintf("%s ended %q without a BLMOVE reply that moved it", e, end[0]))
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d elements broke the accounting (of %d pushed: %d acknowledged, %d unknown):\n  %s",
			len(bad), bpopElements, len(acked), len(maybe), strings.Join(bad[:min(len(bad), 50)], "\n  "))
	}
}
