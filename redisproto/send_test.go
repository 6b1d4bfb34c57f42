package redisproto

import (
	"io"
	"net"
	"testing"
	"time"
)

// A sender that waits (a batch's replies, QUIT's) returns only once its own
// bytes are written, also when another goroutine (a pub/sub confirmation's
// drain) is writing the queue: a connection ended right after it loses none of
// its output. Before, such a send returned at once, and a SUBSCRIBE … QUIT
// handed from the event loop sometimes closed after the first reply.
func TestWaitingSendOutlastsAnotherDrain(t *testing.T) {
	s, err := Listen(Config{Addr: "127.0.0.1:0"}, newFSMStore())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	server, client := net.Pipe() // a write blocks until the client reads it
	defer client.Close()
	c := &conn{srv: s, nc: server}

	c.send([]byte("a"), false) // its drain blocks writing "a"
	returned := make(chan bool, 1)
	go func() { returned <- c.send([]byte("b"), true) }()
	waitFor(t, "the second send to queue its bytes", func() bool {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		return c.queuedN == 2
	})

	buf := make([]byte, 1)
	if _, err := io.ReadFull(client, buf); err != nil || buf[0] != 'a' {
		t.Fatalf("read %q, %v", buf, err)
	}
	select {
	case <-returned:
		t.Fatal("the waiting send returned before its bytes were written")
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := io.ReadFull(client, buf); err != nil || buf[0] != 'b' {
		t.Fatalf("read %q, %v", buf, err)
	}
	select {
	case ok := <-returned:
		if !ok {
			t.Fatal("the waiting send reported a broken connection")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting send did not return once its bytes were written")
	}
}
