//go:build faults

package logstore

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func faultyLogs(from, to uint64) []*raft.Log {
	var out []*raft.Log
	for i := from; i <= to; i++ {
		out = append(out, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte{byte(i)}})
	}
	return out
}

func TestFaultyPassesThrough(t *testing.T) {
	inner := openStore(t, t.TempDir(), Options{InMemory: true})
	f := NewFaulty(inner)
	if err := f.StoreLogs(faultyLogs(1, 5)); err != nil {
		t.Fatal(err)
	}
	if err := f.DeleteRange(4, 5); err != nil {
		t.Fatal(err)
	}
	first, _ := f.FirstIndex()
	last, _ := f.LastIndex()
	if first != 1 || last != 3 {
		t.Fatalf("first, last = %d, %d; want 1, 3", first, last)
	}
	var l raft.Log
	if err := inner.GetLog(3, &l); err != nil || l.Data[0] != 3 {
		t.Fatalf("the wrapped store holds %v, %v", l, err)
	}
}

func TestFaultySlowAndFailingWrites(t *testing.T) {
	inner := openStore(t, t.TempDir(), Options{InMemory: true})
	f := NewFaulty(inner)
	const d = 50 * time.Millisecond
	f.SetWriteDelay(d)
	start := time.Now()
	if err := f.StoreLog(faultyLogs(1, 1)[0]); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < d {
		t.Fatalf("a write with %v of injected delay took %v", d, el)
	}
	f.SetWriteDelay(0)
	f.SetFailWrites(true)
	if err := f.StoreLogs(faultyLogs(2, 3)); !errors.Is(err, ErrInjected) {
		t.Fatalf("StoreLogs with failing writes: %v, want ErrInjected", err)
	}
	if err := f.DeleteRange(1, 1); !errors.Is(err, ErrInjected) {
		t.Fatalf("DeleteRange with failing writes: %v, want ErrInjected", err)
	}
	if last, _ := inner.LastIndex(); last != 1 {
		t.Fatalf("a failed write reached the disk: last index %d", last)
	}
	f.SetFailWrites(false)
	if err := f.StoreLogs(faultyLogs(2, 3)); err != nil {
		t.Fatal(err)
	}
	if w, failed := f.Counts(); w != 4 || failed != 2 {
		t.Fatalf("Counts = %d, %d; want 4, 2", w, failed)
	}
}

// The planted bug: writes are acknowledged and readable, but reach the disk
// only after the lag, so closing (a crash) before then loses them.
func TestFaultyLyingDiskLosesAcknowledgedWrites(t *testing.T) {
	dir := t.TempDir()
	inner, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := NewFaulty(inner)
	if err := f.StoreLogs(faultyLogs(1, 2)); err != nil {
		t.Fatal(err)
	}
	if err := f.SetLyingDisk(time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := f.StoreLogs(faultyLogs(3, 6)); err != nil {
		t.Fatal(err)
	}
	// Raft truncating a conflicting suffix and writing it again.
	if err := f.DeleteRange(5, 6); err != nil {
		t.Fatal(err)
	}
	if err := f.StoreLogs([]*raft.Log{{Index: 5, Term: 2, Type: raft.LogCommand, Data: []byte{50}}}); err != nil {
		t.Fatal(err)
	}
	var l raft.Log
	if last, _ := f.LastIndex(); last != 5 {
		t.Fatalf("LastIndex = %d, want 5", last)
	}
	if err := f.GetLog(5, &l); err != nil || l.Term != 2 || l.Data[0] != 50 {
		t.Fatalf("GetLog(5) = %+v, %v", l, err)
	}
	if err := inner.Close(); err != nil { // the crash
		t.Fatal(err)
	}
	again := openStore(t, dir, Options{})
	if last, _ := again.LastIndex(); last != 2 {
		t.Fatalf("after the crash the disk holds up to %d; the lying disk should have lost 3..5", last)
	}

	// With the lag over (or the bug switched off) the entries are written.
	f2 := NewFaulty(again)
	if err := f2.SetLyingDisk(time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := f2.StoreLogs(faultyLogs(3, 4)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for last, _ := again.LastIndex(); last != 4; last, _ = again.LastIndex() {
		if time.Now().After(deadline) {
			t.Fatalf("pending entries not written within 5s (disk last %d)", last)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := f2.StoreLogs(faultyLogs(5, 5)); err != nil {
		t.Fatal(err)
	}
	if err := f2.SetLyingDisk(0); err != nil {
		t.Fatal(err)
	}
	if last, _ := again.LastIndex(); last != 5 {
		t.Fatalf("switching the bug off left the disk at %d, want 5", last)
	}
}

// A Faulty store reports the durability of the Store it wraps (a deferred
// write counts once written), except while its disk lies: then everything it
// acknowledged counts as on disk at once, the fsync's lie with the write's.
func TestFaultyDurability(t *testing.T) {
	sh, release := heldShared(t, t.TempDir())
	st, err := sh.Group(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.DeferSyncWhen(func() bool { return true })
	f := NewFaulty(st)

	requireNoErr(t, f.StoreLogs(testLogs(1, 3)), "deferred StoreLogs")
	if d := f.Durable(); d != 0 {
		t.Fatalf("Durable = %d with the write held, want 0", d)
	}
	waited, ok := returnsWithin(50*time.Millisecond, func() { requireNoErr(t, f.WaitDurable(3), "WaitDurable") })
	if ok {
		t.Fatal("WaitDurable(3) returned before the held write was on disk")
	}
	release <- nil
	finished(t, waited, "WaitDurable(3) after the write")
	if d := f.Durable(); d != 3 {
		t.Fatalf("Durable = %d after the write, want 3", d)
	}

	requireNoErr(t, f.SetLyingDisk(time.Hour), "SetLyingDisk")
	requireNoErr(t, f.StoreLogs(testLogs(4, 6)), "StoreLogs on the lying disk")
	if d := f.Durable(); d != 6 {
		t.Fatalf("Durable = %d on the lying disk, want 6 (all it acknowledged)", d)
	}
	if _, ok := returnsWithin(5*time.Second, func() { requireNoErr(t, f.WaitDurable(6), "WaitDurable") }); !ok {
		t.Fatal("WaitDurable(6) on the lying disk waited")
	}
	if d := st.Durable(); d != 3 {
		t.Fatalf("the wrapped store's Durable = %d, want 3: the lie never reached it", d)
	}
	go func() { release <- nil }() // SetLyingDisk(0) writes what is pending, deferred
	requireNoErr(t, f.SetLyingDisk(0), "SetLyingDisk(0)")
	requireNoErr(t, f.WaitDurable(6), "WaitDurable(6) once honest")
	if d := f.Durable(); d != 6 {
		t.Fatalf("Durable = %d once the pending writes were written, want 6", d)
	}
}
