package group

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// wanted reports whether b has signalled for a snapshot (and takes the
// signal).
func wanted(b *logBytes) bool {
	select {
	case <-b.want:
		return true
	default:
		return false
	}
}

// With small entries the count settings decide: no snapshot is asked for
// before budget bytes, and a snapshot keeps the configured trailing count.
func TestLogBytesSmallEntries(t *testing.T) {
	b := newLogBytes(1<<20, 100)
	var set []uint64
	b.setTrailing = func(n uint64) { set = append(set, n) }
	for i := uint64(1); i <= 1000; i++ {
		b.applied(i, 100) // 100 KB in all
	}
	if wanted(b) {
		t.Fatal("a snapshot was asked for after 100 KB of a 1 MB budget")
	}
	b.captured()
	if len(set) != 0 {
		t.Fatalf("trailing logs set to %v; want the configured 100 left alone", set)
	}
}

// With large entries a snapshot is asked for once budget bytes have been
// applied since the last one, and it keeps only the entries the newest
// budget bytes hold.
func TestLogBytesLargeEntries(t *testing.T) {
	const budget, entry = 1 << 20, 100 << 10 // 1 MiB; entries of 100 KiB
	b := newLogBytes(budget, 10240)
	var set []uint64
	b.setTrailing = func(n uint64) { set = append(set, n) }
	i := uint64(0)
	for ; i < budget/entry; i++ { // 10 entries: 1,000 KiB
		b.applied(i+1, entry)
		if wanted(b) {
			t.Fatalf("a snapshot was asked for after %d entries (%d bytes) of a %d budget", i+1, (i+1)*entry, budget)
		}
	}
	b.applied(i+1, entry)
	i++
	if !wanted(b) {
		t.Fatalf("no snapshot asked for after %d bytes, budget %d", i*entry, budget)
	}
	for ; i < 40; i++ { // more come before the snapshot is taken
		b.applied(i+1, entry)
	}
	b.captured()
	if len(set) != 1 {
		t.Fatalf("trailing logs set %v times, want once", set)
	}
	// The kept entries hold at most budget bytes, and most of it (a mark
	// every budget/16 bytes).
	if kept := set[0] * entry; kept > budget || kept < budget-budget/16-entry {
		t.Fatalf("a snapshot keeps %d entries (%d bytes), want about %d bytes and no more", set[0], kept, budget)
	}
	// The count starts again from the snapshot.
	b.applied(i+1, entry)
	if wanted(b) {
		t.Fatal("a snapshot was asked for right after one was taken")
	}
	// The same count again is not set again.
	for j := uint64(2); j <= 20; j++ {
		b.applied(i+j, entry)
	}
	b.captured()
	if len(set) != 1 {
		t.Fatalf("trailing logs set again to the same count: %v", set)
	}
}

// A state larger than the budget is snapshotted only once the log since the
// last snapshot is as large as that snapshot; a restored snapshot counts as
// the last.
func TestLogBytesFollowsSnapshotSize(t *testing.T) {
	b := newLogBytes(1<<20, 10240)
	b.persisted(4 << 20)
	for i := uint64(1); i <= 3; i++ {
		b.applied(i, 1<<20)
	}
	if wanted(b) {
		t.Fatal("asked for a snapshot of a 4 MiB state after 3 MiB of log")
	}
	b.applied(4, 1<<20)
	if !wanted(b) {
		t.Fatal("no snapshot after 4 MiB of log with a 4 MiB snapshot")
	}
	b.restored()
	b.applied(5, 1<<20)
	if wanted(b) {
		t.Fatal("asked for a snapshot right after one was restored")
	}
}

// A group writing large values keeps its log within Config.LogBytes, about
// (it snapshots for the bytes, long before SnapshotThreshold entries), keeps
// every value, and restarts with them; lock-sized writes snapshot as before.
func TestLogKeptWithinBytes(t *testing.T) {
	dir := t.TempDir()
	const logBytes, value = 4 << 20, 256 << 10 // 4 MiB; values of 256 KiB
	cfg := Config{DataDir: dir, PeerAddr: "127.0.0.1:0", LogBytes: logBytes, ApplyTimeout: 5 * time.Second}
	s := openConfig(t, cfg)
	defer func() { s.Close() }()
	stat := func(name string) string {
		for _, kv := range s.Stats() {
			if kv[0] == name {
				return kv[1]
			}
		}
		return ""
	}
	// Lock-sized writes: 500 entries are far from 2 MiB.
	for i := range 500 {
		if v := do(s, "SET", fmt.Sprintf("small%d", i), "v"); v.IsError() {
			t.Fatalf("SET: %v", v)
		}
	}
	if n := stat("raft_snapshots_by_bytes"); n != "0" {
		t.Fatalf("raft_snapshots_by_bytes = %s after 500 small writes, want 0", n)
	}
	// 64 values of 256 KiB (16 MiB) to 8 keys: far fewer entries than the
	// 8192 of SnapshotThreshold.
	val := func(i int) string { return fmt.Sprintf("%07d", i) + strings.Repeat("v", value-7) }
	for i := range 64 {
		if v := do(s, "SET", fmt.Sprintf("big%d", i%8), val(i)); v.IsError() {
			t.Fatalf("SET: %v", v)
		}
	}
	// The snapshots are asked for on another goroutine: wait (bounded) for the
	// log to be cut back to what LogBytes holds: half of it since the last
	// snapshot, half kept after it, and the entries a snapshot in progress
	// lets in.
	var first, last uint64
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		first, _ = s.logs.FirstIndex()
		last, _ = s.logs.LastIndex()
		if (last-first+1)*value <= logBytes+logBytes/4 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("log holds entries %d-%d (%d MiB of values) 20s after 16 MiB of writes; LogBytes %d MiB (%s snapshots for bytes)",
				first, last, (last-first+1)*value>>20, logBytes>>20, stat("raft_snapshots_by_bytes"))
		}
	}
	if n := stat("raft_snapshots_by_bytes"); n == "0" {
		t.Fatal("the log was cut without a snapshot for its bytes")
	}
	t.Logf("log %d-%d after 64 writes of 256 KiB; %s snapshots for bytes", first, last, stat("raft_snapshots_by_bytes"))
	s.Close()
	snaps, _ := filepath.Glob(filepath.Join(dir, "group-0", "snapshots", "*"))
	if len(snaps) == 0 {
		t.Fatal("no snapshot on disk")
	}
	s = openConfig(t, cfg)
	for k := range 8 {
		if v := do(s, "GET", fmt.Sprintf("big%d", k)); v.String() != val(56+k) {
			t.Fatalf("big%d after restart: %.12q (%d bytes), want value %d", k, v.String(), len(v.String()), 56+k)
		}
	}
	if v := do(s, "GET", "small499"); v.String() != "v" {
		t.Fatalf("small499 after restart: %v", v)
	}
}
