package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// keyOp is one key of replayed writes: set to val, or deleted.
type keyOp struct {
	key, val []byte
	del      bool
}

// appendRecord appends the record of batch's writes (build) to dst,
// whole: the bytes the journal writes, in one slice.
func appendRecord(dst []byte, batch []*Write) []byte {
	var rec record
	rec.build(batch)
	for _, s := range rec.segments() {
		dst = append(dst, s...)
	}
	return dst
}

// keyOps lists the keys of reqs in order.
func keyOps(reqs []*Write) []keyOp {
	var out []keyOp
	for _, r := range reqs {
		for i, k := range r.Keys {
			op := keyOp{key: k, del: r.Del}
			if !r.Del {
				op.val = r.Vals[i]
			}
			out = append(out, op)
		}
	}
	return out
}

// Records read back as written; a checksummed record that does not parse is
// an error, not the end of the journal.
func TestJournalRecord(t *testing.T) {
	batch := []*Write{
		{Keys: [][]byte{[]byte("a"), []byte("")}, Vals: [][]byte{[]byte("1"), bytes.Repeat([]byte("v"), 300)}},
		{Keys: [][]byte{[]byte("gone")}, Del: true},
	}
	rec := appendRecord(nil, batch)
	var got []keyOp
	must(t, replayFile(append(rec, make([]byte, 16)...), 1, func(reqs []*Write) error {
		got = append(got, keyOps(reqs)...)
		return nil
	}), "replay")
	want := []keyOp{{key: []byte("a"), val: []byte("1")}, {key: []byte(""), val: bytes.Repeat([]byte("v"), 300)}, {key: []byte("gone"), del: true}}
	if len(got) != len(want) {
		t.Fatalf("replayed %d ops, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i].key, want[i].key) || !bytes.Equal(got[i].val, want[i].val) || got[i].del != want[i].del {
			t.Fatalf("op %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, bad := range [][]byte{{}, {2}, {1, 2, 1}, {1, 0, 5, 'a'}, {1, 1, 1, 'k', 0}} {
		if _, err := decodeRecord(bad); err == nil {
			t.Errorf("decodeRecord(%v) accepted a malformed record", bad)
		}
	}
}

// A record whose large values are written by reference (their own pieces
// of a vectored write, a split log entry's three pieces) holds the same
// bytes as one with every value copied in, and its locs find each value.
func TestJournalRecordPieces(t *testing.T) {
	big := func(n int, c byte) []byte { return bytes.Repeat([]byte{c}, n) }
	head, data, tl := []byte("head"), big(3*BigPiece+7, 'd'), []byte{0}
	split := func() []*Write {
		return []*Write{
			{Keys: [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("d")},
				Vals:  [][]byte{[]byte("1"), big(BigPiece-1, 'b'), big(BigPiece, 'c'), nil},
				Split: [][3][]byte{3: {head, data, tl}}, Tail: &Tail{}},
			{Keys: [][]byte{[]byte("gone")}, Del: true},
			{Keys: [][]byte{[]byte("e")}, Vals: [][]byte{big(2*BigPiece, 'e')}, Tail: &Tail{}},
		}
	}
	whole := split()
	whole[0].Vals[3], whole[0].Split = slices.Concat(head, data, tl), nil
	flat := appendRecord(nil, whole)

	batch := split()
	var rec record
	rec.build(batch)
	if len(rec.refs) != 3 {
		t.Fatalf("%d values by reference, want 3 (those of BigPiece bytes or more)", len(rec.refs))
	}
	var got []byte
	for _, s := range rec.segments() {
		got = append(got, s...)
	}
	if !bytes.Equal(got, flat) || rec.size != len(flat) {
		t.Fatalf("record in pieces (%d bytes, size %d) differs from the copied one (%d bytes)", len(got), rec.size, len(flat))
	}
	for _, r := range []*Write{batch[0], batch[2]} {
		for i, l := range r.Locs {
			if want := r.Value(i); !bytes.Equal(got[l.Off:l.Off+int64(l.N)], want) {
				t.Fatalf("loc %+v of a %d-byte value reads other bytes", l, len(want))
			}
		}
	}

	// Written with a few pieces per call, at an offset, it reads back whole.
	defer func(n int) { maxIOV = n }(maxIOV)
	maxIOV = 2
	f, err := os.Create(filepath.Join(t.TempDir(), "j"))
	must(t, err, "create")
	defer f.Close()
	must(t, rec.writeAt(f, 100), "writeAt")
	onDisk, err := os.ReadFile(f.Name())
	must(t, err, "read")
	if !bytes.Equal(onDisk[100:], flat) {
		t.Fatal("the vectored write put other bytes on disk")
	}
	var ops []keyOp
	must(t, replayFile(onDisk[100:], 1, func(reqs []*Write) error {
		ops = append(ops, keyOps(reqs)...)
		return nil
	}), "replay")
	if len(ops) != 6 || !bytes.Equal(ops[3].val, whole[0].Vals[3]) || !ops[4].del {
		t.Fatalf("replayed %d ops, want the batch's 6", len(ops))
	}
}

// FuzzJournalReplay: whatever a journal file holds, replaying it never
// panics and fails only on a checksummed record that does not parse (a torn
// or unchecked tail just ends it); the writes it applies, encoded again,
// replay as the same keys and values.
func FuzzJournalReplay(f *testing.F) {
	f.Add(appendRecord(nil, []*Write{{Keys: [][]byte{[]byte("k")}, Vals: [][]byte{[]byte("v")}}}))
	f.Add(append(appendRecord(nil, []*Write{{Keys: [][]byte{[]byte("a"), []byte("b")}, Del: true}}), 1, 2, 3))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	two := appendRecord(appendRecord(nil, []*Write{
		{Keys: [][]byte{[]byte("l1"), []byte("l2")}, Vals: [][]byte{[]byte("one"), bytes.Repeat([]byte("2"), 200)}},
		{Keys: [][]byte{[]byte("s")}, Vals: [][]byte{{}}},
	}), []*Write{{Keys: [][]byte{[]byte("l1")}, Del: true}, {Keys: [][]byte{[]byte("x")}, Vals: [][]byte{[]byte("y")}}})
	f.Add(two)
	f.Add(two[:len(two)-3]) // the second record torn
	// Checksummed, but a write whose flag is neither set nor delete.
	malformed := []byte{1, 2, 1}
	f.Add(append(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, uint32(len(malformed))),
		crc32.Checksum(malformed, crcTable)), malformed...))
	f.Fuzz(func(t *testing.T, data []byte) {
		var applied []keyOp
		var again []byte
		err := replayFile(data, 1, func(reqs []*Write) error {
			applied = append(applied, keyOps(reqs)...)
			again = appendRecord(again, reqs)
			return nil
		})
		if err != nil && !errors.Is(err, errRecord) {
			t.Fatalf("replay failed with %v, want nil or errRecord", err)
		}
		var back []keyOp
		if err := replayFile(again, 1, func(reqs []*Write) error { back = append(back, keyOps(reqs)...); return nil }); err != nil {
			t.Fatalf("replaying re-encoded operations: %v", err)
		}
		if len(back) != len(applied) {
			t.Fatalf("re-encoded %d operations, replayed %d", len(applied), len(back))
		}
		for i := range back {
			a, b := applied[i], back[i]
			if a.del != b.del || !bytes.Equal(a.key, b.key) || (!a.del && !bytes.Equal(a.val, b.val)) {
				t.Fatalf("operation %d: %+v replayed as %+v", i, a, b)
			}
		}
	})
}
