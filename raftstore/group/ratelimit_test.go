package group

import (
	"testing"
	"time"

	"github.com/lockd/lockd/raftstore/fsm"
)

// closeTo reports whether got is within a microsecond of want (the bucket
// counts in float64 tokens).
func closeTo(got, want time.Duration) bool {
	d := got - want
	return d > -time.Microsecond && d < time.Microsecond
}

func TestRateLimitBucket(t *testing.T) {
	var l rateLimits
	t0 := time.Unix(1_700_000_000, 0)
	ns := fsm.Namespace{Prefix: "slow/", Rate: 5}

	// Full when first used: one second's worth, then refused.
	for i := 0; i < 5; i++ {
		if wait, ok := l.take(ns, t0); !ok || wait != 0 {
			t.Fatalf("operation %d of a fresh bucket: ok %v wait %v, want allowed", i, ok, wait)
		}
	}
	wait, ok := l.take(ns, t0)
	if ok || !closeTo(wait, 200*time.Millisecond) {
		t.Fatalf("6th operation at RATE 5: ok %v wait %v, want refused with 200ms", ok, wait)
	}
	// Refusing spends nothing: the wait shrinks with the clock only.
	for i := 0; i < 3; i++ {
		if wait, ok := l.take(ns, t0.Add(50*time.Millisecond)); ok || !closeTo(wait, 150*time.Millisecond) {
			t.Fatalf("refused again after 50ms: ok %v wait %v, want refused with 150ms", ok, wait)
		}
	}
	// After the reported wait one operation runs, and the next waits a full interval.
	if wait, ok := l.take(ns, t0.Add(200*time.Millisecond)); !ok || wait != 0 {
		t.Fatalf("after the reported wait: ok %v wait %v, want allowed", ok, wait)
	}
	if wait, ok := l.take(ns, t0.Add(200*time.Millisecond)); ok || !closeTo(wait, 200*time.Millisecond) {
		t.Fatalf("right after: ok %v wait %v, want refused with 200ms", ok, wait)
	}

	// Another namespace has a bucket of its own.
	other := fsm.Namespace{Prefix: "other/", Rate: 1}
	if _, ok := l.take(other, t0.Add(200*time.Millisecond)); !ok {
		t.Fatal("another namespace refused by slow/'s bucket")
	}

	// An idle bucket refills to one second's worth and no more.
	later := t0.Add(time.Hour)
	for i := 0; i < 5; i++ {
		if _, ok := l.take(ns, later); !ok {
			t.Fatalf("operation %d after an hour idle refused", i)
		}
	}
	if _, ok := l.take(ns, later); ok {
		t.Fatal("an idle bucket held more than one second's worth")
	}
}

func TestRateLimitRateChange(t *testing.T) {
	var l rateLimits
	t0 := time.Unix(1_700_000_000, 0)
	fast := fsm.Namespace{Prefix: "ns/", Rate: 100}
	if _, ok := l.take(fast, t0); !ok {
		t.Fatal("first operation refused")
	}
	// Lowered: the bucket holds at most the new second's worth, refilled at the new rate.
	slow := fsm.Namespace{Prefix: "ns/", Rate: 2}
	at := t0.Add(time.Second)
	for i := 0; i < 2; i++ {
		if _, ok := l.take(slow, at); !ok {
			t.Fatalf("operation %d at the lowered RATE refused", i)
		}
	}
	wait, ok := l.take(slow, at)
	if ok || !closeTo(wait, 500*time.Millisecond) {
		t.Fatalf("3rd operation at RATE 2: ok %v wait %v, want refused with 500ms", ok, wait)
	}
	// Raised: the new rate refills the bucket up to the new second's worth.
	at = at.Add(2 * time.Second)
	raised := fsm.Namespace{Prefix: "ns/", Rate: 10}
	if _, ok := l.take(raised, at); !ok {
		t.Fatal("first operation at the raised RATE refused")
	}
	at = at.Add(time.Second)
	n := 0
	for ; n < 20; n++ {
		if _, ok := l.take(raised, at); !ok {
			break
		}
	}
	if n != 10 {
		t.Fatalf("%d operations allowed a second after raising RATE to 10, want 10", n)
	}
	if wait, ok := l.take(raised, at); ok || !closeTo(wait, 100*time.Millisecond) {
		t.Fatalf("refused at RATE 10: ok %v wait %v, want 100ms", ok, wait)
	}
}
