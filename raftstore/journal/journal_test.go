package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

func must(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// logKey is the key of log entry index in these tests: 'l' and the index,
// big-endian (testIndex reads it back).
func logKey(index uint64) []byte { return binary.BigEndian.AppendUint64([]byte{'l'}, index) }

func testIndex(key []byte) uint64 { return binary.BigEndian.Uint64(key[1:]) }

func entryValue(index uint64) []byte { return fmt.Appendf(nil, "entry-%d", index) }

// behind is a store behind the journal, in memory: what the journal's
// callbacks give it (a replay's writes but the log entries, which go to
// their tail, and the moves) and what a writer hands it after Append
// (handOver). Safe for concurrent use.
type behind struct {
	mu    sync.Mutex
	ts    *Tails
	kv    map[string][]byte // the stable values, and the entries moved here
	syncs int
}

func newBehind() *behind { return &behind{ts: NewTails(testIndex), kv: make(map[string][]byte)} }

// config is the journal's Config for b, with files of size bytes and keep
// full files kept.
func (b *behind) config(size int64, keep int) Config {
	return Config{FileSize: size, KeepFiles: keep, Tails: b.ts,
		Replay: func(ws []*Write) error {
			for _, w := range ws {
				if len(w.Keys) > 0 && w.Keys[0][0] == 'l' {
					del, all := w.Del, w.Keys
					b.ts.Of(0).Journaled(w)
					if del {
						w.Keys = all // a deletion also deletes what a move put here
					}
				}
			}
			b.handOver(ws)
			return nil
		},
		Sync: func() error {
			b.mu.Lock()
			b.syncs++
			b.mu.Unlock()
			return nil
		},
		Move: func(id int, idx []uint64, vals [][]byte) error {
			if id != 0 {
				return fmt.Errorf("move of log %d, want 0", id)
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			for k, index := range idx {
				b.kv[string(logKey(index))] = vals[k]
			}
			return nil
		},
	}
}

// handOver applies ws, whose records are durable, to the map.
func (b *behind) handOver(ws []*Write) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, w := range ws {
		for i, k := range w.Keys {
			if w.Del {
				delete(b.kv, string(k))
			} else {
				b.kv[string(k)] = w.Value(i)
			}
		}
	}
}

// append appends ws as one record and hands the rest of them over, as a
// writer does: a log write through its tail first.
func (b *behind) append(t *testing.T, j *Journal, ws ...*Write) {
	t.Helper()
	must(t, j.Append(ws), "Append")
	for _, w := range ws {
		if w.Tail != nil {
			w.Tail.Journaled(w)
		}
	}
	b.handOver(ws)
}

// logWrite is the write of entries from..to into log 0's tail.
func (b *behind) logWrite(from, to uint64) *Write {
	w := &Write{Tail: b.ts.Of(0)}
	for i := from; i <= to; i++ {
		w.Keys, w.Vals = append(w.Keys, logKey(i)), append(w.Vals, entryValue(i))
	}
	return w
}

// read returns entry index from the tail or, if the tail lacks it, from
// the map.
func (b *behind) read(t *testing.T, j *Journal, index uint64) ([]byte, bool) {
	t.Helper()
	v, ok, err := j.Read(b.ts.Of(0), index)
	must(t, err, "Read")
	if ok {
		return v, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok = b.kv[string(logKey(index))]
	return v, ok
}

// assertEntries checks that entries lo..hi read back, and no other in
// [lo-10, hi+10].
func (b *behind) assertEntries(t *testing.T, j *Journal, lo, hi uint64) {
	t.Helper()
	for i := max(lo, 11) - 10; i <= hi+10; i++ {
		v, ok := b.read(t, j, i)
		switch {
		case i >= lo && i <= hi && (!ok || !bytes.Equal(v, entryValue(i))):
			t.Fatalf("entry %d = %q, %v; want %q", i, v, ok, entryValue(i))
		case (i < lo || i > hi) && ok:
			t.Fatalf("entry %d = %q, want none", i, v)
		}
	}
}

// A journal's records replay, after a reopen, as they were appended: log
// entries into their tail, read back from the files, the other writes (a
// deletion of entries too) in order.
func TestReopenReplaysRecords(t *testing.T) {
	dir, b, j := openDefault(t)
	b.append(t, j, b.logWrite(1, 20), &Write{Keys: [][]byte{[]byte("s-term")}, Vals: [][]byte{[]byte("3")}})
	b.append(t, j, &Write{Keys: [][]byte{logKey(1), logKey(2)}, Del: true, Tail: b.ts.Of(0)})
	b.append(t, j, &Write{Keys: [][]byte{[]byte("s-term")}, Vals: [][]byte{[]byte("4")}}, b.logWrite(21, 25))
	b.assertEntries(t, j, 3, 25)
	must(t, j.Close(), "Close")

	again := newBehind()
	j, err := Open(dir, again.config(DefaultFileSize, DefaultKeepFiles))
	must(t, err, "reopen")
	defer j.Close()
	again.assertEntries(t, j, 3, 25)
	if v := again.kv["s-term"]; string(v) != "4" {
		t.Fatalf("s-term = %q after the replay, want 4", v)
	}
	if again.syncs != 1 {
		t.Fatalf("the open synced the store behind %d times, want once (a checkpoint after the replay)", again.syncs)
	}
}

// A crash can cut the last record anywhere, leaving zeros (the file's
// preallocated blocks) or other bytes after the cut: the open replays
// exactly the whole records before it, never fails, and the journal goes on
// after them.
func TestTornRecordEndsReplay(t *testing.T) {
	dir, b, j := openDefault(t)
	b.append(t, j, b.logWrite(1, 3))
	b.append(t, j, &Write{Keys: [][]byte{[]byte("s-vote")}, Vals: [][]byte{[]byte("n2")}})
	b.append(t, j, b.logWrite(4, 5), &Write{Keys: [][]byte{logKey(1)}, Del: true, Tail: b.ts.Of(0)})
	seq := j.Current()
	must(t, j.Close(), "Close")
	data, err := os.ReadFile(filepath.Join(dir, FileName(seq)))
	must(t, err, "read the journal")
	// ends[k] is where record k ends.
	var ends []int
	for off := 0; binary.LittleEndian.Uint32(data[off:]) != 0; {
		off += recordHeader + int(binary.LittleEndian.Uint32(data[off:]))
		ends = append(ends, off)
	}
	if len(ends) != 3 {
		t.Fatalf("the journal holds %d records, want 3", len(ends))
	}
	// The state after each whole record: its entries (lo..hi) and vote.
	type state struct {
		lo, hi uint64
		vote   string
	}
	after := []state{{0, 0, ""}, {1, 3, ""}, {1, 3, "n2"}, {2, 5, "n2"}}

	for _, fill := range []byte{0, 0xA5} {
		for cut := 0; cut < ends[2]; cut++ {
			t.Run(fmt.Sprintf("fill%x-cut%d", fill, cut), func(t *testing.T) {
				crashed := t.TempDir()
				// The records, then zeros (the file's preallocated blocks);
				// from cut on, the bytes the crash kept from being written.
				torn := bytes.Clone(data[:ends[2]+recordHeader])
				for i := cut; i < ends[2]; i++ {
					torn[i] = fill
				}
				must(t, os.WriteFile(filepath.Join(crashed, FileName(seq)), torn, 0o600), "write")
				whole := 0 // records before the cut
				for whole < len(ends) && ends[whole] <= cut {
					whole++
				}
				want := after[whole]
				got := newBehind()
				j, err := Open(crashed, got.config(DefaultFileSize, DefaultKeepFiles))
				if err != nil {
					t.Fatalf("Open of a journal cut at %d: %v", cut, err)
				}
				defer j.Close()
				if want.hi == 0 {
					got.assertEntries(t, j, 1, 0)
				} else {
					got.assertEntries(t, j, want.lo, want.hi)
				}
				if v := got.kv["s-vote"]; string(v) != want.vote {
					t.Fatalf("vote %q after the replay, want %q", v, want.vote)
				}
				if cut != ends[1]+recordHeader+3 {
					return
				}
				// Once: the journal goes on after the records it kept.
				got.append(t, j, got.logWrite(want.hi+1, want.hi+1))
				must(t, j.Close(), "Close")
				again := newBehind()
				j, err = Open(crashed, again.config(DefaultFileSize, DefaultKeepFiles))
				must(t, err, "reopen")
				defer j.Close()
				again.assertEntries(t, j, want.lo, want.hi+1)
			})
		}
	}
}

// A checksummed record that does not parse is not a crash's doing: the
// open fails rather than drop it and what follows.
func TestMalformedRecordFailsOpen(t *testing.T) {
	dir := t.TempDir()
	payload := []byte{1, 2, 1} // one write whose flag is neither set nor delete
	rec := binary.LittleEndian.AppendUint32(nil, uint32(len(payload)))
	rec = binary.LittleEndian.AppendUint32(rec, crc32.Checksum(payload, crcTable))
	must(t, os.WriteFile(filepath.Join(dir, FileName(1)), append(rec, payload...), 0o600), "write")
	if _, err := Open(dir, newBehind().config(DefaultFileSize, DefaultKeepFiles)); !errors.Is(err, errRecord) {
		t.Fatalf("Open = %v, want errRecord", err)
	}
}

// An Append that fails fails every later one, and Retire then keeps the
// files for the next open.
func TestFailedAppendIsSticky(t *testing.T) {
	dir, b, j := openDefault(t)
	b.append(t, j, b.logWrite(1, 2))
	injected := errors.New("injected: the disk is gone")
	j.mu.Lock()
	j.err = injected
	j.mu.Unlock()
	for range 2 {
		if err := j.Append([]*Write{b.logWrite(3, 3)}); !errors.Is(err, injected) {
			t.Fatalf("Append after a failure = %v, want the failure", err)
		}
	}
	must(t, j.Retire(), "Retire")
	if seqs, err := Files(dir); err != nil || len(seqs) == 0 {
		t.Fatalf("journal files after Retire of a failed journal: %v, %v; want them kept", seqs, err)
	}
}

// Full files stay while their entries are in the tail, KeepFiles of them at
// most: beyond, the oldest one's entries move to the store behind and it
// goes; a deletion of the head of the log lets its files go. Every entry
// reads back throughout, and MoveAll and Retire leave the store behind with
// all of them and no journal file.
func TestFullFilesKeptMovedAndRemoved(t *testing.T) {
	const keep = 2
	dir := t.TempDir()
	b := newBehind()
	j, err := Open(dir, b.config(1<<10, keep))
	must(t, err, "Open")
	last := uint64(0)
	write := func() {
		b.append(t, j, b.logWrite(last+1, last+5))
		last += 5
	}
	moved := func() int {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.kv)
	}
	for n := 0; moved() == 0; n++ {
		if n == 500 {
			t.Fatal("500 writes moved no entry into the store behind")
		}
		write()
	}
	// Files settle (the rotator works in the background): at most keep
	// full files, each with entries in the tail, besides the current one
	// and the spare.
	settled := func() {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			seqs, err := Files(dir)
			must(t, err, "Files")
			cur := j.Current()
			full := slices.DeleteFunc(seqs, func(s uint64) bool { return s >= cur })
			if len(full) <= keep && !slices.ContainsFunc(full, func(s uint64) bool { return b.ts.Live(s) == 0 }) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("full files %v (current %d): want at most %d, each with live entries", full, cur, keep)
			}
		}
	}
	settled()
	b.assertEntries(t, j, 1, last)

	// Raft compacts: the head leaves the log (the store behind's copies
	// too), and as the writer goes on in new files the full files go (the
	// deletion, larger than a file, has one of its own; files go oldest
	// first).
	first := last - 2
	b.append(t, j, &Write{Keys: keysOf(1, last-3), Del: true, Tail: b.ts.Of(0)})
	for cur := j.Current(); j.Current() < cur+keep; {
		write()
	}
	settled() // every full file left holds live entries: not those of the head
	b.assertEntries(t, j, first, last)
	j.Stop() // a clean stop: nothing writes, nothing rotates
	must(t, j.MoveAll(), "MoveAll")
	must(t, j.Retire(), "Retire")
	if seqs, err := Files(dir); err != nil || len(seqs) != 0 {
		t.Fatalf("journal files after Retire: %v, %v; want none", seqs, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if n := int(last - first + 1); len(b.kv) != n {
		t.Fatalf("the store behind holds %d entries, want the %d left in the log", len(b.kv), n)
	}
}

// keysOf lists the log keys from..to.
func keysOf(from, to uint64) [][]byte {
	var keys [][]byte
	for i := from; i <= to; i++ {
		keys = append(keys, logKey(i))
	}
	return keys
}

// openDefault opens a journal of the default size in a new directory,
// behind a fresh newBehind.
func openDefault(t *testing.T) (string, *behind, *Journal) {
	t.Helper()
	dir := t.TempDir()
	b := newBehind()
	j, err := Open(dir, b.config(DefaultFileSize, DefaultKeepFiles))
	must(t, err, "Open")
	return dir, b, j
}
