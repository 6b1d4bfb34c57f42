package logstore

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// Groups in one shared DB keep separate logs and stable stores, survive a
// reopen with their own bounds, and concurrent appends all land.
func TestSharedGroupsAreSeparate(t *testing.T) {
	dir := t.TempDir()
	const groups, perGroup = 4, 50
	sh, stores := openGroups(t, dir, groups)
	var wg sync.WaitGroup
	for g, st := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perGroup {
				// Group g's log starts at 100*g+1: every group uses index 1..
				// ranges that overlap nothing in its neighbours' keys.
				idx := uint64(100*g + i + 1)
				if err := st.StoreLogs([]*raft.Log{{Index: idx, Term: uint64(g + 1), Type: raft.LogCommand, Data: []byte{byte(g)}}}); err != nil {
					t.Error(err)
				}
			}
			if err := st.SetUint64([]byte("CurrentTerm"), uint64(g+10)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// The same index in two groups holds each group's own entry.
	if err := stores[0].StoreLogs([]*raft.Log{{Index: 150, Term: 9, Type: raft.LogCommand, Data: []byte("zero")}}); err != nil {
		t.Fatal(err)
	}
	sh = reopenShared(t, dir, sh, stores)
	defer sh.Close()
	for g := range groups {
		st, err := sh.Group(g, nil)
		if err != nil {
			t.Fatal(err)
		}
		first, _ := st.FirstIndex()
		last, _ := st.LastIndex()
		wantLast := uint64(100*g + perGroup)
		if g == 0 {
			wantLast = 150
		}
		if first != uint64(100*g+1) || last != wantLast {
			t.Fatalf("group %d: bounds %d..%d, want %d..%d", g, first, last, 100*g+1, wantLast)
		}
		var l raft.Log
		if err := st.GetLog(uint64(100*g+1), &l); err != nil || l.Term != uint64(g+1) || l.Data[0] != byte(g) {
			t.Fatalf("group %d: first entry %+v, %v", g, l, err)
		}
		if g == 1 {
			if err := st.GetLog(150, &l); err != nil || l.Term != 2 || l.Data[0] != 1 {
				t.Fatalf("group 1 entry 150 = %+v, %v (group 0 wrote its own 150)", l, err)
			}
		}
		if term, err := st.GetUint64([]byte("CurrentTerm")); err != nil || term != uint64(g+10) {
			t.Fatalf("group %d: CurrentTerm %d, %v", g, term, err)
		}
		st.Close()
	}
	if txns, calls := sh.Commits(); txns != 0 || calls != 0 {
		t.Fatalf("a fresh Shared reports %d commits of %d calls", txns, calls)
	}
}

// TestSharedConcurrentAppends: many groups appending at once all get their
// entries written and answered, each exactly once, and they share
// transactions (and so fsyncs) instead of one each.
func TestSharedConcurrentAppends(t *testing.T) {
	sh, err := OpenShared(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	const groups, perGroup = 8, 100
	stores := make([]*Store, groups)
	for g := range stores {
		if stores[g], err = sh.Group(g, nil); err != nil {
			t.Fatal(err)
		}
		defer stores[g].Close()
	}
	var wg sync.WaitGroup
	errs := make(chan error, groups)
	for g, st := range stores {
		wg.Go(func() {
			for i := uint64(1); i <= perGroup; i++ {
				l := &raft.Log{Index: i, Term: 1, Data: []byte{byte(g), byte(i)}}
				if err := st.StoreLogs([]*raft.Log{l}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for g, st := range stores {
		for i := uint64(1); i <= perGroup; i++ {
			var l raft.Log
			if err := st.GetLog(i, &l); err != nil || l.Data[0] != byte(g) || l.Data[1] != byte(i) {
				t.Fatalf("group %d entry %d: %v %v", g, i, l.Data, err)
			}
		}
	}
	txns, calls := sh.Commits()
	if calls != groups*perGroup {
		t.Fatalf("%d StoreLogs calls written, want %d", calls, groups*perGroup)
	}
	if txns >= calls {
		t.Fatalf("%d calls took %d transactions: none shared", calls, txns)
	}
	t.Logf("%d calls in %d transactions", calls, txns)
}

// Deleting the head of a shared group's log (Raft's compaction) goes through
// the committer a chunk at a time: the log stays contiguous after each chunk,
// and another group's append queued meanwhile is written before the deletion
// ends instead of waiting behind all of it.
func TestSharedHeadDeletionInChunks(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	sh, err := OpenShared(t.TempDir(), Options{BeforeWrite: func() error {
		calls.Add(1)
		<-release
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Close() })
	a, err := sh.Group(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sh.Group(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}

	const n = 3*deleteChunk + 5
	logs := make([]*raft.Log, n)
	for i := range logs {
		logs[i] = &raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: []byte("entry")}
	}
	stored := make(chan error, 1)
	go func() { stored <- b.StoreLogs(logs) }()
	waitFor("the fill reached the committer", func() bool { return calls.Load() == 1 })
	release <- struct{}{}
	if err := <-stored; err != nil {
		t.Fatal(err)
	}

	deleted := make(chan error, 1)
	go func() { deleted <- b.DeleteRange(1, 3*deleteChunk) }()
	waitFor("the first chunk reached the committer", func() bool { return calls.Load() == 2 })
	release <- struct{}{}
	waitFor("the second chunk reached the committer", func() bool { return calls.Load() == 3 })
	if first, _ := b.FirstIndex(); first != deleteChunk+1 {
		t.Fatalf("after one chunk FirstIndex = %d, want %d", first, deleteChunk+1)
	}
	var l raft.Log
	if err := b.GetLog(deleteChunk, &l); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog(%d) after the first chunk: %v, want ErrLogNotFound", deleteChunk, err)
	}
	if err := b.GetLog(deleteChunk+1, &l); err != nil {
		t.Fatalf("GetLog(%d), the new head, after the first chunk: %v", deleteChunk+1, err)
	}

	appended := make(chan error, 1)
	go func() {
		appended <- a.StoreLogs([]*raft.Log{{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("other group")}})
	}()
	waitFor("the other group's append is queued", func() bool { return len(sh.reqs) == 1 })
	close(release)
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	if last, _ := a.LastIndex(); last != 1 {
		t.Fatalf("when the deletion returned, the other group's append queued before its last chunk was not written (LastIndex %d)", last)
	}
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	first, _ := b.FirstIndex()
	last, _ := b.LastIndex()
	if first != 3*deleteChunk+1 || last != n {
		t.Fatalf("after the deletion the log is [%d..%d], want [%d..%d]", first, last, 3*deleteChunk+1, n)
	}
	for i := uint64(3*deleteChunk + 1); i <= n; i++ {
		if err := b.GetLog(i, &l); err != nil {
			t.Fatalf("GetLog(%d) after the deletion: %v", i, err)
		}
	}
}
