package clustertest

import (
	"testing"
	"time"
)

// Node is what the kit asks of one member of a running cluster, whichever
// kind it is (a Store in the test's process, a lockd process).
type Node interface {
	// Running reports whether the member is up: opened and not closed, or
	// its process started and not killed.
	Running() bool
	// IsLeader reports whether the member leads now. The kit asks only a
	// member that is Running.
	IsLeader() bool
}

// Leader returns the index of the first running node that leads, or -1 when
// none does.
func Leader[N Node](nodes []N) int {
	for i, nd := range nodes {
		if nd.Running() && nd.IsLeader() {
			return i
		}
	}
	return -1
}

// Followers returns the indexes, in order, of the running nodes that do not
// lead.
func Followers[N Node](nodes []N) []int {
	var out []int
	for i, nd := range nodes {
		if nd.Running() && !nd.IsLeader() {
			out = append(out, i)
		}
	}
	return out
}

// WaitLeader polls Leader(nodes()) every Poll until a node leads and returns
// its index and the node; it fails the test ("no leader within <bound>")
// when bound passes first. nodes is called at each poll, so it sees members
// that start and stop meanwhile.
func WaitLeader[N Node](t testing.TB, bound time.Duration, nodes func() []N) (int, N) {
	t.Helper()
	li := -1
	var nd N
	if !Until(bound, Poll, func() bool {
		ns := nodes()
		if li = Leader(ns); li >= 0 {
			nd = ns[li]
		}
		return li >= 0
	}) {
		t.Fatalf("no leader within %v", bound)
	}
	return li, nd
}
