//go:build faults

package group

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/raftstore/mux"
)

// faults is a test-only injector of network partitions on a node's outgoing peer
// links (Raft and forwarding). Blocking an address refuses new connections to it
// and closes the open ones; since every peer connection is outgoing for exactly
// one node, blocking both directions cuts a link completely. Production stores
// have none: this file builds only with the faults tag, and the default
// build's faults (nofaults.go) cannot block anything.
type faults struct {
	mu      sync.Mutex
	blocked map[string]bool
	conns   map[net.Conn]string
}

var errPartitioned = errors.New("raftstore: link partitioned (test fault)")

func newFaults() *faults {
	return &faults{blocked: map[string]bool{}, conns: map[net.Conn]string{}}
}

// block cuts the links to addrs.
func (f *faults) block(addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range addrs {
		f.blocked[a] = true
	}
	for c, a := range f.conns {
		if f.blocked[a] {
			c.Close()
			delete(f.conns, c)
		}
	}
}

// heal restores every link.
func (f *faults) heal() {
	f.mu.Lock()
	f.blocked = map[string]bool{}
	f.mu.Unlock()
}

func (f *faults) dial(addr string, dial func() (net.Conn, error)) (net.Conn, error) {
	f.mu.Lock()
	if f.blocked[addr] {
		f.mu.Unlock()
		return nil, errPartitioned
	}
	f.mu.Unlock()
	c, err := dial()
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.blocked[addr] {
		c.Close()
		return nil, errPartitioned
	}
	f.conns[c] = addr
	return c, nil
}

// faultLayer is the Raft stream layer with the injector on its dials.
type faultLayer struct {
	*mux.Layer
	f *faults
}

func (l faultLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return l.f.dial(string(addr), func() (net.Conn, error) { return l.Layer.Dial(addr, timeout) })
}
