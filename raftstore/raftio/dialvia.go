package raftio

import (
	"context"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// Dialing peers through a proxy (Config.DialVia), for fault-injection tests
// that put a loopback proxy (raftstore/faultnet) on every link. Raft still
// knows each peer by its advertised address; only the TCP dial goes elsewhere.

// viaAddr returns the address to dial for a peer advertised at addr.
func viaAddr(via map[string]string, addr string) string {
	if a, ok := via[addr]; ok {
		return a
	}
	return addr
}

// viaLayer is a Raft stream layer whose dials are rewritten by DialVia.
type viaLayer struct {
	raft.StreamLayer
	via map[string]string
}

func (l viaLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return l.StreamLayer.Dial(raft.ServerAddress(viaAddr(l.via, string(addr))), timeout)
}

// WithDialVia returns stream and dial rewritten by via (unchanged when via is
// empty): both Raft traffic and forwarded requests go through the proxy.
func WithDialVia(via map[string]string, stream raft.StreamLayer, dial func(context.Context, string) (net.Conn, error)) (raft.StreamLayer, func(context.Context, string) (net.Conn, error)) {
	if len(via) == 0 {
		return stream, dial
	}
	return viaLayer{stream, via}, func(ctx context.Context, addr string) (net.Conn, error) {
		return dial(ctx, viaAddr(via, addr))
	}
}
