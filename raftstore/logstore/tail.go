package logstore

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/dgraph-io/badger/v4"
)

// The log's tail lives in the journal.
//
// Every log entry a Store on disk writes is in a journal record, fdatasynced,
// before the write is answered; writing it into badger as well cost a node a
// tenth to a sixth of its CPU (issue 9: the memtable's skiplist, badger's own
// write-ahead log, the flushes and compactions), although most entries never
// need it: Raft deletes them, after a snapshot, within seconds. So a log entry
// stays where the journal put it, and the Store keeps, per entry, where its
// encoded value lies in which journal file (a tail). A journal file that is
// full is kept while entries in it are still in the log (journalKeepFiles of
// them at most); when its last entry has gone (Raft compacted the log) it is
// removed like a checkpointed file, and when the journal holds more full
// files than that, the oldest one's remaining entries are moved into badger
// first (a quiet group's entries, which no snapshot removes). Badger so holds
// the stable store, the entries that outlived their file, and the deletions
// of those.
//
// An entry is in the tail or in badger, never both for a reader: a move adds
// it to badger before it leaves the tail, the readers waiting for the
// Shared's applier (badgerLag) when they miss it in the tail. Deleting an entry removes it from where it is. A replay rebuilds the
// tails from the journal files, in order, and deletes what the records delete
// from badger as well (a crash between a move and its file's removal leaves
// an entry in both, which the replay then removes from badger: dedupeTails).

// loc is where a log entry's encoded value lies: n bytes at off in journal
// file seq.
type loc struct {
	seq uint64
	off int64
	n   uint32
}

// segment holds the locations of the entries base, base+1, … (a run of
// consecutive indexes).
type segment struct {
	base uint64
	locs []loc
}

// last is the segment's last index (a segment is never empty; one past it
// would not fit in a uint64 when it is the highest index there is).
func (g *segment) last() uint64 { return g.base + uint64(len(g.locs)) - 1 }

// tail is the part of one Store's log that lives only in journal files: the
// location of each of those entries, in runs of consecutive indexes (a
// follower's log may have gaps: after a snapshot it got from its leader,
// hashicorp/raft keeps the entries before it).
//
// Its Store's writes change it one at a time (the Shared's committer, or the
// replay before it starts, or an inline write in the committer's turn), and
// the rotator's moves take entries out of it (move); both hold mu, and so
// do the file counts' changes. Reads (get, seek, entries) may come from any
// goroutine.
type tail struct {
	mu   sync.RWMutex
	segs []segment // ascending, disjoint, never adjacent, never empty
	live *liveFiles
	// moved is the highest index badger may hold an entry of (moved there,
	// or there when the store opened): an entry stored again at or below it
	// has its badger copy deleted (journaled).
	moved uint64
}

func newTail(live *liveFiles) *tail { return &tail{live: live} }

// find returns the position of the first segment that ends at or after
// index. t.mu must be held.
func (t *tail) find(index uint64) int {
	if n := len(t.segs); n > 0 && t.segs[n-1].base <= index { // the usual case: the newest run
		if index <= t.segs[n-1].last() {
			return n - 1
		}
		return n
	}
	return sort.Search(len(t.segs), func(i int) bool { return t.segs[i].last() >= index })
}

// get returns where entry index is, if the tail holds it.
func (t *tail) get(index uint64) (loc, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.getLocked(index)
}

func (t *tail) getLocked(index uint64) (loc, bool) {
	i := t.find(index)
	if i < len(t.segs) && t.segs[i].base <= index {
		return t.segs[i].locs[index-t.segs[i].base], true
	}
	return loc{}, false
}

// put records that entry index is at l, replacing what the tail had for it.
func (t *tail) put(index uint64, l loc, d *liveDelta) {
	d.add(l.seq, 1)
	i := t.find(index)
	if i < len(t.segs) && t.segs[i].base <= index { // stored again
		old := &t.segs[i].locs[index-t.segs[i].base]
		d.add(old.seq, -1)
		*old = l
		return
	}
	// index is in no segment: those before i end below it (so their last+1
	// does not overflow), those from i on start above it.
	switch {
	case i > 0 && t.segs[i-1].last()+1 == index:
		t.segs[i-1].locs = append(t.segs[i-1].locs, l)
		if i < len(t.segs) && t.segs[i].base == index+1 { // it bridges two runs
			t.segs[i-1].locs = append(t.segs[i-1].locs, t.segs[i].locs...)
			t.segs = slices.Delete(t.segs, i, i+1)
		}
	case i < len(t.segs) && t.segs[i].base == index+1:
		t.segs[i].locs = slices.Insert(t.segs[i].locs, 0, l)
		t.segs[i].base = index
	default:
		t.segs = slices.Insert(t.segs, i, segment{base: index, locs: []loc{l}})
	}
}

// remove drops entry index from the tail and reports whether it was there.
func (t *tail) remove(index uint64, d *liveDelta) bool {
	i := t.find(index)
	if i >= len(t.segs) || index < t.segs[i].base {
		return false
	}
	g := &t.segs[i]
	k := int(index - g.base)
	d.add(g.locs[k].seq, -1)
	switch {
	case len(g.locs) == 1:
		t.segs = slices.Delete(t.segs, i, i+1)
	case k == 0:
		g.locs, g.base = g.locs[1:], g.base+1
	case k == len(g.locs)-1:
		g.locs = g.locs[:k]
	default: // split; the left part must not append over the right one
		right := segment{base: index + 1, locs: g.locs[k+1:]}
		g.locs = g.locs[:k:k]
		t.segs = slices.Insert(t.segs, i+1, right)
	}
	return true
}

// seek returns the first index the tail holds at or after from (reverse
// false) or at or before it (reverse true).
func (t *tail) seek(from uint64, reverse bool) (uint64, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	i := t.find(from)
	if !reverse {
		if i == len(t.segs) {
			return 0, false
		}
		return max(from, t.segs[i].base), true
	}
	if i < len(t.segs) && t.segs[i].base <= from {
		return from, true
	}
	if i == 0 {
		return 0, false
	}
	return t.segs[i-1].last(), true
}

// entries returns up to limit of the tail's entries in [from, to], in index
// order, with where they are; with seq not zero only those in journal file
// seq. A limit of 0 means no limit.
func (t *tail) entries(from, to, seq uint64, limit int) (idx []uint64, locs []loc) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.entriesLocked(from, to, seq, limit)
}

func (t *tail) entriesLocked(from, to, seq uint64, limit int) (idx []uint64, locs []loc) {
	for _, g := range t.segs[t.find(from):] {
		if g.base > to {
			break
		}
		for k, l := range g.locs {
			index := g.base + uint64(k)
			if index > to {
				break
			}
			if index < from || (seq != 0 && l.seq != seq) {
				continue
			}
			idx, locs = append(idx, index), append(locs, l)
			if limit > 0 && len(idx) == limit {
				return idx, locs
			}
		}
	}
	return idx, locs
}

// journaled applies r, a write of this tail's Store whose journal record is
// durable, to the tail: the entries it sets are now where r.locs says (and
// badger gets none of them: r becomes the deletion of any older copy badger
// may hold, usually none), the entries it deletes leave the tail (r.keys
// keeps those that are not in it, for badger). The writer (the committer or
// an inline write in its turn; the replay, for the writes it finds) calls it
// before badger sees r.
func (t *tail) journaled(r *setsReq) {
	var d liveDelta
	t.mu.Lock()
	if r.del {
		kept := r.keys[:0:0]
		for _, k := range r.keys {
			if !t.remove(keyIndex(k), &d) {
				kept = append(kept, k)
			}
		}
		r.keys = kept
	} else {
		var stale [][]byte // hashicorp/raft deletes before it stores again; the contract does not ask it to
		for i, k := range r.keys {
			index := keyIndex(k)
			t.put(index, r.locs[i], &d)
			if index <= t.moved {
				stale = append(stale, k)
			}
		}
		r.keys, r.vals, r.split, r.del = stale, nil, nil, len(stale) > 0
	}
	d.flush(t.live) // with t.mu held: a move finds in the tail what the counts say
	t.mu.Unlock()
}

// keyIndex is the index of a log key (any prefix: the index is its last
// eight bytes).
func keyIndex(key []byte) uint64 { return binary.BigEndian.Uint64(key[len(key)-8:]) }

// liveFiles counts, per journal file, the log entries in it that are still
// in a tail: a full file with none left holds nothing a reader needs. Safe
// for concurrent use.
type liveFiles struct {
	mu sync.Mutex
	n  map[uint64]int64
}

func newLiveFiles() *liveFiles { return &liveFiles{n: make(map[uint64]int64)} }

// count returns how many entries in journal file seq are in a tail.
func (lf *liveFiles) count(seq uint64) int64 {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	return lf.n[seq]
}

// liveDelta gathers changes to liveFiles' counts (mostly of one file) for
// one flush.
type liveDelta struct {
	seqs  []uint64
	delta []int64
}

func (d *liveDelta) add(seq uint64, n int64) {
	if k := len(d.seqs) - 1; k >= 0 && d.seqs[k] == seq {
		d.delta[k] += n
		return
	}
	d.seqs, d.delta = append(d.seqs, seq), append(d.delta, n)
}

func (d *liveDelta) flush(lf *liveFiles) {
	if len(d.seqs) == 0 {
		return
	}
	lf.mu.Lock()
	for k, seq := range d.seqs {
		if lf.n[seq] += d.delta[k]; lf.n[seq] == 0 {
			delete(lf.n, seq)
		}
	}
	lf.mu.Unlock()
	d.seqs, d.delta = d.seqs[:0], d.delta[:0]
}

// tailSet is the tails of the Stores whose writes one journal holds, by
// group (-1: the Store of Open). Safe for concurrent use.
type tailSet struct {
	mu    sync.Mutex
	live  *liveFiles
	tails map[int]*tail
}

func newTailSet() *tailSet { return &tailSet{live: newLiveFiles(), tails: make(map[int]*tail)} }

// of returns group g's tail, made empty if it has none yet.
func (ts *tailSet) of(g int) *tail {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.tails[g]
	if t == nil {
		t = newTail(ts.live)
		ts.tails[g] = t
	}
	return t
}

// all returns every group's tail.
func (ts *tailSet) all() map[int]*tail {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return maps.Clone(ts.tails)
}

// prefixOf is the key prefix of group g's keys (-1: the Store of Open, whose
// keys are unprefixed).
func prefixOf(g int) keyPrefix {
	if g < 0 {
		return nil
	}
	return groupPrefix(g)
}

// logKeyGroup tells whether key is a log key, and whose (-1: a Store of its
// own's).
func logKeyGroup(key []byte) (int, bool) {
	switch {
	case len(key) == logKeyLen && key[0] == prefixLog:
		return -1, true
	case len(key) == 2+logKeyLen && key[0] == 'g' && key[2] == prefixLog:
		return int(key[1]), true
	}
	return 0, false
}

// replayInto returns the journal replay's apply for the Stores of ts, whose
// DB is db: each write goes where it went when it was made (a log write
// through its tail: journaled), in order, except that a deletion of log
// entries also deletes them from badger, where a move may have put them
// before a crash.
func (ts *tailSet) replayInto(db *badger.DB, replayed *int) func([]*setsReq) error {
	return func(reqs []*setsReq) error {
		var toDB []*setsReq
		for _, r := range reqs {
			*replayed += len(r.keys)
			g, log, err := writeGroup(r)
			if err != nil {
				return err
			}
			if log {
				del, all := r.del, r.keys
				ts.of(g).journaled(r)
				if del {
					r.keys = all
				}
			}
			if len(r.keys) > 0 {
				toDB = append(toDB, r)
			}
		}
		_, err := writeBatch(db, toDB)
		return err
	}
}

// writeGroup tells whether r, a replayed write, is one of log keys, and
// whose: a Store's write is of one kind and one Store (StoreLogs,
// DeleteRange, Set).
func writeGroup(r *setsReq) (g int, log bool, err error) {
	for i, k := range r.keys {
		kg, kl := logKeyGroup(k)
		if i == 0 {
			g, log = kg, kl
		} else if kl != log || kg != g {
			return 0, false, fmt.Errorf("%w: a journal record's write mixes log keys of group %d and key %x", ErrCorrupt, g, k)
		}
	}
	return g, log, nil
}

// dedupe deletes from db the log entries that a tail holds too: a crash
// between a move into badger and the removal of the entries' journal file
// leaves them in both, and a later deletion would find only the tail's copy.
// Called after the replay, before the Stores open.
func (ts *tailSet) dedupe(db *badger.DB) error {
	var dup [][]byte
	for g, t := range ts.all() {
		first, ok := t.seek(0, false)
		if !ok {
			continue
		}
		kp := prefixOf(g)
		err := db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: kp.logs()})
			defer it.Close()
			for it.Seek(kp.log(first)); it.Valid(); it.Next() {
				if idx, ok := kp.parseLog(it.Item().Key()); ok {
					if _, in := t.get(idx); in {
						dup = append(dup, it.Item().KeyCopy(nil))
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if len(dup) == 0 {
		return nil
	}
	_, err := writeBatch(db, []*setsReq{{keys: dup, del: true}})
	return err
}

// move moves up to limit of the tail's entries in journal file seq (with
// seq 0: any) into db under prefix kp, and returns how many it moved. It
// holds t.mu throughout: a write of the Store that changes the tail
// (journaled) comes before it or after it, so a deletion finds an entry in
// one place, and its badger deletion comes after the move's badger write.
// Readers wait meanwhile (they find the entries in badger after it).
func (t *tail) move(db *badger.DB, j *journal, kp keyPrefix, seq uint64, limit int) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	idx, locs := t.entriesLocked(0, math.MaxUint64, seq, limit)
	if len(idx) == 0 {
		return 0, nil
	}
	w := &setsReq{keys: make([][]byte, len(idx)), vals: make([][]byte, len(idx))}
	for k, index := range idx {
		v, err := j.read(locs[k])
		if err != nil {
			return 0, err
		}
		w.keys[k], w.vals[k] = kp.log(index), v
	}
	if _, err := writeBatch(db, []*setsReq{w}); err != nil {
		return 0, err
	}
	var d liveDelta
	for _, index := range idx {
		t.remove(index, &d)
	}
	d.flush(t.live)
	t.moved = max(t.moved, idx[len(idx)-1])
	return len(idx), nil
}

// moveAll moves every entry of the tail into db, in chunks: at a clean
// close, once nothing else writes, so that the journal can go.
func (t *tail) moveAll(db *badger.DB, j *journal, kp keyPrefix) error {
	for {
		n, err := t.move(db, j, kp, 0, moveChunk)
		if err != nil || n == 0 {
			return err
		}
	}
}

// move is the journal's migrate: it moves up to moveChunk entries of journal
// file seq, of any of ts's tails, into db.
func (ts *tailSet) move(db *badger.DB, j *journal, seq uint64) (int, error) {
	moved := 0
	for g, t := range ts.all() {
		n, err := t.move(db, j, prefixOf(g), seq, moveChunk-moved)
		if moved += n; err != nil || moved == moveChunk {
			return moved, err
		}
	}
	return moved, nil
}

// moveAll is tail.moveAll for each of ts's tails.
func (ts *tailSet) moveAll(db *badger.DB, j *journal) error {
	for g, t := range ts.all() {
		if err := t.moveAll(db, j, prefixOf(g)); err != nil {
			return err
		}
	}
	return nil
}
