package journal

import (
	"maps"
	"math"
	"slices"
	"sort"
	"sync"
)

// The log's tail lives in the journal.
//
// Every log entry is in a journal record, fdatasynced, before its write is
// answered, and most entries never need to be anywhere else: Raft deletes
// them, after a snapshot, within seconds. So a log entry stays where the
// journal put it, and its log keeps, per entry, where its encoded value lies
// in which journal file (a Tail). A journal file that is full is kept while
// entries in it are still in a log (KeepFiles of them at most); when its last
// entry has gone (Raft compacted the log) it is removed like any checkpointed
// file, and when the journal holds more full files than that, the oldest
// one's remaining entries are moved into the store behind the journal first
// (Config.Move: a quiet log's entries, which no snapshot removes).
//
// An entry is in the tail or in the store behind, never in neither for a
// reader: a move puts it there before it leaves the tail (readers that miss
// it in the tail look there after). Deleting an entry removes it from where
// it is. A replay rebuilds the tails from the journal files, in order; what
// a deletion finds in no tail is for the store behind (Tail.Journaled).

// Loc is where a log entry's encoded value lies: N bytes at Off in journal
// file Seq.
type Loc struct {
	Seq uint64
	Off int64
	N   uint32
}

// segment holds the locations of the entries base, base+1, … (a run of
// consecutive indexes).
type segment struct {
	base uint64
	locs []Loc
}

// last is the segment's last index (a segment is never empty; one past it
// would not fit in a uint64 when it is the highest index there is).
func (g *segment) last() uint64 { return g.base + uint64(len(g.locs)) - 1 }

// Tail is the part of one log that lives only in journal files: the location
// of each of those entries, in runs of consecutive indexes (a follower's log
// may have gaps: after a snapshot it got from its leader, hashicorp/raft
// keeps the entries before it). Tails.Of makes one.
//
// Its log's writes change it one at a time (Journaled: by the log's single
// writer, or the replay before it starts), and the journal's moves take
// entries out of it (Journal.Move); both hold mu, and so do the file counts'
// changes. Reads (Get, Seek, Entries) may come from any goroutine.
type Tail struct {
	mu    sync.RWMutex
	segs  []segment // ascending, disjoint, never adjacent, never empty
	live  *liveFiles
	id    int                     // its id in its Tails
	index func(key []byte) uint64 // a log key's index (Tails')
	// moved is the highest index the store behind may hold an entry of
	// (moved there, or there when the log opened): an entry stored again at
	// or below it has the store behind's copy deleted (Journaled).
	moved uint64
}

func newTail(live *liveFiles) *Tail { return &Tail{live: live} }

// find returns the position of the first segment that ends at or after
// index. t.mu must be held.
func (t *Tail) find(index uint64) int {
	if n := len(t.segs); n > 0 && t.segs[n-1].base <= index { // the usual case: the newest run
		if index <= t.segs[n-1].last() {
			return n - 1
		}
		return n
	}
	return sort.Search(len(t.segs), func(i int) bool { return t.segs[i].last() >= index })
}

// Get returns where entry index is, if the tail holds it.
func (t *Tail) Get(index uint64) (Loc, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	i := t.find(index)
	if i < len(t.segs) && t.segs[i].base <= index {
		return t.segs[i].locs[index-t.segs[i].base], true
	}
	return Loc{}, false
}

// put records that entry index is at l, replacing what the tail had for it.
// t.mu must be held.
func (t *Tail) put(index uint64, l Loc, d *liveDelta) {
	d.add(l.Seq, 1)
	i := t.find(index)
	if i < len(t.segs) && t.segs[i].base <= index { // stored again
		old := &t.segs[i].locs[index-t.segs[i].base]
		d.add(old.Seq, -1)
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
		t.segs = slices.Insert(t.segs, i, segment{base: index, locs: []Loc{l}})
	}
}

// remove drops entry index from the tail and reports whether it was there.
// t.mu must be held.
func (t *Tail) remove(index uint64, d *liveDelta) bool {
	i := t.find(index)
	if i >= len(t.segs) || index < t.segs[i].base {
		return false
	}
	g := &t.segs[i]
	k := int(index - g.base)
	d.add(g.locs[k].Seq, -1)
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

// Seek returns the first index the tail holds at or after from (reverse
// false) or at or before it (reverse true).
func (t *Tail) Seek(from uint64, reverse bool) (uint64, bool) {
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

// Entries returns up to limit of the tail's entries in [from, to], in index
// order, with where they are; with seq not zero only those in journal file
// seq. A limit of 0 means no limit.
func (t *Tail) Entries(from, to, seq uint64, limit int) (idx []uint64, locs []Loc) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.entriesLocked(from, to, seq, limit)
}

func (t *Tail) entriesLocked(from, to, seq uint64, limit int) (idx []uint64, locs []Loc) {
	for _, g := range t.segs[t.find(from):] {
		if g.base > to {
			break
		}
		for k, l := range g.locs {
			index := g.base + uint64(k)
			if index > to {
				break
			}
			if index < from || (seq != 0 && l.Seq != seq) {
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

// Journaled applies w, a write of this tail's log whose record is durable
// (Journal.Append set its Locs, or a replay did), to the tail, and leaves in
// w what the store behind the journal must do: the entries w sets are now
// where w.Locs says (and the store behind gets none of them: w becomes the
// deletion of any older copy it may hold, up to Moved; usually none), the
// entries w deletes leave the tail (w.Keys keeps those that are not in it,
// for the store behind). The log's writer calls it before the store behind
// sees w.
func (t *Tail) Journaled(w *Write) {
	var d liveDelta
	t.mu.Lock()
	if w.Del {
		kept := w.Keys[:0:0]
		for _, k := range w.Keys {
			if !t.remove(t.index(k), &d) {
				kept = append(kept, k)
			}
		}
		w.Keys = kept
	} else {
		var stale [][]byte // hashicorp/raft deletes before it stores again; the contract does not ask it to
		for i, k := range w.Keys {
			index := t.index(k)
			t.put(index, w.Locs[i], &d)
			if index <= t.moved {
				stale = append(stale, k)
			}
		}
		w.Keys, w.Vals, w.Split, w.Del = stale, nil, nil, len(stale) > 0
	}
	d.flush(t.live) // with t.mu held: a move finds in the tail what the counts say
	t.mu.Unlock()
}

// RaiseMoved tells the tail that the store behind the journal may hold
// entries up to index (the highest it holds when the log opens): an entry
// stored again at or below it has that copy deleted (Journaled).
func (t *Tail) RaiseMoved(index uint64) {
	t.mu.Lock()
	t.moved = max(t.moved, index)
	t.mu.Unlock()
}

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

// Tails is the tails of the logs whose entries one journal holds, each under
// an id its owner chooses (logstore: the Raft group), and how many entries
// of each journal file they hold. Make one with NewTails before the journal
// opens (its replay fills them) and give it to Open. Safe for concurrent use.
type Tails struct {
	mu    sync.Mutex
	live  *liveFiles
	tails map[int]*Tail
	index func(key []byte) uint64
}

// NewTails makes an empty Tails; index returns the log index a log key
// names (the keys of every Write for a tail are log keys).
func NewTails(index func(key []byte) uint64) *Tails {
	return &Tails{live: newLiveFiles(), tails: make(map[int]*Tail), index: index}
}

// Of returns the tail of log id, made empty if it has none yet.
func (ts *Tails) Of(id int) *Tail {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.tails[id]
	if t == nil {
		t = newTail(ts.live)
		t.id, t.index = id, ts.index
		ts.tails[id] = t
	}
	return t
}

// All returns every log's tail, by id.
func (ts *Tails) All() map[int]*Tail {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return maps.Clone(ts.tails)
}

// Live returns how many entries of journal file seq the tails hold.
func (ts *Tails) Live(seq uint64) int64 { return ts.live.count(seq) }

// moveChunk is the most log entries one step of a move (Journal.migrate,
// MoveAll) takes from a file into the store behind, so that the writes of
// the logs whose entries move wait for one chunk at most.
const moveChunk = 1024

// Move moves up to limit (0: no limit) of t's entries in journal file seq
// (0: in any) into the store behind the journal (Config.Move), and returns
// how many it moved. It holds t's lock throughout: a write of the log that
// changes the tail (Journaled) comes before it or after it, so a deletion
// finds an entry in one place, and the store behind gets its deletion after
// the move's write. Readers wait meanwhile (they find the entries in the
// store behind after it).
func (j *Journal) Move(t *Tail, seq uint64, limit int) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	idx, locs := t.entriesLocked(0, math.MaxUint64, seq, limit)
	if len(idx) == 0 {
		return 0, nil
	}
	vals := make([][]byte, len(idx))
	for k := range idx {
		v, err := j.read(locs[k])
		if err != nil {
			return 0, err
		}
		vals[k] = v
	}
	if err := j.cfg.Move(t.id, idx, vals); err != nil {
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

// migrate moves up to moveChunk entries of journal file seq, of any of the
// tails, into the store behind. The rotator's.
func (j *Journal) migrate(seq uint64) (int, error) {
	moved := 0
	for _, t := range j.tails.All() {
		n, err := j.Move(t, seq, moveChunk-moved)
		if moved += n; err != nil || moved == moveChunk {
			return moved, err
		}
	}
	return moved, nil
}

// MoveAll moves every entry of every tail into the store behind, in chunks:
// at a clean stop, once nothing else writes and the rotator is stopped
// (Stop), so that the journal can go (Retire).
func (j *Journal) MoveAll() error {
	for _, t := range j.tails.All() {
		for {
			n, err := j.Move(t, 0, moveChunk)
			if err != nil {
				return err
			}
			if n == 0 {
				break
			}
		}
	}
	return nil
}
