package logstore

import (
	"errors"
	"fmt"
	"sync"

	"github.com/dgraph-io/badger/v4"
)

// ErrBadgerWrite wraps the error of a badger transaction that failed to take
// a batch its journal record had already made durable (and whose writers were
// answered): from then on every write and every read of the Shared's DB fails
// with it, no journal file is removed, and the next open replays the journal
// into badger.
var ErrBadgerWrite = errors.New("logstore: badger failed to take a journaled write")

// Badger trails the journal.
//
// A write is durable once its journal record is fdatasynced, so the committer
// answers a batch then and hands it to the applier, which writes it into
// badger while the committer writes and syncs the next record: the two
// overlap instead of adding up. (Measured before the split, 3 nodes, 8 groups:
// with one hot name a group write spent ~200 µs in the journal and ~70 µs in
// badger; with 64 clients ~720 and ~210 µs.) Until the applier has written
// it, an answered write is in no DB, so a read of the DB (GetLog of an entry
// above the Store's inBadger mark, Get, the seeks and scans of a DeleteRange)
// first waits for the applier to catch up with what was answered before it
// (badgerLag.wait), and so does a journal checkpoint,
// which must not drop a record badger does not yet hold.

// badgerLag counts the batches the committer handed to the applier and
// those the applier wrote; its methods are safe for concurrent use.
type badgerLag struct {
	mu      sync.Mutex
	cond    sync.Cond
	queued  uint64 // batches handed to the applier
	written uint64 // of those, the ones the applier is done with
	failed  error  // wraps ErrBadgerWrite once a batch failed
}

func (l *badgerLag) init() { l.cond.L = &l.mu }

// add counts one more batch for the applier; the committer calls it before
// it answers the batch's writers.
func (l *badgerLag) add() {
	l.mu.Lock()
	l.queued++
	l.mu.Unlock()
}

// done records that the applier is done with the oldest batch, which err
// (if not nil) failed.
func (l *badgerLag) done(err error) {
	l.mu.Lock()
	l.written++
	if err != nil && l.failed == nil {
		l.failed = fmt.Errorf("%w: %w", ErrBadgerWrite, err)
	}
	l.cond.Broadcast()
	l.mu.Unlock()
}

// wait blocks until badger holds every batch handed to the applier before
// the call, and returns nil; or returns the failure that keeps it from
// ever doing so.
func (l *badgerLag) wait() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for target := l.queued; l.written < target && l.failed == nil; {
		l.cond.Wait()
	}
	return l.failed
}

// err is the failure of a batch the applier could not write, if any.
func (l *badgerLag) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// applier writes the batches the committer journaled into badger, in order,
// until the committer quits; then it closes sh.applied. After a failure it
// writes nothing more (the journal keeps those batches for the next open)
// but still counts each batch, so that nobody waits for it.
func (sh *Shared) applier() {
	defer close(sh.applied)
	for batch := range sh.toApply {
		err := sh.lag.err()
		if err == nil && sh.opts.BeforeApply != nil {
			err = sh.opts.BeforeApply()
		}
		if err == nil {
			err = writeBatch(sh.db, batch)
		}
		if err == nil {
			for _, r := range batch {
				if r.inBadger != nil {
					r.inBadger()
				}
			}
		}
		sh.lag.done(err)
	}
}

// writeBatch writes the requests' keys, in order, in as few transactions of
// db as badger's size limit allows (one, unless they are large).
func writeBatch(db *badger.DB, batch []*setsReq) error {
	txn := db.NewTransaction(true)
	defer func() { txn.Discard() }()
	pending := false // txn holds something
	for _, r := range batch {
		for i := range r.keys {
			err := r.apply(txn, i)
			if errors.Is(err, badger.ErrTxnTooBig) && pending {
				if err = txn.Commit(); err != nil {
					return err
				}
				txn = db.NewTransaction(true)
				err = r.apply(txn, i)
			}
			if err != nil {
				return err
			}
			pending = true
		}
	}
	return txn.Commit()
}

// badgerHolds returns the applier's callback for a write of s's entries up
// to hi: badger now holds every entry of s at or below hi (writes reach
// badger in order).
func (s *Store) badgerHolds(hi uint64) func() {
	return func() {
		for {
			cur := s.inBadger.Load()
			if hi <= cur || s.inBadger.CompareAndSwap(cur, hi) {
				return
			}
		}
	}
}

// lowerInBadger records that s's entries above index are gone (a deleted
// tail): entries stored there again are read from badger only once the
// applier has written them.
func (s *Store) lowerInBadger(index uint64) {
	for {
		cur := s.inBadger.Load()
		if index >= cur || s.inBadger.CompareAndSwap(cur, index) {
			return
		}
	}
}

// settle waits until badger holds every write answered before the call
// (Shared.applier); a Store of its own writes badger before it answers.
func (s *Store) settle() error {
	if s.sh == nil {
		return nil
	}
	return s.sh.lag.wait()
}
