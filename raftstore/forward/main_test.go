package forward

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the run if goroutines of this package outlive the tests:
// every test closes its clients and stops its servers, and both wait for
// their goroutines.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := leakedGoroutines(); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines leaked:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// leakedGoroutines polls (up to 10s) until no goroutine runs code of this
// package, and otherwise returns their stacks.
func leakedGoroutines() string {
	deadline := time.Now().Add(10 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var leaked []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "raftstore/forward.") && !strings.Contains(g, "forward.TestMain") &&
				!strings.Contains(g, "forward.leakedGoroutines") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
