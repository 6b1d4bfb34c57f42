package logstore

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestLogEncodingRoundTrip(t *testing.T) {
	for _, want := range []*raft.Log{
		testLog(1),
		{},
		{Index: 1<<64 - 1, Term: 1<<64 - 1, Type: raft.LogType(255)},
		{Index: 2, Data: []byte{0}, AppendedAt: time.Unix(-5, 0)},
		{Index: 3, Extensions: []byte{1, 2, 3}, AppendedAt: time.Unix(0, 1<<62)},
	} {
		buf := appendLog(nil, want)
		if len(buf) > encodedLogSize(want) {
			t.Fatalf("encoded %d bytes, size bound %d", len(buf), encodedLogSize(want))
		}
		var got raft.Log
		requireNoErr(t, decodeLog(buf, &got), "decodeLog")
		assertLogEqual(t, want, &got)
		// Data and Extensions have clipped capacity: appending to one cannot clobber the other.
		if cap(got.Data) != len(got.Data) || cap(got.Extensions) != len(got.Extensions) {
			t.Fatalf("decoded slices not clipped: cap %d/%d", cap(got.Data), cap(got.Extensions))
		}
	}
}

func TestLogDecodingRejectsCorruptInput(t *testing.T) {
	good := appendLog(nil, testLog(12345))
	for n := range len(good) {
		var l raft.Log
		if err := decodeLog(good[:n], &l); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decode of %d/%d bytes = %v, want ErrCorrupt", n, len(good), err)
		}
	}
	bad := map[string][]byte{
		"unknown version": append([]byte{2}, good[1:]...),
		"trailing bytes":  append(append([]byte(nil), good...), 0),
	}
	flags := append([]byte(nil), good...)
	// version, uvarint(12345) = 2 bytes, uvarint(term) = 2 bytes, type, then flags
	flags[1+2+2+1] |= 0x80
	bad["unknown flags"] = flags
	for name, buf := range bad {
		var l raft.Log
		if err := decodeLog(buf, &l); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: decode = %v, want ErrCorrupt", name, err)
		}
	}
}

func TestLogKeysSortByIndex(t *testing.T) {
	idx := []uint64{0, 1, 255, 256, 1 << 32, 1<<64 - 1}
	for i := 1; i < len(idx); i++ {
		a, b := logKey(idx[i-1]), logKey(idx[i])
		if string(a) >= string(b) {
			t.Fatalf("key(%d) >= key(%d)", idx[i-1], idx[i])
		}
		if got, ok := parseLogKey(b); !ok || got != idx[i] {
			t.Fatalf("parseLogKey(key(%d)) = %d, %v", idx[i], got, ok)
		}
	}
	if _, ok := parseLogKey(stableKey([]byte("12345678"))); ok {
		t.Fatal("stable key parsed as a log key")
	}
}
