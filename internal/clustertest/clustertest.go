// Package clustertest is the kit shared by the tests that build lockd
// clusters: raftstore's in-process clusters of Stores and the test suite's
// clusters of lockd processes. It holds what both do the same way, in the
// shape of hashicorp/raft's MakeCluster (one constructor with options, waits
// that poll a condition with a bound):
//
//   - Make lays a cluster out: members named n1…nN, each with its own
//     addresses (Addrs) and a data directory under t.TempDir(), and the peer
//     list they share.
//   - Addrs hands out free 127.0.0.1 addresses, never one twice in a test
//     binary.
//   - Until and WaitFor poll a condition until a bound.
//   - Leader, Followers and WaitLeader find roles among the nodes of either
//     kind through the Node interface.
//
// How a member runs (a Store opened in the test's process, a lockd process
// spawned) stays with each kit. Only tests import this package; no
// production binary may (TestNotInLockd checks cmd/lockd).
package clustertest

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// Opts says what Make hands out besides each member's name, peer address and
// data directory.
type Opts struct {
	Members int  // how many members: n1 … nN
	RESP    bool // a RESP (client) address per member
	HTTP    bool // an HTTP address per member
	// DirName, when not "", makes each member's Dir this name inside a fresh
	// t.TempDir(), not created (the member creates it); "" makes Dir the
	// fresh temporary directory itself.
	DirName string
}

// Member is one member's identity, the same across its restarts: its peers
// know it by its ID and peer address.
type Member struct {
	ID   string // "n1" … "nN", in order
	Peer string // the Raft peer address
	RESP string // the client address; "" unless Opts.RESP
	HTTP string // the HTTP address; "" unless Opts.HTTP
	Dir  string // the data directory, under t.TempDir() (removed when the test ends)
}

// Layout is a cluster before any member starts.
type Layout struct {
	Members []Member
}

// Make lays out a cluster of o.Members members: IDs n1…nN, addresses from
// Addrs (distinct, and never handed out before in this test binary) and data
// directories under t.TempDir(). It fails the test when no free address can
// be found.
func Make(t testing.TB, o Opts) Layout {
	t.Helper()
	per := 1
	if o.RESP {
		per++
	}
	if o.HTTP {
		per++
	}
	as := Addrs(t, per*o.Members)
	next := func() string {
		a := as[0]
		as = as[1:]
		return a
	}
	var l Layout
	for i := range o.Members {
		m := Member{ID: fmt.Sprintf("n%d", i+1), Dir: t.TempDir()}
		if o.RESP {
			m.RESP = next()
		}
		m.Peer = next()
		if o.HTTP {
			m.HTTP = next()
		}
		if o.DirName != "" {
			m.Dir = filepath.Join(m.Dir, o.DirName)
		}
		l.Members = append(l.Members, m)
	}
	return l
}

// PeersFlag is the peer list as lockd's -peers flag spells it:
// "n1=addr,n2=addr,…", in member order.
func (l Layout) PeersFlag() string {
	var ps []string
	for _, m := range l.Members {
		ps = append(ps, m.ID+"="+m.Peer)
	}
	return strings.Join(ps, ",")
}
