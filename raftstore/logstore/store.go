package logstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/raftstore/journal"
	"github.com/lockd/lockd/raftstore/logcodec"
)

// Sentinel errors. Compare with errors.Is.
var (
	// ErrKeyNotFound is returned, unwrapped, by Get and GetUint64 when the
	// key has never been set. Its text is exactly "not found" because
	// hashicorp/raft recognises a missing stable-store key by comparing
	// err.Error() with that string.
	ErrKeyNotFound = errors.New("not found")

	// ErrLogNotFound is returned, unwrapped, by GetLog when no entry with the
	// requested index is stored. It is raft.ErrLogNotFound itself.
	ErrLogNotFound = raft.ErrLogNotFound

	// ErrClosed is returned by every method of a Store that has been closed.
	ErrClosed = errors.New("logstore: store is closed")

	// ErrLocked is wrapped in the error returned by Open when the directory
	// is already held by another Store or another process.
	ErrLocked = errors.New("directory is locked by another process")

	// ErrEntryTooLarge is wrapped in the error returned by StoreLogs for an
	// entry whose encoding exceeds the largest value badger accepts: 64 MiB
	// on disk, 1 MiB in InMemory mode. Nothing of the batch is written.
	ErrEntryTooLarge = errors.New("logstore: log entry too large")

	// ErrCorrupt is wrapped in errors reporting a stored entry or value that
	// cannot be decoded.
	ErrCorrupt = errors.New("logstore: corrupt data")
)

// Compile-time checks that *Store satisfies the hashicorp/raft interfaces.
var (
	_ raft.LogStore    = (*Store)(nil)
	_ raft.StableStore = (*Store)(nil)
)

// Badger tuning. One process may host many Raft groups, each with its own
// badger DB, so the footprint per DB is kept small.
const (
	memTableSize     = 8 << 20  // bytes per memtable: its arena is heap, its WAL mapped (issue 9: 16 MiB cost ~16 MiB RSS more, no throughput)
	numMemtables     = 2        // memtables kept in memory (active + flushing)
	valueLogFileSize = 64 << 20 // bytes per value-log file
	blockCacheSize   = 4 << 20  // decompressed blocks of the Snappy tables; kept small (replicas read the newest entries from raft's LogCache)
	indexCacheSize   = 2 << 20  // bounds memory held by table indexes and blooms
	numCompactors    = 2        // badger requires 0 or >= 2

	// deleteChunk is how many log entries DeleteRange deletes at a time
	// when it removes the head of the log (Raft's compaction after a
	// snapshot): each chunk is one step under the write lock, so that the
	// group's appends, and through the shared committer every other
	// group's, wait for one chunk rather than for the whole range. Issue 9:
	// deleting 8192 entries in one transaction took 12-15 ms, during which
	// another group's one-entry append waited up to 12 ms; with 3 nodes and
	// 8 groups that happened several times a second and set the p99.
	deleteChunk = 512
)

// Options configures Open.
type Options struct {
	// Logger receives the store's own messages and badger's. Badger's
	// info and debug output is logged at slog debug level, its warnings at
	// warn and its errors at error. Nil discards everything.
	Logger *slog.Logger

	// InMemory runs badger without any files (for tests). The directory
	// passed to Open is then only used in messages, and nothing survives
	// Close. Writes are not synced in this mode.
	InMemory bool

	// ObserveWrite, if set, is told how long each StoreLogs took (one synced
	// write: the fsync latency the log adds to every commit).
	ObserveWrite func(time.Duration)

	// BeforeWrite (fault tests only; a Shared's) runs on the committer before
	// it writes each batch and may block; an error fails the batch as a
	// failed badger commit would.
	BeforeWrite func() error

	// BeforeApply (fault tests only) runs before journaled writes go into
	// badger and may block: on the applier, once per badger write of the
	// batches it gathered, where an error fails them as a failed badger
	// transaction would (ErrBadgerWrite).
	BeforeApply func() error
}

// Store is a raft.LogStore and raft.StableStore over its Shared's journal,
// which holds its log's young entries, and badger DB, which holds the rest.
//
// It is meant to be handed to raft.NewRaft as both the log store and the
// stable store of a single Raft group. hashicorp/raft calls it from several
// of its own goroutines; all methods are safe for concurrent use. Writes
// (StoreLog, StoreLogs, DeleteRange, Set, SetUint64) are durable when they
// return: badger runs without syncing, and each write is also appended to the
// store's journal and fdatasynced before it returns (package journal) — except a
// StoreLogs that DeferSyncWhen lets return early, whose entries are durable
// once WaitDurable says so. Log mutations are serialised among themselves.
//
// Log entries with index 0 are rejected: raft never uses index 0, and the
// store reports an empty log as first = last = 0.
type Store struct {
	kp keyPrefix // where this Store's keys live in sh's DB
	// sh is the Shared whose DB holds this Store and whose committer writes
	// its writes (Close leaves it open, unless ownsShared).
	sh *Shared
	// ownsShared: sh is this Store's alone (Open), and Close closes it.
	ownsShared bool
	logger     *slog.Logger

	// closeMu is held shared by every operation that touches badger and
	// exclusively by Close, so Close waits for in-flight calls.
	closeMu sync.RWMutex
	closed  atomic.Bool

	// writeMu serialises log mutations so the cached bounds stay in step
	// with what is on disk.
	writeMu sync.Mutex

	// first and last cache the lowest and highest stored log index (both 0
	// when the log is empty). They are written only with writeMu held and
	// once the write is durable (journaled; a Shared's badger may trail).
	first atomic.Uint64
	last  atomic.Uint64

	// batches counts StoreLogs calls that wrote something: one synced commit
	// each (more only for a batch too big for one transaction).
	batches atomic.Uint64

	observe func(time.Duration) // Options.ObserveWrite

	dur durability // deferred writes (DeferSyncWhen) and what is on disk

	// tail (on disk) says where in the journal's files the log entries are
	// that badger does not hold (package journal); nil in memory.
	tail *journal.Tail
}

// Batches is the number of StoreLogs calls that wrote entries since Open. With
// LastIndex it shows how many log entries share each fsync.
func (s *Store) Batches() uint64 { return s.batches.Load() }

// Open opens, creating it if needed, the log store kept in directory dir:
// a Shared of its own (one committer and one applier goroutine) holding one
// unprefixed Store, which Close closes with it. Its writes go through the
// committer, so that DeferSyncWhen applies to it: for a Raft group alone on
// its node, whose leader then sends a batch to its followers while its own
// fsync runs (raftstore/parallelsync.go); a write that does not defer is
// written on the caller's goroutine, as if there were no committer, unless
// writes are still queued (it then goes after them) or WriteInlineWhen's
// predicate says no.
//
// The directory is created with mode 0700 if it does not exist. It must be
// writable and must not be in use by another Store (in this or another
// process); otherwise Open fails with an error of the form
// "logstore: open <dir>: ..." (wrapping ErrLocked in the latter case, and
// the underlying *fs.PathError where there is one). Open loads the first and
// last log index into memory before returning.
func Open(dir string, opts Options) (*Store, error) {
	sh, err := OpenShared(dir, opts)
	if err != nil {
		return nil, err
	}
	s, err := sh.store(-1, nil)
	if err != nil {
		_ = sh.Close()
		return nil, err
	}
	s.ownsShared = true
	return s, nil
}

// openDB opens the badger DB in dir (or in memory) with lockd's options and
// returns it with the largest value it accepts. Badger does not sync its
// writes: the store's journal makes them durable (package journal).
func openDB(dir string, opts Options) (*badger.DB, int, *slog.Logger, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var bopts badger.Options
	if opts.InMemory {
		bopts = badger.DefaultOptions("").WithInMemory(true)
	} else {
		if dir == "" {
			return nil, 0, nil, errors.New("logstore: open: empty directory name")
		}
		if err := prepareDir(dir); err != nil {
			return nil, 0, nil, fmt.Errorf("logstore: open %s: %w", dir, err)
		}
		bopts = badger.DefaultOptions(dir)
	}
	bopts = bopts.
		WithSyncWrites(false).
		WithLogger(badgerLogger{l: logger}).
		WithMemTableSize(memTableSize).
		WithNumMemtables(numMemtables).
		WithValueLogFileSize(valueLogFileSize).
		WithValueThreshold(bigValue). // badger's default, stated: a log entry this large goes to a file of its own instead (entryfiles.go)
		WithBlockCacheSize(blockCacheSize).
		WithIndexCacheSize(indexCacheSize).
		WithCompression(options.Snappy). // tables are mapped whole: compressed, a node with 1M locks maps 10 MiB, not 44 (issue 9)
		WithNumCompactors(numCompactors).
		WithDetectConflicts(false).
		WithMetricsEnabled(false)

	db, err := badger.Open(bopts)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("logstore: open %s: %w", dir, explainOpenError(dir, err))
	}
	maxValue := int(bopts.ValueLogFileSize)
	if opts.InMemory {
		// In-memory badger caps values at the (default, 1 MiB) value threshold.
		maxValue = int(bopts.ValueThreshold)
	}
	return db, maxValue, logger, nil
}

// newStore makes the Store of the keys under kp in sh's DB and loads its log
// bounds.
func newStore(sh *Shared, kp keyPrefix, logger *slog.Logger, opts Options, t *journal.Tail) (*Store, error) {
	s := &Store{sh: sh, kp: kp, logger: logger, observe: opts.ObserveWrite, tail: t}
	if t != nil {
		moved, err := s.seekBadger(math.MaxUint64, true)
		if err != nil {
			return nil, fmt.Errorf("logstore: open %s: load log bounds: %w", sh.dir, err)
		}
		t.RaiseMoved(moved)
	}
	first, err := s.seekLog(0, false)
	if err == nil {
		var last uint64
		last, err = s.seekLog(math.MaxUint64, true)
		s.first.Store(first)
		s.last.Store(last)
		s.dur.durable = last
	}
	if err != nil {
		return nil, fmt.Errorf("logstore: open %s: load log bounds: %w", sh.dir, err)
	}
	logger.Debug("logstore: opened", "dir", sh.dir, "key_prefix", string(kp), "in_memory", opts.InMemory,
		"first_index", s.first.Load(), "last_index", s.last.Load())
	return s, nil
}

// Shared is one badger DB that holds the logs and stable stores of several
// Raft groups of a node, each under its own key prefix. Groups that write at
// the same time share one badger transaction and one journal record, and so
// one fsync, instead of each paying its own; and the node keeps one set of
// memtables instead of one per group. Its methods are safe for concurrent use.
type Shared struct {
	db       *badger.DB
	dir      string
	maxValue int // the largest value badger accepts in one entry
	logger   *slog.Logger
	opts     Options

	// StoreLogs of every group go through one committer, which writes what
	// several groups asked for meanwhile in one transaction and makes it
	// durable with one fdatasync of the journal (package journal): this is what
	// makes groups share an fsync.
	reqs chan *setsReq
	jr   *journal.Journal // nil in memory

	// The Store of Open may write what it does not defer on its caller's
	// goroutine when nothing is queued before it (writeInline): wmu makes the committer and such a caller take turns
	// at journalBatch, and queued counts the requests enqueued and not yet
	// answered, so that an inline write never overtakes one.
	wmu       sync.Mutex
	queued    atomic.Int64
	stopped   chan struct{}
	closeOnce sync.Once
	commits   atomic.Uint64 // batches the committer made durable
	requests  atomic.Uint64 // StoreLogs calls they held

	// Badger trails the journal: the committer answers a batch once its
	// journal record is on disk and hands it to the applier, which writes it
	// into badger while the committer writes the next record (applier.go).
	toApply chan []*journal.Write
	applied chan struct{} // closed when the applier has written everything and quit
	lag     badgerLag

	tails *journal.Tails // the groups' log entries in the journal, by group; nil in memory
}

// setsReq is one write of a Store's: a StoreLogs call or one chunk of a
// DeleteRange or a stable-store Set, for the committer (or written inline,
// Shared.writeInline). Its Write is what the journal and then badger get: a
// log entry whose data StoreLogs did not copy is in Split (encoding head,
// data, encoding tail), and a write of log keys of a Store whose entries stay
// in the journal names its Tail.
type setsReq struct {
	journal.Write
	stored func()      // if set, called (on the writer) once the write is durable, before its answer
	done   chan error  // gets the outcome, unless onDone is set
	onDone func(error) // called with the outcome (on the committer); a deferred write
}

// commit hands r to the committer and waits for its outcome (r.stored, if
// set, is called from the committer once r is durable).
func (sh *Shared) commit(r *setsReq) error {
	r.done = make(chan error, 1)
	if err := sh.enqueue(r); err != nil {
		return err
	}
	return <-r.done
}

// enqueue hands r to the committer without waiting for it to be written.
func (sh *Shared) enqueue(r *setsReq) error {
	sh.queued.Add(1)
	select {
	case sh.reqs <- r:
		return nil
	case <-sh.stopped:
		sh.queued.Add(-1)
		return ErrClosed
	}
}

// writeInline writes reqs on the caller's goroutine as one batch, as the
// committer would have written them, if nothing is queued before them, and
// reports whether it did (if not, the caller enqueues them). It saves the two
// goroutine hand-offs of a write through the committer. With wait false it
// gives up while the committer is writing (the Store of Open: its write goes
// after that one); with wait true it waits for that write (StoreTogether,
// whose batch is worth keeping in one record).
func (sh *Shared) writeInline(reqs []*setsReq, wait bool) (bool, error) {
	if wait {
		sh.wmu.Lock()
	} else if !sh.wmu.TryLock() {
		return false, nil
	}
	defer sh.wmu.Unlock()
	if sh.queued.Load() != 0 {
		return false, nil
	}
	select {
	case <-sh.stopped: // the committer may have closed toApply
		return true, ErrClosed
	default:
	}
	var first error
	for _, r := range reqs {
		r.onDone = func(e error) {
			if first == nil {
				first = e
			}
		}
	}
	sh.requests.Add(uint64(len(reqs)))
	sh.journalBatch(reqs)
	return true, first
}

// linger is how long the committer waits for more groups' appends before it
// writes a small batch, when the batch before it held several (several groups
// are writing): a shared fsync is worth a fraction of one's wait. A lone
// writer never waits. Measured with BenchmarkNodeGroups (3 nodes, 8 groups, 64
// clients, on disk): 1.7 appends per fsync without, 3.0 with 300 µs. With 3
// lockd processes, 8 groups and 64 lockbench clients on one 2-core machine,
// 0 µs gave about 0.8x the cycles/s of 300 µs, and 800 or 1500 µs no more.
// Issue 9, once the leader's fsync ran beside its followers' (a follower's
// wait is then the whole of the commit's): 100 µs against 300 µs, alternating
// fresh clusters, gave 64 clients 6154 against 5387 cycles/s (means of 4 and
// 8 runs), a hot name 933 against 845 hand-overs/s, and 0 µs 4689 and 886.
const linger = 100 * time.Microsecond

// committer writes the queued StoreLogs, all that are waiting at once, until
// Close.
func (sh *Shared) committer() {
	defer func() {
		sh.wmu.Lock() // no inline write is sending to the applier
		close(sh.toApply)
		sh.wmu.Unlock()
	}()
	last := 0 // the size of the previous batch
	for {
		var batch []*setsReq
		select {
		case r := <-sh.reqs:
			batch = append(batch, r)
		case <-sh.stopped:
			return
		}
	more:
		for {
			select {
			case r := <-sh.reqs:
				batch = append(batch, r)
			default:
				if last > 1 && len(batch) < 4 {
					select {
					case r := <-sh.reqs:
						batch = append(batch, r)
						continue
					case <-time.After(linger):
					}
				}
				break more
			}
		}
		last = len(batch)
		sh.requests.Add(uint64(len(batch)))
		sh.wmu.Lock()
		sh.journalBatch(batch)
		sh.queued.Add(-int64(len(batch)))
		sh.wmu.Unlock()
	}
}

// journalBatch makes batch durable with one journal record and answers its
// requests (each then counts as stored: r.stored), then
// hands it to the applier, which writes it into badger; reads of the DB wait
// for that first (badgerLag.wait). On an error nothing is handed over and
// every request gets the error. Called with sh.wmu held (the committer, or
// writeInline).
func (sh *Shared) journalBatch(batch []*setsReq) {
	err := sh.lag.err()
	if err == nil && sh.opts.BeforeWrite != nil {
		err = sh.opts.BeforeWrite()
	}
	ws := make([]*journal.Write, len(batch))
	for i, r := range batch {
		ws[i] = &r.Write
	}
	// Durable first (badger does not sync), then into badger: badger may
	// write out any of its writes at any time, so it must never hold one the
	// journal does not (package journal).
	if err == nil && sh.jr != nil {
		err = fromJournal(sh.jr.Append(ws))
	}
	if err == nil {
		sh.commits.Add(1)
		toDB := ws[:0] // ws[i] is read before toDB's i-th element is written
		for _, r := range batch {
			if r.Tail != nil { // its entries stay in the journal
				r.Tail.Journaled(&r.Write)
			}
			if r.stored != nil {
				r.stored()
			}
			if len(r.Keys) > 0 {
				toDB = append(toDB, &r.Write)
			}
		}
		if len(toDB) > 0 {
			sh.lag.add() // before any answer: a read after one waits for it
			sh.toApply <- toDB
		}
	}
	for _, r := range batch {
		if r.onDone != nil {
			r.onDone(err)
		} else {
			r.done <- err
		}
	}
}

// OpenShared opens (or creates) the shared DB in dir (see Open for dir's
// requirements and errors) and starts its committer and applier.
func OpenShared(dir string, opts Options) (*Shared, error) {
	db, maxValue, logger, err := openDB(dir, opts)
	if err != nil {
		return nil, err
	}
	sh := &Shared{db: db, dir: dir, maxValue: maxValue, logger: logger, opts: opts,
		reqs: make(chan *setsReq, 256), stopped: make(chan struct{}),
		toApply: make(chan []*journal.Write, 64), applied: make(chan struct{})}
	sh.lag.init()
	if !opts.InMemory {
		// A checkpoint needs badger to hold every record of its file.
		if sh.jr, sh.tails, err = openJournalFor(db, dir, logger, sh.lag.wait); err != nil {
			_ = db.Close()
			return nil, err
		}
	}
	go sh.committer()
	go sh.applier(applyLinger)
	return sh, nil
}

// Group returns the Store of group g (0 to 255). Each group must be opened
// once; its Close leaves the DB open. obs, when not nil, replaces
// Options.ObserveWrite for this group.
func (sh *Shared) Group(g int, obs func(time.Duration)) (*Store, error) {
	if g < 0 || g > 255 {
		return nil, fmt.Errorf("logstore: group %d out of range", g)
	}
	return sh.store(g, obs)
}

// store makes the Store of group g, or for g -1 the unprefixed Store of
// Open.
func (sh *Shared) store(g int, obs func(time.Duration)) (*Store, error) {
	opts := sh.opts
	if obs != nil {
		opts.ObserveWrite = obs
	}
	var t *journal.Tail
	if sh.tails != nil {
		t = sh.tails.Of(g)
	}
	logger := sh.logger
	if g >= 0 {
		logger = logger.With("group", g)
	}
	return newStore(sh, prefixOf(g), logger, opts, t)
}

// Commits reports how many batches the committer made durable (one journal
// fdatasync each) and how many StoreLogs calls they held (their ratio: calls
// per fsync).
func (sh *Shared) Commits() (txns, calls uint64) { return sh.commits.Load(), sh.requests.Load() }

// Close stops the committer and closes the DB; close every group's Store
// first. Calls after the first return nil and do nothing.
func (sh *Shared) Close() error {
	var err error
	sh.closeOnce.Do(func() {
		close(sh.stopped)
		<-sh.applied // the committer has quit; badger holds what it answered
		if sh.jr != nil {
			sh.jr.Stop()
		}
		cerr := sh.lag.err() // badger lacks journaled writes
		if cerr == nil && sh.jr != nil {
			cerr = fromJournal(sh.jr.MoveAll()) // so that the journal can go
		}
		if dberr := sh.db.Close(); cerr == nil {
			cerr = dberr
		}
		if cerr != nil {
			err = fmt.Errorf("logstore: close %s: %w", sh.dir, cerr)
			if sh.jr != nil {
				sh.jr.Close() // its records are replayed at the next open
			}
		} else if sh.jr != nil {
			if jerr := sh.jr.Retire(); jerr != nil {
				err = fmt.Errorf("logstore: close %s: %w", sh.dir, jerr)
			}
		}
	})
	return err
}

// prepareDir creates dir if needed and checks that it is a directory, so
// that the common failures are reported with the OS error intact (badger
// flattens the errors it returns into text).
func prepareDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &os.PathError{Op: "open", Path: dir, Err: errors.New("not a directory")}
	}
	return nil
}

// explainOpenError turns badger's textual open error into something more
// specific where the cause can be established.
func explainOpenError(dir string, err error) error {
	if strings.Contains(err.Error(), "Cannot acquire directory lock") {
		return fmt.Errorf("%w: %v", ErrLocked, err)
	}
	if dir == "" {
		return err
	}
	// Probe writability to surface a permission problem as *fs.PathError.
	f, perr := os.CreateTemp(dir, ".logstore-probe-*")
	if perr != nil {
		return fmt.Errorf("%w (badger: %v)", perr, err)
	}
	name := f.Name()
	_ = f.Close()
	_ = os.Remove(name)
	return err
}

// acquire takes the shared close lock and fails if the store is closed. On
// success the caller must call s.closeMu.RUnlock.
func (s *Store) acquire() error {
	s.closeMu.RLock()
	if s.closed.Load() {
		s.closeMu.RUnlock()
		return ErrClosed
	}
	return nil
}

// Close waits for in-flight calls; the Store of Open then closes its Shared
// (the badger DB, flushing its memtables, and the journal). Calls after the
// first return nil and do nothing; every other method returns ErrClosed
// afterwards.
func (s *Store) Close() error {
	_ = s.dur.drain(s.stopped()) // a failed deferred write was reported to WaitDurable
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed.Load() {
		return nil
	}
	s.closed.Store(true)
	if s.ownsShared {
		return s.sh.Close()
	}
	return nil // the Shared closes the DB
}

// MaxData is the largest raft.Log Data (without Extensions) that StoreLogs
// accepts: a longer entry fails with ErrEntryTooLarge, and with it the whole
// batch — on a leader, its term. Callers refuse such a write before they
// propose it.
func (s *Store) MaxData() int { return s.sh.maxValue - logcodec.Size(&raft.Log{}) }

// FirstIndex returns the lowest stored log index, or 0 if the log is empty.
// It reads an in-memory cache and never touches disk.
func (s *Store) FirstIndex() (uint64, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	return s.first.Load(), nil
}

// LastIndex returns the highest stored log index, or 0 if the log is empty.
// It reads an in-memory cache and never touches disk.
func (s *Store) LastIndex() (uint64, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	return s.last.Load(), nil
}

// GetLog reads the entry with the given index into log, overwriting all of
// its fields. It returns ErrLogNotFound (raft.ErrLogNotFound) if there is no
// such entry. The returned Data and Extensions are not shared with the store.
func (s *Store) GetLog(index uint64, log *raft.Log) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.closeMu.RUnlock()
	if s.dur.get(index, log) {
		return nil
	}
	if s.tail != nil {
		buf, ok, err := s.journal().Read(s.tail, index)
		if err != nil {
			return fmt.Errorf("logstore: get log %d: %w", index, fromJournal(err))
		}
		if ok {
			return s.decodeAt(buf, index, log)
		}
	}
	if err := s.settle(); err != nil { // it may be on its way to badger
		return fmt.Errorf("logstore: get log %d: %w", index, err)
	}

	var buf []byte
	err := s.sh.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(s.kp.log(index))
		if err != nil {
			return err
		}
		if buf, err = item.ValueCopy(nil); err != nil || item.UserMeta() != metaEntryFile {
			return err
		}
		buf, err = readEntryFile(s.sh.db.Opts().Dir, s.kp, index, buf)
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return ErrLogNotFound
	}
	if err != nil {
		return fmt.Errorf("logstore: get log %d: %w", index, err)
	}
	return s.decodeAt(buf, index, log)
}

// journal is the journal that holds s's writes, its Shared's; nil in
// memory.
func (s *Store) journal() *journal.Journal { return s.sh.jr }

// fromJournal returns err, the journal's, made to match ErrCorrupt as well
// where it reports journal files and tails that disagree (journal.ErrCorrupt):
// ErrCorrupt is the one sentinel for corrupt data that the Store's callers
// match.
func fromJournal(err error) error {
	if err != nil && errors.Is(err, journal.ErrCorrupt) && !errors.Is(err, ErrCorrupt) {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return err
}

// decodeAt decodes buf, the stored value of entry index, into log.
func (s *Store) decodeAt(buf []byte, index uint64, log *raft.Log) error {
	if err := decodeLog(buf, log); err != nil {
		return fmt.Errorf("logstore: get log %d: %w", index, err)
	}
	if log.Index != index {
		return fmt.Errorf("logstore: get log %d: %w: entry records index %d", index, ErrCorrupt, log.Index)
	}
	return nil
}

// StoreLog stores one entry; see StoreLogs.
func (s *Store) StoreLog(log *raft.Log) error {
	return s.StoreLogs([]*raft.Log{log})
}

// StoreLogs stores a batch of entries, replacing any entries with the same
// indexes, and blocks until they are fsynced (unless DeferSyncWhen defers
// it: then it returns once they are queued, and WaitDurable tells when they
// are on disk). The batch is made durable with one journal record (one
// fsync, shared with whatever else the committer writes with it). On disk
// the entries stay in the journal's files (package journal) until they are deleted
// or moved into badger, which keeps an entry of 1 MiB or more in a file of
// its own (entryfiles.go); in memory badger takes them afterwards, split across
// transactions when they exceed badger's per-transaction size limit (about
// 1.2 MiB of entries with the settings used here). If an error is
// returned, the batch does not count as stored: FirstIndex and LastIndex
// are unchanged. Entries need not be contiguous with the ones already
// stored, but index 0 is rejected.
func (s *Store) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.closeMu.RUnlock()
	s.batches.Add(1)
	start := time.Now()
	keys, vals, split, err := s.encodeLogs(logs)
	if err != nil {
		return err
	}

	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	lo, hi := logBounds(logs)
	err = s.dur.err() // a failed deferred write fails every later one
	if err == nil && s.dur.deferSync != nil && s.dur.deferSync() {
		if err = s.storeDeferred(logs, lo, hi, &setsReq{Write: journal.Write{Keys: keys, Vals: vals, Split: split}}); err == nil {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("logstore: store logs [%d..%d]: %w", logs[0].Index, logs[len(logs)-1].Index, err)
	}
	if s.observe != nil {
		defer func() { s.observe(time.Since(start)) }()
	}
	err = s.write(&setsReq{Write: journal.Write{Keys: keys, Vals: vals, Split: split, Tail: s.tail}, stored: func() { s.extendBounds(lo, hi) }})
	if err != nil {
		return fmt.Errorf("logstore: store logs [%d..%d]: %w",
			logs[0].Index, logs[len(logs)-1].Index, err)
	}
	s.dur.advance(hi) // the deferred writes before it were answered first
	return nil
}

// encodeLogs encodes logs (not empty) into the keys and values of their
// journal write, in two slabs. An entry whose data is journal.BigPiece or
// more keeps its data where it is: only its encoding's head and tail go to the
// slab (split), and the journal writes the three pieces. (Only a store whose
// entries stay in the journal splits: Tail.Journaled drops the values, so
// nothing after the journal needs one whole.)
func (s *Store) encodeLogs(logs []*raft.Log) (keys, vals [][]byte, split [][3][]byte, err error) {
	splits := func(l *raft.Log) bool { return s.tail != nil && len(l.Data) >= journal.BigPiece }
	keyLen := s.kp.logLen()
	keySlab := make([]byte, len(logs)*keyLen)
	size := 0
	for _, l := range logs {
		if l.Index == 0 {
			return nil, nil, nil, errors.New("logstore: store logs: log index 0 is reserved")
		}
		size += logcodec.Size(l)
		if splits(l) {
			size -= len(l.Data)
		}
	}
	valSlab := make([]byte, 0, size)
	keys = make([][]byte, len(logs))
	vals = make([][]byte, len(logs))
	for i, l := range logs {
		keys[i] = s.kp.putLog(keySlab[i*keyLen:], l.Index)
		at := len(valSlab)
		var n int
		if splits(l) {
			valSlab = logcodec.AppendHead(valSlab, l)
			mid := len(valSlab)
			valSlab = logcodec.AppendTail(valSlab, l)
			if split == nil {
				split = make([][3][]byte, len(logs))
			}
			split[i] = [3][]byte{valSlab[at:mid:mid], l.Data, valSlab[mid:len(valSlab):len(valSlab)]}
			n = len(valSlab) - at + len(l.Data)
		} else {
			valSlab = logcodec.Append(valSlab, l)
			vals[i] = valSlab[at:len(valSlab):len(valSlab)]
			n = len(vals[i])
		}
		if n > s.sh.maxValue {
			return nil, nil, nil, fmt.Errorf("logstore: store logs: entry %d: %w: %d bytes encoded, limit %d",
				l.Index, ErrEntryTooLarge, n, s.sh.maxValue)
		}
	}
	return keys, vals, split, nil
}

// logBounds returns the lowest and highest index of logs (not empty).
func logBounds(logs []*raft.Log) (lo, hi uint64) {
	lo, hi = logs[0].Index, logs[0].Index
	for _, l := range logs[1:] {
		lo, hi = min(lo, l.Index), max(hi, l.Index)
	}
	return lo, hi
}

// extendBounds widens the cached first and last index to cover [lo, hi];
// s.writeMu must be held.
func (s *Store) extendBounds(lo, hi uint64) {
	if first := s.first.Load(); first == 0 || lo < first {
		s.first.Store(lo)
	}
	if hi > s.last.Load() {
		s.last.Store(hi)
	}
}

// DeleteRange deletes the entries with indexes in [min, max], inclusive, and
// blocks until the deletion is fsynced. Indexes with no entry are ignored.
// The head of the log (Raft's compaction after a snapshot) goes deleteChunk
// entries at a time, each chunk under the write lock on its own, so the log
// stays contiguous and StoreLogs waits for one chunk at most; any other
// range goes in one step. If an error is returned part of the range may have
// been deleted, and FirstIndex and LastIndex reflect what remains. Deleting
// every entry makes both 0.
func (s *Store) DeleteRange(min, max uint64) error {
	if min > max {
		return nil
	}
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.closeMu.RUnlock()
	for {
		next, more, err := s.deleteStep(min, max)
		if err != nil {
			return fmt.Errorf("logstore: delete range [%d..%d]: %w", min, max, err)
		}
		if !more {
			return nil
		}
		min = next
	}
}

// deleteStep deletes, under the write lock, what [min, max] holds, or only
// its first deleteChunk entries when they are the head of the log and more
// follow; more says whether [next, max] is left to do.
func (s *Store) deleteStep(min, max uint64) (next uint64, more bool, err error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.dur.drain(s.stopped()); err != nil {
		return 0, false, err
	}

	first, last := s.first.Load(), s.last.Load()
	if last == 0 || max < first || min > last {
		return 0, false, nil
	}
	if max >= last { // the tail goes: what is stored there again counts once written
		defer func() { s.dur.lower(s.last.Load()) }()
	}
	lo, hi := maxU64(min, first), minU64(max, last)
	if lo == first && hi < last && hi-lo >= deleteChunk {
		hi = lo + deleteChunk - 1
		next, more = hi+1, true
	}
	err = s.deleteLogs(lo, hi)

	// Re-establish the bounds, even after an error since part of the range
	// may be gone. After a clean deletion, seek outward from the deleted
	// range rather than from its ends so as not to walk over the fresh
	// tombstones; after a failed one, entries in [lo, hi] may remain.
	var berr error
	if err == nil && lo == first && hi == last {
		s.first.Store(0)
		s.last.Store(0)
	} else {
		if lo == first { // hi < last unless err != nil
			from := lo
			if err == nil {
				from = hi + 1
			}
			var f uint64
			if f, berr = s.seekLog(from, false); berr == nil {
				s.first.Store(f)
			}
		}
		if hi == last && berr == nil { // lo > first >= 1 unless err != nil
			from := hi
			if err == nil {
				from = lo - 1
			}
			var l uint64
			if l, berr = s.seekLog(from, true); berr == nil {
				s.last.Store(l)
			}
		}
	}
	if err == nil {
		err = berr
	}
	if err != nil {
		return 0, false, err
	}
	return next, more, nil
}

// deleteLogs deletes the stored entries with indexes in [lo, hi] (Store.write).
func (s *Store) deleteLogs(lo, hi uint64) error {
	var keys [][]byte
	if s.tail != nil {
		// The tail before badger: an entry that moves meanwhile is in badger
		// by the time settle returns.
		idx, _ := s.tail.Entries(lo, hi, 0, 0)
		for _, i := range idx {
			keys = append(keys, s.kp.log(i))
		}
	}
	inTail := len(keys)
	if err := s.settle(); err != nil {
		return err
	}
	err := s.sh.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(s.logIteratorOptions(false))
		defer it.Close()
		for it.Seek(s.kp.log(lo)); it.Valid(); it.Next() {
			key := it.Item().Key()
			idx, ok := s.kp.parseLog(key)
			if !ok {
				return fmt.Errorf("%w: malformed log key %x", ErrCorrupt, key)
			}
			if idx > hi {
				break
			}
			keys = append(keys, it.Item().KeyCopy(nil))
		}
		return nil
	})
	if err != nil || len(keys) == 0 {
		return err
	}
	if inTail > 0 && len(keys) > inTail { // an entry that moved meanwhile is in both lists
		slices.SortFunc(keys, bytes.Compare)
		keys = slices.CompactFunc(keys, bytes.Equal)
	}
	return s.write(&setsReq{Write: journal.Write{Keys: keys, Del: true, Tail: s.tail}})
}

// write writes r and waits until it is fsynced, through the Shared's
// committer (with whatever the other groups write meanwhile), or for the
// Store of Open on its own goroutine when nothing is queued before it and
// WriteInlineWhen's predicate (if set) agrees.
func (s *Store) write(r *setsReq) error {
	if s.ownsShared && (s.dur.inline == nil || s.dur.inline()) {
		if done, err := s.sh.writeInline([]*setsReq{r}, false); done {
			return err
		}
	}
	return s.sh.commit(r)
}

func (s *Store) logIteratorOptions(reverse bool) badger.IteratorOptions {
	return badger.IteratorOptions{
		PrefetchValues: false,
		Reverse:        reverse,
		Prefix:         s.kp.logs(),
	}
}

// seekLog returns the index of the first stored entry at or after from
// (reverse false) or at or before from (reverse true), or 0 if there is none.
func (s *Store) seekLog(from uint64, reverse bool) (uint64, error) {
	var inTail uint64 // the tail before badger: see deleteLogs
	found := false
	if s.tail != nil {
		inTail, found = s.tail.Seek(from, reverse)
	}
	idx, err := s.seekBadger(from, reverse)
	switch {
	case err != nil || !found || idx == 0:
		if found && err == nil {
			return inTail, nil
		}
		return idx, err
	case reverse:
		return max(idx, inTail), nil
	default:
		return min(idx, inTail), nil
	}
}

// seekBadger is seekLog among the entries badger holds.
func (s *Store) seekBadger(from uint64, reverse bool) (uint64, error) {
	if err := s.settle(); err != nil {
		return 0, err
	}
	var idx uint64
	err := s.sh.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(s.logIteratorOptions(reverse))
		defer it.Close()
		it.Seek(s.kp.log(from))
		if !it.Valid() {
			return nil
		}
		key := it.Item().Key()
		var ok bool
		if idx, ok = s.kp.parseLog(key); !ok {
			return fmt.Errorf("%w: malformed log key %x", ErrCorrupt, key)
		}
		return nil
	})
	return idx, err
}

// Set stores val under key, blocking until it is fsynced.
func (s *Store) Set(key, val []byte) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.closeMu.RUnlock()

	// Through write, whose journal makes it durable (badger does not sync).
	err := s.write(&setsReq{Write: journal.Write{Keys: [][]byte{s.kp.stable(key)}, Vals: [][]byte{val}}})
	if err != nil {
		return fmt.Errorf("logstore: set %q: %w", key, err)
	}
	return nil
}

// Get returns a copy of the value stored under key, or ErrKeyNotFound
// (unwrapped, text "not found") if the key has never been set.
func (s *Store) Get(key []byte) ([]byte, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.closeMu.RUnlock()

	if err := s.settle(); err != nil {
		return nil, fmt.Errorf("logstore: get %q: %w", key, err)
	}
	var val []byte
	err := s.sh.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(s.kp.stable(key))
		if err != nil {
			return err
		}
		val, err = item.ValueCopy(nil)
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, ErrKeyNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("logstore: get %q: %w", key, err)
	}
	return val, nil
}

// SetUint64 stores val under key as 8 big-endian bytes, blocking until it is
// fsynced.
func (s *Store) SetUint64(key []byte, val uint64) error {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], val)
	return s.Set(key, buf[:])
}

// GetUint64 returns the value stored under key by SetUint64, or
// ErrKeyNotFound (unwrapped, text "not found") if the key has never been set.
func (s *Store) GetUint64(key []byte) (uint64, error) {
	val, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	if len(val) != 8 {
		return 0, fmt.Errorf("logstore: get uint64 %q: %w: value is %d bytes, want 8", key, ErrCorrupt, len(val))
	}
	return binary.BigEndian.Uint64(val), nil
}

func minU64(a, b uint64) uint64 { return min(a, b) }
func maxU64(a, b uint64) uint64 { return max(a, b) }
