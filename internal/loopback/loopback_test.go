package loopback

import (
	"net"
	"strconv"
	"testing"
)

// The addresses of one call are distinct, on 127.0.0.1, and free once it
// returns: each can be listened on. Other packages' tests run beside this one
// (go test ./...) and take ephemeral ports too, so one of the 64 may be taken
// by them between the call and the Listen; a helper that left its listeners
// open, or returned taken ports, fails on (nearly) all.
func TestAddrsDistinctAndFree(t *testing.T) {
	const n = 64
	addrs, err := Addrs(n)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var taken []string
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if err != nil || host != "127.0.0.1" {
			t.Fatalf("address %q: not on 127.0.0.1 (%v)", a, err)
		}
		if seen[a] {
			t.Fatalf("address %s returned twice in %v", a, addrs)
		}
		seen[a] = true
		l, err := net.Listen("tcp", a)
		if err != nil {
			taken = append(taken, a+": "+err.Error())
			continue
		}
		defer l.Close()
	}
	if len(taken) > 1 {
		t.Fatalf("%d of %d addresses are not free after the call: %v", len(taken), n, taken)
	}
}

// Ports are distinct, in range and free once the call returns.
func TestPorts(t *testing.T) {
	ports, err := Ports(3)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ports {
		if p <= 0 || p > 65535 {
			t.Fatalf("port %d out of range in %v", p, ports)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		l.Close()
	}
	if ports[0] == ports[1] || ports[1] == ports[2] || ports[0] == ports[2] {
		t.Fatalf("ports not distinct: %v", ports)
	}
}
