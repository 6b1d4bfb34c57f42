package test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
)

// The chaos runs spread the register workload (linModel, the same model as
// TestLinearizableRegister) over more keys than that test, and over time: a
// client uses the keys of the current epoch only (as Jepsen's independent
// keys do). An operation of unknown outcome is concurrent with everything
// after it on its key; bounding a key's life bounds what porcupine must
// search, while every fault still hits the keys in use at that moment.
const (
	chaosLinKeys   = 8
	chaosLinEpoch  = time.Second
	chaosLinMaxOps = 4000
)

// chaosLinClient is linClient on chaosLinKeys keys: GET, SET and SET NX, each
// recorded with its call and return time; TRYAGAIN and unsent requests did
// not happen and are not recorded, an I/O error or UNKNOWNOUTCOME is recorded
// as an unknown outcome.
func chaosLinClient(cl *lockdCluster, rec *linRecorder, seed uint64, start time.Time, stop <-chan struct{}, done *atomic.Int64) {
	nc := &nodeConn{cl: cl, home: rec.client % len(cl.nodes)}
	defer nc.close()
	rng := rand.New(rand.NewPCG(seed, uint64(rec.client)))
	now := func() int64 { return int64(time.Since(start)) }
	// A key on which this client has a write of unknown outcome only gets
	// reads from it: at most one such write per client and key keeps
	// porcupine's search small.
	tainted := map[string]bool{}
	for seq := 0; len(rec.ops) < chaosLinMaxOps; seq++ {
		select {
		case <-stop:
			return
		default:
		}
		epoch := int(time.Since(start) / chaosLinEpoch)
		in := linInput{key: fmt.Sprintf("chaoslin:e%d:k%d", epoch, rng.IntN(chaosLinKeys))}
		var args []string
		switch p := rng.IntN(10); {
		case p < 4 || tainted[in.key]:
			in.op, args = linGet, []string{"GET", in.key}
		case p < 8:
			in.op, in.val = linSet, fmt.Sprintf("c%d-%d", rec.client, seq)
			args = []string{"SET", in.key, in.val}
		default:
			in.op, in.val = linSetNX, fmt.Sprintf("c%d-%d", rec.client, seq)
			args = []string{"SET", in.key, in.val, "NX"}
		}
		call := now()
		r, node, err := nc.do(args...)
		op := porcupine.Operation{ClientId: rec.client, Input: in, Call: call, Return: now()}
		if in.op != linGet {
			rec.writes = append(rec.writes, writeAttempt{node: node, call: start.Add(time.Duration(op.Call)),
				ret: start.Add(time.Duration(op.Return)), ok: err == nil && !r.isErr()})
		}
		out := linOutput{unknown: true}
		switch {
		case err != nil:
			if _, ok := err.(errNotSent); ok {
				rec.notSent++
				time.Sleep(5 * time.Millisecond) // no node could be dialed: back off
				continue
			}
		case r.isErr() && strings.HasPrefix(r.str, "TRYAGAIN"):
			rec.tryagain++
			time.Sleep(2 * time.Millisecond) // an election: back off
			continue
		case r.isErr():
			if !strings.HasPrefix(r.str, "UNKNOWNOUTCOME") {
				rec.otherErr++
			}
			nc.close()
			nc.home++                         // try another node next
			time.Sleep(10 * time.Millisecond) // back off after an unknown outcome
		case in.op == linGet && r.kind == '$':
			out = linOutput{ok: !r.null, val: r.str}
		case in.op == linSet && r.kind == '+' && r.str == "OK":
			out = linOutput{ok: true}
		case in.op == linSetNX && r.kind == '+' && r.str == "OK":
			out = linOutput{ok: true}
		case in.op == linSetNX && r.null:
			out = linOutput{}
		default:
			rec.otherErr++
		}
		op.Output = out
		if out.unknown {
			if in.op == linGet {
				continue // constrains nothing
			}
			rec.unknown = append(rec.unknown, len(rec.ops))
			tainted[in.key] = true
		}
		rec.ops = append(rec.ops, op)
		done.Add(1)
	}
}
