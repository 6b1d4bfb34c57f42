package test

import (
	"strings"
	"testing"
	"time"
)

// faultGaps holds only faults begun on a settled cluster to the majority
// bound, and reports the others apart: a kill-leader begun during the
// previous fault's recovery, whose majority side went 3 s without a write,
// is reported but is no violation; the same gap from a settled start is.
func TestFaultGapsBoundSettledFaultsOnly(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// Node 0 is cut off; node 1 is on the majority side: its writes succeed
	// at 0 ms, then only at 3000 ms, 4100 ms, 10000 ms and 13000 ms.
	rec := &linRecorder{writes: []writeAttempt{
		{node: 1, call: at(-10), ret: at(0), ok: true},
		{node: 1, call: at(100), ret: at(3000), ok: true},
		{node: 1, call: at(4000), ret: at(4100), ok: true},
		{node: 1, call: at(9990), ret: at(10000), ok: true},
		{node: 1, call: at(10100), ret: at(13000), ok: true},
	}}
	windows := []faultWindow{
		{kind: fKillLeader, start: at(0), end: at(4000), minority: []int{0}, settled: false},
		{kind: fKillLeader, start: at(10000), end: at(14000), minority: []int{0}, settled: true},
	}
	gaps, over := faultGaps(windows, []*linRecorder{rec})
	if len(over) != 1 || !over[0].w.settled || over[0].gap != 3*time.Second {
		t.Fatalf("over the bound: %+v, want the settled window's 3s gap only", over)
	}
	g := gaps[fKillLeader]
	if g.majority != 3*time.Second || g.unsettledN != 1 || g.unsettled != 3*time.Second {
		t.Fatalf("kill-leader gaps %+v", g)
	}
	if s := g.String(); !strings.Contains(s, "majority side 3s") || !strings.Contains(s, "1 begun during a recovery: majority side 3s") {
		t.Fatalf("report column %q", s)
	}
}

// A fault that outlasts the clients' writes (they stop at chaosLinMaxOps)
// is measured up to the last answer they got, not to its end.
func TestFaultGapsStopAtTheLastWrite(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	rec := &linRecorder{writes: []writeAttempt{
		{node: 1, call: at(90), ret: at(100), ok: true},
		{node: 1, call: at(100), ret: at(400), ok: false},
		{node: 1, call: at(400), ret: at(500), ok: true},
	}}
	w := faultWindow{kind: fMemberMove, start: at(0), end: at(9000), minority: []int{0}}
	gaps, _ := faultGaps([]faultWindow{w}, []*linRecorder{rec})
	if g := gaps[fMemberMove]; !g.majorityMeasured || g.majority != 400*time.Millisecond {
		t.Fatalf("member-move gaps %+v; want 400ms (from the first answer to the last)", g)
	}
	// A write still waiting when the fault ends counts to the end.
	rec.writes = append(rec.writes, writeAttempt{node: 1, call: at(600), ret: at(12000), ok: false})
	gaps, _ = faultGaps([]faultWindow{w}, []*linRecorder{rec})
	if g := gaps[fMemberMove]; g.majority != 8500*time.Millisecond {
		t.Fatalf("member-move gaps %+v; want 8.5s (a write hung to the fault's end)", g)
	}
}
