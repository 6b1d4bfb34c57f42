package command

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// BatchArgs and ParseBatch are inverses, long commands (counts past the
// shared small ones) included, and a batch survives the entry codec.
func TestBatchArgsRoundTrip(t *testing.T) {
	long := [][]byte{[]byte("MSET")}
	for i := 0; i < 20; i++ {
		long = append(long, []byte(fmt.Sprintf("k%d", i)), []byte("v"))
	}
	cmds := [][][]byte{{[]byte("SET"), []byte("k"), []byte("")}, long, {[]byte("PING")}}
	e, err := Decode(Entry{Kind: KindBatch, Time: 3, Args: BatchArgs(cmds)}.Encode())
	if err != nil || e.Kind != KindBatch {
		t.Fatalf("decoded %+v, %v", e, err)
	}
	got, err := ParseBatch(e.Args)
	if err != nil || len(got) != len(cmds) {
		t.Fatalf("ParseBatch = %d commands, %v; want %d", len(got), err, len(cmds))
	}
	for i := range cmds {
		if !bytes.Equal(bytes.Join(got[i], []byte{0}), bytes.Join(cmds[i], []byte{0})) || len(got[i]) != len(cmds[i]) {
			t.Fatalf("command %d = %q, want %q", i, got[i], cmds[i])
		}
	}
	for _, bad := range [][][]byte{nil, {[]byte("0")}, {[]byte("-1")}, {[]byte("2"), []byte("SET")}, {[]byte("x"), []byte("SET")}} {
		if _, err := ParseBatch(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("ParseBatch(%q) = %v, want ErrCorrupt", bad, err)
		}
	}
}
