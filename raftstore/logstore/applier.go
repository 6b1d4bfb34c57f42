package logstore

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/lockd/lockd/raftstore/journal"
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
// not in the journal's tail, Get, the seeks and scans of a DeleteRange)
// first waits for the applier to catch up with what was answered before it
// (badgerLag.wait), and so does a journal checkpoint, which must not drop a
// record badger does not yet hold.

// badgerLag counts the batches the committer handed to the applier and
// those the applier wrote; its methods are safe for concurrent use.
type badgerLag struct {
	mu      sync.Mutex
	cond    sync.Cond
	queued  uint64 // batches handed to the applier
	written uint64 // of those, the ones the applier is done with
	failed  error  // wraps ErrBadgerWrite once a batch failed

	// hurry holds a token while someone waits for the applier: it then
	// writes what it gathered without lingering for more.
	hurry chan struct{}
}

func (l *badgerLag) init() {
	l.cond.L = &l.mu
	l.hurry = make(chan struct{}, 1)
}

// add counts one more batch for the applier; the committer calls it before
// it answers the batch's writers.
func (l *badgerLag) add() {
	l.mu.Lock()
	l.queued++
	l.mu.Unlock()
}

// done records that the applier is done with the oldest n batches, which
// err (if not nil) failed.
func (l *badgerLag) done(n int, err error) {
	l.mu.Lock()
	l.written += uint64(n)
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
		select {
		case l.hurry <- struct{}{}:
		default: // a token is there already
		}
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

// applyLinger is how long the applier waits for more batches to write into
// badger together with the one it has, and applyMaxBatches the most it
// writes together. Badger trails the journal, so nothing waits for the
// applier meanwhile unless it reads the DB, which cuts the wait short
// (badgerLag.hurry); and one badger transaction for several batches costs
// far less than one each (per transaction: the write goroutine's hand-offs,
// the commit's bookkeeping). applyLinger is a variable for tests only, read
// when a Shared opens.
var applyLinger = 2 * time.Millisecond

const applyMaxBatches = 32

// applier writes the batches the committer journaled into badger, in order,
// several in one transaction when they come within linger of each other
// (gather), until the committer quits; then it closes sh.applied. After a
// failure it writes nothing more (the journal keeps those batches for the
// next open) but still counts each batch, so that nobody waits for it.
func (sh *Shared) applier(linger time.Duration) {
	defer close(sh.applied)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var reqs []*journal.Write
	for first := range sh.toApply {
		var n int
		var open bool
		reqs, n, open = sh.gather(append(reqs[:0], first...), timer, linger)
		sh.lag.done(n, sh.write(reqs))
		clear(reqs) // hold no request until the next batch
		if !open {
			return
		}
	}
}

// gather appends to reqs, which holds one batch, the batches the committer
// hands over within linger (a reader waiting for badger ends the wait), and
// then those already queued, up to applyMaxBatches in all. It returns them,
// their number, and false once the committer has quit. On the applier only.
func (sh *Shared) gather(reqs []*journal.Write, timer *time.Timer, linger time.Duration) ([]*journal.Write, int, bool) {
	n, lingered := 1, false
	timer.Reset(linger)
	defer timer.Stop()
	for n < applyMaxBatches {
		var b []*journal.Write
		ok := true
		select {
		case b, ok = <-sh.toApply: // queued already
		default:
			if lingered {
				return reqs, n, true
			}
			select {
			case b, ok = <-sh.toApply:
			case <-sh.lag.hurry:
				lingered = true
				continue
			case <-timer.C:
				lingered = true
				continue
			}
		}
		if !ok {
			return reqs, n, false
		}
		reqs = append(reqs, b...)
		n++
	}
	return reqs, n, true
}

// write writes reqs, the batches the applier gathered, into badger, unless
// an earlier write failed, and tells each request's Store that badger holds
// its entries. On the applier only.
func (sh *Shared) write(reqs []*journal.Write) error {
	err := sh.lag.err()
	if err == nil && sh.opts.BeforeApply != nil {
		err = sh.opts.BeforeApply()
	}
	if err != nil {
		return err
	}
	txns, err := writeBatch(sh.db, reqs)
	logSplit(sh.logger, sh.dir, txns, batchKeys(reqs))
	return err
}

// writeBatch writes the requests' keys (large log entries in files of their
// own: entryfiles.go), in order, in as few transactions of
// db as badger's size limit allows (one, unless they are large), and returns
// how many it committed. After an error a prefix of the keys may be in db.
// The applier, the journal's moves and its replay write this way.
func writeBatch(db *badger.DB, batch []*journal.Write) (txns int, err error) {
	txn := db.NewTransaction(true)
	defer func() { txn.Discard() }()
	held := 0           // keys txn holds
	var unlink []string // entry files of deleted log keys: removed once badger has the deletions
	for _, r := range batch {
		ops, files, err := badgerOps(db, r)
		if err != nil {
			return txns, err
		}
		unlink = append(unlink, files...)
		for _, op := range ops {
			err := op.apply(txn)
			if errors.Is(err, badger.ErrTxnTooBig) && held > 0 {
				if err = txn.Commit(); err == nil {
					txns++
					txn, held = db.NewTransaction(true), 0
					err = op.apply(txn)
				}
			}
			if err != nil {
				return txns, err
			}
			held++
		}
	}
	if held > 0 {
		if err := txn.Commit(); err != nil {
			return txns, err
		}
		txns++
	}
	return txns, removeEntryFiles(unlink)
}

// logSplit notes a write that badger took in more than one transaction.
func logSplit(logger *slog.Logger, dir string, txns, keys int) {
	if txns > 1 {
		logger.Debug("logstore: StoreLogs batch split across transactions", "dir", dir, "keys", keys, "txns", txns)
	}
}

// batchKeys counts the keys the requests write.
func batchKeys(batch []*journal.Write) (n int) {
	for _, r := range batch {
		n += len(r.Keys)
	}
	return n
}

// settle waits until badger holds every write answered before the call
// (Shared.applier).
func (s *Store) settle() error { return s.sh.lag.wait() }
