package readn

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/readn/readntest"
)

// Frames of every size around the first allocation come back whole, byte
// for byte, from a reader that hands them over in small pieces.
func TestReadExact(t *testing.T) {
	for _, n := range []int{0, 1, 100, FirstAlloc - 1, FirstAlloc, FirstAlloc + 1, 3*FirstAlloc + 7, 1 << 20} {
		want := make([]byte, n)
		for i := range want {
			want[i] = byte(rand.IntN(256))
		}
		r := io.MultiReader(&chunky{b: want}, bytes.NewReader([]byte("next frame")))
		got, err := Read(r, n)
		if err != nil || !bytes.Equal(got, want) || len(got) != n {
			t.Fatalf("Read(%d): %d bytes, %v; want the %d bytes sent", n, len(got), err, n)
		}
		rest, _ := io.ReadAll(r)
		if string(rest) != "next frame" {
			t.Fatalf("Read(%d) read past its frame: %q left", n, rest)
		}
	}
}

// chunky returns at most 1000 bytes per Read.
type chunky struct{ b []byte }

func (c *chunky) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 1000)], c.b)
	c.b = c.b[n:]
	return n, nil
}

// A frame cut short is an error: io.EOF when none of it came, else
// io.ErrUnexpectedEOF, below and above the first allocation.
func TestReadShort(t *testing.T) {
	for _, n := range []int{10, FirstAlloc + 10, 1 << 20} {
		if _, err := Read(bytes.NewReader(nil), n); !errors.Is(err, io.EOF) {
			t.Errorf("Read(%d) of nothing: %v, want io.EOF", n, err)
		}
		if _, err := Read(bytes.NewReader(make([]byte, n-1)), n); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("Read(%d) of %d bytes: %v, want io.ErrUnexpectedEOF", n, n-1, err)
		}
	}
	if _, err := Read(bytes.NewReader(nil), -1); err == nil {
		t.Error("Read(-1) succeeded")
	}
}

// A reader that announces 512 MiB and sends 10 bytes costs about
// FirstAlloc of heap while Read waits for the rest.
func TestReadAllocatesAsBytesArrive(t *testing.T) {
	c := readntest.NewConn(make([]byte, 10), false)
	done := make(chan error, 1)
	growth, ok := readntest.HeapGrowth(c.Starved(), 10*time.Second, func() {
		go func() {
			_, err := Read(c, 512<<20)
			done <- err
		}()
	})
	c.Close()
	<-done
	if !ok {
		t.Fatal("Read did not consume the 10 bytes within 10s")
	}
	if growth > 4<<20 {
		t.Fatalf("heap grew %d MiB while a 512 MiB frame had sent 10 bytes; want under 4 MiB", growth>>20)
	}
	t.Logf("heap growth while waiting: %d KiB", growth>>10)
}
