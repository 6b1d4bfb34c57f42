package clustertest

import (
	"sync"
	"testing"

	"github.com/lockd/lockd/internal/loopback"
)

// addrTries bounds how many batches Addrs asks loopback for before it gives
// up finding addresses it has not handed out yet.
const addrTries = 1000

var (
	handedOutMu sync.Mutex
	handedOut   = map[string]bool{} // every address Addrs returned in this test binary
)

// Addrs returns n distinct 127.0.0.1 addresses that were free a moment ago
// and that it has not returned before in this test binary: the kernel may
// hand a port just closed to the next listen on port 0, and two members of
// one cluster given the same address fail to start ("appears twice"). An
// address is free only when found: a process may still lose the race to bind
// it, and its caller starts again on new addresses. Addrs fails the test when
// it cannot find n such addresses. Safe for concurrent use.
func Addrs(t testing.TB, n int) []string {
	t.Helper()
	return addrsFrom(t, n, loopback.Addrs)
}

// addrsFrom is Addrs with free addresses found by find (k distinct ones a
// call) instead of loopback.Addrs.
func addrsFrom(t testing.TB, n int, find func(k int) ([]string, error)) []string {
	t.Helper()
	handedOutMu.Lock()
	defer handedOutMu.Unlock()
	out := make([]string, 0, n)
	for range addrTries {
		if len(out) == n {
			return out
		}
		as, err := find(n - len(out))
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range as {
			if !handedOut[a] {
				handedOut[a] = true
				out = append(out, a)
			}
		}
	}
	if len(out) == n {
		return out
	}
	t.Fatalf("no %d free addresses that were not handed out before in %d tries", n, addrTries)
	return nil
}
