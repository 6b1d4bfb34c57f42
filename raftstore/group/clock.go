package group

import (
	"sync"
	"time"
)

// logClock is the leader's source of log time: milliseconds that continue from the
// highest time in the log when the node took office and then advance with the
// node's monotonic clock. It never goes backwards and ignores wall-clock jumps.
type logClock struct {
	mu    sync.Mutex
	base  int64     // log time at start
	start time.Time // monotonic reading when base was taken
	last  int64
	now   func() time.Time // injectable for tests
	// skew is a planted bug for the fault suite (Config.PlantedTakeoverSkew):
	// milliseconds added when a new leader continues log time, which ends
	// leases early. Always 0 outside that suite.
	skew int64
}

func newLogClock(now func() time.Time) *logClock {
	if now == nil {
		now = time.Now
	}
	return &logClock{now: now, start: now()}
}

// reset starts counting from base (the highest log time applied so far) when
// this node takes office. It continues from base even when this node read a
// higher time before: those readings come from an earlier term (its clock ran
// on through the election gap after it lost office, or it stamped entries that
// never committed), and continuing from them would end every lease early by up
// to that gap (found by the chaos suite; TestLogClockForgetsAnEarlierTerm).
// Log time stays monotonic across terms through the FSM's max(previous, stamped).
func (c *logClock) reset(base int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.base = base + c.skew
	c.last = c.base
	c.start = c.now()
}

// read returns the current log time (ms) and wall time (Unix ms).
func (c *logClock) read() (logMs, wallMs int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.now()
	v := c.base + t.Sub(c.start).Milliseconds()
	if v < c.last {
		v = c.last
	}
	c.last = v
	return v, t.UnixMilli()
}
