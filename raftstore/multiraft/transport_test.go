package multiraft

import (
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
)

// TestOverPeerPorts: 3 nodes × 4 groups over TCP peer ports (mux, one
// header): every acknowledged write reaches every node, a node that restarts
// on its address catches up, and a connection that sends an oversized hello
// or an oversized or malformed frame is closed without harm to the node.
func TestOverPeerPorts(t *testing.T) {
	c := newClusterOver(t, 3, 4, nil, true)
	leads := c.spread()
	want := make([]map[string]string, c.groups)
	for g := range c.groups {
		want[g] = map[string]string{}
		c.write(Group(g), fmt.Sprintf("a%d", g), 20, want[g])
	}
	c.converge(want)

	// A well-formed frame (for a group the node lacks: dropped) keeps its
	// connection open; then hostile peers: a frame over MaxFrame, one that
	// does not parse.
	victim := c.ids[0]
	conn, err := dialHeader(c.addrs[victim], 'M')
	if err != nil {
		t.Fatal(err)
	}
	noHello := func() []byte { return make([]byte, 4) } // the first frame: an empty hello
	frame := AppendMessage(nil, 99, &pb.Message{Type: pb.MsgHeartbeat, From: 2, To: 1, Term: 1})
	if _, err := conn.Write(append(binary.BigEndian.AppendUint32(noHello(), uint32(len(frame))), frame...)); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Fatal("the node wrote on an inbound frame connection")
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("a well-formed frame's connection was closed: %v", err)
	}
	conn.Close()
	for _, payload := range [][]byte{
		binary.BigEndian.AppendUint32(nil, maxMemberContext+1),
		binary.BigEndian.AppendUint32(noHello(), MaxFrame+1),
		append(binary.BigEndian.AppendUint32(noHello(), 3), 0x01, 0xFF, 0xFF),
	} {
		conn, err := dialHeader(c.addrs[victim], 'M')
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(payload); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.Read(make([]byte, 1)); err == nil {
			t.Fatal("the node answered a hostile frame instead of closing the connection")
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("the connection stayed open after hostile frame %x", payload)
		}
		conn.Close()
	}

	restarted := c.ids[2]
	c.stop(restarted)
	for g := range c.groups {
		if leads[Group(g)] == restarted {
			continue
		}
		c.write(Group(g), fmt.Sprintf("b%d", g), 10, want[g])
	}
	c.start(restarted)
	c.spread()
	for g := range c.groups {
		c.write(Group(g), fmt.Sprintf("c%d", g), 5, want[g])
	}
	c.converge(want)
}

// dialHeader opens a peer-port connection with header h, as a peer without
// TLS or secret would.
func dialHeader(addr string, h byte) (net.Conn, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write([]byte{h}); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}
