package raftstore

import (
	"math"
	"testing"
	"time"
)

// expiryWait sleeps until the next deadline, at most max, and never
// overflows: a deadline as far ahead as a PXAT allows (or a session-held
// lock's, math.MaxInt64) once made the expiry loop spin on a negative wait.
func TestExpiryWait(t *testing.T) {
	const now = 1_000_000
	for _, c := range []struct {
		d    int64
		want time.Duration
	}{
		{now + 5, 5 * time.Millisecond},
		{now + 999, 999 * time.Millisecond},
		{now + 2000, time.Second},
		{now + 9_000_000_000_000_000, time.Second},
		{math.MaxInt64, time.Second},
	} {
		if got := expiryWait(c.d, now, time.Second); got != c.want {
			t.Errorf("expiryWait(now+%d) = %v, want %v", c.d-now, got, c.want)
		}
	}
}
