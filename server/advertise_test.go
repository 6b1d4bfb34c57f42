package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/loopback"
	"github.com/lockd/lockd/raftstore"
)

// TestAdvertisedNames: nodes that bind 127.0.0.1 but are known to each other by
// a host name (as pods are by their DNS names) form a cluster, and RAFT
// MEMBERS and CLUSTER SLOTS show the names.
func TestAdvertisedNames(t *testing.T) {
	var peers []raftstore.Peer
	var servers []*Server
	// A port loopback.Ports found free may be taken by another test before
	// a node binds it: start again on other ports (bounded).
	for attempt := 1; ; attempt++ {
		var inUse bool
		peers, servers, inUse = startAdvertised(t)
		if !inUse {
			break
		}
		if attempt == 3 {
			t.Fatal("the peer ports were taken by others three times")
		}
	}
	for _, s := range servers {
		defer s.Close()
	}
	c := client(t, servers[0], 2)
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for c.Set(ctx, "k", "v", 0).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("no leader")
		}
		time.Sleep(20 * time.Millisecond)
	}
	members := fmt.Sprint(c.Do(ctx, "RAFT", "MEMBERS").Val())
	for _, p := range peers {
		if !strings.Contains(members, p.Addr) {
			t.Fatalf("RAFT MEMBERS %s lacks %s", members, p.Addr)
		}
	}
}

// startAdvertised starts three nodes that bind 127.0.0.1 and advertise
// localhost; inUse reports that a peer port was taken meanwhile (nothing is
// left running then).
func startAdvertised(t *testing.T) (peers []raftstore.Peer, servers []*Server, inUse bool) {
	var binds []string
	ports, err := loopback.Ports(3) // distinct: one peer port per node
	if err != nil {
		t.Fatal(err)
	}
	for i, port := range ports {
		binds = append(binds, fmt.Sprintf("127.0.0.1:%d", port))
		peers = append(peers, raftstore.Peer{ID: fmt.Sprintf("n%d", i+1), Addr: fmt.Sprintf("localhost:%d", port)})
	}
	servers = make([]*Server, 3)
	errs := make(chan error, 3)
	for i := range 3 {
		go func() {
			s, err := New(Config{NodeID: peers[i].ID, RESPAddr: "127.0.0.1:0", PeerAddr: binds[i], AdvertiseAddr: peers[i].Addr,
				DataDir: t.TempDir(), Peers: peers})
			servers[i] = s
			errs <- err
		}()
	}
	var failed error
	for range 3 {
		if err := <-errs; err != nil && failed == nil {
			failed = err
		}
	}
	if failed == nil {
		return peers, servers, false
	}
	for _, s := range servers {
		if s != nil {
			s.Close()
		}
	}
	if !errors.Is(failed, syscall.EADDRINUSE) {
		t.Fatal(failed)
	}
	return nil, nil, true
}
