// Package loopback finds free TCP ports on 127.0.0.1 for tests that start
// servers as separate processes, which cannot listen on port 0 and report the
// port back. A port found is free at that moment only: another process may
// bind it before the caller's server does, so callers start again on new
// ports when a start fails with "address already in use".
package loopback

import (
	"fmt"
	"net"
	"strconv"
)

// Ports returns n distinct ports of 127.0.0.1 that were free a moment ago.
// It keeps each listener open until all n are chosen, so one call never
// returns a port twice (closed one at a time, a port can be the very next one
// the kernel hands out). Safe for concurrent use; it does not block beyond
// the listens.
func Ports(n int) ([]int, error) {
	out := make([]int, n)
	for i := range out {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("loopback: find a free port: %w", err)
		}
		defer l.Close()
		out[i] = l.Addr().(*net.TCPAddr).Port
	}
	return out, nil
}

// Addrs is Ports as "127.0.0.1:port" addresses.
func Addrs(n int) ([]string, error) {
	ports, err := Ports(n)
	if err != nil {
		return nil, err
	}
	out := make([]string, n)
	for i, p := range ports {
		out[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	return out, nil
}
