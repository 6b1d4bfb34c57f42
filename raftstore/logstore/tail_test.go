package logstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/raftstore/journal"
)

// badgerLogKeys counts the log entries of st that badger holds.
func badgerLogKeys(t *testing.T, st *Store) int {
	t.Helper()
	n := 0
	err := st.sh.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(st.logIteratorOptions(false))
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	requireNoErr(t, err, "badger scan")
	return n
}

// journalState returns the sequence numbers of st's journal files, oldest
// first, and the current file's.
func journalState(t *testing.T, dir string, st *Store) ([]uint64, uint64) {
	t.Helper()
	cur := st.journal().Current()
	seqs, err := journal.Files(filepath.Join(dir, "journal"))
	requireNoErr(t, err, "journal files")
	return seqs, cur
}

// fullFiles waits (5 s at most) until st's journal holds, besides the
// current file and the spare, only full files with log entries in them, at
// most max, and returns them.
func fullFiles(t *testing.T, dir string, st *Store, max int) []uint64 {
	t.Helper()
	var seqs []uint64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var cur uint64
		seqs, cur = journalState(t, dir, st)
		full := slices.DeleteFunc(slices.Clone(seqs), func(seq uint64) bool { return seq >= cur })
		if len(full) <= max && !slices.ContainsFunc(full, func(seq uint64) bool { return st.sh.tails.Live(seq) == 0 }) &&
			slices.Contains(seqs, cur) && slices.Contains(seqs, cur+1) {
			return full
		}
	}
	t.Fatalf("journal files %v: want at most %d full files, each with entries in the log", seqs, max)
	return nil
}

// Log entries stay in the journal's files, which are kept while entries in
// them are in the log; once Raft deletes the head of the log, the files that
// held it go; with more full files than journalKeepFiles, the oldest one's
// entries move into badger first. Every entry reads back throughout, and
// after a crash from the journal and what badger has.
func TestJournalHoldsTheLog(t *testing.T) { forEachJournalKind(t, testJournalHoldsTheLog) }

func testJournalHoldsTheLog(t *testing.T, open journalOpener) {
	defer func(n int64, k int) { journalFileSize, journalKeepFiles = n, k }(journalFileSize, journalKeepFiles)
	const keep = 3
	journalFileSize, journalKeepFiles = 4<<10, keep
	dir := t.TempDir()
	st, closeAll := open(t, dir)
	last := uint64(0)
	write := func(n uint64) { // ten entries per write, several writes per file
		t.Helper()
		for ; n > 0; n-- {
			requireNoErr(t, st.StoreLogs(testLogs(last+1, last+10)), "StoreLogs")
			last += 10
		}
	}
	for n := 0; len(fullFiles(t, dir, st, keep)) < 2; n++ {
		if n == 100 {
			t.Fatal("100 writes filled fewer than two journal files")
		}
		write(1)
	}
	if n := badgerLogKeys(t, st); n != 0 {
		t.Fatalf("badger holds %d log entries, want none: they are in the journal", n)
	}
	assertHasLogs(t, st, 1, last, func(uint64) bool { return true })

	// Raft compacts: the full files' entries leave the log, and the next
	// switch of files removes them.
	before := fullFiles(t, dir, st, keep)
	requireNoErr(t, st.DeleteRange(1, last-5), "DeleteRange of the head")
	first := last - 4
	for n, cur := 0, uint64(0); ; n++ {
		if n == 0 {
			_, cur = journalState(t, dir, st)
		} else if _, now := journalState(t, dir, st); now > cur {
			break
		} else if n == 100 {
			t.Fatal("100 writes did not fill the journal's file")
		}
		write(1)
	}
	for _, seq := range fullFiles(t, dir, st, keep) {
		if slices.Contains(before, seq) && seq != before[len(before)-1] {
			t.Fatalf("full file %d, whose entries were all deleted, is still there", seq)
		}
	}
	if n := badgerLogKeys(t, st); n != 0 {
		t.Fatalf("badger holds %d log entries after the compaction, want none", n)
	}
	assertBounds(t, st, first, last)
	assertHasLogs(t, st, first-10, last, func(i uint64) bool { return i >= first })

	// No compaction: beyond journalKeepFiles full files, the oldest one's
	// entries move into badger and it goes.
	for n := 0; badgerLogKeys(t, st) == 0; n++ {
		if n == 300 {
			t.Fatal("300 writes moved no entry into badger")
		}
		write(1)
	}
	fullFiles(t, dir, st, keep)
	moved := badgerLogKeys(t, st)
	if in, ok := st.tail.Seek(0, false); !ok || in != first+uint64(moved) {
		t.Fatalf("the journal's entries start at %d (%v), want %d: right after badger's %d", in, ok, first+uint64(moved), moved)
	}
	assertBounds(t, st, first, last)
	assertHasLogs(t, st, first-10, last, func(i uint64) bool { return i >= first })

	// The end of the log cut, across badger and journal.
	cut := first + uint64(moved) - 3
	requireNoErr(t, st.DeleteRange(cut, last), "DeleteRange of the end")
	requireNoErr(t, st.StoreLogs(testLogs(cut, cut+1)), "StoreLogs after the cut")
	last = cut + 1
	assertBounds(t, st, first, last)
	assertHasLogs(t, st, first, last+20, func(i uint64) bool { return i <= last })

	// A crash: the journal and badger's files as they are (badger synced
	// them at each file's removal; what it has not may be lost).
	crashed := t.TempDir()
	requireNoErr(t, os.CopyFS(crashed, os.DirFS(dir)), "copy")
	requireNoErr(t, closeAll(), "Close")
	if seqs, err := journal.Files(filepath.Join(dir, "journal")); err != nil || len(seqs) != 0 {
		t.Fatalf("journal files after Close: %v %v, want none", seqs, err)
	}
	again, _ := open(t, crashed)
	assertBounds(t, again, first, last)
	assertHasLogs(t, again, first-10, last+20, func(i uint64) bool { return i >= first && i <= last })
	// A clean stop moved every entry into badger.
	clean, _ := open(t, dir)
	assertBounds(t, clean, first, last)
	assertHasLogs(t, clean, first-10, last+20, func(i uint64) bool { return i >= first && i <= last })
}

// A crash after entries moved into badger but before their journal file was
// removed leaves them in both; the next open keeps the journal's, so a later
// deletion does not leave badger's copy behind to come back.
func TestMovedEntriesInBothPlaces(t *testing.T) { forEachJournalKind(t, testMovedInBoth) }

func testMovedInBoth(t *testing.T, open journalOpener) {
	dir := t.TempDir()
	st, closeAll := open(t, dir)
	requireNoErr(t, st.StoreLogs(testLogs(1, 20)), "StoreLogs")
	journalOnly := copyJournal(t, dir)
	requireNoErr(t, closeAll(), "Close") // moves 1..20 into badger, removes the journal
	if err := os.CopyFS(filepath.Join(dir, "journal"), os.DirFS(filepath.Join(journalOnly, "journal"))); err != nil {
		t.Fatal(err)
	}
	both, closeBoth := open(t, dir)
	if n := badgerLogKeys(t, both); n != 0 {
		t.Fatalf("badger still holds %d entries the journal holds", n)
	}
	assertHasLogs(t, both, 1, 20, func(uint64) bool { return true })
	requireNoErr(t, both.DeleteRange(15, 20), "DeleteRange of the end")
	requireNoErr(t, closeBoth(), "Close")
	after, _ := open(t, dir)
	assertBounds(t, after, 1, 14)
	assertHasLogs(t, after, 1, 20, func(i uint64) bool { return i <= 14 })
	var got raft.Log
	if err := after.GetLog(17, &got); !errors.Is(err, ErrLogNotFound) {
		t.Fatalf("GetLog(17) = %v, want ErrLogNotFound", err)
	}
}

// An entry stored again over one that moved into badger (the store's
// contract allows it; hashicorp/raft deletes the old one first) reads as
// stored again, and deleting it leaves no older copy behind to come back.
func TestStoredAgainOverMovedEntry(t *testing.T) { forEachJournalKind(t, testStoredAgainOverMoved) }

func testStoredAgainOverMoved(t *testing.T, open journalOpener) {
	dir := t.TempDir()
	st, closeAll := open(t, dir)
	requireNoErr(t, st.StoreLogs(testLogs(1, 10)), "StoreLogs")
	if n, err := st.journal().Move(st.tail, 0, 0); err != nil || n != 10 {
		t.Fatalf("moved %d entries into badger (%v), want 10", n, err)
	}
	again := testLog(8)
	again.Term, again.Data = 9, []byte("stored again")
	requireNoErr(t, st.StoreLogs([]*raft.Log{again}), "StoreLogs again")
	var got raft.Log
	requireNoErr(t, st.GetLog(8, &got), "GetLog")
	assertLogEqual(t, again, &got)
	requireNoErr(t, st.DeleteRange(8, 10), "DeleteRange of the end")
	assertBounds(t, st, 1, 7)
	requireNoErr(t, closeAll(), "Close")
	after, _ := open(t, dir)
	assertBounds(t, after, 1, 7)
	assertHasLogs(t, after, 1, 10, func(i uint64) bool { return i <= 7 })
}

// Readers, appends, head deletions and moves into badger at once (small
// files, one kept: entries move while they are read and deleted): every read
// of an entry in the log gives the entry, whichever place it is in.
func TestTailUnderConcurrentMoves(t *testing.T) { forEachJournalKind(t, testTailConcurrent) }

func testTailConcurrent(t *testing.T, open journalOpener) {
	defer func(n int64, k int) { journalFileSize, journalKeepFiles = n, k }(journalFileSize, journalKeepFiles)
	journalFileSize, journalKeepFiles = 4<<10, 1
	dir := t.TempDir()
	st, closeAll := open(t, dir)
	// Readers read [floor, last]; floor rises before a deletion starts, so an
	// entry not found must be below it by then.
	var last atomic.Uint64
	var floor atomic.Uint64
	floor.Store(1)
	done := make(chan struct{})
	errs := make(chan error, 4)
	var found atomic.Int64
	for r := 0; r < 3; r++ {
		go func(seed uint64) {
			var got raft.Log
			for i := seed; ; i += 7 {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				lo, hi := floor.Load(), last.Load()
				if hi < lo {
					continue
				}
				idx := lo + i%(hi-lo+1)
				err := st.GetLog(idx, &got)
				switch {
				case errors.Is(err, ErrLogNotFound):
					if idx >= floor.Load() {
						errs <- fmt.Errorf("entry %d not found; no deletion reached it", idx)
						return
					}
				case err != nil:
					errs <- err
					return
				default:
					if want := testLog(idx); got.Term != want.Term || string(got.Data) != string(want.Data) {
						errs <- fmt.Errorf("entry %d read back as %+v", idx, got)
						return
					}
					found.Add(1)
				}
			}
		}(uint64(r))
	}
	for n := uint64(1); n <= 400; n++ {
		from := (n-1)*10 + 1
		if err := st.StoreLogs(testLogs(from, from+9)); err != nil {
			t.Fatal(err)
		}
		last.Store(from + 9)
		if n%25 == 0 { // Raft's compaction, keeping the newest 150
			floor.Store(from + 9 - 150 + 1)
			if err := st.DeleteRange(1, from+9-150); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	for r := 0; r < 3; r++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if found.Load() == 0 {
		t.Fatal("no read found an entry")
	}
	// The rotator checkpoints full files in the background: on a busy
	// machine the last ones may still be on their way.
	for deadline := time.Now().Add(10 * time.Second); badgerLogKeys(t, st) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no entry moved into badger: the test did not exercise moves")
		}
	}
	assertBounds(t, st, 4000-150+1, 4000)
	requireNoErr(t, closeAll(), "Close")
	again, _ := open(t, dir)
	assertBounds(t, again, 4000-150+1, 4000)
	assertHasLogs(t, again, 3800, 4000, func(i uint64) bool { return i > 4000-150 })
}

// An entry stored again over one in badger queues the deletion of badger's
// copy with the applier; when the entry's own file is moved into badger, that
// deletion goes first, not after the move (which would delete the entry).
func TestMoveWaitsForQueuedDeletion(t *testing.T) {
	defer func(n int64, k int) { journalFileSize, journalKeepFiles = n, k }(journalFileSize, journalKeepFiles)
	journalFileSize, journalKeepFiles = 4<<10, 0
	dir := t.TempDir()
	held := make(chan struct{}, 1) // the applier waits in BeforeApply
	free := make(chan struct{})
	var once sync.Once
	letGo := func() { once.Do(func() { close(free) }) }
	_, st := openGroup(t, dir, Options{BeforeApply: func() error {
		select {
		case held <- struct{}{}:
		default:
		}
		<-free
		return nil
	}})
	t.Cleanup(letGo) // runs before openGroup's Close
	requireNoErr(t, st.StoreLogs(testLogs(1, 10)), "StoreLogs")
	if n, err := st.journal().Move(st.tail, 0, 0); err != nil || n != 10 {
		t.Fatalf("moved %d entries into badger (%v), want 10", n, err)
	}
	again := testLog(8)
	again.Term, again.Data = 9, []byte("stored again")
	requireNoErr(t, st.StoreLogs([]*raft.Log{again}), "StoreLogs again") // badger's 8 to delete: held
	select {
	case <-held:
	case <-time.After(5 * time.Second):
		t.Fatal("the applier never took the deletion of badger's copy")
	}
	// Whoever waits for the applier (badgerLag.wait) leaves a token in
	// hurry, which the applier, held, does not take: nothing but the
	// rotator, once the file below is full, waits for it here.
	waits := func() bool { return len(st.sh.lag.hurry) > 0 }
	if waits() {
		t.Fatal("something waits for the applier before the journal's file is full")
	}
	requireNoErr(t, st.StoreLogs(testLogs(11, 200)), "StoreLogs that fills the file")
	for deadline := time.Now().Add(5 * time.Second); !waits(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the rotator never waited for the applier")
		}
	}
	letGo()
	journalSettles(t, dir, st)
	var got raft.Log
	requireNoErr(t, st.GetLog(8, &got), "GetLog(8)")
	assertLogEqual(t, again, &got)
}
