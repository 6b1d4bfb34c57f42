package clustertest

import (
	"testing"
	"time"
)

// Poll is how often WaitFor and WaitLeader ask their condition again.
const Poll = 5 * time.Millisecond

// Until calls cond, then again every `every`, until it returns true or bound
// has passed since the call began; it reports whether cond returned true.
// cond is called at least once and never begun after the bound, so a cond
// may use the time left (a dial's timeout). Until runs cond on the caller's
// goroutine (cond may fail the test) and returns no later than one cond and
// one sleep after the bound.
func Until(bound, every time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(bound)
	for !cond() {
		time.Sleep(every)
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// WaitFor polls cond every Poll until it returns true, and fails the test
// ("timed out after <bound> waiting for <what>") when bound passes first.
func WaitFor(t testing.TB, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Until(bound, Poll, cond) {
		t.Fatalf("timed out after %v waiting for %s", bound, what)
	}
}
