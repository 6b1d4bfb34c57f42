//go:build !faults

package group

import (
	"net"

	"github.com/lockd/lockd/raftstore/mux"
)

// faults is the link-partition injector of a build with the faults tag
// (faults.go). In the default build it is empty and nothing sets
// Config.faults, so the wrappers below are never installed; they exist only
// so that Open and the pipe transport compile the same in both builds.
type faults struct{}

// dial dials: the default build blocks no link.
func (*faults) dial(_ string, dial func() (net.Conn, error)) (net.Conn, error) { return dial() }

// faultLayer is the Raft stream layer unchanged (its Dial is the layer's).
type faultLayer struct {
	*mux.Layer
	f *faults
}
