package logstore

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// heldShared opens a Shared whose committer waits, before each batch, until
// the test releases it (one batch per value sent on the returned channel; the
// value is the batch's error). The Shared is closed when the test ends.
func heldShared(t *testing.T, dir string) (*Shared, chan error) {
	t.Helper()
	release := make(chan error)
	stopped := make(chan struct{})
	sh, err := OpenShared(dir, Options{BeforeWrite: func() error {
		select {
		case err := <-release:
			return err
		case <-stopped:
			return ErrClosed
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	go func() { <-sh.stopped; close(stopped) }()
	t.Cleanup(func() { sh.Close() })
	return sh, release
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
// waits for the deferred ones before it, and DeleteRange too.
func TestDeferredStoreLogs(t *testing.T) {
	dir := t.TempDir()
	sh, release := heldShared(t, dir)
	st, err := sh.Group(0, nil)
	if err != nil {
		t.Fatal(err)
	}
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
	// What a deferred write stored is on disk: a fresh Shared reads it.
	st.Close()
	if err := sh.Close(); err != nil {
		t.Fatal(err)
	}
	_, st2 := openGroup(t, dir, Options{})
	assertBounds(t, st2, 2, 6)
	assertHasLogs(t, st2, 2, 6, func(uint64) bool { return true })
	if d := st2.Durable(); d != 6 {
		t.Fatalf("Durable after reopening = %d, want 6", d)
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
