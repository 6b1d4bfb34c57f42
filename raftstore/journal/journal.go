// Package journal is a write-ahead journal whose files also hold a log's
// young entries: a writer appends a batch of writes as one checksummed record
// and one fdatasync of a preallocated file, a Tail per log says where each of
// its entries landed, and reads of those entries come from the files. The
// journal stands in front of another store (logstore: badger, run without
// syncing), which takes every write but the log entries after the journal
// has made it durable, and the entries that outlive their file (Config.Move).
// See DESIGN.md.
package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/lockd/lockd/internal/durable"
	"golang.org/x/sys/unix"
)

// The order matters: the store behind may write out any of its unsynced
// writes at any time, so it must never hold one that the journal could lose
// — a write kept by it but not by the journal would survive the replay half
// undone (its keys that earlier records also wrote set back, the others
// not), which could leave a Raft log whose entries disagree on their terms.
// With the journal first, after a crash the store behind holds what it had
// made durable plus some prefix of the later writes, all of them in the
// journal. Opening the journal replays every record, in order, into the
// store behind (log entries: into the tails), makes the store behind durable
// (Config.Sync, a checkpoint) and starts a new file: replaying, in their
// order, sets and deletes of which a prefix was already applied leaves every
// key as the last of them left it, so the result is the state after the last
// record the journal holds, whatever prefix the store behind kept.
//
// When a journal file is full, the writer goes on in the next file, which
// the journal's rotator goroutine created in advance, and hands the full one
// to the rotator, and the rotator checkpoints full files in the background,
// oldest first, once no log entry in them is still in a tail (reclaim;
// beyond KeepFiles full files it moves the oldest one's entries into the
// store behind first) — waits until the store behind holds every other
// record of the file (Config.Quiesce), makes it durable (Config.Sync), removes
// the file — and creates the spare for the next switch. The writes never wait
// for a checkpoint (measured, 3 nodes, 64 clients: it took 16-32 ms, and all
// three nodes, writing the same log, took it at about the same moment, every
// ~9 s), unless a file fills before the previous one's checkpoint is done.
// The journal so holds at most KeepFiles+1 files of records (plus the empty
// spare), and a replay goes through them in order.

// DefaultFileSize is the size of one journal file, preallocated so that an
// fdatasync never has to record a new file size.
const DefaultFileSize = 16 << 20

// DefaultKeepFiles is how many full journal files the journal keeps while
// log entries in them are still in a tail: with more, the oldest one's
// entries move into the store behind and it is removed. A node's journal so
// holds at most six files: these, the current one and the spare.
const DefaultKeepFiles = 4

// fileSuffix names the journal's files: <sequence number in hex>.journal.
const fileSuffix = ".journal"

// ErrClosed is returned by Append once the journal's rotator has stopped
// (Stop, Close) and the write needs a new file.
var ErrClosed = errors.New("journal: closed")

// ErrCorrupt is wrapped in the errors reporting a journal whose files and
// tails disagree: a file gone while an entry in it is not, or counted
// entries no tail holds.
var ErrCorrupt = errors.New("journal: corrupt state")

// Config is what Open needs besides the directory: the journal's sizes, its
// tails, and the store behind it, as callbacks.
type Config struct {
	// FileSize is each file's preallocated size (DefaultFileSize); a record
	// larger than a file gets a file of its own.
	FileSize int64
	// KeepFiles is how many full files may keep entries a tail holds
	// (DefaultKeepFiles); with 0 a full file's entries move out at once.
	KeepFiles int
	// Tails are the tails of the logs whose entries the journal holds (not
	// nil); the replay fills them.
	Tails *Tails

	// Replay is called by Open with the writes of each whole record, in
	// order; each set's Locs say where its values are. An error fails Open.
	Replay func([]*Write) error
	// Sync makes what the store behind holds durable: a checkpoint calls it
	// before it removes a file, Open after a replay, Retire before it
	// removes the files. nil: nothing to sync.
	Sync func() error
	// Quiesce waits until the store behind holds every write handed to it
	// so far (the writer may hand writes over after Append returns); a
	// checkpoint and a move call it first, and fail with its error. nil:
	// every write is there once appended.
	Quiesce func() error
	// Move puts entries idx (ascending) of log id, with their encoded
	// values, into the store behind, where a reader that misses them in the
	// tail finds them once it returns. The rotator calls it to empty the
	// oldest file beyond KeepFiles, MoveAll at a clean stop.
	Move func(id int, idx []uint64, vals [][]byte) error
}

// Journal appends writes to the current file of its directory. Append is
// safe for concurrent use (writers take turns); Open runs before the first
// Append, Stop, Close and Retire after the last.
type Journal struct {
	cfg   Config
	tails *Tails

	mu   sync.Mutex // writers append in turn
	dir  string
	f    *os.File
	seq  uint64 // f's sequence number
	off  int64  // where the next record goes
	size int64  // f's preallocated size
	rec  record // the record being written (its buffer kept for the next)
	err  error  // sticky: after a failed write, sync or checkpoint nothing more is trusted

	// The rotator (rotator's doc) and the writer take turns: the writer
	// tells it on half when f is half full (halfSent: told for this f), the
	// rotator then zeroes file seq+1 and sends it, ready, on spare; the
	// writer switches to it when f is full and tells it on full. A writer
	// that needs the spare while the rotator still zeroes it says so on
	// need, and gets it at once, the rest of it fallocated only.
	half     chan struct{}
	halfSent bool
	need     chan struct{}
	spare    chan spareFile
	full     chan struct{}
	stop     chan struct{} // closed by Stop
	stopOnce sync.Once
	rotated  chan struct{} // closed when the rotator has returned

	// Log entries are read back from the journal's files: every file not
	// yet removed is open in files, the current one too.
	filesMu sync.RWMutex
	files   map[uint64]*os.File
	// The rotator's: the full files not yet removed, oldest first.
	retained []uint64
}

// spareFile is the rotator's next file for the writer (FileSize bytes,
// preallocated), or the error that keeps it from making one (a failed
// checkpoint or file creation).
type spareFile struct {
	f   *os.File
	err error
}

// Open replays the records of dir's journal files, oldest first, by calling
// cfg.Replay with each record's writes, in order; then it checkpoints
// (cfg.Sync), starts a new file, removes the replayed files that hold no
// entry a tail holds, from the oldest on, keeps the others, and starts the
// rotator. dir is created if needed. A record that is cut short or fails its
// checksum ends its file's replay: it is the write a crash interrupted. A
// record whose checksum holds but that does not parse fails the open.
func Open(dir string, cfg Config) (*Journal, error) {
	if cfg.FileSize <= 0 || cfg.KeepFiles < 0 || cfg.Tails == nil {
		return nil, fmt.Errorf("journal: open %s: file size %d, %d files kept, tails %v", dir, cfg.FileSize, cfg.KeepFiles, cfg.Tails != nil)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	old, err := Files(dir)
	if err != nil {
		return nil, err
	}
	j := &Journal{cfg: cfg, tails: cfg.Tails, dir: dir,
		spare: make(chan spareFile, 1), full: make(chan struct{}, 1), half: make(chan struct{}, 1),
		need: make(chan struct{}, 1),
		stop: make(chan struct{}), rotated: make(chan struct{}),
		files: make(map[uint64]*os.File)}
	fail := func(err error) (*Journal, error) {
		j.closeFiles()
		return nil, err
	}
	replay := cfg.Replay
	if replay == nil {
		replay = func([]*Write) error { return nil }
	}
	for _, seq := range old {
		name := filepath.Join(dir, FileName(seq))
		data, err := os.ReadFile(name)
		if err != nil {
			return fail(err)
		}
		if err := replayFile(data, seq, replay); err != nil {
			return fail(fmt.Errorf("journal %s: %w", FileName(seq), err))
		}
		f, err := os.Open(name) // its entries are read from it
		if err != nil {
			return fail(err)
		}
		j.files[seq], j.seq = f, seq
	}
	if len(old) > 0 {
		if err := j.sync(); err != nil {
			return fail(fmt.Errorf("journal: checkpoint: %w", err))
		}
	}
	first := min(cfg.FileSize, firstFileSize)
	f, err := createFile(dir, j.seq+1, first)
	if err != nil {
		return fail(err)
	}
	j.f, j.seq, j.size = f, j.seq+1, first
	j.files[j.seq] = f
	j.retained = old
	for len(j.retained) > 0 && j.tails.Live(j.retained[0]) == 0 {
		if err := j.removeFile(j.retained[0]); err != nil {
			return fail(err)
		}
		j.retained = j.retained[1:]
	}
	go j.rotator(j.seq + 1)
	return j, nil
}

// FileName is the name of journal file seq in its directory.
func FileName(seq uint64) string { return fmt.Sprintf("%016x%s", seq, fileSuffix) }

// Files returns the sequence numbers of the journal files in dir, in order.
func Files(dir string) ([]uint64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var seqs []uint64
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), fileSuffix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		seq, err := strconv.ParseUint(name, 16, 64)
		if err != nil {
			continue
		}
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	return seqs, nil
}

// Current returns the sequence number of the file being written.
func (j *Journal) Current() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.seq
}

// Append makes batch, which the store behind does not hold yet, durable: one
// record written and fdatasynced; when it does not fit in the current file,
// in the next one (rotate). The Locs of its writes for a tail then say where
// their values are. After an error every later call fails with it.
func (j *Journal) Append(batch []*Write) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return j.err
	}
	rec := &j.rec
	rec.build(batch)
	if j.off+int64(rec.size) > j.size {
		if j.err = j.rotate(int64(rec.size)); j.err != nil {
			return j.err
		}
	}
	if err := rec.writeAt(j.f, j.off); err != nil {
		j.err = fmt.Errorf("journal: write: %w", err)
		return j.err
	}
	if err := unix.Fdatasync(int(j.f.Fd())); err != nil {
		j.err = fmt.Errorf("journal: fdatasync %s: %w", j.f.Name(), err)
		return j.err
	}
	for _, w := range batch {
		for i := range w.Locs {
			w.Locs[i].Seq, w.Locs[i].Off = j.seq, w.Locs[i].Off+j.off
		}
	}
	j.off += int64(rec.size)
	if j.off >= j.size/2 {
		j.halfFull()
	}
	clear(rec.refs) // the values are the callers'
	if cap(rec.buf) > 1<<20 {
		rec.buf = nil // do not keep a huge batch's buffer
	}
	return nil
}

// Read reads the encoded value of entry index if the tail t holds it. A file
// goes only once its entries left the tails: when the entry's file is gone
// by the time it is read, the entry has moved, and the tail no longer holds
// it.
func (j *Journal) Read(t *Tail, index uint64) ([]byte, bool, error) {
	var gone Loc
	for {
		l, ok := t.Get(index)
		if !ok {
			return nil, false, nil
		}
		j.filesMu.RLock()
		if j.files[l.Seq] == nil && l != gone { // else readLocked reports it
			j.filesMu.RUnlock()
			gone = l
			continue
		}
		buf, err := j.readLocked(l)
		j.filesMu.RUnlock()
		return buf, true, err
	}
}

// read reads the value at l (a file the caller keeps from being removed: the
// rotator's, or one being moved).
func (j *Journal) read(l Loc) ([]byte, error) {
	j.filesMu.RLock()
	defer j.filesMu.RUnlock()
	return j.readLocked(l)
}

func (j *Journal) readLocked(l Loc) ([]byte, error) {
	f := j.files[l.Seq]
	if f == nil {
		return nil, fmt.Errorf("journal: %w: %s is gone, an entry in it is not", ErrCorrupt, FileName(l.Seq))
	}
	buf := make([]byte, l.N)
	if _, err := f.ReadAt(buf, l.Off); err != nil {
		return nil, fmt.Errorf("journal: read %s: %w", FileName(l.Seq), err)
	}
	return buf, nil
}

// sync is cfg.Sync, or nothing without one.
func (j *Journal) sync() error {
	if j.cfg.Sync == nil {
		return nil
	}
	return j.cfg.Sync()
}

// quiesce is cfg.Quiesce, or nothing without one.
func (j *Journal) quiesce() error {
	if j.cfg.Quiesce == nil {
		return nil
	}
	return j.cfg.Quiesce()
}

// Stop stops the rotator and waits for it to return (a checkpoint under way
// completes first); a spare nobody took is closed. Reads go on; an Append
// that needs a new file fails with ErrClosed. Later calls return at once.
func (j *Journal) Stop() {
	j.stopOnce.Do(func() {
		close(j.stop)
		<-j.rotated
		select {
		case s := <-j.spare:
			if s.f != nil {
				s.f.Close()
			}
		default:
		}
		select {
		case <-j.full: // handed over as the rotator stopped: stays for the replay
		default:
		}
	})
}

// Retire, once the store behind holds every write by itself (MoveAll, and
// the store closed cleanly), makes the store behind durable (cfg.Sync) and
// removes the journal's files: a clean stop leaves nothing to replay. After
// an earlier failure of the journal, or if the sync fails, the files stay for
// the next open to replay. The journal is closed afterwards.
func (j *Journal) Retire() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.close()
	if j.err != nil {
		return nil // the write that failed was reported; the next open replays
	}
	if err := j.sync(); err != nil {
		return fmt.Errorf("journal: checkpoint: %w", err)
	}
	seqs, err := Files(j.dir)
	if err != nil {
		return err
	}
	if err := j.remove(seqs); err != nil {
		return err
	}
	return durable.SyncDir(j.dir)
}

// remove deletes the journal files seqs (already replayed or checkpointed).
func (j *Journal) remove(seqs []uint64) error {
	for _, seq := range seqs {
		if err := os.Remove(filepath.Join(j.dir, FileName(seq))); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
	}
	return nil
}

// Close stops the rotator and closes the journal's files; the records in
// them stay for the next open.
func (j *Journal) Close() error { return j.close() }

func (j *Journal) close() error {
	j.Stop()
	j.f = nil
	return j.closeFiles()
}

// closeFiles closes every journal file still open.
func (j *Journal) closeFiles() error {
	j.filesMu.Lock()
	defer j.filesMu.Unlock()
	var err error
	for seq, f := range j.files {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		delete(j.files, seq)
	}
	return err
}

// createFile creates journal file seq in dir, preallocated with size bytes,
// and makes its name durable.
func createFile(dir string, seq uint64, size int64) (*os.File, error) {
	name := filepath.Join(dir, FileName(seq))
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	// Allocated blocks read as zeros, which end the replay; a file system
	// without fallocate gets a file that grows (an fdatasync then also
	// records its size).
	_ = unix.Fallocate(int(f.Fd()), 0, 0, size)
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: sync %s: %w", name, err)
	}
	if err := durable.SyncDir(dir); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
