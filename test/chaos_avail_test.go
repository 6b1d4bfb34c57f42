package test

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// Write availability per fault (issue 45). A bounded fault is injected once
// every group has kept its leader for settleFor (a single fault, as the bound
// means it); one that finds the previous fault's recovery still going after
// settleWait is injected anyway and reported apart, not held to the bound.
// The nemesis records each fault's
// window and the nodes on its minority side; the linearizability clients
// record every write they attempt, with the node it went to. Per fault, the
// majority side's unavailability is the longest stretch, from the fault's
// start, in which no write sent to a majority-side node got a definite answer
// (its result); the minority side's is the longest that one write sent to a
// minority-side node waited for any answer (TRYAGAIN and UNKNOWNOUTCOME
// included: a hang is what it measures).

// electionTimeout is lockd's Raft election (and heartbeat) timeout.
const electionTimeout = 500 * time.Millisecond

// majorityBound is the most the majority side of a single fault may go
// without a successful write: one election timeout plus 1 s.
const majorityBound = electionTimeout + time.Second

// boundedFaults are the single faults whose majority side majorityBound
// applies to: a leader killed, paused or cut off, a follower killed or cut off.
var boundedFaults = map[string]bool{fKillLeader: true, fKillFollower: true, fPauseLeader: true, fPartition: true, fIsolateLead: true}

// faultWindow is one injected fault: from just before it was applied until
// it was healed (a killed node restarted), and the indices of the nodes on its
// minority side (none for faults that cut nobody off).
type faultWindow struct {
	kind       string
	start, end time.Time
	minority   []int
	settled    bool // the cluster had settled from the previous fault when this one began
	// unbounded: a bounded kind that may take a majority of some group's
	// voters (a placed run's partition of two nodes): measured, not held
	// to majorityBound.
	unbounded bool
}

// bounded reports whether majorityBound applies to w.
func (w faultWindow) bounded() bool { return boundedFaults[w.kind] && !w.unbounded }

// writeAttempt is one write a linearizability client sent: the node it went
// to (-1: none could be dialed), when, and whether it got a definite answer.
type writeAttempt struct {
	node      int
	call, ret time.Time
	ok        bool
}

// sideGaps is a fault kind's worst unavailability on each side; measured
// reports whether a client was on that side at all.
type sideGaps struct {
	majority, minority                 time.Duration
	majorityMeasured, minorityMeasured bool
	// A bounded fault injected before the cluster settled from the previous
	// one (nemesis.run) is not held to majorityBound: its majority side's
	// longest gap is reported apart.
	unsettled  time.Duration
	unsettledN int
}

// faultGaps measures every window against the clients' write attempts and
// returns the worst per fault kind, and the windows of bounded faults whose
// majority side exceeded majorityBound.
func faultGaps(windows []faultWindow, recs []*linRecorder) (map[string]sideGaps, []faultWindowGap) {
	var all []writeAttempt
	for _, rec := range recs {
		all = append(all, rec.writes...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ret.Before(all[j].ret) })
	out := map[string]sideGaps{}
	var over []faultWindowGap
	for _, w := range windows {
		g := out[w.kind]
		// Majority side: successes on majority-side nodes, by answer time.
		prev := w.start
		var gap time.Duration
		measured := false
		var tried time.Time // the last answer to a majority-side write sent during the window
		for _, a := range all {
			if a.node < 0 || slices.Contains(w.minority, a.node) {
				continue
			}
			if a.call.Before(w.end) && a.ret.After(w.start) {
				measured = true
				if a.ret.After(tried) {
					tried = a.ret
				}
			}
			if !a.ok || !a.ret.After(prev) {
				continue
			}
			gap = max(gap, a.ret.Sub(prev))
			prev = a.ret
			if a.ret.After(w.end) {
				break
			}
		}
		// The window's tail counts while a client was still writing: the
		// clients stop at chaosLinMaxOps, possibly before a long fault ends.
		if end := minTime(w.end, tried); prev.Before(end) {
			gap = max(gap, end.Sub(prev))
		}
		if measured {
			if w.settled || !w.bounded() {
				g.majority, g.majorityMeasured = max(g.majority, gap), true
			} else {
				g.unsettled, g.unsettledN = max(g.unsettled, gap), g.unsettledN+1
			}
			if w.bounded() && w.settled && gap > majorityBound {
				over = append(over, faultWindowGap{w, gap})
			}
		}
		// Minority side: the longest wait of a write in flight during it.
		for _, a := range all {
			if a.node < 0 || !slices.Contains(w.minority, a.node) || !a.call.Before(w.end) || !a.ret.After(w.start) {
				continue
			}
			g.minority, g.minorityMeasured = max(g.minority, a.ret.Sub(a.call)), true
		}
		out[w.kind] = g
	}
	return out, over
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// faultWindowGap is a fault whose majority side went gap without a write.
type faultWindowGap struct {
	w   faultWindow
	gap time.Duration
}

// String is the report's column for a fault kind: the longest write
// unavailability on each side ("" when no client was on either).
func (g sideGaps) String() string {
	side := func(d time.Duration, ok bool) string {
		if !ok {
			return "-"
		}
		return d.Round(time.Millisecond).String()
	}
	if !g.majorityMeasured && !g.minorityMeasured && g.unsettledN == 0 {
		return ""
	}
	out := "    longest write unavailability: majority side " + side(g.majority, g.majorityMeasured) +
		", minority side " + side(g.minority, g.minorityMeasured)
	if g.unsettledN > 0 {
		out += fmt.Sprintf(" (%d begun during a recovery: majority side %v)", g.unsettledN, g.unsettled.Round(time.Millisecond))
	}
	return out
}
