//go:build faults

package group

import (
	"sync"
	"time"
)

// FaultClock is a monotonic clock for fault-injection tests (Config.Now): a
// test can make it jump and change its rate while the store runs. It starts at
// the real time and rate. Every method is safe for concurrent use. It builds
// only with the faults tag.
//
// It shifts what the store takes for elapsed time, the way a misbehaving
// hypervisor or a paused VM does. The leader's log time follows it, so a
// forward jump or a rate above 1 on a leader ends leases early in real time:
// that is the fault, and it is what fencing tokens protect against.
type FaultClock struct {
	mu     sync.Mutex
	origin time.Time     // real reading at creation (carries the monotonic clock)
	at     time.Duration // this clock's elapsed time at realAt
	realAt time.Time
	rate   float64
	jumped time.Duration // sum of all jumps, for reports
}

// NewFaultClock returns a clock that reads like time.Now until changed.
func NewFaultClock() *FaultClock {
	now := time.Now()
	return &FaultClock{origin: now, realAt: now, rate: 1}
}

func (c *FaultClock) elapsedLocked(real time.Time) time.Duration {
	return c.at + time.Duration(float64(real.Sub(c.realAt))*c.rate)
}

// Now returns the clock's current reading.
func (c *FaultClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.origin.Add(c.elapsedLocked(time.Now()))
}

// Jump moves the clock by d (negative: backwards) at once.
func (c *FaultClock) Jump(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.at, c.realAt = c.elapsedLocked(now)+d, now
	c.jumped += d
}

// SetRate makes the clock advance rate seconds per real second from now on
// (1: real time; a rate below 0 is taken as 0).
func (c *FaultClock) SetRate(rate float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.at, c.realAt = c.elapsedLocked(now), now
	c.rate = max(rate, 0)
}

// State returns the current rate and the sum of all jumps so far.
func (c *FaultClock) State() (rate float64, jumped time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rate, c.jumped
}
