package clustertest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Make names members n1…nN, gives each the addresses asked for (all of them
// distinct, on 127.0.0.1) and a data directory of its own, and spells the
// peer list as -peers does.
func TestMake(t *testing.T) {
	l := Make(t, Opts{Members: 3, RESP: true, HTTP: true, DirName: "data"})
	if len(l.Members) != 3 {
		t.Fatalf("%d members, want 3", len(l.Members))
	}
	seen := map[string]bool{}
	var peers []string
	for i, m := range l.Members {
		if want := fmt.Sprintf("n%d", i+1); m.ID != want {
			t.Errorf("member %d is %q, want %q", i, m.ID, want)
		}
		for _, a := range []string{m.Peer, m.RESP, m.HTTP} {
			if host, _, err := net.SplitHostPort(a); err != nil || host != "127.0.0.1" {
				t.Errorf("%s: address %q not on 127.0.0.1 (%v)", m.ID, a, err)
			}
			if seen[a] {
				t.Errorf("%s: address %s handed out twice", m.ID, a)
			}
			seen[a] = true
		}
		if filepath.Base(m.Dir) != "data" {
			t.Errorf("%s: data directory %q is not named data", m.ID, m.Dir)
		}
		if _, err := os.Stat(m.Dir); !os.IsNotExist(err) {
			t.Errorf("%s: data directory %s exists before the member starts (%v)", m.ID, m.Dir, err)
		}
		if _, err := os.Stat(filepath.Dir(m.Dir)); err != nil {
			t.Errorf("%s: the directory above %s: %v", m.ID, m.Dir, err)
		}
		if seen[m.Dir] {
			t.Errorf("%s: data directory %s shared", m.ID, m.Dir)
		}
		seen[m.Dir] = true
		peers = append(peers, m.ID+"="+m.Peer)
	}
	if got, want := l.PeersFlag(), strings.Join(peers, ","); got != want {
		t.Errorf("PeersFlag = %q, want %q", got, want)
	}

	bare := Make(t, Opts{Members: 2})
	for _, m := range bare.Members {
		if m.RESP != "" || m.HTTP != "" || m.Peer == "" {
			t.Errorf("%s without RESP and HTTP: %+v", m.ID, m)
		}
		if st, err := os.Stat(m.Dir); err != nil || !st.IsDir() {
			t.Errorf("%s: data directory %s without DirName is not a directory (%v)", m.ID, m.Dir, err)
		}
	}
}

var fakeRuns atomic.Int32 // runs of TestAddrsNeverTwice in this binary

// Addrs never returns an address twice in one test binary, across calls,
// even when the kernel hands a port out again; it gives up, failing the
// test, when nothing new comes.
func TestAddrsNeverTwice(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		for _, a := range Addrs(t, 4) {
			if seen[a] {
				t.Fatalf("address %s handed out twice", a)
			}
			seen[a] = true
		}
	}
	// A finder that offers one address again and again, then a new one. Its
	// addresses are this run's own (-count runs the test again in the same
	// binary, which remembers what the last run handed out).
	run := fakeRuns.Add(1)
	fake := func(i int) string { return fmt.Sprintf("run%d.invalid:%d", run, i) }
	calls := 0
	again := func(k int) ([]string, error) {
		calls++
		if calls < 5 {
			return []string{fake(1)}, nil
		}
		return []string{fake(calls)}, nil
	}
	if got := addrsFrom(t, 1, again); got[0] != fake(1) {
		t.Fatalf("first call: %v", got)
	}
	if got := addrsFrom(t, 1, again); got[0] != fake(5) || calls != 5 {
		t.Fatalf("second call: %v after %d finds, want %s after 5", got, calls, fake(5))
	}
	msg := runFatal(t, func(tb testing.TB) {
		addrsFrom(tb, 1, func(int) ([]string, error) { return []string{fake(1)}, nil })
	})
	if !strings.HasPrefix(msg, "no 1 free addresses") {
		t.Fatalf("a finder with nothing new: failed with %q", msg)
	}
}

// Until returns true as soon as cond holds, and false once the bound passes
// with cond still false, having asked again meanwhile.
func TestUntil(t *testing.T) {
	n := 0
	if !Until(time.Second, time.Millisecond, func() bool { n++; return n == 3 }) {
		t.Fatal("Until gave up on a condition that held at the third call")
	}
	if n != 3 {
		t.Fatalf("cond called %d times, want 3", n)
	}
	n = 0
	start := time.Now()
	if Until(30*time.Millisecond, time.Millisecond, func() bool { n++; return false }) {
		t.Fatal("Until reported a condition that never held")
	}
	if d := time.Since(start); d < 30*time.Millisecond || d > 5*time.Second {
		t.Fatalf("Until gave up after %v, bound 30ms", d)
	}
	if n < 2 {
		t.Fatalf("cond called %d times before the bound, want it polled", n)
	}
}

// recorder is a testing.TB whose Fatalf records the message and ends the
// goroutine, as the real one does.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// runFatal runs f with a recorder on a goroutine of its own and returns the
// message it failed with ("" when it did not).
func runFatal(t *testing.T, f func(tb testing.TB)) string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.msg
}

// WaitFor returns once cond holds and fails the test, naming what it
// awaited, when the bound passes first.
func TestWaitFor(t *testing.T) {
	var calls atomic.Int32
	if msg := runFatal(t, func(tb testing.TB) {
		WaitFor(tb, time.Second, "the third call", func() bool { return calls.Add(1) == 3 })
	}); msg != "" {
		t.Fatalf("WaitFor failed on a condition that held: %s", msg)
	}
	msg := runFatal(t, func(tb testing.TB) {
		WaitFor(tb, 20*time.Millisecond, "nothing", func() bool { return false })
	})
	if want := "timed out after 20ms waiting for nothing"; msg != want {
		t.Fatalf("WaitFor failed with %q, want %q", msg, want)
	}
}

// fakeNode is a Node whose answers the test sets.
type fakeNode struct {
	running, leads *atomic.Bool
}

func (f fakeNode) Running() bool { return f.running.Load() }
func (f fakeNode) IsLeader() bool {
	if !f.running.Load() {
		panic("IsLeader asked of a node that is not running")
	}
	return f.leads.Load()
}

func newFakes(n int) []fakeNode {
	out := make([]fakeNode, n)
	for i := range out {
		out[i] = fakeNode{running: new(atomic.Bool), leads: new(atomic.Bool)}
		out[i].running.Store(true)
	}
	return out
}

// Leader and Followers see only running nodes; WaitLeader waits for a leader
// to appear and fails when none does.
func TestRoles(t *testing.T) {
	ns := newFakes(3)
	if li := Leader(ns); li != -1 {
		t.Fatalf("Leader = %d with no node leading", li)
	}
	if fs := Followers(ns); fmt.Sprint(fs) != "[0 1 2]" {
		t.Fatalf("Followers = %v with no node leading", fs)
	}
	ns[1].leads.Store(true)
	ns[2].running.Store(false)
	if li := Leader(ns); li != 1 {
		t.Fatalf("Leader = %d, want 1", li)
	}
	if fs := Followers(ns); fmt.Sprint(fs) != "[0]" {
		t.Fatalf("Followers = %v, want [0] (n3 is down)", fs)
	}

	ns = newFakes(3)
	time.AfterFunc(20*time.Millisecond, func() { ns[2].leads.Store(true) })
	li, nd := WaitLeader(t, 5*time.Second, func() []fakeNode { return ns })
	if li != 2 || nd.running != ns[2].running {
		t.Fatalf("WaitLeader = %d, want 2", li)
	}

	msg := runFatal(t, func(tb testing.TB) {
		WaitLeader(tb, 20*time.Millisecond, func() []fakeNode { return newFakes(2) })
	})
	if want := "no leader within 20ms"; msg != want {
		t.Fatalf("WaitLeader failed with %q, want %q", msg, want)
	}
}

// The kit is for tests only: the lockd binary does not link it.
func TestNotInLockd(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/lockd/lockd/cmd/lockd").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps cmd/lockd: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "github.com/lockd/lockd/internal/clustertest" {
			t.Fatal("cmd/lockd imports internal/clustertest, a kit for tests")
		}
	}
	if !strings.Contains(string(out), "github.com/lockd/lockd/raftstore\n") {
		t.Fatalf("go list -deps cmd/lockd does not list raftstore: %q", out)
	}
}
