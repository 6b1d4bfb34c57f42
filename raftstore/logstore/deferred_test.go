package logstore

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// heldShared opens a Shared whose committer waits, before each batch, until
// the test releases it (one batch per value sent on the returned channel; the
// value is the batch's error). The Shared is closed when the test ends.
func heldShared(t *testing.T, dir string) (*Shared, chan error) {
	t.Helper()
	opts, release, stopped := heldOptions()
	sh, err := OpenShared(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	go func() { <-sh.stopped; close(stopped) }()
	t.Cleanup(func() { sh.Close() })
	return sh, release
}

// heldCommitted is heldShared for the Store of Open, whose writes that do
// not defer take the committer's turn on their own goroutine: the hook holds
// them just the same.
func heldCommitted(t *testing.T, dir string) (*Store, chan error) {
	t.Helper()
	opts, release, stopped := heldOptions()
	st, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	go func() { <-st.sh.stopped; close(stopped) }()
	t.Cleanup(func() { st.Close() })
	return st, release
}

// heldOptions are the Options of heldShared and heldCommitted: every batch
// waits for a value on release, until stopped is closed.
func heldOptions() (opts Options, release chan error, stopped chan struct{}) {
	release, stopped = make(chan error), make(chan struct{})
	opts.BeforeWrite = func() error {
		select {
		case err := <-release:
			return err
		case <-stopped:
			return ErrClosed
		}
	}
	return opts, release, stopped
}

// finished fails the test unless done (from returnsWithin) is closed within
// 5 s.
func finished(t *testing.T, done chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s still blocked", what)
	}
}

// returnsWithin runs f and reports whether it returned within d.
func returnsWithin(d time.Duration, f func()) (chan struct{}, bool) {
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
		return done, true
	case <-time.After(d):
		return done, false
	}
}

// A deferred StoreLogs returns before its batch is written; its entries are
// readable and counted at once, Durable stays below them and WaitDurable
// blocks until the committer has written them; a write that does not defer
// waits for the deferred ones before it, and DeleteRange too. For a group of
// a Shared, and for Open's Store, whose writes that do not defer are
// written on their caller's goroutine when nothing is queued, never before
// what is.
func TestDeferredStoreLogs(t *testing.T) {
	t.Run("group", func(t *testing.T) {
		dir := t.TempDir()
		sh, release := heldShared(t, dir)
		st, err := sh.Group(0, nil)
		if err != nil {
			t.Fatal(err)
		}
		testDeferredStoreLogs(t, st, release, func() *Store {
			st.Close()
			if err := sh.Close(); err != nil {
				t.Fatal(err)
			}
			_, st2 := openGroup(t, dir, Options{})
			return st2
		})
	})
	t.Run("committed", func(t *testing.T) {
		dir := t.TempDir()
		st, release := heldCommitted(t, dir)
		testDeferredStoreLogs(t, st, release, func() *Store {
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			st2, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st2.Close() })
			return st2
		})
	})
}

// testDeferredStoreLogs runs TestDeferredStoreLogs on st, whose batches each
// wait for a value on release; reopen closes st and opens its files again.
func testDeferredStoreLogs(t *testing.T, st *Store, release chan error, reopen func() *Store) {
	deferring := true
	st.DeferSyncWhen(func() bool { return deferring })

	if _, ok := returnsWithin(5*time.Second, func() { requireNoErr(t, st.StoreLogs(testLogs(1, 3)), "deferred StoreLogs") }); !ok {
		t.Fatal("a deferred StoreLogs waited for the committer")
	}
	assertBounds(t, st, 1, 3)
	var got raft.Log
	requireNoErr(t, st.GetLog(2, &got), "GetLog of a pending entry")
	assertLogEqual(t, testLog(2), &got)
	if d := st.Durable(); d != 0 {
		t.Fatalf("Durable = %d before the committer wrote anything, want 0", d)
	}
	waited, ok := returnsWithin(50*time.Millisecond, func() { requireNoErr(t, st.WaitDurable(3), "WaitDurable") })
	if ok {
		t.Fatal("WaitDurable(3) returned before the entries were written")
	}
	if _, ok := returnsWithin(5*time.Second, func() { requireNoErr(t, st.WaitDurable(0), "WaitDurable(0)") }); !ok {
		t.Fatal("WaitDurable of what is already on disk blocked")
	}

	// A second deferred write, then one that does not defer: the latter
	// returns only once all three batches are written.
	requireNoErr(t, st.StoreLogs(testLogs(4, 5)), "second deferred StoreLogs")
	deferring = false
	synced, ok := returnsWithin(50*time.Millisecond, func() { requireNoErr(t, st.StoreLogs(testLogs(6, 6)), "synced StoreLogs") })
	if ok {
		t.Fatal("a synced StoreLogs returned before the committer wrote it")
	}
	deleted, ok := returnsWithin(50*time.Millisecond, func() { requireNoErr(t, st.DeleteRange(1, 1), "DeleteRange") })
	if ok {
		t.Fatal("DeleteRange ran before the deferred writes were on disk")
	}
	// The committer takes whatever is queued as one batch: two or three,
	// then the deletion's.
	for released := 0; ; released++ {
		select {
		case release <- nil:
			continue
		case <-deleted:
		case <-time.After(5 * time.Second):
			t.Fatalf("DeleteRange still waits after %d batches were written", released)
		}
		break
	}
	for name, ch := range map[string]chan struct{}{"WaitDurable": waited, "synced StoreLogs": synced, "DeleteRange": deleted} {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s still blocked after every batch was written", name)
		}
	}
	if d := st.Durable(); d != 6 {
		t.Fatalf("Durable = %d after every batch was written, want 6", d)
	}
	assertBounds(t, st, 2, 6)
	// What a deferred write stored is on disk: a fresh store reads it.
	st2 := reopen()
	assertBounds(t, st2, 2, 6)
	assertHasLogs(t, st2, 2, 6, func(uint64) bool { return true })
	if d := st2.Durable(); d != 6 {
		t.Fatalf("Durable after reopening = %d, want 6", d)
	}
}

// Open's Store writes what it does not defer on the caller's
// goroutine only when nothing is queued before it: behind a deferred write
// that the committer has not finished, it does not (the write then goes
// through the committer, after it); once that is on disk, it does.
func TestCommittedWritesInlineOnlyWhenNothingQueued(t *testing.T) {
	st, release := heldCommitted(t, t.TempDir())
	st.DeferSyncWhen(func() bool { return true })
	requireNoErr(t, st.StoreLogs(testLogs(1, 3)), "deferred StoreLogs")
	var done bool
	var err error
	if _, ok := returnsWithin(5*time.Second, func() { done, err = st.sh.writeInline([]*setsReq{{}}, false) }); !ok {
		go func() { // let the held writes go, so that the store closes
			for {
				release <- nil
			}
		}()
		t.Fatal("writeInline behind a queued deferred write is writing (held at the hook), ahead of it")
	}
	if done || err != nil {
		t.Fatalf("writeInline behind a queued deferred write: done %v, err %v; want not done", done, err)
	}
	release <- nil
	if _, ok := returnsWithin(5*time.Second, func() { requireNoErr(t, st.WaitDurable(3), "WaitDurable") }); !ok {
		t.Fatal("the deferred write was not written")
	}
	go func() { release <- nil }() // the inline write's turn at the hook
	if done, err = st.sh.writeInline([]*setsReq{{}}, false); !done || err != nil {
		t.Fatalf("writeInline with nothing queued: done %v, err %v; want done", done, err)
	}
}

// A deferred write that fails is never reported durable: WaitDurable returns
// ErrNotDurable for it, and every later write of the Store fails.
func TestDeferredWriteFailure(t *testing.T) {
	sh, release := heldShared(t, t.TempDir())
	st, err := sh.Group(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.DeferSyncWhen(func() bool { return true })
	requireNoErr(t, st.StoreLogs(testLogs(1, 2)), "deferred StoreLogs")
	disk := errors.New("injected fsync failure")
	release <- disk
	err = st.WaitDurable(2)
	if !errors.Is(err, ErrNotDurable) || !errors.Is(err, disk) {
		t.Fatalf("WaitDurable after a failed write = %v, want ErrNotDurable wrapping the cause", err)
	}
	if d := st.Durable(); d != 0 {
		t.Fatalf("Durable = %d after a failed write, want 0", d)
	}
	if err := st.StoreLogs(testLogs(3, 3)); !errors.Is(err, ErrNotDurable) {
		t.Fatalf("a write after a failed one = %v, want ErrNotDurable", err)
	}
	st.DeferSyncWhen(nil)
	if err := st.StoreLogs(testLogs(3, 3)); !errors.Is(err, ErrNotDurable) {
		t.Fatalf("a synced write after a failed one = %v, want ErrNotDurable", err)
	}
}

// What a Store wrote (entries in its journal and in badger, truncations of
// both ends, stable values, deferred writes once durable) reads back after a
// clean stop and after a crash (the directory copied as it was, the
// journal's tail not yet moved into badger), whether the Store was alone in
// its directory (Open) or a group of a Shared, and the log goes on from
// there; the reopened store's next restart finds it all again.
func TestReopenReadsBackWhatWasWritten(t *testing.T) {
	for _, k := range journalKinds {
		for _, crash := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s-crash-%v", k.name, crash), func(t *testing.T) {
				dir := t.TempDir()
				st, closeAll := k.open(t, dir)
				st.DeferSyncWhen(func() bool { return true })
				requireNoErr(t, st.StoreLogs(testLogs(1, 100)), "StoreLogs")
				requireNoErr(t, st.DeleteRange(1, 10), "DeleteRange of the head")
				requireNoErr(t, st.StoreLogs(testLogs(101, 120)), "StoreLogs")
				requireNoErr(t, st.DeleteRange(115, 120), "DeleteRange of the end")
				requireNoErr(t, st.StoreLogs(testLogs(115, 130)), "StoreLogs")
				requireNoErr(t, st.WaitDurable(130), "WaitDurable")
				requireNoErr(t, st.Set([]byte("k"), []byte("v")), "Set")
				requireNoErr(t, st.SetUint64([]byte("n"), 7), "SetUint64")
				if crash {
					crashed := t.TempDir()
					requireNoErr(t, os.CopyFS(crashed, os.DirFS(dir)), "copy")
					dir = crashed
				}
				requireNoErr(t, closeAll(), "Close")

				again, closeAgain := k.open(t, dir)
				assertBounds(t, again, 11, 130)
				assertHasLogs(t, again, 1, 140, func(i uint64) bool { return i >= 11 && i <= 130 })
				if v, err := again.Get([]byte("k")); err != nil || string(v) != "v" {
					t.Fatalf("Get(k) = %q, %v; want \"v\"", v, err)
				}
				if n, err := again.GetUint64([]byte("n")); err != nil || n != 7 {
					t.Fatalf("GetUint64(n) = %d, %v; want 7", n, err)
				}
				requireNoErr(t, again.StoreLogs(testLogs(131, 140)), "StoreLogs after the reopen")
				requireNoErr(t, closeAgain(), "Close")

				back, _ := k.open(t, dir)
				assertBounds(t, back, 11, 140)
				assertHasLogs(t, back, 1, 150, func(i uint64) bool { return i >= 11 && i <= 140 })
			})
		}
	}
}
