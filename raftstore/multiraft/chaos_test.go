package multiraft

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/lockd/lockd/raftstore/logstore"
)

// chaos model: a register per key; swap(k, v) returns the value before
// (absent: ""), get(k) the value. An operation whose outcome is unknown
// may take effect at any point after its call, or never.
type chaosIn struct {
	get      bool
	key, val string
}

type chaosOut struct {
	unknown bool
	val     string
}

var chaosModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(chaosIn).key
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, ops := range byKey {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(string), input.(chaosIn), output.(chaosOut)
		if in.get {
			return out.val == s, s
		}
		if out.unknown {
			return true, in.val
		}
		return out.val == s, in.val
	},
	Equal: func(a, b any) bool { return a == b },
	DescribeOperation: func(input, output any) string {
		in, out := input.(chaosIn), output.(chaosOut)
		res := fmt.Sprintf("%q", out.val)
		if out.unknown {
			res = "unknown"
		}
		if in.get {
			return fmt.Sprintf("get(%s) -> %s", in.key, res)
		}
		return fmt.Sprintf("swap(%s, %s) -> %s", in.key, in.val, res)
	},
}

// TestChaosLinearizable: 8 clients swap and read 8 keys of 4 groups on 3
// nodes while nodes are cut off and restarted, one at a time; the history
// (unknown outcomes included) must be linearizable, and once the faults stop
// every node holds the same state.
func TestChaosLinearizable(t *testing.T) { chaosLinearizable(t, smallSnapshots) }

// TestChaosWholeLogs is TestChaosLinearizable with snapshots every 20
// entries but no log compacted (as lockd's chaos campaign runs), so that
// the stored logs can be compared whole: any two replicas' entries of the
// same index and term must be the same (Raft's log matching).
func TestChaosWholeLogs(t *testing.T) {
	chaosLinearizable(t, func(cfg *Config) { cfg.SnapshotEntries, cfg.TrailingEntries = 20, 1<<40 })
}

func chaosLinearizable(t *testing.T, tune func(*Config)) {
	c := newClusterWith(t, 3, 4, tune)
	c.spread()
	const clients, maxOps = 8, 300
	start := time.Now()
	stop := make(chan struct{})
	var mu sync.Mutex
	var history []porcupine.Operation
	var unknown []int
	var wg sync.WaitGroup
	for cl := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(cl), 7))
			for i := 0; i < maxOps; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("k%d", rng.IntN(8))
				g := Group(key[1]-'0') % 4
				in := chaosIn{get: rng.IntN(3) == 0, key: key, val: fmt.Sprintf("c%d-%d", cl, i)}
				out, ok := c.chaosOp(g, in)
				if !ok {
					time.Sleep(2 * time.Millisecond) // no leader here yet: look again
					continue
				}
				mu.Lock()
				history = append(history, porcupine.Operation{ClientId: cl, Input: in, Output: out.out,
					Call: out.call.Sub(start).Nanoseconds(), Return: out.ret.Sub(start).Nanoseconds()})
				if out.out.unknown {
					unknown = append(unknown, len(history)-1)
				}
				mu.Unlock()
			}
		})
	}

	rng := rand.New(rand.NewPCG(1, 2))
	deadline := time.Now().Add(3 * time.Second)
	faults := 0
	for time.Now().Before(deadline) {
		victim := c.ids[rng.IntN(len(c.ids))]
		if rng.IntN(2) == 0 {
			c.net.isolate(victim, true, c.ids)
			time.Sleep(time.Duration(200+rng.IntN(400)) * time.Millisecond)
			c.net.isolate(victim, false, c.ids)
		} else {
			c.stop(victim)
			time.Sleep(time.Duration(50+rng.IntN(100)) * time.Millisecond)
			c.start(victim)
		}
		faults++
		time.Sleep(time.Duration(100+rng.IntN(200)) * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	end := time.Since(start).Nanoseconds() + 1
	for _, i := range unknown {
		history[i].Return = end
	}
	known := len(history) - len(unknown)
	t.Logf("%d faults, %d operations (%d with an unknown outcome)", faults, len(history), len(unknown))
	if known < 200 {
		t.Fatalf("only %d operations completed: the groups did not recover from the faults", known)
	}
	res, info := porcupine.CheckOperationsVerbose(chaosModel, history, 60*time.Second)
	if res != porcupine.Ok {
		_ = info
		t.Fatalf("history not linearizable (%v)", res)
	}

	// Healed: every node reaches the same state, group by group.
	for g := range c.groups {
		lead := c.waitLeader(Group(g))
		n, _ := c.node(lead)
		if _, err := n.Propose(ctxT(t), Group(g), []byte("end=1")); err != nil {
			t.Fatal(err)
		}
	}
	_, sms := c.node(c.waitLeader(0))
	want := make([]map[string]string, c.groups)
	for g := range c.groups {
		lead := c.waitLeader(Group(g))
		_, sms = c.node(lead)
		want[g], _ = sms[g].snapshot()
	}
	c.converge(want)
	c.checkLogMatching()
}

// checkLogMatching stops every node and compares the logs they stored:
// entries of the same group, index and term must be the same entry.
func (c *cluster) checkLogMatching() {
	t := c.t
	for _, id := range c.ids {
		if n, _ := c.node(id); n != nil {
			c.stop(id)
		}
	}
	logs := map[uint64][]GroupLog{}
	for _, id := range c.ids {
		sh, err := logstore.OpenShared(c.dirs[id], logstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for g := range c.groups {
			gl, err := ReadGroupLog(sh, Group(g))
			if err != nil {
				t.Fatal(err)
			}
			logs[id] = append(logs[id], gl)
		}
		sh.Close()
	}
	compared := 0
	for g := range c.groups {
		byIndex := map[uint64]pb.Entry{}
		for _, id := range c.ids {
			for _, e := range logs[id][g].Entries {
				prev, ok := byIndex[e.Index]
				if !ok {
					byIndex[e.Index] = e
					continue
				}
				compared++
				if prev.Term == e.Term && (prev.Type != e.Type || !bytes.Equal(prev.Data, e.Data)) {
					t.Fatalf("group %d, index %d, term %d: node %d stored another entry than an earlier node (%q vs %q)", g, e.Index, e.Term, id, e.Data, prev.Data)
				}
			}
		}
	}
	t.Logf("log matching: %d stored entries compared across nodes", compared)
}

type chaosResult struct {
	out       chaosOut
	call, ret time.Time
}

// chaosOp runs in on a node that believes it leads g; ok is false when none
// does, or when the operation certainly did nothing (refused, or a read
// that failed).
func (c *cluster) chaosOp(g Group, in chaosIn) (chaosResult, bool) {
	var n *Node
	var sm *kv
	for _, i := range rand.Perm(len(c.ids)) { // any node that thinks it leads, a deposed one too
		if m, sms := c.node(c.ids[i]); m != nil {
			if leading(m, g) {
				n, sm = m, sms[g]
				break
			}
		}
	}
	if n == nil {
		return chaosResult{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	r := chaosResult{call: time.Now()}
	if in.get {
		if err := n.Read(ctx, g); err != nil {
			return r, false
		}
		m, _ := sm.snapshot()
		r.out.val, r.ret = m[in.key], time.Now()
		return r, true
	}
	old, err := n.Propose(ctx, g, []byte(in.key+"="+in.val))
	r.ret = time.Now()
	switch {
	case err == nil:
		r.out.val = old.(string)
	case errors.Is(err, ErrNotLeader), errors.Is(err, ErrNoGroup):
		return r, false // nothing was proposed
	default:
		r.out.unknown = true
	}
	return r, true
}
