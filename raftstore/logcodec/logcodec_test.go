package logcodec

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func sample(idx uint64) *raft.Log {
	return &raft.Log{Index: idx, Term: idx/7 + 1, Type: raft.LogType(idx % 6), Data: []byte("data"),
		Extensions: []byte("ext"), AppendedAt: time.Unix(1_700_000_000, int64(idx)*1000+7)}
}

func equal(a, b *raft.Log) bool {
	return a.Index == b.Index && a.Term == b.Term && a.Type == b.Type && bytes.Equal(a.Data, b.Data) &&
		bytes.Equal(a.Extensions, b.Extensions) && a.AppendedAt.Equal(b.AppendedAt) && a.AppendedAt.IsZero() == b.AppendedAt.IsZero()
}

func TestRoundTrip(t *testing.T) {
	for _, want := range []*raft.Log{
		sample(1),
		{},
		{Index: 1<<64 - 1, Term: 1<<64 - 1, Type: raft.LogType(255)},
		{Index: 2, Data: []byte{0}, AppendedAt: time.Unix(-5, 0)},
		{Index: 3, Extensions: []byte{1, 2, 3}, AppendedAt: time.Unix(0, 1<<62)},
	} {
		buf := Append(nil, want)
		if len(buf) > Size(want) {
			t.Fatalf("encoded %d bytes, size bound %d", len(buf), Size(want))
		}
		var got raft.Log
		rest, err := Decode(buf, &got)
		if err != nil || len(rest) != 0 || !equal(want, &got) {
			t.Fatalf("round trip: %v, %d left, got %+v want %+v", err, len(rest), got, want)
		}
		// Data and Extensions have clipped capacity: appending to one cannot clobber the other.
		if cap(got.Data) != len(got.Data) || cap(got.Extensions) != len(got.Extensions) {
			t.Fatalf("decoded slices not clipped: cap %d/%d", cap(got.Data), cap(got.Extensions))
		}
	}
}

// Logs encoded back to back decode one after the other: Decode returns what
// follows each.
func TestDecodeReturnsRest(t *testing.T) {
	var buf []byte
	for i := uint64(1); i <= 3; i++ {
		buf = Append(buf, sample(i))
	}
	for i := uint64(1); i <= 3; i++ {
		var l raft.Log
		var err error
		if buf, err = Decode(buf, &l); err != nil || !equal(&l, sample(i)) {
			t.Fatalf("log %d: %v, %+v", i, err, l)
		}
	}
	if len(buf) != 0 {
		t.Fatalf("%d bytes left", len(buf))
	}
}

func TestRejectsMalformed(t *testing.T) {
	good := Append(nil, sample(12345))
	for n := range len(good) {
		var l raft.Log
		if _, err := Decode(good[:n], &l); !errors.Is(err, ErrMalformed) {
			t.Fatalf("decode of %d/%d bytes = %v, want ErrMalformed", n, len(good), err)
		}
		if l.Index != 0 {
			t.Fatalf("a failed decode changed the log: %+v", l)
		}
	}
	flags := append([]byte(nil), good...)
	// version, uvarint(12345) = 2 bytes, uvarint(term) = 2 bytes, type, then flags
	flags[1+2+2+1] |= 0x80
	for name, buf := range map[string][]byte{
		"unknown version": append([]byte{2}, good[1:]...),
		"unknown flags":   flags,
	} {
		var l raft.Log
		if _, err := Decode(buf, &l); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: decode = %v, want ErrMalformed", name, err)
		}
	}
}

// The encoding is part of the log store's on-disk format: these bytes must
// keep decoding to this log.
func TestGoldenBytes(t *testing.T) {
	l := &raft.Log{Index: 300, Term: 2, Type: raft.LogCommand, Data: []byte("ab"), Extensions: []byte("x"),
		AppendedAt: time.Unix(0, 5)}
	want := []byte{1, 0xac, 0x02, 2, byte(raft.LogCommand), 1, 10, 2, 'a', 'b', 1, 'x'}
	if got := Append(nil, l); !bytes.Equal(got, want) {
		t.Fatalf("encoding changed:\n got %v\nwant %v", got, want)
	}
	var back raft.Log
	if rest, err := Decode(want, &back); err != nil || len(rest) != 0 || !equal(&back, l) {
		t.Fatalf("golden bytes decode to %+v (%v)", back, err)
	}
}
