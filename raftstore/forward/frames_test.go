package forward

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/readn/readntest"
)

// announced is the frame size the attacking peer claims; it sends 10 bytes.
const announced = 512 << 20

// maxGrowth bounds the heap a reader may take for such a frame.
const maxGrowth = 8 << 20

// frame is a frame header announcing n payload bytes, and the first 10.
func frame(typ byte, id uint64, n int) []byte {
	var h [headerLen]byte
	putHeader(&h, typ, n, id)
	return append(h[:], make([]byte, 10)...)
}

// The server reading a request that announces 512 MiB and sends 10 bytes
// holds little heap while it waits for the rest (issue 44). Before, it
// allocated the announced size first.
func TestServerAllocatesRequestAsBytesArrive(t *testing.T) {
	c := readntest.NewConn(append(append([]byte{}, preamble[:]...), frame(typeRequest, 1, announced)...), false)
	ln := readntest.NewListener(c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	growth, ok := readntest.HeapGrowth(c.Starved(), 10*time.Second, func() {
		go func() {
			done <- serve(ctx, ln, func(context.Context, []byte) []byte { return nil }, nil, DefaultMaxFrame)
		}()
	})
	cancel()
	c.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return within 10s")
	}
	if !ok {
		t.Fatal("the server did not read the 10 bytes within 10s")
	}
	if growth > maxGrowth {
		t.Fatalf("heap grew %d MiB while a request announced 512 MiB and sent 10 bytes; want under %d MiB", growth>>20, maxGrowth>>20)
	}
	t.Logf("heap growth while waiting: %d KiB", growth>>10)
}

// So does a client reading a response that announces 512 MiB (a peer it
// dialed, answering its request).
func TestClientAllocatesResponseAsBytesArrive(t *testing.T) {
	c := readntest.NewConn(frame(typeResponse, 1, announced), true)
	cl := NewClient(func(context.Context, string) (net.Conn, error) { return c, nil }, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	growth, ok := readntest.HeapGrowth(c.Starved(), 10*time.Second, func() {
		go func() {
			_, err := cl.Call(ctx, "peer", []byte("request"))
			done <- err
		}()
	})
	cancel()
	c.Close()
	cl.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Call did not return within 10s")
	}
	if !ok {
		t.Fatal("the client did not read the 10 bytes within 10s")
	}
	if growth > maxGrowth {
		t.Fatalf("heap grew %d MiB while a response announced 512 MiB and sent 10 bytes; want under %d MiB", growth>>20, maxGrowth>>20)
	}
	t.Logf("heap growth while waiting: %d KiB", growth>>10)
}
