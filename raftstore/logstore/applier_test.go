package logstore

import (
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// heldApplier opens a Shared in dir whose applier waits, before it writes
// journaled batches into badger, until the test releases it (one badger
// write, of the batches it gathered, per value sent on the returned channel;
// the value is the write's error), and its group 0. Both are closed when the
// test ends.
func heldApplier(t *testing.T, dir string) (*Shared, *Store, chan error) {
	t.Helper()
	release := make(chan error)
	free := make(chan struct{}) // closed as the test ends: Close waits for the applier
	sh, st := openGroup(t, dir, Options{BeforeApply: func() error {
		select {
		case err := <-release:
			return err
		case <-free:
			return nil
		}
	}})
	t.Cleanup(func() { close(free) }) // runs before openGroup's Close
	return sh, st, release
}

// A write is answered once its journal record is on disk, before badger has
// it; a read of the DB waits until badger has every answered write, and a
// journal checkpoint too (it must not drop a record badger lacks).
func TestBadgerTrailsJournal(t *testing.T) {
	defer func(n int64) { journalFileSize = n }(journalFileSize)
	journalFileSize = 4 << 10
	dir := t.TempDir()
	_, st, release := heldApplier(t, dir)

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
	var readErr, termErr error
	read, ok := returnsWithin(50*time.Millisecond, func() { readErr = st.GetLog(2, &got) })
	if ok {
		t.Fatal("GetLog read badger before the applier wrote the entry")
	}
	var term uint64
	readTerm, ok := returnsWithin(50*time.Millisecond, func() { term, termErr = st.GetUint64([]byte("term")) })
	if ok {
		t.Fatal("GetUint64 read badger before the applier wrote the value")
	}
	// The two writes were one batch or two.
	for released := 0; ; released++ {
		select {
		case release <- nil:
			continue
		case <-readTerm:
		case <-time.After(5 * time.Second):
			t.Fatalf("reads still wait after %d batches were written into badger", released)
		}
		break
	}
	requireNoErr(t, termErr, "GetUint64")
	if term != 7 {
		t.Fatalf("GetUint64(term) = %d, want 7", term)
	}
	finished(t, read, "GetLog")
	requireNoErr(t, readErr, "GetLog")
	assertLogEqual(t, testLog(2), &got)

	// While badger still lacks a newer entry, an older one is read at once.
	requireNoErr(t, st.StoreLogs(testLogs(4, 4)), "StoreLogs")
	if _, ok := returnsWithin(5*time.Second, func() { readErr = st.GetLog(3, &got) }); !ok {
		t.Fatal("GetLog of an entry badger holds waited for a newer write")
	}
	requireNoErr(t, readErr, "GetLog")
	assertLogEqual(t, testLog(3), &got)
	var got4 raft.Log
	var read4Err error
	read4, ok := returnsWithin(50*time.Millisecond, func() { read4Err = st.GetLog(4, &got4) })
	if ok {
		t.Fatal("GetLog read badger before the applier wrote the entry")
	}

	// A write that fills the journal's file goes on in the next one at once;
	// the full file stays until badger holds its records.
	jr := journalOf(st)
	jr.mu.Lock()
	full := jr.seq
	jr.mu.Unlock()
	var bigErr error
	if _, ok := returnsWithin(5*time.Second, func() { bigErr = st.StoreLogs(testLogs(5, 200)) }); !ok {
		t.Fatal("a write that filled the journal's file waited for its checkpoint")
	}
	requireNoErr(t, bigErr, "StoreLogs of a big batch")
	if _, gone := returnsWithin(200*time.Millisecond, func() {
		for {
			if seqs, _ := journalFiles(filepath.Join(dir, "journal")); !slices.Contains(seqs, full) {
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
	release <- nil
	finished(t, read4, "GetLog")
	requireNoErr(t, read4Err, "GetLog")
	assertLogEqual(t, testLog(4), &got4)
	release <- nil
	journalSettles(t, dir, st)
	assertHasLogs(t, st, 1, 200, func(uint64) bool { return true })
}

// A batch that badger fails to take after its journal record was answered
// fails every later write and read of the Shared with ErrBadgerWrite; Close
// keeps the journal, and the next open replays the batch.
func TestBadgerWriteFailure(t *testing.T) {
	dir := t.TempDir()
	sh, st, release := heldApplier(t, dir)
	requireNoErr(t, st.StoreLogs(testLogs(1, 2)), "StoreLogs")
	disk := errors.New("injected badger failure")
	release <- disk

	var got raft.Log
	if err := st.GetLog(1, &got); !errors.Is(err, ErrBadgerWrite) || !errors.Is(err, disk) {
		t.Fatalf("GetLog after badger failed = %v, want ErrBadgerWrite wrapping the cause", err)
	}
	if err := st.StoreLogs(testLogs(3, 3)); !errors.Is(err, ErrBadgerWrite) {
		t.Fatalf("StoreLogs after badger failed = %v, want ErrBadgerWrite", err)
	}
	st.Close()
	if err := sh.Close(); !errors.Is(err, ErrBadgerWrite) {
		t.Fatalf("Close after badger failed = %v, want ErrBadgerWrite", err)
	}
	if seqs, err := journalFiles(filepath.Join(dir, "journal")); err != nil || len(seqs) == 0 {
		t.Fatalf("journal files after Close = %v, %v: want them kept for the replay", seqs, err)
	}
	_, again := openGroup(t, dir, Options{})
	assertBounds(t, again, 1, 2)
	assertHasLogs(t, again, 1, 2, func(uint64) bool { return true })
}

// An entry stored again after its index was cut from the tail is read only
// once badger holds the new write, never the old one's absence.
func TestBadgerTrailsTruncation(t *testing.T) {
	_, st, release := heldApplier(t, t.TempDir())
	stopAuto := make(chan struct{})
	autoDone := make(chan struct{})
	go func() { // let the applier run until the test holds it
		defer close(autoDone)
		for {
			select {
			case release <- nil:
			case <-stopAuto:
				return
			}
		}
	}()
	requireNoErr(t, st.StoreLogs(testLogs(1, 5)), "StoreLogs")
	requireNoErr(t, st.DeleteRange(4, 5), "DeleteRange of the tail")
	close(stopAuto)
	<-autoDone

	again := testLog(4)
	again.Term, again.Data = 2, []byte("stored again")
	requireNoErr(t, st.StoreLogs([]*raft.Log{again}), "StoreLogs again")
	assertBounds(t, st, 1, 4)
	var got raft.Log
	var readErr error
	read, ok := returnsWithin(50*time.Millisecond, func() { readErr = st.GetLog(4, &got) })
	if ok {
		t.Fatal("GetLog read entry 4 before badger held its new write")
	}
	release <- nil
	finished(t, read, "GetLog")
	requireNoErr(t, readErr, "GetLog")
	assertLogEqual(t, again, &got)
}

// A Store of its own takes one write at a time from its journal record to
// its badger commit: a write that fills the journal's file waits while an
// earlier one (here the stable store's, which hashicorp/raft may make beside
// a log truncation) is journaled but not yet in badger, so the rotator never
// checkpoints and removes a file with a record badger lacks.
func TestOwnStoreRotatesAfterBadger(t *testing.T) {
	defer func(n int64) { journalFileSize = n }(journalFileSize)
	journalFileSize = 4 << 10
	dir := t.TempDir()
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	var held atomic.Bool
	st := openStore(t, dir, Options{BeforeApply: func() error {
		if held.CompareAndSwap(false, true) { // the first write only
			<-release
		}
		return nil
	}})
	t.Cleanup(free) // runs before openStore's Close, which waits for the write

	var setErr, bigErr error
	set, ok := returnsWithin(50*time.Millisecond, func() { setErr = st.SetUint64([]byte("CurrentTerm"), 9) })
	if ok {
		t.Fatal("SetUint64 returned before its badger commit")
	}
	big, ok := returnsWithin(200*time.Millisecond, func() { bigErr = st.StoreLogs(testLogs(1, 200)) })
	if ok {
		t.Fatal("a write filled the journal's file while an earlier write was not yet in badger")
	}
	free()
	finished(t, set, "SetUint64")
	requireNoErr(t, setErr, "SetUint64")
	finished(t, big, "StoreLogs")
	requireNoErr(t, bigErr, "StoreLogs")
	journalSettles(t, dir, st)
	assertHasLogs(t, st, 1, 200, func(uint64) bool { return true })
	if v, err := st.GetUint64([]byte("CurrentTerm")); err != nil || v != 9 {
		t.Fatalf("CurrentTerm = %d, %v; want 9", v, err)
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
		requireNoErr(t, st.StoreLogs(testLogs(i, i)), "StoreLogs")
	}
	var got raft.Log
	var readErr error
	if _, ok := returnsWithin(5*time.Second, func() { readErr = st.GetLog(3, &got) }); !ok {
		t.Fatal("GetLog waited out the applier's linger")
	}
	requireNoErr(t, readErr, "GetLog")
	assertLogEqual(t, testLog(3), &got)
	if n := writes.Load(); n != 1 {
		t.Fatalf("badger writes for 3 batches = %d, want 1", n)
	}
	assertHasLogs(t, st, 1, 3, func(uint64) bool { return true })
}
