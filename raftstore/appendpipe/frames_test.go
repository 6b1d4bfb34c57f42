package appendpipe

import (
	"bufio"
	"encoding/binary"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/readn/readntest"
)

// A peer that announces a 512 MiB frame on a pipe and sends 10 bytes of it
// costs the reader little heap while it waits for the rest (issue 44): the
// buffer grows as bytes arrive (internal/readn). Before, readFrame allocated
// the announced size at once.
func TestReadFrameAllocatesAsBytesArrive(t *testing.T) {
	data := binary.AppendUvarint(nil, 512<<20)
	data = append(data, make([]byte, 10)...)
	c := readntest.NewConn(data, false)
	done := make(chan error, 1)
	growth, ok := readntest.HeapGrowth(c.Starved(), 10*time.Second, func() {
		go func() {
			_, err := readFrame(bufio.NewReader(c))
			done <- err
		}()
	})
	c.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("readFrame did not return within 10s of its connection closing")
	}
	if !ok {
		t.Fatal("readFrame did not consume the 10 bytes within 10s")
	}
	if growth > 8<<20 {
		t.Fatalf("heap grew %d MiB while a frame announced 512 MiB and sent 10 bytes; want under 8 MiB", growth>>20)
	}
	t.Logf("heap growth while waiting: %d KiB", growth>>10)
}
