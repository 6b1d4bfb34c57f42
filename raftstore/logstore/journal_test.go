package logstore

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/hashicorp/raft"
)

// journalKinds opens, in dir, a Store of its own or group 0 of a Shared,
// both of which journal their writes; closing it closes what it belongs to.
var journalKinds = []struct {
	name string
	open journalOpener
}{
	{"own", func(t *testing.T, dir string) (*Store, func() error) {
		s := openStore(t, dir, Options{})
		return s, s.Close
	}},
	{"shared", func(t *testing.T, dir string) (*Store, func() error) {
		sh, s := openGroup(t, dir, Options{})
		return s, func() error { s.Close(); return sh.Close() }
	}},
}

// journalSettles waits (5 s at most) until st's journal directory holds only
// the file being written and the rotator's spare after it: every full file
// checkpointed and removed. It returns the current file's sequence number.
func journalSettles(t *testing.T, dir string, st *Store) uint64 {
	t.Helper()
	var seqs []uint64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var cur uint64
		seqs, cur = journalState(t, dir, st)
		if slices.Equal(seqs, []uint64{cur, cur + 1}) {
			return cur
		}
	}
	t.Fatalf("journal files %v: want only the current file and the spare", seqs)
	return 0
}

// journalOpener opens a journaling store in a directory (journalKinds).
type journalOpener = func(t *testing.T, dir string) (*Store, func() error)

// forEachJournalKind runs fn as a subtest for each of journalKinds.
func forEachJournalKind(t *testing.T, fn func(t *testing.T, open journalOpener)) {
	for _, kind := range journalKinds {
		t.Run(kind.name, func(t *testing.T) { fn(t, kind.open) })
	}
}

// copyJournal copies the journal files of the Shared in dir into a new
// directory's journal, without badger's files: what a node would find after
// a power loss that took everything badger had not synced.
func copyJournal(t *testing.T, dir string) string {
	t.Helper()
	fresh := t.TempDir()
	to := filepath.Join(fresh, "journal")
	if err := os.MkdirAll(to, 0o700); err != nil {
		t.Fatal(err)
	}
	seqs, err := journalFiles(filepath.Join(dir, "journal"))
	if err != nil || len(seqs) == 0 {
		t.Fatalf("journal files: %v %v", seqs, err)
	}
	for _, seq := range seqs {
		data, err := os.ReadFile(filepath.Join(dir, "journal", journalName(seq)))
		if errors.Is(err, fs.ErrNotExist) {
			// The rotator removed it since the listing (reclaim: a full
			// file whose records badger holds durably, or with none, as
			// the first file a large record jumped past): a crash now
			// would not find it either.
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, journalName(seq)), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return fresh
}

// Everything a Shared acknowledged is in its journal: opened on the journal
// alone, an empty badger gets back the logs, the truncations of both ends
// and the stable values.
func TestJournalRestoresWhatBadgerLost(t *testing.T) { forEachJournalKind(t, testJournalRestores) }

func testJournalRestores(t *testing.T, open journalOpener) {
	dir := t.TempDir()
	st, closeAll := open(t, dir)
	requireNoErr(t, st.StoreLogs(testLogs(1, 100)), "StoreLogs")
	requireNoErr(t, st.DeleteRange(1, 40), "DeleteRange front")
	requireNoErr(t, st.StoreLogs(testLogs(101, 120)), "StoreLogs")
	requireNoErr(t, st.DeleteRange(111, 120), "DeleteRange back")
	requireNoErr(t, st.SetUint64([]byte("CurrentTerm"), 7), "SetUint64")
	requireNoErr(t, st.Set([]byte("LastVoteCand"), []byte("n2")), "Set")
	journalOnly := copyJournal(t, dir)
	requireNoErr(t, closeAll(), "Close")
	// A clean stop leaves badger complete and the journal empty.
	if seqs, err := journalFiles(filepath.Join(dir, "journal")); err != nil || len(seqs) != 0 {
		t.Fatalf("journal files after Close: %v %v, want none", seqs, err)
	}
	again, _ := open(t, dir)
	assertBounds(t, again, 41, 110)

	got, _ := open(t, journalOnly)
	assertBounds(t, got, 41, 110)
	assertHasLogs(t, got, 1, 125, func(i uint64) bool { return i >= 41 && i <= 110 })
	if v, err := got.GetUint64([]byte("CurrentTerm")); err != nil || v != 7 {
		t.Fatalf("CurrentTerm = %d, %v; want 7", v, err)
	}
	if v, err := got.Get([]byte("LastVoteCand")); err != nil || string(v) != "n2" {
		t.Fatalf("LastVoteCand = %q, %v; want n2", v, err)
	}
}

// A record cut short by a crash ends the replay: the batches before it are
// restored, it is not, and the Shared opens.
func TestJournalStopsAtTornRecord(t *testing.T) { forEachJournalKind(t, testJournalTorn) }

func testJournalTorn(t *testing.T, open journalOpener) {
	dir := t.TempDir()
	st, closeAll := open(t, dir)
	requireNoErr(t, st.StoreLogs(testLogs(1, 10)), "StoreLogs")
	requireNoErr(t, st.StoreLogs(testLogs(11, 20)), "StoreLogs")
	fresh := copyJournal(t, dir)
	cur := journalSettles(t, dir, st)
	requireNoErr(t, closeAll(), "Close")

	name := filepath.Join(fresh, "journal", journalName(cur))
	data, err := os.ReadFile(name)
	requireNoErr(t, err, "read journal")
	// The second record, its last bytes never written.
	first := journalHeader + int(le32(data))
	second := journalHeader + int(le32(data[first:]))
	for _, cut := range []int{first + second/2, first + 3} {
		torn := bytes.Clone(data)
		clear(torn[cut:])
		requireNoErr(t, os.WriteFile(name, torn, 0o600), "write journal")
		target := t.TempDir()
		requireNoErr(t, os.CopyFS(target, os.DirFS(fresh)), "copy")
		got, _ := open(t, target)
		assertBounds(t, got, 1, 10)
		assertHasLogs(t, got, 1, 20, func(i uint64) bool { return i <= 10 })
	}
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// A full journal file is replaced by the spare, and checkpointed and removed
// in the background; a reopen finds every entry.
func TestJournalCheckpoints(t *testing.T) {
	defer func(n int64, k int) { journalFileSize, journalKeepFiles = n, k }(journalFileSize, journalKeepFiles)
	journalFileSize, journalKeepFiles = 4<<10, 0 // a full file's entries move into badger at once
	forEachJournalKind(t, testJournalCheckpoints)
}

func testJournalCheckpoints(t *testing.T, open journalOpener) {
	dir := t.TempDir()
	st, closeAll := open(t, dir)
	for i := uint64(1); i <= 400; i += 10 {
		requireNoErr(t, st.StoreLogs(testLogs(i, i+9)), "StoreLogs")
	}
	if cur := journalSettles(t, dir, st); cur < 3 {
		t.Fatalf("journal file %d: want several checkpoints", cur)
	}
	// A write bigger than a file gets a file of its own: once the file
	// before is checkpointed, the journal holds it alone.
	requireNoErr(t, st.StoreLogs(testLogs(401, 600)), "StoreLogs of a big batch")
	journalSettles(t, dir, st)
	journalOnly := copyJournal(t, dir)
	requireNoErr(t, closeAll(), "Close")
	got, _ := open(t, dir)
	assertBounds(t, got, 1, 600)
	assertHasLogs(t, got, 1, 600, func(uint64) bool { return true })
	alone, _ := open(t, journalOnly)
	assertBounds(t, alone, 401, 600)
	assertHasLogs(t, alone, 390, 600, func(i uint64) bool { return i >= 401 })
}

// keyOp is one key of replayed writes: set to val, or deleted.
type keyOp struct {
	key, val []byte
	del      bool
}

// appendJournalRecord appends the record of batch's writes (build) to dst,
// whole: the bytes the journal writes, in one slice.
func appendJournalRecord(dst []byte, batch []*setsReq) []byte {
	var rec journalRecord
	rec.build(batch)
	for _, s := range rec.segments() {
		dst = append(dst, s...)
	}
	return dst
}

// keyOps lists the keys of reqs in order.
func keyOps(reqs []*setsReq) []keyOp {
	var out []keyOp
	for _, r := range reqs {
		for i, k := range r.keys {
			op := keyOp{key: k, del: r.del}
			if !r.del {
				op.val = r.vals[i]
			}
			out = append(out, op)
		}
	}
	return out
}

// Records read back as written; a checksummed record that does not parse is
// an error, not the end of the journal.
func TestJournalRecord(t *testing.T) {
	batch := []*setsReq{
		{keys: [][]byte{[]byte("a"), []byte("")}, vals: [][]byte{[]byte("1"), bytes.Repeat([]byte("v"), 300)}},
		{keys: [][]byte{[]byte("gone")}, del: true},
	}
	rec := appendJournalRecord(nil, batch)
	var got []keyOp
	requireNoErr(t, replayJournal(append(rec, make([]byte, 16)...), 1, func(reqs []*setsReq) error {
		got = append(got, keyOps(reqs)...)
		return nil
	}), "replay")
	want := []keyOp{{key: []byte("a"), val: []byte("1")}, {key: []byte(""), val: bytes.Repeat([]byte("v"), 300)}, {key: []byte("gone"), del: true}}
	if len(got) != len(want) {
		t.Fatalf("replayed %d ops, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i].key, want[i].key) || !bytes.Equal(got[i].val, want[i].val) || got[i].del != want[i].del {
			t.Fatalf("op %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, bad := range [][]byte{{}, {2}, {1, 2, 1}, {1, 0, 5, 'a'}, {1, 1, 1, 'k', 0}} {
		if _, err := decodeJournalRecord(bad); err == nil {
			t.Errorf("decodeJournalRecord(%v) accepted a malformed record", bad)
		}
	}
}

// A record whose large values are written by reference (their own pieces
// of a vectored write, a split log entry's three pieces) holds the same
// bytes as one with every value copied in, and its locs find each value.
func TestJournalRecordPieces(t *testing.T) {
	big := func(n int, c byte) []byte { return bytes.Repeat([]byte{c}, n) }
	head, data, tl := []byte("head"), big(3*bigPiece+7, 'd'), []byte{0}
	split := func() []*setsReq {
		return []*setsReq{
			{keys: [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("d")},
				vals:  [][]byte{[]byte("1"), big(bigPiece-1, 'b'), big(bigPiece, 'c'), nil},
				split: [][3][]byte{3: {head, data, tl}}, tail: &tail{}},
			{keys: [][]byte{[]byte("gone")}, del: true},
			{keys: [][]byte{[]byte("e")}, vals: [][]byte{big(2*bigPiece, 'e')}, tail: &tail{}},
		}
	}
	whole := split()
	whole[0].vals[3], whole[0].split = slices.Concat(head, data, tl), nil
	flat := appendJournalRecord(nil, whole)

	batch := split()
	var rec journalRecord
	rec.build(batch)
	if len(rec.refs) != 3 {
		t.Fatalf("%d values by reference, want 3 (those of bigPiece bytes or more)", len(rec.refs))
	}
	var got []byte
	for _, s := range rec.segments() {
		got = append(got, s...)
	}
	if !bytes.Equal(got, flat) || rec.size != len(flat) {
		t.Fatalf("record in pieces (%d bytes, size %d) differs from the copied one (%d bytes)", len(got), rec.size, len(flat))
	}
	for _, r := range []*setsReq{batch[0], batch[2]} {
		for i, l := range r.locs {
			if want := r.val(i); !bytes.Equal(got[l.off:l.off+int64(l.n)], want) {
				t.Fatalf("loc %+v of a %d-byte value reads other bytes", l, len(want))
			}
		}
	}

	// Written with a few pieces per call, at an offset, it reads back whole.
	defer func(n int) { maxIOV = n }(maxIOV)
	maxIOV = 2
	f, err := os.Create(filepath.Join(t.TempDir(), "j"))
	requireNoErr(t, err, "create")
	defer f.Close()
	requireNoErr(t, rec.writeAt(f, 100), "writeAt")
	onDisk, err := os.ReadFile(f.Name())
	requireNoErr(t, err, "read")
	if !bytes.Equal(onDisk[100:], flat) {
		t.Fatal("the vectored write put other bytes on disk")
	}
	var ops []keyOp
	requireNoErr(t, replayJournal(onDisk[100:], 1, func(reqs []*setsReq) error {
		ops = append(ops, keyOps(reqs)...)
		return nil
	}), "replay")
	if len(ops) != 6 || !bytes.Equal(ops[3].val, whole[0].vals[3]) || !ops[4].del {
		t.Fatalf("replayed %d ops, want the batch's 6", len(ops))
	}
}

// A write the journal could not make durable fails and never reaches
// badger: badger may write out what it holds at any time, and must not hold
// what the journal lost.
func TestJournalFirst(t *testing.T) {
	forEachJournalKind(t, func(t *testing.T, open journalOpener) {
		st, _ := open(t, t.TempDir())
		requireNoErr(t, st.StoreLogs(testLogs(1, 5)), "StoreLogs")
		jr := st.journal()
		jr.mu.Lock()
		jr.err = errors.New("injected: the disk is gone")
		jr.mu.Unlock()
		if err := st.StoreLogs(testLogs(6, 8)); err == nil {
			t.Fatal("StoreLogs succeeded without its journal")
		}
		if err := st.SetUint64([]byte("CurrentTerm"), 3); err == nil {
			t.Fatal("SetUint64 succeeded without its journal")
		}
		assertBounds(t, st, 1, 5)
		assertHasLogs(t, st, 1, 8, func(i uint64) bool { return i <= 5 })
		if err := st.sh.db.View(func(txn *badger.Txn) error {
			_, err := txn.Get(st.kp.log(6))
			return err
		}); !errors.Is(err, badger.ErrKeyNotFound) {
			t.Fatalf("entry 6 in badger: %v, want not found", err)
		}
		if _, err := st.GetUint64([]byte("CurrentTerm")); !errors.Is(err, ErrKeyNotFound) {
			t.Fatalf("CurrentTerm: %v, want not found", err)
		}
	})
}

// FuzzJournalReplay: whatever a journal file holds, replaying it never
// panics and fails only on a checksummed record that does not parse (a torn
// or unchecked tail just ends it); the writes it applies, encoded again,
// replay as the same keys and values.
func FuzzJournalReplay(f *testing.F) {
	f.Add(appendJournalRecord(nil, []*setsReq{{keys: [][]byte{[]byte("k")}, vals: [][]byte{[]byte("v")}}}))
	f.Add(append(appendJournalRecord(nil, []*setsReq{{keys: [][]byte{[]byte("a"), []byte("b")}, del: true}}), 1, 2, 3))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		var applied []keyOp
		var again []byte
		err := replayJournal(data, 1, func(reqs []*setsReq) error {
			applied = append(applied, keyOps(reqs)...)
			again = appendJournalRecord(again, reqs)
			return nil
		})
		if err != nil && !errors.Is(err, errJournalRecord) {
			t.Fatalf("replay failed with %v, want nil or errJournalRecord", err)
		}
		var back []keyOp
		if err := replayJournal(again, 1, func(reqs []*setsReq) error { back = append(back, keyOps(reqs)...); return nil }); err != nil {
			t.Fatalf("replaying re-encoded operations: %v", err)
		}
		if len(back) != len(applied) {
			t.Fatalf("re-encoded %d operations, replayed %d", len(applied), len(back))
		}
		for i := range back {
			a, b := applied[i], back[i]
			if a.del != b.del || !bytes.Equal(a.key, b.key) || (!a.del && !bytes.Equal(a.val, b.val)) {
				t.Fatalf("operation %d: %+v replayed as %+v", i, a, b)
			}
		}
	})
}

// An entry over badger's 1 MiB value threshold (badger keeps it in its value
// log, unsynced like the rest) is restored from the journal too.
func TestJournalRestoresLargeEntry(t *testing.T) {
	forEachJournalKind(t, func(t *testing.T, open journalOpener) {
		dir := t.TempDir()
		st, closeAll := open(t, dir)
		big := testLog(1)
		big.Data = bytes.Repeat([]byte("0123456789abcdef"), 3<<16) // 3 MiB
		requireNoErr(t, st.StoreLogs([]*raft.Log{big, testLog(2)}), "StoreLogs")
		journalOnly := copyJournal(t, dir)
		requireNoErr(t, closeAll(), "Close")
		got, _ := open(t, journalOnly)
		assertBounds(t, got, 1, 2)
		var l raft.Log
		requireNoErr(t, got.GetLog(1, &l), "GetLog(1)")
		assertLogEqual(t, big, &l)
	})
}

// zeroFile writes zeros over a spare, a chunk at a time, and stops before
// the next chunk once the writer says it needs the file.
func TestZeroFile(t *testing.T) {
	size := int64(3*zeroChunk + 100)
	f, err := createJournalFile(t.TempDir(), 1, size)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	junk := bytes.Repeat([]byte{0xAB}, int(size))
	if _, err := f.WriteAt(junk, 0); err != nil {
		t.Fatal(err)
	}
	need := make(chan struct{}, 1)
	need <- struct{}{}
	if err := zeroFile(f, size, need); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, junk) {
		t.Fatal("zeroFile wrote although the writer needed the file at once")
	}
	if err := zeroFile(f, size, make(chan struct{})); err != nil {
		t.Fatal(err)
	}
	if got, err = os.ReadFile(f.Name()); err != nil {
		t.Fatal(err)
	}
	if int64(len(got)) != size || !bytes.Equal(got, make([]byte, size)) {
		t.Fatalf("after zeroFile the file holds %d bytes, not %d zeros", len(got), size)
	}
}
