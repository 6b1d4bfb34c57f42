package logstore

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// ErrNotDurable wraps the error of a deferred StoreLogs whose write failed:
// WaitDurable returns it for every index from that write on, and every later
// write of the Store fails with it. A failed fsync leaves the file's state
// unknown, so the Store does not try again.
var ErrNotDurable = errors.New("logstore: deferred write failed")

// durability is what a Store knows of which of its entries are on disk. A
// deferred StoreLogs (DeferSyncWhen) returns as soon as its entries are
// queued for the Shared's committer; they are pending until it has written
// and fsynced them, and GetLog serves them from memory meanwhile.
type durability struct {
	mu      sync.Mutex
	pending []pendingRun  // deferred writes queued, oldest first
	durable uint64        // every entry stored at or below this index is on disk
	failed  error         // a deferred write failed (wraps ErrNotDurable)
	changed chan struct{} // closed and replaced whenever pending, durable or failed change

	deferSync func() bool // DeferSyncWhen's predicate; nil: never
	inline    func() bool // WriteInlineWhen's predicate; nil: never
}

// pendingRun is one deferred StoreLogs call's entries, in index order.
type pendingRun struct {
	lo, hi uint64
	logs   []*raft.Log
}

// DurableLog is a log that says which of its entries are on disk: a Store
// (whose writes DeferSyncWhen may let return before their fsync), or a
// Faulty around one.
type DurableLog interface {
	Durable() uint64                // every entry at or below is on disk; does not block
	WaitDurable(index uint64) error // blocks until index is on disk, or returns why it never will be
	// WaitDurableOr is WaitDurable that also returns, with false and a nil
	// error, once cancel is closed; true: index is on disk.
	WaitDurableOr(index uint64, cancel <-chan struct{}) (bool, error)
}

var _ DurableLog = (*Store)(nil)

// DeferSyncWhen makes StoreLogs return before its entries are fsynced when
// f reports true at the call: for a Raft group's leader, so that it sends
// the entries to its followers while its own fsync runs, and the commit
// waits for whichever finishes last (the leader's own write is counted only
// through WaitDurable). Only a Store of a Shared defers; the predicate is
// called on StoreLogs' goroutine. Call it before the Store is used.
//
// A deferred write's entries are readable at once (GetLog), and FirstIndex
// and LastIndex count them. Whoever acts on an entry's commitment must first
// call WaitDurable for it. DeleteRange, Close and every write that does not
// defer first wait for the deferred writes before them.
func (s *Store) DeferSyncWhen(f func() bool) {
	s.dur.deferSync = f
}

// WriteInlineWhen limits the writes of the Store of Open that go to disk on
// their caller's goroutine instead of through the committer (two goroutine
// hand-offs fewer) to those for which f reports true at the call; without
// it, every write that does not defer does, when nothing is queued before
// it (raftstore: a leader's, such as a lone voter's, whose writes all wait
// for their fsync). A group of a Shared never writes inline. f is called
// on the writing goroutine, and only for a write that did not defer
// (DeferSyncWhen's predicate said no first). Call it before the Store is
// used.
//
// Not for a follower: on the development VM a follower writing its appends
// inline made 0.89x the hot-name hand-overs of one writing them through the
// committer, whose fsync leaves the follower's goroutines free meanwhile
// (make bench-ab AB_GROUPS=1, 4 pairs).
func (s *Store) WriteInlineWhen(f func() bool) {
	s.dur.inline = f
}

// Durable returns the highest index at or below which every stored entry is
// on disk. It does not block.
func (s *Store) Durable() uint64 {
	s.dur.mu.Lock()
	defer s.dur.mu.Unlock()
	return s.dur.durable
}

// WaitDurable blocks until the entry at index (and every one below it) is on
// disk, and returns nil then; or returns the error that keeps it from ever
// being so (ErrNotDurable), or ErrClosed once the Shared is closed. Entries
// written without deferring are on disk when StoreLogs returns.
func (s *Store) WaitDurable(index uint64) error {
	_, err := s.WaitDurableOr(index, nil)
	return err
}

// WaitDurableOr is WaitDurable that also returns, with false and a nil error,
// once cancel is closed (never, for a nil cancel) before index is on disk;
// it reports true once index is. A closed cancel makes it a poll: true if
// index is on disk now, else false or the failure.
func (s *Store) WaitDurableOr(index uint64, cancel <-chan struct{}) (bool, error) {
	return s.dur.await(s.stopped(), cancel, func() bool { return s.dur.durable >= index })
}

// stopped is closed when the Shared that writes s's entries is closed.
func (s *Store) stopped() <-chan struct{} { return s.sh.stopped }

// await blocks until ready (called with d.mu held) reports true and returns
// true; or returns d.failed once a deferred write has failed and ready does
// not hold, ErrClosed once stopped is closed, or false and nil once cancel
// is closed (nil: never).
func (d *durability) await(stopped, cancel <-chan struct{}, ready func() bool) (bool, error) {
	for {
		d.mu.Lock()
		ok, failed := ready(), d.failed
		if d.changed == nil {
			d.changed = make(chan struct{})
		}
		ch := d.changed
		d.mu.Unlock()
		switch {
		case ok:
			return true, nil
		case failed != nil:
			return false, failed
		}
		select {
		case <-ch:
		case <-stopped:
			return false, ErrClosed
		case <-cancel:
			return false, nil
		}
	}
}

// err is the failure of a deferred write, if one failed.
func (d *durability) err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.failed
}

// signal wakes the waiters; d.mu must be held.
func (d *durability) signal() {
	if d.changed != nil {
		close(d.changed)
		d.changed = nil
	}
}

// advance records that every entry at or below index is on disk.
func (d *durability) advance(index uint64) {
	d.mu.Lock()
	if index > d.durable {
		d.durable = index
		d.signal()
	}
	d.mu.Unlock()
}

// lower records that entries above index are gone (a deleted tail), so that
// entries stored again there count only once written.
func (d *durability) lower(index uint64) {
	d.mu.Lock()
	d.durable = min(d.durable, index)
	d.mu.Unlock()
}

// get copies the pending entry at index into log, reporting whether there
// was one.
func (d *durability) get(index uint64, log *raft.Log) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := len(d.pending) - 1; i >= 0; i-- { // the newest write of an index wins
		r := d.pending[i]
		if index < r.lo || index > r.hi {
			continue
		}
		for _, l := range r.logs {
			if l.Index == index {
				*log = *l
				return true
			}
		}
	}
	return false
}

// drain blocks until no deferred write is pending, and returns the error of
// one that failed, or ErrClosed once stopped is closed.
func (d *durability) drain(stopped <-chan struct{}) error {
	_, err := d.await(stopped, nil, func() bool { return len(d.pending) == 0 && d.failed == nil })
	return err
}

// storeDeferred queues r (the encoded logs, indexes lo to hi)
// with the Shared's committer and returns without waiting; s.writeMu must be
// held. The bounds count the entries at once; durable moves past them once
// they are on disk.
func (s *Store) storeDeferred(logs []*raft.Log, lo, hi uint64, r *setsReq) error {
	d := &s.dur
	d.mu.Lock()
	d.pending = append(d.pending, pendingRun{lo: lo, hi: hi, logs: logs})
	d.mu.Unlock()
	start := time.Now()
	done := func(err error) {
		if s.observe != nil {
			s.observe(time.Since(start))
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		d.pending = d.pending[1:] // the committer answers one Store's writes in order
		if err != nil && d.failed == nil {
			d.failed = fmt.Errorf("%w: entries [%d..%d]: %w", ErrNotDurable, lo, hi, err)
		}
		if err == nil && d.failed == nil && hi > d.durable {
			d.durable = hi
		}
		d.signal()
	}
	r.onDone, r.Tail = done, s.tail
	if err := s.sh.enqueue(r); err != nil {
		d.mu.Lock()
		d.pending = d.pending[:len(d.pending)-1]
		d.mu.Unlock()
		return err
	}
	s.extendBounds(lo, hi)
	return nil
}
