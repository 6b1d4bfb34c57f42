package client

import "time"

// Clock is the time source of local deadlines. Now must read a monotonic
// clock (time.Now does: Sub between two readings ignores wall-clock jumps);
// AfterFunc runs f in its own goroutine once d has passed on that clock.
// Tests inject a fake to drive the deadline arithmetic step by step.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call. Stop prevents it from running and
// reports whether it did.
type Timer interface {
	Stop() bool
}

// realClock is the process's monotonic clock.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// deadlineTimer cancels something at a local deadline: it arms a Clock timer
// and, when it fires early (a timer may run before a fake clock reaches the
// deadline, or the deadline moved), re-arms it for the time that is left.
// The owner holds its own lock around every call.
type deadlineTimer struct {
	clock    Clock
	deadline time.Time
	timer    Timer
	gen      uint64
	fire     func(gen uint64) // called by the timer goroutine with the generation it was armed for
}

// set moves the deadline and re-arms the timer. The caller holds the owner's
// lock and calls fire's work itself when the new deadline has already passed.
func (d *deadlineTimer) set(deadline time.Time) {
	d.deadline = deadline
	d.arm()
}

func (d *deadlineTimer) arm() {
	if d.timer != nil {
		d.timer.Stop()
	}
	d.gen++
	gen := d.gen
	d.timer = d.clock.AfterFunc(max(d.deadline.Sub(d.clock.Now()), 0), func() { d.fire(gen) })
}

// due reports whether a firing of generation gen is current and the deadline
// has passed; when it is current but early it re-arms. The caller holds the
// owner's lock.
func (d *deadlineTimer) due(gen uint64) bool {
	if gen != d.gen {
		return false
	}
	if d.clock.Now().Before(d.deadline) {
		d.arm()
		return false
	}
	return true
}

// stop disarms the timer for good.
func (d *deadlineTimer) stop() {
	if d.timer != nil {
		d.timer.Stop()
	}
	d.gen++
}
