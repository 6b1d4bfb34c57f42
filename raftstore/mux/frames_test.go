package mux

import (
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/internal/readn/readntest"
)

// starvedLayer is a raft.StreamLayer whose one inbound connection is the
// attacker's.
type starvedLayer struct{ *readntest.Listener }

func (starvedLayer) Dial(raft.ServerAddress, time.Duration) (net.Conn, error) {
	return nil, errors.New("no dialing in this test")
}

// hashicorp/raft's NetworkTransport, the third reader of length-prefixed
// data on the peer port (msgpack), also takes little heap for a byte string
// that announces 512 MiB and sends 10 bytes: its decoder (go-msgpack)
// allocates such strings in chunks of at most 256 KiB as they arrive. This
// guards that property of the library lockd depends on.
func TestRaftTransportAllocatesAsBytesArrive(t *testing.T) {
	// An AppendEntries RPC (type 0) whose msgpack map's Leader is a bin32
	// of 512 MiB, of which 10 bytes follow.
	data := []byte{0, 0x81, 0xa6}
	data = append(data, "Leader"...)
	data = append(data, 0xc6)
	data = binary.BigEndian.AppendUint32(data, 512<<20)
	data = append(data, make([]byte, 10)...)
	c := readntest.NewConn(data, false)
	var trans *raft.NetworkTransport
	growth, ok := readntest.HeapGrowth(c.Starved(), 10*time.Second, func() {
		trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
			Stream: starvedLayer{readntest.NewListener(c)}, MaxPool: 1, Timeout: time.Second})
	})
	c.Close()
	trans.Close()
	if !ok {
		t.Fatal("the transport did not read the 10 bytes within 10s")
	}
	if growth > 8<<20 {
		t.Fatalf("heap grew %d MiB while a byte string announced 512 MiB and sent 10 bytes; want under 8 MiB", growth>>20)
	}
	t.Logf("heap growth while waiting: %d KiB", growth>>10)
}
