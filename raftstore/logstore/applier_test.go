package logstore

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/raftstore/journal"
)

// heldApplier opens a Shared in dir whose applier waits, before it writes
// journaled batches into badger, until the test releases it (one badger
// write, of the batches it gathered, per value sent on the returned channel;
// the value is the write's error), or until letGo lets it run freely from
// then on, and its group 0. Both are closed when the test ends.
func heldApplier(t *testing.T, dir string) (sh *Shared, st *Store, release chan error, letGo func()) {
	t.Helper()
	release = make(chan error)
	free := make(chan struct{}) // closed by letGo, or as the test ends: Close waits for the applier
	var once sync.Once
	letGo = func() { once.Do(func() { close(free) }) }
	sh, st = openGroup(t, dir, Options{BeforeApply: func() error {
		select {
		case err := <-release:
			return err
		case <-free:
			return nil
		}
	}})
	t.Cleanup(letGo) // runs before openGroup's Close
	return sh, st, release, letGo
}

// A write is answered once its journal record is on disk, before badger has
// it. Log entries are read from the journal at once (tail.go); a read of
// what badger holds (the stable store) waits until badger has every answered
// write, and so does a journal checkpoint (it must not drop a record badger
// lacks).
func TestBadgerTrailsJournal(t *testing.T) {
	defer func(n int64, k int) { journalFileSize, journalKeepFiles = n, k }(journalFileSize, journalKeepFiles)
	journalFileSize, journalKeepFiles = 4<<10, 0 // a full file's entries move into badger
	dir := t.TempDir()
	_, st, release, letGo := heldApplier(t, dir)

	var storeErr, setErr error
	if _, ok := returnsWithin(5*time.Second, func() {
		storeErr = st.StoreLogs(testLogs(1, 3))
		setErr = st.SetUint64([]byte("term"), 7)
	}); !ok {
		t.Fatal("StoreLogs waited for badger, not only for the journal")
	}
	requireNoErr(t, storeErr, "StoreLogs")
	requireNoErr(t, setErr, "SetUint64")
	assertBounds(t, st, 1, 3)
	// Durable already: the journal alone gives the entries back.
	_, alone := openGroup(t, copyJournal(t, dir), Options{})
	assertHasLogs(t, alone, 1, 3, func(uint64) bool { return true })

	var got raft.Log
	var readErr error
	if _, ok := returnsWithin(5*time.Second, func() { readErr = st.GetLog(2, &got) }); !ok {
		t.Fatal("GetLog of an entry in the journal waited for badger")
	}
	requireNoErr(t, readErr, "GetLog")
	assertLogEqual(t, testLog(2), &got)
	var term uint64
	var termErr error
	readTerm, ok := returnsWithin(50*time.Millisecond, func() { term, termErr = st.GetUint64([]byte("term")) })
	if ok {
		t.Fatal("GetUint64 read badger before the applier wrote the value")
	}
	release <- nil
	finished(t, readTerm, "GetUint64")
	requireNoErr(t, termErr, "GetUint64")
	if term != 7 {
		t.Fatalf("GetUint64(term) = %d, want 7", term)
	}

	// A write that fills the journal's file goes on in the next one at once;
	// the full file, whose entries move into badger, stays until badger also
	// holds its other records (here: a stable value the applier holds).
	requireNoErr(t, st.SetUint64([]byte("term"), 8), "SetUint64")
	_, full := journalState(t, dir, st)
	var bigErr error
	if _, ok := returnsWithin(5*time.Second, func() { bigErr = st.StoreLogs(testLogs(4, 200)) }); !ok {
		t.Fatal("a write that filled the journal's file waited for its checkpoint")
	}
	requireNoErr(t, bigErr, "StoreLogs of a big batch")
	if _, gone := returnsWithin(200*time.Millisecond, func() {
		for {
			if seqs, _ := journal.Files(filepath.Join(dir, "journal")); !slices.Contains(seqs, full) {
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}); gone {
		t.Fatalf("the full journal file %d was removed before badger held its records", full)
	}
	held := copyJournal(t, dir)
	_, alone = openGroup(t, held, Options{})
	assertHasLogs(t, alone, 1, 200, func(uint64) bool { return true })
	if v, err := alone.GetUint64([]byte("term")); err != nil || v != 8 {
		t.Fatalf("term from the journal alone = %d, %v; want 8", v, err)
	}
	letGo()
	journalSettles(t, dir, st)
	assertHasLogs(t, st, 1, 200, func(uint64) bool { return true })
	if v, err := st.GetUint64([]byte("term")); err != nil || v != 8 {
		t.Fatalf("term = %d, %v; want 8", v, err)
	}
	if idx, _ := st.tail.Entries(0, 200, full, 0); len(idx) != 0 {
		t.Fatalf("entries %v of the removed file %d are still read from it", idx, full)
	}
}

// A badger write that fails after its journal record was answered fails
// every later write and read of the Shared's badger with ErrBadgerWrite;
// Close keeps the journal, and the next open replays the write.
func TestBadgerWriteFailure(t *testing.T) {
	dir := t.TempDir()
	sh, st, release, _ := heldApplier(t, dir)
	requireNoErr(t, st.StoreLogs(testLogs(1, 2)), "StoreLogs")
	requireNoErr(t, st.SetUint64([]byte("term"), 3), "SetUint64")
	disk := errors.New("injected badger failure")
	release <- disk

	if _, err := st.GetUint64([]byte("term")); !errors.Is(err, ErrBadgerWrite) || !errors.Is(err, disk) {
		t.Fatalf("GetUint64 after badger failed = %v, want ErrBadgerWrite wrapping the cause", err)
	}
	if err := st.StoreLogs(testLogs(3, 3)); !errors.Is(err, ErrBadgerWrite) {
		t.Fatalf("StoreLogs after badger failed = %v, want ErrBadgerWrite", err)
	}
	st.Close()
	if err := sh.Close(); !errors.Is(err, ErrBadgerWrite) {
		t.Fatalf("Close after badger failed = %v, want ErrBadgerWrite", err)
	}
	if seqs, err := journal.Files(filepath.Join(dir, "journal")); err != nil || len(seqs) == 0 {
		t.Fatalf("journal files after Close = %v, %v: want them kept for the replay", seqs, err)
	}
	_, again := openGroup(t, dir, Options{})
	assertBounds(t, again, 1, 2)
	assertHasLogs(t, again, 1, 2, func(uint64) bool { return true })
	if v, err := again.GetUint64([]byte("term")); err != nil || v != 3 {
		t.Fatalf("term after the replay = %d, %v; want 3", v, err)
	}
}

// An entry stored again after its index was cut from the end of the log is
// read as stored again at once, with badger held: it never was in badger.
func TestTruncatedEntryStoredAgain(t *testing.T) {
	_, st, _, _ := heldApplier(t, t.TempDir())
	requireNoErr(t, st.StoreLogs(testLogs(1, 5)), "StoreLogs")
	requireNoErr(t, st.DeleteRange(4, 5), "DeleteRange of the end")
	again := testLog(4)
	again.Term, again.Data = 2, []byte("stored again")
	requireNoErr(t, st.StoreLogs([]*raft.Log{again}), "StoreLogs again")
	assertBounds(t, st, 1, 4)
	var got raft.Log
	var readErr error
	if _, ok := returnsWithin(5*time.Second, func() { readErr = st.GetLog(4, &got) }); !ok {
		t.Fatal("GetLog of an entry in the journal waited for badger")
	}
	requireNoErr(t, readErr, "GetLog")
	assertLogEqual(t, again, &got)
	assertHasLogs(t, st, 1, 3, func(uint64) bool { return true })
	if err := st.GetLog(5, &got); !errors.Is(err, ErrLogNotFound) {
		t.Fatalf("GetLog(5) after the end was cut = %v, want ErrLogNotFound", err)
	}
}

// The applier writes batches that come close together into badger as one
// write, lingering for more; a read of the DB does not wait out the linger.
func TestApplierGathersBatches(t *testing.T) {
	defer func(d time.Duration) { applyLinger = d }(applyLinger)
	applyLinger = time.Minute // only a reader ends a gathering
	var writes atomic.Int32
	_, st := openGroup(t, t.TempDir(), Options{BeforeApply: func() error {
		writes.Add(1)
		return nil
	}})
	for i := uint64(1); i <= 3; i++ {
		requireNoErr(t, st.SetUint64([]byte(fmt.Sprint("k", i)), i), "SetUint64")
	}
	var got uint64
	var readErr error
	if _, ok := returnsWithin(5*time.Second, func() { got, readErr = st.GetUint64([]byte("k3")) }); !ok {
		t.Fatal("GetUint64 waited out the applier's linger")
	}
	requireNoErr(t, readErr, "GetUint64")
	if got != 3 {
		t.Fatalf("GetUint64(k3) = %d, want 3", got)
	}
	if n := writes.Load(); n != 1 {
		t.Fatalf("badger writes for 3 batches = %d, want 1", n)
	}
}
