package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/lockd/lockd/internal/durable"
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
// write to badger (its memtable and its own, unsynced, logs) — except for log
// entries, which stay in the journal's files (tail.go). A Store of its
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
// replays every journal record, in order, into badger (log entries: into the
// tails), makes badger's files durable (checkpoint) and starts a new journal
// file: replaying, in their
// order, sets and deletes of which a prefix was already applied leaves every
// key as the last of them left it, so the result is the state after the last
// record the journal holds, whatever prefix badger kept.
// When a journal file is full, the writer goes on in the next file, which
// the journal's rotator goroutine created in advance, and hands the full one
// to the rotator, and the rotator checkpoints full files in the background,
// oldest first, once no log entry in them is still in the log (reclaim;
// beyond journalKeepFiles full files it moves the oldest one's entries into
// badger first) — waits until badger holds every other record of the file (a
// Shared's applier trails the journal), makes badger's files durable, removes
// the file — and creates the spare for the next switch. The writes never wait
// for a checkpoint (measured, 3 nodes, 64 clients: it took 16-32 ms, and all
// three nodes, writing the same log, took it at about the same moment, every
// ~9 s), unless a file fills before the previous one's checkpoint is done.
// The journal so holds at most journalKeepFiles+1 files of records (plus the
// empty spare), and a replay goes through them in order.
//
// A checkpoint fsyncs every file in badger's directory, then the directory:
// badger exposes no way to sync the write-ahead logs of memtables it has
// sealed but not yet flushed to tables, and syncing everything needs no
// knowledge of its file names. A file that badger deletes meanwhile held
// nothing that is not in a table it synced first.

// journalFileSize is the size of one journal file, preallocated so that an
// fdatasync never has to record a new file size. A variable for tests only,
// read when a journal opens.
var journalFileSize int64 = 16 << 20

// journalKeepFiles is how many full journal files the journal keeps while
// log entries in them are still in the log (tail.go): with more, the oldest
// one's entries move into badger and it is removed. A variable for tests
// only, read when a journal opens.
var journalKeepFiles = 4

// moveChunk is the most log entries one move (journal.migrate) takes from a
// file into badger, so that the writes of the groups whose entries move wait
// for one chunk at most.
const moveChunk = 1024

// journalSuffix names the journal's files: <sequence number in hex>.journal.
const journalSuffix = ".journal"

// journalHeader is a record's length (4 bytes) and CRC-32C of its payload (4).
const journalHeader = 8

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// journal appends a store's writes to the current file of its directory.
// append is safe for concurrent use; openJournal runs before the first
// append, retire or close after the last.
type journal struct {
	mu       sync.Mutex // the committer and an inline write (Shared.writeInline) append, in turn
	dir      string     // the journal's own directory
	dbDir    string     // badger's directory, which a checkpoint syncs
	f        *os.File
	seq      uint64        // f's sequence number
	off      int64         // where the next record goes
	size     int64         // f's preallocated size
	fileSize int64         // a new file's preallocated size (journalFileSize at open)
	rec      journalRecord // the record being written (its buffer kept for the next)
	err      error         // sticky: after a failed write, sync or checkpoint nothing more is trusted

	// quiesce, when set, runs before a checkpoint and waits until badger
	// holds every record handed to it so far (a Shared's applier trails the
	// journal); an error fails the checkpoint. nil (tests of the journal
	// alone): every record is in badger once appended.
	quiesce func() error

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
	stop     chan struct{} // closed by stopRotator
	stopOnce sync.Once
	rotated  chan struct{} // closed when the rotator has returned

	// Log entries are read back from the journal's files (tail.go): every
	// file not yet removed is open in files, the current one too; live
	// counts the entries in each that a tail holds.
	filesMu sync.RWMutex
	files   map[uint64]*os.File
	live    *liveFiles
	// The rotator's: the full files not yet removed, oldest first, and how
	// many of them may keep live entries (journalKeepFiles).
	retained []uint64
	keep     int
	// migrate, set by the journal's owner before its first append, moves
	// at most moveChunk of file seq's live entries into badger and returns
	// how many it moved. The rotator calls it.
	migrate func(seq uint64) (int, error)
}

// spareFile is the rotator's next file for the writer (fileSize bytes,
// preallocated), or the error that keeps it from making one (a failed
// checkpoint or file creation).
type spareFile struct {
	f   *os.File
	err error
}

// openJournal replays the records of dir's journal files, oldest first, by
// calling apply with each record's writes, in order (a set's locs say where
// its values are); then it checkpoints (syncs dbDir), starts a new file,
// removes the replayed files that hold no entry live counts, from the oldest
// on, keeps the others, and starts the rotator, whose checkpoints call
// quiesce (nil: none) first. dir is created if needed. A record that is cut
// short or fails its checksum ends its file's replay: it is the write a crash
// interrupted.
func openJournal(dir, dbDir string, live *liveFiles, apply func([]*setsReq) error, quiesce func() error) (*journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	old, err := journalFiles(dir)
	if err != nil {
		return nil, err
	}
	j := &journal{dir: dir, dbDir: dbDir, quiesce: quiesce, fileSize: journalFileSize,
		spare: make(chan spareFile, 1), full: make(chan struct{}, 1), half: make(chan struct{}, 1),
		need: make(chan struct{}, 1),
		stop: make(chan struct{}), rotated: make(chan struct{}),
		files: make(map[uint64]*os.File), live: live, keep: journalKeepFiles}
	fail := func(err error) (*journal, error) {
		j.closeFiles()
		return nil, err
	}
	for _, seq := range old {
		name := filepath.Join(dir, journalName(seq))
		data, err := os.ReadFile(name)
		if err != nil {
			return fail(err)
		}
		if err := replayJournal(data, seq, apply); err != nil {
			return fail(fmt.Errorf("journal %s: %w", journalName(seq), err))
		}
		f, err := os.Open(name) // its entries are read from it (tail.go)
		if err != nil {
			return fail(err)
		}
		j.files[seq], j.seq = f, seq
	}
	if len(old) > 0 {
		if err := syncFiles(dbDir); err != nil {
			return fail(fmt.Errorf("journal: checkpoint: %w", err))
		}
	}
	first := min(j.fileSize, journalFirstFile)
	f, err := createJournalFile(dir, j.seq+1, first)
	if err != nil {
		return fail(err)
	}
	j.f, j.seq, j.size = f, j.seq+1, first
	j.files[j.seq] = f
	j.retained = old
	for len(j.retained) > 0 && live.count(j.retained[0]) == 0 {
		if err := j.removeFile(j.retained[0]); err != nil {
			return fail(err)
		}
		j.retained = j.retained[1:]
	}
	go j.rotator(j.seq + 1)
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

// replayJournal calls apply with the writes of each whole record in data,
// journal file seq's contents; each set's locs say where in the file its
// values are.
func replayJournal(data []byte, seq uint64, apply func([]*setsReq) error) error {
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
		for _, r := range reqs {
			if r.del {
				continue
			}
			r.locs = make([]loc, len(r.vals))
			for i, v := range r.vals {
				// v is a slice of data (decodeJournalRecord): its capacity
				// runs to data's end, so it tells where v starts.
				r.locs[i] = loc{seq: seq, off: int64(cap(data) - cap(v)), n: uint32(len(v))}
			}
		}
		if err := apply(reqs); err != nil {
			return err
		}
		off += journalHeader + n
	}
	return nil
}

// bigPiece is the size from which a value goes into a journal record by
// reference, as a piece of its own in the record's vectored write, instead
// of being copied into the record's buffer: a megabyte value was copied
// into memory cleared for it first (the record's buffer, grown to size),
// a tenth of a node's CPU under 1.5 MB SETs.
const bigPiece = 64 << 10

// journalRecord is a record ready to write: buf holds its bytes except the
// values it refers to (refs, in order), each of which goes between buf's
// bytes before and after its at.
type journalRecord struct {
	buf  []byte
	refs []recordRef
	size int // the whole record's length
}

type recordRef struct {
	at  int // val goes after buf[:at]
	val []byte
}

// build makes rec the record of batch's writes (reusing rec's buffer): the
// header, then the number of writes and, for each, a flag byte (1: its keys
// are deleted), the number of its keys, and each key and, unless deleted,
// its value, each preceded by its length (uvarints). The locs of a set for a
// tail get where each value is, from the record's start. A value given in
// pieces (setsReq.split) is written as their concatenation.
func (rec *journalRecord) build(batch []*setsReq) {
	// Grown once to the record's size: appending values one by one to a
	// buffer that starts small copied each several times over.
	n := journalHeader + binary.MaxVarintLen64
	for _, r := range batch {
		n += 1 + binary.MaxVarintLen64
		for i, k := range r.keys {
			n += binary.MaxVarintLen64 + len(k)
			if !r.del {
				n += binary.MaxVarintLen64
				for _, p := range r.pieces(i) {
					if len(p) < bigPiece {
						n += len(p)
					}
				}
			}
		}
	}
	dst := slices.Grow(rec.buf[:0], n)
	refs := rec.refs[:0]
	refd := 0 // bytes of refs so far
	dst = append(dst, make([]byte, journalHeader)...)
	dst = binary.AppendUvarint(dst, uint64(len(batch)))
	for _, r := range batch {
		flag := byte(0)
		if r.del {
			flag = 1
		}
		dst = append(dst, flag)
		dst = binary.AppendUvarint(dst, uint64(len(r.keys)))
		locs := r.tail != nil && !r.del
		if locs {
			r.locs = make([]loc, len(r.keys))
		}
		for i, k := range r.keys {
			dst = binary.AppendUvarint(dst, uint64(len(k)))
			dst = append(dst, k...)
			if r.del {
				continue
			}
			size := 0
			for _, p := range r.pieces(i) {
				size += len(p)
			}
			dst = binary.AppendUvarint(dst, uint64(size))
			if locs {
				r.locs[i] = loc{off: int64(len(dst) + refd), n: uint32(size)}
			}
			for _, p := range r.pieces(i) {
				if len(p) < bigPiece {
					dst = append(dst, p...)
					continue
				}
				refs = append(refs, recordRef{at: len(dst), val: p})
				refd += len(p)
			}
		}
	}
	crc, from := uint32(0), journalHeader
	for _, ref := range refs {
		crc = crc32.Update(crc, crcTable, dst[from:ref.at])
		crc = crc32.Update(crc, crcTable, ref.val)
		from = ref.at
	}
	crc = crc32.Update(crc, crcTable, dst[from:])
	rec.buf, rec.refs, rec.size = dst, refs, len(dst)+refd
	binary.LittleEndian.PutUint32(dst, uint32(rec.size-journalHeader))
	binary.LittleEndian.PutUint32(dst[4:], crc)
}

// segments returns the record's bytes in the order they are written, none
// empty.
func (rec *journalRecord) segments() [][]byte {
	segs := make([][]byte, 0, 2*len(rec.refs)+1)
	from := 0
	for _, ref := range rec.refs {
		if ref.at > from {
			segs = append(segs, rec.buf[from:ref.at])
		}
		segs = append(segs, ref.val)
		from = ref.at
	}
	if from < len(rec.buf) {
		segs = append(segs, rec.buf[from:])
	}
	return segs
}

// writeAt writes the record to f at off: one pwrite, or one vectored write
// (more where the kernel takes fewer pieces, or fewer bytes, at a time) of
// its buffer's parts and the values it refers to.
func (rec *journalRecord) writeAt(f *os.File, off int64) error {
	if len(rec.refs) == 0 {
		_, err := f.WriteAt(rec.buf, off)
		return err
	}
	segs := rec.segments()
	for len(segs) > 0 {
		n, err := unix.Pwritev(int(f.Fd()), segs[:min(len(segs), maxIOV)], off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrShortWrite
		}
		off += int64(n)
		for n > 0 {
			if n < len(segs[0]) {
				segs[0] = segs[0][n:]
				break
			}
			n -= len(segs[0])
			segs = segs[1:]
		}
	}
	return nil
}

// maxIOV is the most pieces one vectored write takes (Linux's IOV_MAX; a
// variable for tests).
var maxIOV = 1024

var errJournalRecord = errors.New("malformed journal record")

// decodeJournalRecord parses a record's payload into its writes (keys and
// values share p's memory).
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
		r := &setsReq{del: p[0] == 1}
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
// written and fdatasynced; when it does not fit in the current file, in the
// next one (rotate). The locs of its sets for a tail then say where their
// values are. After an error every later call fails with it.
func (j *journal) append(batch []*setsReq) error {
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
	for _, r := range batch {
		for i := range r.locs {
			r.locs[i].seq, r.locs[i].off = j.seq, r.locs[i].off+j.off
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

// rotate switches to the rotator's spare file, grown first when it has no
// room for need bytes, and hands the full one to the rotator. It waits for
// the spare only while the rotator still checkpoints the file before. Called
// with j.mu held.
func (j *journal) rotate(need int64) error {
	j.halfFull() // a record that jumped past half: the rotator waits for it
	select {
	case j.need <- struct{}{}: // stop zeroing the spare: it is needed now
	default:
	}
	var s spareFile
	select {
	case s = <-j.spare:
	case <-j.rotated:
		select {
		case s = <-j.spare: // the failure it stopped on
		default:
			return ErrClosed
		}
	}
	if s.err != nil {
		return s.err
	}
	size := j.fileSize
	if size < need { // a batch larger than a file: a file of its own
		_ = unix.Fallocate(int(s.f.Fd()), 0, 0, need) // without it the file grows (createJournalFile)
		if err := s.f.Sync(); err != nil {
			s.f.Close()
			return fmt.Errorf("journal: sync %s: %w", s.f.Name(), err)
		}
		size = need
	}
	j.full <- struct{}{} // never blocks: one per spare
	j.filesMu.Lock()
	j.files[j.seq+1] = s.f
	j.filesMu.Unlock()
	j.f, j.seq, j.off, j.size = s.f, j.seq+1, 0, size
	j.halfSent = false
	return nil
}

// halfFull tells the rotator, once per file, that the current file is half
// full (or that the writer needs the spare now). Called with j.mu held.
func (j *journal) halfFull() {
	if !j.halfSent {
		j.halfSent = true
		j.half <- struct{}{} // never blocks: once per file, and the rotator takes it before the next
	}
}

// rotator runs from openJournal until stopRotator: it creates file seq, the
// spare; once the writer's file (seq-1) is half full, it writes zeros over
// the spare (zeroFile) and offers it to the writer; once the writer has
// filled the file before it, it removes the full files it can (reclaim) and
// starts over with the next sequence number. A failure goes to the writer in
// place of the next spare, and the rotator returns.
func (j *journal) rotator(seq uint64) {
	defer close(j.rotated)
	var err error
	for {
		s := spareFile{err: err}
		if err == nil {
			s.f, s.err = createJournalFile(j.dir, seq, j.fileSize)
		}
		if s.err == nil {
			select {
			case <-j.half:
			case <-j.stop:
				s.f.Close() // empty: the next open replays nothing from it
				return
			}
			if s.err = zeroFile(s.f, j.fileSize, j.need); s.err != nil {
				s.f.Close()
				s.f = nil
			}
		}
		select {
		case j.spare <- s:
		case <-j.stop:
			if s.f != nil {
				s.f.Close() // empty: the next open replays nothing from it
			}
			return
		}
		if s.err != nil {
			return
		}
		select {
		case <-j.full:
		case <-j.stop:
			return
		}
		select {
		case <-j.need: // sent for the switch just made, after the spare was ready
		default:
		}
		j.retained = append(j.retained, seq-1)
		err = j.reclaim()
		seq++
	}
}

// reclaim removes the oldest full files, in order, as long as no tail holds
// an entry in them; when more than keep full files remain, it first moves the
// oldest one's entries into badger (migrate). Files go oldest first only: a
// record's effect may depend on the records before it (a deletion). On the
// rotator only.
func (j *journal) reclaim() error {
	for len(j.retained) > 0 {
		seq := j.retained[0]
		if j.live.count(seq) > 0 {
			if len(j.retained) <= j.keep {
				return nil
			}
			if err := j.moveOut(seq); err != nil {
				return fmt.Errorf("journal: move the entries of %s: %w", journalName(seq), err)
			}
		}
		if err := j.checkpoint(seq); err != nil {
			return err
		}
		j.retained = j.retained[1:]
	}
	return nil
}

// moveOut moves every entry the tails hold in full file seq into badger
// (migrate, a chunk at a time). Badger first takes what was queued before
// the file filled (quiesce), such as the deletion of an older copy of an
// entry stored again in it (tail.journaled), which must not come after the
// move of the entry. On the rotator only.
func (j *journal) moveOut(seq uint64) error {
	if j.quiesce != nil {
		if err := j.quiesce(); err != nil {
			return err
		}
	}
	for j.live.count(seq) > 0 {
		n, err := j.migrate(seq)
		if err != nil {
			return err
		}
		if n == 0 && j.live.count(seq) > 0 { // a deletion may have taken the last ones meanwhile
			return fmt.Errorf("%w: it counts %d live entries, the tails hold none", ErrCorrupt, j.live.count(seq))
		}
	}
	return nil
}

// checkpoint waits until badger holds the records of the full file seq
// (quiesce), makes badger's files durable, and closes and removes the file.
// On the rotator only.
func (j *journal) checkpoint(seq uint64) error {
	if j.quiesce != nil {
		if err := j.quiesce(); err != nil {
			return fmt.Errorf("journal: checkpoint: %w", err)
		}
	}
	if err := syncFiles(j.dbDir); err != nil {
		return fmt.Errorf("journal: checkpoint: %w", err)
	}
	return j.removeFile(seq)
}

// removeFile closes and removes journal file seq, once its entries are
// elsewhere or gone, after any read of it in progress (readTail).
func (j *journal) removeFile(seq uint64) error {
	j.filesMu.Lock()
	f := j.files[seq]
	delete(j.files, seq)
	j.filesMu.Unlock()
	if f != nil {
		f.Close()
	}
	return j.remove([]uint64{seq})
}

// readTail reads the encoded value of entry index if the tail t holds it.
// A file goes only once its entries left the tails: when the entry's file is
// gone by the time it is read, the entry has moved, and the tail no longer
// holds it.
func (j *journal) readTail(t *tail, index uint64) ([]byte, bool, error) {
	var gone loc
	for {
		l, ok := t.get(index)
		if !ok {
			return nil, false, nil
		}
		j.filesMu.RLock()
		if j.files[l.seq] == nil && l != gone { // else readLocked reports it
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
func (j *journal) read(l loc) ([]byte, error) {
	j.filesMu.RLock()
	defer j.filesMu.RUnlock()
	return j.readLocked(l)
}

func (j *journal) readLocked(l loc) ([]byte, error) {
	f := j.files[l.seq]
	if f == nil {
		return nil, fmt.Errorf("journal: %w: %s is gone, an entry in it is not", ErrCorrupt, journalName(l.seq))
	}
	buf := make([]byte, l.n)
	if _, err := f.ReadAt(buf, l.off); err != nil {
		return nil, fmt.Errorf("journal: read %s: %w", journalName(l.seq), err)
	}
	return buf, nil
}

// stopRotator stops the rotator and waits for it to return (a checkpoint
// under way completes first); a spare nobody took is closed. Later calls
// return at once.
func (j *journal) stopRotator() {
	if j == nil {
		return
	}
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

// journalFirstFile is the most an open's first journal file holds: it is
// fallocated, not zeroed (zeroFile), so a busy node leaves it soon for the
// rotator's zeroed spares.
const journalFirstFile = 1 << 20

// zeroChunk is how much of a spare zeroFile writes before each fdatasync: a
// burst small enough not to hold up the writer's flushes behind it, and the
// longest a writer that needs the spare waits for it.
const zeroChunk = 256 << 10

// zeroFile writes zeros over f's first size bytes and makes them durable. A
// record written into blocks that were allocated but never written
// (fallocate's) makes its fdatasync also record that they now hold data, an
// extra synchronous metadata write on ext4: on the development VM a 4 KB
// record's write and fdatasync took 93-123 µs in a zeroed file against
// 187-193 in a fallocated one (2 KB: 109-134 against 137-145; 600 bytes
// alike), and a single node under 64 clients made a median 1.09x the lock
// cycles per second (raftstore/logstore/DESIGN.md). The rotator zeroes each spare,
// once the writer's file is half full (so a journal that never fills a
// file, most of the tests', writes no zeros), before the writer gets it;
// the file an open starts with is only fallocated, so as not to delay the
// open by the write, and small (journalFirstFile).
//
// It stops early, with the rest of f only fallocated, when need says the
// writer needs f now: a busy writer fills the second half of its first file
// (journalFirstFile) in about a tenth of a second, and must not wait for a
// whole spare's zeros.
func zeroFile(f *os.File, size int64, need <-chan struct{}) error {
	z := make([]byte, min(zeroChunk, size))
	for off := int64(0); off < size; off += int64(len(z)) {
		select {
		case <-need:
			return nil
		default:
		}
		n := min(int64(len(z)), size-off)
		if _, err := f.WriteAt(z[:n], off); err != nil {
			return fmt.Errorf("journal: zero %s: %w", f.Name(), err)
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return fmt.Errorf("journal: zero %s: %w", f.Name(), err)
		}
	}
	return nil
}

// createJournalFile creates journal file seq in dir, preallocated with size
// bytes, and makes its name durable.
func createJournalFile(dir string, seq uint64, size int64) (*os.File, error) {
	name := filepath.Join(dir, journalName(seq))
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
	return durable.SyncDir(j.dir)
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

// close stops the rotator and closes the journal's files; the records in
// them stay for the next open.
func (j *journal) close() error {
	if j == nil {
		return nil
	}
	j.stopRotator()
	j.f = nil
	return j.closeFiles()
}

// closeFiles closes every journal file still open.
func (j *journal) closeFiles() error {
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

// syncFiles fsyncs every regular file in dir but the entry files (each
// synced when written: entryfiles.go), then dir itself. A file that
// disappears meanwhile is skipped.
func syncFiles(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), entryFilePrefix) {
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
	return durable.SyncDir(dir)
}
