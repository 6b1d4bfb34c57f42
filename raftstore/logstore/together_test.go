package logstore

import (
	"testing"

	"github.com/hashicorp/raft"
)

// TestStoreTogether: several groups' entries written by one call are one
// journal record (one fsync), each group's in its own log with its own
// bounds, and all of them are there after a reopen; a store of another
// Shared is refused and nothing is written.
func TestStoreTogether(t *testing.T) {
	dir := t.TempDir()
	const groups = 4
	sh, stores := openGroups(t, dir, groups)
	for round := range uint64(3) {
		var parts []LogWrite
		for g := groups - 1; g >= 0; g-- { // any order
			from := round*10 + 1
			parts = append(parts, LogWrite{Store: stores[g], Logs: []*raft.Log{
				{Index: from, Term: 1, Type: raft.LogCommand, Data: []byte{byte(g), 1}},
				{Index: from + 1, Term: 1, Type: raft.LogCommand, Data: []byte{byte(g), 2}},
			}})
		}
		before, _ := sh.Commits()
		if err := sh.StoreTogether(parts); err != nil {
			t.Fatal(err)
		}
		if after, calls := sh.Commits(); after != before+1 {
			t.Fatalf("round %d: %d journal records for one StoreTogether (%d calls)", round, after-before, calls)
		}
	}
	other, err := OpenShared(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := other.Group(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	bad := []LogWrite{{Store: stores[0], Logs: []*raft.Log{{Index: 99, Term: 1}}}, {Store: foreign, Logs: []*raft.Log{{Index: 1, Term: 1}}}}
	if err := sh.StoreTogether(bad); err == nil {
		t.Fatal("a store of another Shared was taken")
	}
	foreign.Close()
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	sh = reopenShared(t, dir, sh, stores)
	defer sh.Close()
	for g := range groups {
		st, err := sh.Group(g, nil)
		if err != nil {
			t.Fatal(err)
		}
		if first, last := mustBounds(t, st); first != 1 || last != 22 {
			t.Fatalf("group %d: bounds %d..%d after reopen, want 1..22", g, first, last)
		}
		for _, idx := range []uint64{1, 2, 11, 12, 21, 22} {
			var l raft.Log
			if err := st.GetLog(idx, &l); err != nil || l.Data[0] != byte(g) || l.Data[1] != byte(2-idx%2) {
				t.Fatalf("group %d entry %d: %v %v", g, idx, l.Data, err)
			}
		}
		st.Close()
	}
}

func mustBounds(t *testing.T, st *Store) (uint64, uint64) {
	t.Helper()
	first, err := st.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	last, err := st.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	return first, last
}
