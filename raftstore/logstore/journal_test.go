package logstore

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/raftstore/journal"
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
	seqs, err := journal.Files(filepath.Join(dir, "journal"))
	if err != nil || len(seqs) == 0 {
		t.Fatalf("journal files: %v %v", seqs, err)
	}
	for _, seq := range seqs {
		data, err := os.ReadFile(filepath.Join(dir, "journal", journal.FileName(seq)))
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
		if err := os.WriteFile(filepath.Join(to, journal.FileName(seq)), data, 0o600); err != nil {
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
	if seqs, err := journal.Files(filepath.Join(dir, "journal")); err != nil || len(seqs) != 0 {
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

	name := filepath.Join(fresh, "journal", journal.FileName(cur))
	data, err := os.ReadFile(name)
	requireNoErr(t, err, "read journal")
	// The second record, its last bytes never written.
	first := recordHeader + int(le32(data))
	second := recordHeader + int(le32(data[first:]))
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

// recordHeader is the bytes before a journal record's payload: its length
// and CRC-32C, 4 bytes each (journal/DESIGN.md).
const recordHeader = 8

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

// A write the journal could not make durable fails and never reaches
// badger: badger may write out what it holds at any time, and must not hold
// what the journal lost. The disk goes away before the journal's write (the
// journal's own tests check that a failed append fails every later one).
func TestJournalFirst(t *testing.T) {
	var gone atomic.Bool
	opts := Options{BeforeWrite: func() error {
		if gone.Load() {
			return errors.New("injected: the disk is gone")
		}
		return nil
	}}
	kinds := []struct {
		name string
		open func(t *testing.T) *Store
	}{
		{"own", func(t *testing.T) *Store { return openStore(t, t.TempDir(), opts) }},
		{"shared", func(t *testing.T) *Store { _, st := openGroup(t, t.TempDir(), opts); return st }},
	}
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			gone.Store(false)
			st := kind.open(t)
			requireNoErr(t, st.StoreLogs(testLogs(1, 5)), "StoreLogs")
			gone.Store(true)
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
