package logstore

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/raftstore/logcodec"
)

// A stored value is one logcodec encoding (logcodec's own tests cover the
// format): decodeLog reads it back, and reports bytes that are not one
// entry, or that follow it, as ErrCorrupt.
func TestLogDecodingRejectsCorruptInput(t *testing.T) {
	good := logcodec.Append(nil, testLog(12345))
	var got raft.Log
	requireNoErr(t, decodeLog(good, &got), "decodeLog")
	assertLogEqual(t, testLog(12345), &got)
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
