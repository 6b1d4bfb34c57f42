package journal

import (
	"math"
	"slices"
	"testing"
)

// tailIndexes lists the indexes a tail holds, in order.
func tailIndexes(t *Tail) []uint64 {
	idx, _ := t.Entries(0, math.MaxUint64, 0, 0)
	return idx
}

// seqRange lists from..to.
func seqRange(from, to uint64) []uint64 {
	var out []uint64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// A tail keeps runs of indexes with gaps, replaces an entry stored again,
// splits a run cut in its middle, joins the runs an entry bridges, and
// handles the highest index there is.
func TestTailRuns(t *testing.T) {
	live := newLiveFiles()
	tl := newTail(live)
	var d liveDelta
	put := func(from, to, seq uint64) {
		tl.mu.Lock()
		for i := from; ; i++ { // to may be the highest index
			tl.put(i, Loc{Seq: seq, Off: int64(i), N: 1}, &d)
			if i == to {
				break
			}
		}
		tl.mu.Unlock()
		d.flush(live)
	}
	remove := func(from, to uint64) (n int) {
		tl.mu.Lock()
		for i := from; ; i++ {
			if tl.remove(i, &d) {
				n++
			}
			if i == to {
				break
			}
		}
		tl.mu.Unlock()
		d.flush(live)
		return n
	}
	want := func(what string, idx []uint64) {
		t.Helper()
		if got := tailIndexes(tl); !slices.Equal(got, idx) {
			t.Fatalf("%s: tail holds %v, want %v", what, got, idx)
		}
	}

	put(10, 20, 1)
	put(30, 35, 1) // a gap: a follower's log after a snapshot
	want("two runs", append(seqRange(10, 20), seqRange(30, 35)...))
	if got := live.count(1); got != 17 {
		t.Fatalf("live count of file 1 = %d, want 17", got)
	}
	put(15, 16, 2) // stored again
	if l, ok := tl.Get(15); !ok || l.Seq != 2 {
		t.Fatalf("entry 15 = %+v, %v: want it in file 2", l, ok)
	}
	if live.count(1) != 15 || live.count(2) != 2 {
		t.Fatalf("live counts = %d, %d; want 15, 2", live.count(1), live.count(2))
	}
	if n := remove(18, 18); n != 1 { // the middle of a run
		t.Fatalf("removed %d entries, want 1", n)
	}
	put(21, 21, 2) // after the left part's end: must not overwrite the right part
	want("split", append(append(seqRange(10, 17), seqRange(19, 21)...), seqRange(30, 35)...))
	if l, ok := tl.Get(19); !ok || l.Seq != 1 || l.Off != 19 {
		t.Fatalf("entry 19 = %+v, %v after the split", l, ok)
	}
	put(18, 18, 3) // bridges two runs
	put(22, 29, 3) // and this the next gap
	want("joined", seqRange(10, 35))
	if len(tl.segs) != 1 {
		t.Fatalf("%d runs, want 1", len(tl.segs))
	}
	put(9, 9, 3) // just before the run
	if n := remove(9, 12); n != 4 {
		t.Fatalf("removed %d from the head, want 4", n)
	}
	if n := remove(34, 40); n != 2 {
		t.Fatalf("removed %d from the end, want 2", n)
	}
	want("both ends cut", seqRange(13, 33))

	for _, c := range []struct {
		from    uint64
		reverse bool
		want    uint64
		ok      bool
	}{{0, false, 13, true}, {20, false, 20, true}, {34, false, 0, false}, {math.MaxUint64, true, 33, true},
		{12, true, 0, false}, {20, true, 20, true}} {
		if got, ok := tl.Seek(c.from, c.reverse); got != c.want || ok != c.ok {
			t.Fatalf("seek(%d, %v) = %d, %v; want %d, %v", c.from, c.reverse, got, ok, c.want, c.ok)
		}
	}
	if idx, _ := tl.Entries(0, math.MaxUint64, 3, 0); !slices.Equal(idx, append([]uint64{18}, seqRange(22, 29)...)) {
		t.Fatalf("entries in file 3 = %v, want 18 and 22..29", idx)
	}

	put(math.MaxUint64, math.MaxUint64, 4)
	put(math.MaxUint64-1, math.MaxUint64-1, 4)
	if got, ok := tl.Seek(math.MaxUint64, true); !ok || got != math.MaxUint64 {
		t.Fatalf("seek back from the highest index = %d, %v", got, ok)
	}
	if _, ok := tl.Get(math.MaxUint64); !ok {
		t.Fatal("the highest index is not found")
	}
	remove(0, 40)
	remove(math.MaxUint64-1, math.MaxUint64-1)
	remove(math.MaxUint64, math.MaxUint64)
	want("emptied", nil)
	if len(live.n) != 0 {
		t.Fatalf("live counts of an empty tail: %v", live.n)
	}
}
