// Package memtrim hands a quiet process's free heap back to the operating
// system. Go's collector lets the heap grow to twice its live size before it
// collects, and keeps roughly that much from the OS afterwards: after a burst
// of writes (filling a million locks, a snapshot, a restore) a lock server
// would keep two to three times its state in RSS long after the burst ended.
// A Trimmer watches the runtime's own counters and, once allocation has
// quieted while much more memory is held than is live, runs one
// debug.FreeOSMemory (a forced collection that returns every free page).
package memtrim

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// Defaults of Config.
const (
	DefaultInterval = 5 * time.Second
	DefaultMinGap   = 15 * time.Second
	// DefaultSlack is the memory held beyond the live heap that is never worth
	// a trim (small processes keep their headroom).
	DefaultSlack = 64 << 20
)

// Config tunes a Trimmer; zero fields take the defaults.
type Config struct {
	Interval time.Duration // how often the counters are read
	MinGap   time.Duration // least time between two trims
	Slack    uint64        // held - live below this is left alone
	// OnTrim, when set, is called after each trim with the bytes held before
	// and after it (for logs and tests).
	OnTrim func(before, after uint64)
}

// Sample is one reading of the runtime's memory counters.
type Sample struct {
	Live   uint64 // heap bytes marked live by the last collection
	Held   uint64 // bytes the runtime holds from the OS (mapped, not released)
	Allocs uint64 // bytes allocated since the process started
}

var names = []string{
	"/gc/heap/live:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/gc/heap/allocs:bytes",
}

// Read returns the current counters. It does not block.
func Read() Sample {
	s := make([]metrics.Sample, len(names))
	for i, n := range names {
		s[i].Name = n
	}
	metrics.Read(s)
	u := func(i int) uint64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[i].Value.Uint64()
	}
	held := u(1)
	if r := u(2); r < held {
		held -= r
	}
	return Sample{Live: u(0), Held: held, Allocs: u(3)}
}

// Worth reports whether a trim is worth it between two readings prev and cur
// taken one interval apart: more than slack and more than a quarter of the
// live heap is held beyond the live heap, and the process allocated less than a quarter
// of that excess during the interval (it is quiet; a busy process would only
// grow back at once). It is pure.
func Worth(prev, cur Sample, slack uint64) bool {
	if cur.Held <= cur.Live {
		return false
	}
	excess := cur.Held - cur.Live
	if excess < slack || excess < cur.Live/4 {
		return false
	}
	return cur.Allocs-prev.Allocs < excess/4
}

// Run trims the process's memory until ctx ends: every Interval it reads the
// counters and, when Worth says so and MinGap has passed since the last trim,
// calls debug.FreeOSMemory. Run blocks; start it on its own goroutine, once
// per process.
func Run(ctx context.Context, cfg Config) {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.MinGap <= 0 {
		cfg.MinGap = DefaultMinGap
	}
	if cfg.Slack == 0 {
		cfg.Slack = DefaultSlack
	}
	t := time.NewTicker(cfg.Interval)
	defer t.Stop()
	prev := Read()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur := Read()
		if Worth(prev, cur, cfg.Slack) && time.Since(last) >= cfg.MinGap {
			debug.FreeOSMemory()
			last = time.Now()
			after := Read()
			if cfg.OnTrim != nil {
				cfg.OnTrim(cur.Held, after.Held)
			}
			cur = after
		}
		prev = cur
	}
}

var (
	afterMu    sync.Mutex
	afterTimer *time.Timer
)

// After hands the free heap back to the OS (one debug.FreeOSMemory) once d
// has passed without another call to After: for a burst whose end the caller
// knows, such as the snapshot restores of all the groups of a node starting
// up, which then cost one forced collection, not one each. Safe for
// concurrent use; never blocks.
func After(d time.Duration) {
	afterMu.Lock()
	defer afterMu.Unlock()
	if afterTimer != nil {
		afterTimer.Reset(d)
		return
	}
	afterTimer = time.AfterFunc(d, func() {
		afterMu.Lock()
		afterTimer = nil
		afterMu.Unlock()
		debug.FreeOSMemory()
	})
}
