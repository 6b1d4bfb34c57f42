package group

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// DefaultLogBytes is a node's Config.LogBytes when it sets none: what its
// groups' Raft logs hold together, about, between their snapshots. It is
// half of what the log's journal keeps on disk before it moves entries into
// badger (four full 16 MiB files; logstore), so that entries live and die
// in the journal.
const DefaultLogBytes = 32 << 20

// logBytes bounds a group's Raft log in bytes as well as in entries.
//
// hashicorp/raft keeps the log by count: a snapshot once SnapshotThreshold
// entries have been applied since the last one, and TrailingLogs entries kept
// after it. With lock-sized entries (about a hundred bytes) that is a few
// megabytes; with large values it is gigabytes: the journal cannot hold them,
// they move into badger (where an entry of 1 MiB or more lands in a value log
// that nothing reclaims), and every one of them stays in memory until the
// snapshot. So the group also snapshots once the entries applied since the
// last snapshot pass budget bytes (or the last snapshot's size, when that is
// larger: a large state is not written out again for every few megabytes of
// log, so the snapshots' work stays at most about the log's), and keeps after
// a snapshot only as many entries as the newest budget bytes hold (never more
// than TrailingLogs).
//
// The machine calls applied and captured on the FSM goroutine (ApplyBatch,
// Snapshot, Restore: one at a time); persisted is called by the snapshot's
// Persist. captured sets the trailing count through setTrailing before
// hashicorp/raft compacts the log after the snapshot, for its own snapshots
// as for those the group asks for when want fires. Nothing here blocks.
type logBytes struct {
	budget   uint64 // bytes since a snapshot that start one; bytes kept after one
	granule  uint64 // bytes between marks: budget/16
	trailing uint64 // the count bound (Config.TrailingLogs)

	mu     sync.Mutex
	total  uint64     // bytes of entry data applied since the group started
	last   uint64     // the last applied index
	marks  []byteMark // ascending; the first is the earliest with total ≥ total-budget
	snapAt uint64     // total when the last snapshot was captured or restored
	kept   uint64     // the trailing count Raft has (set last, or trailing)

	// snapSize is the size in bytes of the last snapshot written (or found
	// at start).
	snapSize atomic.Uint64

	// want is signalled (never blocking; buffer 1) when the bytes applied
	// since the last snapshot reach the threshold: the group then asks
	// hashicorp/raft for a snapshot (Store.snapshotLoop).
	want chan struct{}

	// setTrailing sets hashicorp/raft's TrailingLogs (ReloadConfig). Set
	// before Raft starts; nil: not set.
	setTrailing func(n uint64)
}

// byteMark records that after the entry at index, total bytes had been
// applied.
type byteMark struct{ index, total uint64 }

// newLogBytes returns a bound of budget bytes (at least 1) with trailing as
// the count bound.
func newLogBytes(budget, trailing uint64) *logBytes {
	budget = max(budget, 1)
	return &logBytes{budget: budget, granule: max(budget/16, 1), trailing: trailing, kept: trailing, want: make(chan struct{}, 1)}
}

// threshold is how many bytes since the last snapshot start one.
func (b *logBytes) threshold() uint64 { return max(b.budget, b.snapSize.Load()) }

// applied counts the entries a batch applied (their data, of every type).
func (b *logBytes) applied(index uint64, size uint64) {
	b.mu.Lock()
	prev := b.total
	b.total += size
	b.last = index
	if b.total/b.granule != prev/b.granule { // a granule boundary crossed
		b.marks = append(b.marks, byteMark{index: index, total: b.total})
	}
	// Marks older than the newest budget bytes are not needed; the last mark
	// is never older (a granule is smaller than the budget).
	if b.total > b.budget {
		drop := 0
		for drop < len(b.marks)-1 && b.marks[drop].total < b.total-b.budget {
			drop++
		}
		if drop > 0 {
			b.marks = append(b.marks[:0], b.marks[drop:]...)
		}
	}
	full := b.total-b.snapAt >= b.threshold()
	b.mu.Unlock()
	if full {
		select {
		case b.want <- struct{}{}:
		default:
		}
	}
}

// keep is how many of the newest entries to keep after a snapshot taken
// now: those that the newest budget bytes hold, and at most trailing. b.mu
// must be held.
func (b *logBytes) keep() uint64 {
	if b.total <= b.budget || len(b.marks) == 0 {
		return b.trailing
	}
	// The entries after the first mark hold at most budget bytes.
	return min(b.trailing, b.last-b.marks[0].index)
}

// captured is told that the state was captured for a snapshot: the bytes
// since the snapshot count from here (a signal on want from before is taken
// back: spend), and the log keeps keep() entries after it.
func (b *logBytes) captured() {
	b.mu.Lock()
	b.snapAt = b.total
	n := b.keep()
	changed := n != b.kept
	b.kept = n
	b.mu.Unlock()
	b.spend()
	if changed && b.setTrailing != nil {
		b.setTrailing(n)
	}
}

// restored is told that a snapshot replaced the state: the log holds
// nothing applied before it.
func (b *logBytes) restored() {
	b.mu.Lock()
	b.snapAt = b.total
	b.mu.Unlock()
	b.spend()
}

// spend takes back a signal on want from before the count restarted.
func (b *logBytes) spend() {
	select {
	case <-b.want:
	default:
	}
}

// persisted records the size of a snapshot written out.
func (b *logBytes) persisted(size int64) { b.snapSize.Store(uint64(max(size, 0))) }

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// snapshotRetry is how long snapshotLoop waits after a snapshot it asked for
// failed, before it asks again.
const snapshotRetry = time.Second

// snapshotLoop asks hashicorp/raft for a snapshot whenever the log's bytes
// since the last one reach the bound (logBytes.want), until the Store
// closes. Runs on its own goroutine (wg).
func (s *Store) snapshotLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.closed:
			return
		case <-s.m.bytes.want:
		}
		start := time.Now()
		err := s.raft.Snapshot().Error()
		switch {
		case err == nil:
			s.metrics.snapshotsByBytes.Add(1)
			s.log.Debug("snapshot for the log's bytes", "took", time.Since(start).Round(time.Millisecond))
		case errors.Is(err, raft.ErrNothingNewToSnapshot):
		default:
			s.log.Warn("snapshot for the log's bytes failed", "err", err)
			select {
			case <-s.closed:
				return
			case <-time.After(snapshotRetry):
			}
		}
	}
}

// setTrailingLogs sets how many entries r keeps after a snapshot. Called on
// the FSM goroutine as a snapshot is captured, before the log is compacted.
func (s *Store) setTrailingLogs(r consensus, n uint64) {
	if err := r.SetTrailingLogs(n); err != nil {
		s.log.Warn("setting the trailing logs failed", "trailing_logs", n, "err", err)
	}
}
