package command

import "testing"

// TestMergeMetaRejectsDuplicates: a hand-written entry may not shadow a
// generated one (or the reverse); merging such tables panics.
func TestMergeMetaRejectsDuplicates(t *testing.T) {
	a := map[string]CommandMeta{"get": {Arity: 2}}
	b := map[string]CommandMeta{"fence": {Arity: -2}}
	if m := mergeMeta(a, b); len(m) != 2 || m["get"].Arity != 2 || m["fence"].Arity != -2 {
		t.Fatalf("mergeMeta(a, b) = %v", m)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("mergeMeta accepted two entries for get")
		}
	}()
	mergeMeta(a, b, map[string]CommandMeta{"get": {Arity: 3}})
}

// TestMetaSources: metaTable is exactly redisMeta and lockdMeta, and Meta
// finds an entry of each in any case.
func TestMetaSources(t *testing.T) {
	if len(metaTable) != len(redisMeta)+len(lockdMeta) {
		t.Fatalf("metaTable has %d entries, redisMeta %d and lockdMeta %d", len(metaTable), len(redisMeta), len(lockdMeta))
	}
	for _, name := range []string{"GET", "Client|Kill", "LOCK.ACQUIRE", "raft|add"} {
		if _, ok := Meta(name); !ok {
			t.Errorf("Meta(%q) not found", name)
		}
	}
	if _, ok := redisMeta["lock.acquire"]; ok {
		t.Error("redisMeta describes lock.acquire, a lockd command")
	}
}
