package journal

import (
	"bytes"
	"os"
	"testing"
)

// zeroFile writes zeros over a spare, a chunk at a time, and stops before
// the next chunk once the writer says it needs the file.
func TestZeroFile(t *testing.T) {
	size := int64(3*zeroChunk + 100)
	f, err := createFile(t.TempDir(), 1, size)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	junk := bytes.Repeat([]byte{0xAB}, int(size))
	if _, err := f.WriteAt(junk, 0); err != nil {
		t.Fatal(err)
	}
	need := make(chan struct{}, 1)
	need <- struct{}{}
	if err := zeroFile(f, size, need); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, junk) {
		t.Fatal("zeroFile wrote although the writer needed the file at once")
	}
	if err := zeroFile(f, size, make(chan struct{})); err != nil {
		t.Fatal(err)
	}
	if got, err = os.ReadFile(f.Name()); err != nil {
		t.Fatal(err)
	}
	if int64(len(got)) != size || !bytes.Equal(got, make([]byte, size)) {
		t.Fatalf("after zeroFile the file holds %d bytes, not %d zeros", len(got), size)
	}
}
