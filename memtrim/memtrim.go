// Package memtrim hands a quiet process's free heap back to the operating
// system. Go's collector lets the heap grow to twice its live size before it
// collects, and keeps roughly that much from the OS afterwards: after a burst
// of writes (filling a million locks, a snapshot, a restore) a lock server
// would keep two to three times its state in RSS long after the burst ended.
// Run watches the runtime's own counters and, once allocation has quieted
// while much of the heap is garbage or free pages, runs one
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
	DefaultMinGap   = 10 * time.Second
	DefaultRecheck  = 10 * time.Second
	// DefaultSlack is the reclaimable memory that is never worth a trim
	// (small processes keep their headroom).
	DefaultSlack = 32 << 20
)

// Config tunes Run; zero fields take the defaults.
type Config struct {
	Interval time.Duration // how often the counters are read
	MinGap   time.Duration // least time between two trims
	Slack    uint64        // reclaimable memory below this is left alone
	// Recheck is how long after a trim that ended a burst (see policy) Run
	// trims once more, as soon as the process is quiet, whatever Worth says.
	Recheck time.Duration
	// OnTrim, when set, is called after each trim with the bytes held before
	// and after it and how long the trim took (for logs and tests).
	OnTrim func(before, after uint64, took time.Duration)
}

// Sample is one reading of the runtime's memory counters.
type Sample struct {
	Live   uint64 // heap bytes marked live by the last collection
	Held   uint64 // bytes the runtime holds from the OS (mapped, not released)
	Allocs uint64 // bytes allocated since the process started
	// Reclaimable is what a forced collection and scavenge could hand back
	// at most: heap objects beyond the live heap (allocated since the last
	// collection, dead or not) plus free heap pages not yet returned. It
	// leaves out what no trim returns: the live heap, the runtime's own
	// metadata, stacks, fragmentation inside spans.
	Reclaimable uint64
}

var names = []string{
	"/gc/heap/live:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/gc/heap/allocs:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/free:bytes",
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
	live, objects := u(0), u(4)
	var dead uint64
	if objects > live {
		dead = objects - live
	}
	return Sample{Live: live, Held: held, Allocs: u(3), Reclaimable: dead + u(5)}
}

// Worth reports whether a trim is worth it between two readings prev and cur
// taken one interval apart: more than slack and more than an eighth of the
// live heap is reclaimable, and the process allocated less than a quarter of
// that during the interval (it is quiet; a busy process would only grow back
// at once, and its collector runs anyway). It is pure.
func Worth(prev, cur Sample, slack uint64) bool {
	r := cur.Reclaimable
	if r < slack || r < cur.Live/8 {
		return false
	}
	return cur.Allocs-prev.Allocs < r/4
}

// Run trims the process's memory until ctx ends: every Interval it reads the
// counters and trims (debug.FreeOSMemory) when its policy says so: when Worth
// does and MinGap has passed since the last trim, or once Recheck after a trim
// that ended a burst. Run blocks; start it on its own goroutine, once per
// process.
func Run(ctx context.Context, cfg Config) {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	p := newPolicy(cfg)
	t := time.NewTicker(cfg.Interval)
	defer t.Stop()
	prev := Read()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur := Read()
		if start := time.Now(); p.decide(prev, cur, start) {
			debug.FreeOSMemory()
			end := time.Now()
			p.trimmed(cur, start)
			after := Read()
			if cfg.OnTrim != nil {
				cfg.OnTrim(cur.Held, after.Held, end.Sub(start))
			}
			cur = after
		}
		prev = cur
	}
}

// policy decides when Run trims, one reading at a time. It is deterministic:
// the time is passed in.
//
// Why a recheck: Worth measures the garbage against the live heap of the last
// collection, and a trim's collection is the last one for a long while (the
// next comes when the heap doubles). A trim taken as a burst ends may find
// the burst's tail still live (a 1M-lock fill: the first trim left 249 MB
// live, the next one 169), and then Worth waits until garbage beyond that
// stale figure builds up, minutes for an idle node, with the tail's memory
// still held. So a trim that ended a burst (the process allocated more than
// its live heap and the slack since the trim before) is followed by one more,
// Recheck later, as soon as an interval allocates less than a quarter of the
// slack (and if that one ends a burst too, another follows). A steady, quiet
// process never allocates that much between trims and gets no rechecks.
type policy struct {
	slack      uint64
	minGap     time.Duration
	recheck    time.Duration
	last       time.Time // the last trim; zero before the first
	lastAllocs uint64    // Sample.Allocs at the last trim
	recheckAt  time.Time // when a recheck is due; zero when none is
}

func newPolicy(cfg Config) *policy {
	p := &policy{slack: cfg.Slack, minGap: cfg.MinGap, recheck: cfg.Recheck}
	if p.slack == 0 {
		p.slack = DefaultSlack
	}
	if p.minGap <= 0 {
		p.minGap = DefaultMinGap
	}
	if p.recheck <= 0 {
		p.recheck = DefaultRecheck
	}
	return p
}

// decide reports whether to trim now, given the reading cur and the one an
// interval before it, prev.
func (p *policy) decide(prev, cur Sample, now time.Time) bool {
	if !p.last.IsZero() && now.Sub(p.last) < p.minGap {
		return false
	}
	if Worth(prev, cur, p.slack) {
		return true
	}
	return !p.recheckAt.IsZero() && !now.Before(p.recheckAt) && cur.Allocs-prev.Allocs < p.slack/4
}

// trimmed records a trim decided at now (MinGap and Recheck count from
// there, so that a trim's own duration does not push the next one a whole
// interval later); before is the reading decide was given for it.
func (p *policy) trimmed(before Sample, now time.Time) {
	p.recheckAt = time.Time{}
	if before.Allocs-p.lastAllocs > before.Live+p.slack {
		p.recheckAt = now.Add(p.recheck)
	}
	p.last, p.lastAllocs = now, before.Allocs
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
