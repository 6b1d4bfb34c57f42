package test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The linearizability suite. Clients issue SET, GET and SET NX on a few keys
// while the leader is killed and restarted; every operation's call and return
// time, input and output is recorded, and porcupine checks the history, key by
// key, against a single-register model.
const (
	linClients = 5
	linKeys    = 3
	// linMaxOps bounds one client's recorded operations (the checker's work
	// grows with the history), linMaxTries its attempts (those rejected with
	// TRYAGAIN or never sent are not recorded). It must outlast the failover:
	// the groups the killed node did not lead keep serving while the others
	// elect, and at 3000 five clients had used up their 15,000 operations in
	// the 1.5 s before the killed node rejoined (CI, once: "no operation
	// completed ... after n2 rejoined"), so the history never crossed it.
	linMaxOps   = 8000
	linMaxTries = 20 * linMaxOps
	// linPhaseOps: completed operations (all clients together) before the
	// kill, and again after the restart, before the load stops.
	linPhaseOps = 3000
	// linPhase bounds each of those phases; the run goes on to the check with
	// what it has if a phase does not reach linPhaseOps.
	linPhase = 4 * time.Second
	// linCheckTimeout bounds porcupine; a check that does not decide in it is
	// logged as undecided, not failed.
	linCheckTimeout = 10 * time.Second
)

type linOpKind uint8

const (
	linGet linOpKind = iota
	linSet
	linSetNX
)

func (k linOpKind) String() string {
	return [...]string{"get", "set", "setnx"}[k]
}

// linInput is an operation's input.
type linInput struct {
	op  linOpKind
	key string
	val string // set and setnx
}

// linOutput is an operation's output. unknown: no reply came back (an I/O
// error or UNKNOWNOUTCOME); the operation may have taken effect at any point
// after its call, or never.
type linOutput struct {
	unknown bool
	ok      bool   // setnx: applied; get: the key exists
	val     string // get
}

// linState is the register: a key's value, or absent.
type linState struct {
	present bool
	val     string
}

func (s linState) String() string {
	if !s.present {
		return "(absent)"
	}
	return strconv.Quote(s.val)
}

// linModel is a register per key: the history is partitioned by key and each
// partition is checked on its own.
var linModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(linInput).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() interface{} { return linState{} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		s, in, out := state.(linState), input.(linInput), output.(linOutput)
		switch in.op {
		case linGet:
			if out.unknown {
				return true, s
			}
			return out.ok == s.present && (!s.present || out.val == s.val), s
		case linSet:
			return true, linState{present: true, val: in.val}
		case linSetNX:
			if out.unknown { // whichever it did, it did what SET NX does at this point
				if s.present {
					return true, s
				}
				return true, linState{present: true, val: in.val}
			}
			if out.ok {
				return !s.present, linState{present: true, val: in.val}
			}
			return s.present, s
		}
		return false, s
	},
	Equal: func(a, b interface{}) bool { return a.(linState) == b.(linState) },
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(linInput), output.(linOutput)
		var res string
		switch {
		case out.unknown:
			res = "unknown"
		case in.op == linGet && !out.ok:
			res = "(nil)"
		case in.op == linGet:
			res = strconv.Quote(out.val)
		case in.op == linSetNX && !out.ok:
			res = "(nil)"
		default:
			res = "OK"
		}
		if in.op == linGet {
			return fmt.Sprintf("get(%s) -> %s", in.key, res)
		}
		return fmt.Sprintf("%s(%s, %q) -> %s", in.op, in.key, in.val, res)
	},
	DescribeState: func(state interface{}) string { return state.(linState).String() },
}

// linRecorder collects one client's operations.
type linRecorder struct {
	client                      int
	ops                         []porcupine.Operation
	unknown                     []int // indices into ops whose Return is set after the run
	tryagain, notSent, otherErr int
	otherErrs                   []string
	writes                      []writeAttempt // every write attempted (chaosLinClient only)
}

// linClient runs one client until stop is closed or it has recorded linMaxOps
// operations (or made linMaxTries attempts).
func linClient(cl *lockdCluster, rec *linRecorder, start time.Time, stop <-chan struct{}, done *atomic.Int64) {
	nc := &nodeConn{cl: cl, home: rec.client % len(cl.nodes)}
	defer nc.close()
	rng := rand.New(rand.NewPCG(uint64(rec.client), uint64(start.UnixNano())))
	now := func() int64 { return int64(time.Since(start)) }
	for seq := 0; seq < linMaxTries && len(rec.ops) < linMaxOps; seq++ {
		select {
		case <-stop:
			return
		default:
		}
		in := linInput{key: "lin:k" + strconv.Itoa(rng.IntN(linKeys))}
		var args []string
		switch p := rng.IntN(10); {
		case p < 4:
			in.op = linGet
			args = []string{"GET", in.key}
		case p < 8:
			in.op, in.val = linSet, fmt.Sprintf("c%d-%d", rec.client, seq)
			args = []string{"SET", in.key, in.val}
		default:
			in.op, in.val = linSetNX, fmt.Sprintf("c%d-%d", rec.client, seq)
			args = []string{"SET", in.key, in.val, "NX"}
		}
		call := now()
		r, _, err := nc.do(args...)
		ret := now()
		op := porcupine.Operation{ClientId: rec.client, Input: in, Call: call, Return: ret}
		switch {
		case err != nil:
			if _, ok := err.(errNotSent); ok { // nothing was written: nothing happened
				rec.notSent++
				// Every node this client may dial is down: back off before
				// dialing again (not synchronisation).
				time.Sleep(5 * time.Millisecond)
				continue
			}
			op.Output = linOutput{unknown: true} // nodeConn dropped the connection
		case r.isErr() && strings.HasPrefix(r.str, "TRYAGAIN"):
			rec.tryagain++ // rejected before the log: it never happened
			// No leader is ready (an election): back off before the next
			// attempt (not synchronisation).
			time.Sleep(2 * time.Millisecond)
			continue
		case r.isErr():
			if !strings.HasPrefix(r.str, "UNKNOWNOUTCOME") {
				rec.otherErr++
				if len(rec.otherErrs) < 5 {
					rec.otherErrs = append(rec.otherErrs, fmt.Sprintf("%s: %v", strings.Join(args, " "), r))
				}
			}
			// Unknown outcome (or an error lockd does not promise anything
			// about): it may have happened. Reconnect.
			op.Output = linOutput{unknown: true}
			nc.close()
		case in.op == linGet:
			switch {
			case r.kind == '$' && r.null:
				op.Output = linOutput{}
			case r.kind == '$':
				op.Output = linOutput{ok: true, val: r.str}
			default:
				op.Output = linOutput{unknown: true}
				rec.otherErr++
				rec.otherErrs = append(rec.otherErrs, fmt.Sprintf("%s: unexpected reply %v", strings.Join(args, " "), r))
			}
		case in.op == linSet:
			if r.kind != '+' || r.str != "OK" {
				op.Output = linOutput{unknown: true}
				rec.otherErr++
				rec.otherErrs = append(rec.otherErrs, fmt.Sprintf("%s: unexpected reply %v", strings.Join(args, " "), r))
			} else {
				op.Output = linOutput{ok: true}
			}
		case in.op == linSetNX:
			switch {
			case r.kind == '+' && r.str == "OK":
				op.Output = linOutput{ok: true}
			case r.null:
				op.Output = linOutput{}
			default:
				op.Output = linOutput{unknown: true}
				rec.otherErr++
				rec.otherErrs = append(rec.otherErrs, fmt.Sprintf("%s: unexpected reply %v", strings.Join(args, " "), r))
			}
		}
		if op.Output.(linOutput).unknown {
			if in.op == linGet {
				continue // a read of unknown outcome constrains nothing
			}
			rec.unknown = append(rec.unknown, len(rec.ops))
		}
		rec.ops = append(rec.ops, op)
		done.Add(1)
	}
}

// waitOps polls until done reaches n or bound passes; it reports whether n
// was reached.
func waitOps(done *atomic.Int64, n int64, bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	for done.Load() < n {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
	return true
}

func TestLinearizableRegister(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	t0 := time.Now()
	cl := startCluster(t, 3)
	t.Logf("cluster started in %v", time.Since(t0).Round(time.Millisecond))

	start := time.Now()
	stop := make(chan struct{})
	var done atomic.Int64
	recs := make([]*linRecorder, linClients)
	var wg sync.WaitGroup
	for i := range recs {
		recs[i] = &linRecorder{client: i}
		wg.Add(1)
		go func() {
			defer wg.Done()
			linClient(cl, recs[i], start, stop, &done)
		}()
	}
	stopped := false
	stopLoad := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopLoad()

	if !waitOps(&done, linPhaseOps, linPhase) {
		t.Logf("only %d operations before the kill (wanted %d)", done.Load(), linPhaseOps)
	}
	leader := cl.waitLeader(leaderTimeout)
	killAt := time.Since(start)
	cl.kill(leader)
	newLeader := cl.waitLeader(leaderTimeout)
	electedAt := time.Since(start)
	cl.restart(leader)
	restartedAt := time.Since(start)
	t.Logf("killed leader %s at %v; %s led at %v; %s rejoined at %v", leader.id, killAt.Round(time.Millisecond),
		newLeader.id, electedAt.Round(time.Millisecond), leader.id, restartedAt.Round(time.Millisecond))
	afterRestart := done.Load()
	if !waitOps(&done, afterRestart+linPhaseOps, linPhase) {
		t.Logf("only %d operations after the restart (wanted %d)", done.Load()-afterRestart, linPhaseOps)
	}
	stopLoad()
	if n := done.Load() - afterRestart; n == 0 {
		t.Errorf("no operation completed within %v after %s rejoined: the history does not cross the failover", linPhase, leader.id)
	} else {
		t.Logf("%d operations completed after %s rejoined", n, leader.id)
	}
	end := int64(time.Since(start))

	var history []porcupine.Operation
	var unknown, tryagain, notSent, otherErr int
	for _, rec := range recs {
		// An operation of unknown outcome "returns" after every other event:
		// it may have taken effect at any point after its call.
		for _, i := range rec.unknown {
			rec.ops[i].Return = end + 1
		}
		history = append(history, rec.ops...)
		unknown += len(rec.unknown)
		tryagain += rec.tryagain
		notSent += rec.notSent
		otherErr += rec.otherErr
		for _, e := range rec.otherErrs {
			t.Logf("client %d: %s (recorded as unknown outcome)", rec.client, e)
		}
	}
	kinds := map[linOpKind]int{}
	for _, op := range history {
		kinds[op.Input.(linInput).op]++
	}
	t.Logf("history: %d operations in %v (%d get, %d set, %d setnx); %d of unknown outcome, %d TRYAGAIN and %d unsent omitted, %d other errors",
		len(history), time.Duration(end).Round(time.Millisecond), kinds[linGet], kinds[linSet], kinds[linSetNX],
		unknown, tryagain, notSent, otherErr)
	if len(history) == 0 {
		t.Fatal("no operation completed")
	}

	checkStart := time.Now()
	res := porcupine.CheckOperationsTimeout(linModel, history, linCheckTimeout)
	t.Logf("porcupine: %s in %v", res, time.Since(checkStart).Round(time.Millisecond))
	switch res {
	case porcupine.Ok:
	case porcupine.Unknown:
		t.Logf("porcupine could not decide within %v: linearizability not established (not a failure)", linCheckTimeout)
	case porcupine.Illegal:
		_, info := porcupine.CheckOperationsVerbose(linModel, history, linCheckTimeout)
		t.Fatalf("history is not linearizable; visualization: %s", linVisualize(t, info))
	}
}

// linVisualize writes porcupine's visualization to a file that outlives the
// test and returns its path (or why it could not).
func linVisualize(t *testing.T, info porcupine.LinearizationInfo) string {
	f, err := os.CreateTemp("", "lockd-linearizability-*.html")
	if err != nil {
		return "(could not create a file: " + err.Error() + ")"
	}
	path := f.Name()
	f.Close()
	if err := porcupine.VisualizePath(linModel, info, path); err != nil {
		return fmt.Sprintf("(writing %s: %v)", path, err)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return path
}

// TestLinearizabilityCheckerCatchesStaleRead is the negative control: a read
// that returns a value overwritten before the read began must be Illegal, and
// the same history with the read concurrent with the overwrite must be Ok.
func TestLinearizabilityCheckerCatchesStaleRead(t *testing.T) {
	op := func(client int, call, ret int64, in linInput, out linOutput) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
	}
	set := func(v string) linInput { return linInput{op: linSet, key: "k", val: v} }
	get := linInput{op: linGet, key: "k"}
	stale := []porcupine.Operation{
		op(0, 0, 10, set("a"), linOutput{ok: true}),
		op(0, 20, 30, set("b"), linOutput{ok: true}),
		op(1, 40, 50, get, linOutput{ok: true, val: "a"}), // "b" was acknowledged before this read began
		// An unrelated key, to exercise the partition.
		op(2, 0, 60, linInput{op: linSetNX, key: "other", val: "x"}, linOutput{ok: true}),
	}
	if res := porcupine.CheckOperationsTimeout(linModel, stale, time.Second); res != porcupine.Illegal {
		t.Fatalf("stale read: porcupine said %s, want %s", res, porcupine.Illegal)
	}
	// The failure path's visualization can be written.
	res, info := porcupine.CheckOperationsVerbose(linModel, stale, time.Second)
	if res != porcupine.Illegal {
		t.Fatalf("stale read (verbose): porcupine said %s, want %s", res, porcupine.Illegal)
	}
	vis := filepath.Join(t.TempDir(), "stale.html")
	if err := porcupine.VisualizePath(linModel, info, vis); err != nil {
		t.Fatalf("visualize: %v", err)
	}
	if fi, err := os.Stat(vis); err != nil || fi.Size() == 0 {
		t.Fatalf("visualization %s not written: %v", vis, err)
	}

	concurrent := append([]porcupine.Operation(nil), stale...)
	concurrent[2].Call = 25 // now overlaps SET b: reading "a" is allowed
	if res := porcupine.CheckOperationsTimeout(linModel, concurrent, time.Second); res != porcupine.Ok {
		t.Fatalf("read concurrent with the overwrite: porcupine said %s, want %s", res, porcupine.Ok)
	}

	// A SET NX that answers OK on a key that is already set is illegal; one of
	// unknown outcome is not.
	nx := []porcupine.Operation{
		op(0, 0, 10, set("a"), linOutput{ok: true}),
		op(1, 20, 30, linInput{op: linSetNX, key: "k", val: "n"}, linOutput{ok: true}),
	}
	if res := porcupine.CheckOperationsTimeout(linModel, nx, time.Second); res != porcupine.Illegal {
		t.Fatalf("SET NX granted on a set key: porcupine said %s, want %s", res, porcupine.Illegal)
	}
	nx[1].Output, nx[1].Return = linOutput{unknown: true}, 100
	if res := porcupine.CheckOperationsTimeout(linModel, nx, time.Second); res != porcupine.Ok {
		t.Fatalf("SET NX of unknown outcome: porcupine said %s, want %s", res, porcupine.Ok)
	}
}
