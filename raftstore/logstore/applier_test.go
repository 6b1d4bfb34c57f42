package logstore

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// heldApplier opens a Shared in dir whose applier waits, before it writes
// each journaled batch into badger, until the test releases it (one batch
// per value sent on the returned channel; the value is the write's error),
// and its group 0. Both are closed when the test ends.
func heldApplier(t *testing.T, dir string) (*Shared, *Store, chan error) {
	t.Helper()
	release := make(chan error)
	stopped := make(chan struct{})
	sh, st := openGroup(t, dir, Options{BeforeApply: func() error {
		select {
		case err := <-release:
			return err
		case <-stopped:
			return nil // Close waits for the applier: let it finish
		}
	}})
	go func() { <-sh.stopped; close(stopped) }()
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

	if _, ok := returnsWithin(5*time.Second, func() {
		requireNoErr(t, st.StoreLogs(testLogs(1, 3)), "StoreLogs")
		requireNoErr(t, st.SetUint64([]byte("term"), 7), "SetUint64")
	}); !ok {
		t.Fatal("StoreLogs waited for badger, not only for the journal")
	}
	assertBounds(t, st, 1, 3)
	// Durable already: the journal alone gives the entries back.
	_, alone := openGroup(t, copyJournal(t, dir), Options{})
	assertHasLogs(t, alone, 1, 3, func(uint64) bool { return true })

	var got raft.Log
	read, ok := returnsWithin(50*time.Millisecond, func() { requireNoErr(t, st.GetLog(2, &got), "GetLog") })
	if ok {
		t.Fatal("GetLog read badger before the applier wrote the entry")
	}
	term, ok := returnsWithin(50*time.Millisecond, func() {
		v, err := st.GetUint64([]byte("term"))
		requireNoErr(t, err, "GetUint64")
		if v != 7 {
			t.Errorf("GetUint64(term) = %d, want 7", v)
		}
	})
	if ok {
		t.Fatal("GetUint64 read badger before the applier wrote the value")
	}
	// The two writes were one batch or two.
	for released := 0; ; released++ {
		select {
		case release <- nil:
			continue
		case <-term:
		case <-time.After(5 * time.Second):
			t.Fatalf("reads still wait after %d batches were written into badger", released)
		}
		break
	}
	<-read
	assertLogEqual(t, testLog(2), &got)

	// A write that fills the journal's file checkpoints it, which waits
	// until badger holds the records before.
	requireNoErr(t, st.StoreLogs(testLogs(4, 4)), "StoreLogs")
	big, ok := returnsWithin(50*time.Millisecond, func() { requireNoErr(t, st.StoreLogs(testLogs(5, 200)), "StoreLogs of a big batch") })
	if ok {
		t.Fatal("a checkpoint ran before badger held the journal's records")
	}
	release <- nil
	select {
	case <-big:
	case <-time.After(5 * time.Second):
		t.Fatal("the big write still waits after badger took the batch before it")
	}
	release <- nil
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
