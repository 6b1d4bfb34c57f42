package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// The log's journal: one fdatasync per write instead of badger's two.
//
// With synchronous writes a badger commit msyncs two files: the memtable's
// write-ahead log, and the value log's current file even when the batch put
// nothing there (only entries over badger's 1 MiB value threshold go there).
// That is two device flushes per commit: ~212 µs for a batch of four small
// entries on the development VM, against ~110 µs for one write and
// fdatasync into a preallocated file, and with the flushes out of the way
// entirely a 3-node cluster ran 1.9x the cycles/s (issue 9). So a Store or
// Shared on disk runs badger without syncing and makes each write durable
// itself: it appends the write's keys and values to the journal as one
// checksummed record and fdatasyncs the journal, and only then commits the
// write to badger (its memtable and its own, unsynced, logs). A Store of its
// own tells the caller after that; a Shared's committer journals all the
// groups' writes it commits together as one record, one fdatasync, tells the
// callers at once, and leaves the badger commit to its applier, which runs
// beside the next record's write (applier.go).
//
// The order matters: badger may write out any of its unsynced writes at any
// time, so it must never hold one that the journal could lose — a write kept
// by badger but not by the journal would survive the replay below half
// undone (its keys that earlier records also wrote set back, the others
// not), which could leave a Raft log whose entries disagree on their terms.
// With the journal first, after a crash badger holds what it had made
// durable plus some prefix of the later writes (it replays its logs up to
// the first torn record), all of them in the journal. Opening the store
// replays every journal record, in order, into badger, makes badger's files
// durable (checkpoint) and starts an empty journal file: replaying, in their
// order, sets and deletes of which a prefix was already applied leaves every
// key as the last of them left it, so the result is the state after the last
// record the journal holds, whatever prefix badger kept.
// When a journal file is full, the writer likewise checkpoints and starts
// the next file, so the journal never holds more than one file of writes.
//
// A checkpoint fsyncs every file in badger's directory, then the directory:
// badger exposes no way to sync the write-ahead logs of memtables it has
// sealed but not yet flushed to tables, and syncing everything needs no
// knowledge of its file names. A file that badger deletes meanwhile held
// nothing that is not in a table it synced first.

// journalFileSize is the size of one journal file, preallocated so that an
// fdatasync never has to record a new file size. A variable for tests only.
var journalFileSize int64 = 16 << 20

// journalSuffix names the journal's files: <sequence number in hex>.journal.
const journalSuffix = ".journal"

// journalHeader is a record's length (4 bytes) and CRC-32C of its payload (4).
const journalHeader = 8

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// journal appends a store's writes to the current file of its directory.
// append is safe for concurrent use; openJournal runs before the first
// append, retire or close after the last.
type journal struct {
	mu    sync.Mutex // a Store of its own appends from several goroutines
	dir   string     // the journal's own directory
	dbDir string     // badger's directory, which a checkpoint syncs
	f     *os.File
	seq   uint64 // f's sequence number
	off   int64  // where the next record goes
	size  int64  // f's preallocated size
	buf   []byte
	err   error // sticky: after a failed write or sync nothing more is trusted

	// quiesce, when set, runs before a checkpoint and waits until badger
	// holds every record written so far (a Shared's applier trails the
	// journal); an error fails the checkpoint.
	quiesce func() error
}

// openJournal replays the records of dir's journal files, oldest first, by
// calling apply with each record's writes, in order; then it checkpoints (syncs
// dbDir), starts a new file and removes the replayed ones. dir is created if
// needed. A record that is cut short or fails its checksum ends its file's
// replay: it is the write a crash interrupted.
func openJournal(dir, dbDir string, apply func([]*setsReq) error) (*journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	old, err := journalFiles(dir)
	if err != nil {
		return nil, err
	}
	j := &journal{dir: dir, dbDir: dbDir}
	for _, seq := range old {
		data, err := os.ReadFile(filepath.Join(dir, journalName(seq)))
		if err != nil {
			return nil, err
		}
		if err := replayJournal(data, apply); err != nil {
			return nil, fmt.Errorf("journal %s: %w", journalName(seq), err)
		}
		j.seq = seq
	}
	if len(old) > 0 {
		if err := syncFiles(dbDir); err != nil {
			return nil, fmt.Errorf("journal: checkpoint: %w", err)
		}
	}
	if err := j.next(0); err != nil {
		return nil, err
	}
	if err := j.remove(old); err != nil {
		j.close()
		return nil, err
	}
	return j, nil
}

func journalName(seq uint64) string { return fmt.Sprintf("%016x%s", seq, journalSuffix) }

// journalFiles returns the sequence numbers of dir's journal files, in order.
func journalFiles(dir string) ([]uint64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var seqs []uint64
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), journalSuffix)
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

// replayJournal calls apply with the writes of each whole record in data.
func replayJournal(data []byte, apply func([]*setsReq) error) error {
	for off := 0; off+journalHeader <= len(data); {
		n := int(binary.LittleEndian.Uint32(data[off:]))
		if n == 0 || n > len(data)-off-journalHeader {
			return nil // the preallocated zeros after the last record, or a torn one
		}
		payload := data[off+journalHeader : off+journalHeader+n]
		if crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(data[off+4:]) {
			return nil // torn
		}
		reqs, err := decodeJournalRecord(payload)
		if err != nil {
			return err // whole and checksummed, yet unreadable: not a crash's doing
		}
		if err := apply(reqs); err != nil {
			return err
		}
		off += journalHeader + n
	}
	return nil
}

// appendJournalRecord appends the record of batch's writes to dst: the
// header, then the number of writes and, for each, a flag byte (1: its keys
// are deleted), the number of its keys, and each key and, unless deleted, its
// value, each preceded by its length (uvarints).
func appendJournalRecord(dst []byte, batch []*setsReq) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, journalHeader)...)
	dst = binary.AppendUvarint(dst, uint64(len(batch)))
	for _, r := range batch {
		flag := byte(0)
		if r.del {
			flag = 1
		}
		dst = append(dst, flag)
		dst = binary.AppendUvarint(dst, uint64(len(r.keys)))
		for i, k := range r.keys {
			dst = binary.AppendUvarint(dst, uint64(len(k)))
			dst = append(dst, k...)
			if !r.del {
				dst = binary.AppendUvarint(dst, uint64(len(r.vals[i])))
				dst = append(dst, r.vals[i]...)
			}
		}
	}
	payload := dst[start+journalHeader:]
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(dst[start+4:], crc32.Checksum(payload, crcTable))
	return dst
}

var errJournalRecord = errors.New("malformed journal record")

// decodeJournalRecord parses a record's payload into its writes (keys and
// values share p's memory; each reports nothing when committed).
func decodeJournalRecord(p []byte) ([]*setsReq, error) {
	uvarint := func() (uint64, bool) {
		n, k := binary.Uvarint(p)
		if k <= 0 || n > uint64(len(p)-k) {
			return 0, false // also: a count larger than what is left to hold it
		}
		p = p[k:]
		return n, true
	}
	field := func() ([]byte, bool) {
		n, ok := uvarint()
		if !ok {
			return nil, false
		}
		b := p[:n]
		p = p[n:]
		return b, true
	}
	count, ok := uvarint()
	if !ok {
		return nil, errJournalRecord
	}
	reqs := make([]*setsReq, 0, count)
	for range count {
		if len(p) == 0 || p[0] > 1 {
			return nil, errJournalRecord
		}
		r := &setsReq{del: p[0] == 1, committed: func(int, int) {}}
		p = p[1:]
		n, ok := uvarint()
		if !ok {
			return nil, errJournalRecord
		}
		for range n {
			k, ok := field()
			if !ok {
				return nil, errJournalRecord
			}
			r.keys = append(r.keys, k)
			if !r.del {
				v, ok := field()
				if !ok {
					return nil, errJournalRecord
				}
				r.vals = append(r.vals, v)
			}
		}
		reqs = append(reqs, r)
	}
	if len(p) != 0 {
		return nil, errJournalRecord
	}
	return reqs, nil
}

// append makes batch, which is not yet in badger, durable: one record
// written and fdatasynced; when it does not fit in the current file, after a
// checkpoint (which makes everything badger holds durable) in a new one.
// After an error every later call fails with it.
func (j *journal) append(batch []*setsReq) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return j.err
	}
	j.buf = appendJournalRecord(j.buf[:0], batch)
	if j.off+int64(len(j.buf)) > j.size {
		if j.err = j.checkpoint(int64(len(j.buf))); j.err != nil {
			return j.err
		}
	}
	if _, err := j.f.WriteAt(j.buf, j.off); err != nil {
		j.err = fmt.Errorf("journal: write: %w", err)
		return j.err
	}
	if err := unix.Fdatasync(int(j.f.Fd())); err != nil {
		j.err = fmt.Errorf("journal: fdatasync %s: %w", j.f.Name(), err)
		return j.err
	}
	j.off += int64(len(j.buf))
	if cap(j.buf) > 1<<20 {
		j.buf = nil // do not keep a huge batch's buffer
	}
	return nil
}

// checkpoint makes badger's files durable, then replaces the current file
// with a new, empty one that has room for need bytes.
func (j *journal) checkpoint(need int64) error {
	if j.quiesce != nil {
		if err := j.quiesce(); err != nil {
			return fmt.Errorf("journal: checkpoint: %w", err)
		}
	}
	if err := syncFiles(j.dbDir); err != nil {
		return fmt.Errorf("journal: checkpoint: %w", err)
	}
	done := j.f
	if err := j.next(need); err != nil {
		return err
	}
	done.Close()
	return j.remove([]uint64{j.seq - 1})
}

// next creates file seq+1, preallocated with room for need bytes or more,
// and makes its name durable.
func (j *journal) next(need int64) error {
	name := filepath.Join(j.dir, journalName(j.seq+1))
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	// Allocated blocks read as zeros, which end the replay; a file system
	// without fallocate gets a file that grows (an fdatasync then also
	// records its size).
	size := max(journalFileSize, need)
	_ = unix.Fallocate(int(f.Fd()), 0, 0, size)
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("journal: sync %s: %w", name, err)
	}
	if err := syncDir(j.dir); err != nil {
		f.Close()
		return err
	}
	j.f, j.seq, j.off, j.size = f, j.seq+1, 0, size
	return nil
}

// retire, once badger has closed cleanly, makes badger's files durable and
// removes the journal's files: badger then holds every write by itself, so a
// clean stop leaves nothing to replay, and a lockd from before the journal
// finds a complete log. After an earlier failure, or if the sync fails, the
// files stay for the next open to replay.
func (j *journal) retire() error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.close()
	if j.err != nil {
		return nil // the write that failed was reported; the next open replays
	}
	if err := syncFiles(j.dbDir); err != nil {
		return fmt.Errorf("journal: checkpoint: %w", err)
	}
	seqs, err := journalFiles(j.dir)
	if err != nil {
		return err
	}
	if err := j.remove(seqs); err != nil {
		return err
	}
	return syncDir(j.dir)
}

// remove deletes the journal files seqs (already replayed or checkpointed).
func (j *journal) remove(seqs []uint64) error {
	for _, seq := range seqs {
		if err := os.Remove(filepath.Join(j.dir, journalName(seq))); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
	}
	return nil
}

// close closes the current file; the records in it stay for the next open.
func (j *journal) close() error {
	if j == nil || j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

// syncFiles fsyncs every regular file in dir, then dir itself. A file that
// disappears meanwhile is skipped.
func syncFiles(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return fmt.Errorf("sync %s: %w", e.Name(), err)
		}
	}
	return syncDir(dir)
}

// syncDir fsyncs directory dir, making the names in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
