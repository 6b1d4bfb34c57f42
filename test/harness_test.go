package test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/clustertest"
)

// Bounds. Every wait in the suite is one of these, and every wait polls.
const (
	readyTimeout = 30 * time.Second // a lockd process answering PING (recovery replays the log)
	exitTimeout  = 20 * time.Second // a process exiting after SIGKILL, or after a failed start
	opTimeout    = 5 * time.Second  // one request and its reply
	pollEvery    = 10 * time.Millisecond
	startTries   = 5 // attempts at a start that lost a race for a free port
)

// lockdBin is the lockd binary built once by TestMain (or named by $LOCKD_TEST_BIN).
// It is a fault build (-tags faults): the chaos suite starts it with the hidden
// fault flags, which the default build does not have; started without
// LOCKD_FAULT_INJECTION=1 it has no fault flags and behaves as the default
// build. A binary named by $LOCKD_TEST_BIN must be a fault build for the
// chaos tests.
var lockdBin string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if bin := os.Getenv("LOCKD_TEST_BIN"); bin != "" { // test a given binary (a release, a mutant)
		lockdBin = bin
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "lockd-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "test: temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	lockdBin = filepath.Join(dir, "lockd")
	gobin := "go"
	if p, err := exec.LookPath("go"); err == nil {
		gobin = p
	}
	build := exec.Command(gobin, "build", "-tags", "faults", "-o", lockdBin, "github.com/lockd/lockd/cmd/lockd")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "test: building lockd: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// syncBuffer collects a process's output while the test reads it.
type syncBuffer = clustertest.Output

// lockdProc is one lockd process started from lockdBin.
type lockdProc struct {
	t        testing.TB
	name     string
	dataDir  string
	addr     string // RESP
	peerAddr string
	httpAddr string // "" when disabled
	cmd      *exec.Cmd
	stderr   *syncBuffer
	started  time.Time // just before the process was started
	exited   chan struct{}
	killed   atomic.Bool // kill sent it SIGKILL (an end the test caused)
}

// lockdAddrs are the listen addresses of one process.
type lockdAddrs struct{ resp, peer, http string }

// freeLockdAddrs is clustertest.Addrs for the three listen addresses of one process.
func freeLockdAddrs(t testing.TB) lockdAddrs {
	t.Helper()
	a := clustertest.Addrs(t, 3)
	return lockdAddrs{resp: a[0], peer: a[1], http: a[2]}
}

// spawnLockd starts a lockd process and returns at once. Only the flags a user
// must give are passed: the addresses and the data directory. The process is
// killed in t.Cleanup, and its stderr is logged there if the test failed (or
// always, with LOCKD_TEST_LOGS=1 in the environment).
func spawnLockd(t testing.TB, name, dataDir string, a lockdAddrs) *lockdProc {
	t.Helper()
	return spawnLockdArgs(t, name, dataDir, a)
}

// spawnLockdArgs is spawnLockd with more flags after the addresses and the data
// directory (a cluster node's -node-id and -peers).
func spawnLockdArgs(t testing.TB, name, dataDir string, a lockdAddrs, extra ...string) *lockdProc {
	t.Helper()
	p := &lockdProc{t: t, name: name, dataDir: dataDir, addr: a.resp, peerAddr: a.peer, httpAddr: a.http,
		stderr: &syncBuffer{}, exited: make(chan struct{})}
	args := append([]string{"-addr", a.resp, "-peer-addr", a.peer, "-http-addr", a.http, "-data-dir", dataDir}, extra...)
	p.cmd = exec.Command(lockdBin, args...)
	dieWithTest(p.cmd)
	p.cmd.Stdout = p.stderr
	p.cmd.Stderr = p.stderr
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: start %s: %v", name, lockdBin, err)
	}
	go func() {
		p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		select {
		case <-p.exited:
		case <-time.After(exitTimeout):
			t.Errorf("%s (pid %d) did not exit within %v of SIGKILL", name, p.cmd.Process.Pid, exitTimeout)
		}
		if t.Failed() || os.Getenv("LOCKD_TEST_LOGS") != "" {
			t.Logf("---- %s stderr (pid %d, resp %s, data %s) ----\n%s", name, p.cmd.Process.Pid, p.addr, p.dataDir, p.stderr)
		}
	})
	return p
}

// startLockd starts a lone lockd on dataDir with free ports and waits until it
// answers PING and leads every one of its Raft groups (each elects itself in
// its own time; /readyz answers 200 only once all have). A start that lost the
// race for a port is retried on fresh ports.
func startLockd(t testing.TB, name, dataDir string) *lockdProc {
	t.Helper()
	return startLockdArgs(t, name, dataDir)
}

// startLockdArgs is startLockd with more flags after the addresses and the
// data directory (-groups 8).
func startLockdArgs(t testing.TB, name, dataDir string, extra ...string) *lockdProc {
	t.Helper()
	p := spawnPinged(t, name, dataDir, extra...)
	if err := p.waitGroupsLed(readyTimeout); err != nil {
		t.Fatalf("%s: %v\nstderr:\n%s", name, err, p.stderr)
	}
	return p
}

// spawnPinged starts a lone lockd on dataDir with free ports and returns once
// it answers PING, which it does at once, before its groups have elected
// themselves. A start that lost the race for a port is retried on fresh ports.
func spawnPinged(t testing.TB, name, dataDir string, extra ...string) *lockdProc {
	t.Helper()
	for attempt := 1; ; attempt++ {
		p := spawnLockdArgs(t, name, dataDir, freeLockdAddrs(t), extra...)
		err := p.waitReady(readyTimeout)
		if err == nil {
			return p
		}
		if p.lostPortRace() && attempt < startTries {
			t.Logf("%s: lost a port race (attempt %d), retrying on other ports", name, attempt)
			continue
		}
		t.Fatalf("%s: %v\nstderr:\n%s", name, err, p.stderr)
	}
}

func (p *lockdProc) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// lostPortRace reports whether p has exited because another process held one
// of its ports: its start never ran, and starting again (on other ports, or a
// while later on the same ones) is safe.
func (p *lockdProc) lostPortRace() bool {
	return p.hasExited() && strings.Contains(p.stderr.String(), "address already in use")
}

// waitReady polls PING until it is answered with PONG, the process exits, or
// the bound passes. (lockd answers PING as soon as its RESP port is bound,
// while its groups still elect leaders; keyspace commands wait for their
// group's leader, bounded by the store.)
func (p *lockdProc) waitReady(bound time.Duration) error {
	deadline := time.Now().Add(bound)
	var last error
	exited := false
	ponged := clustertest.Until(bound, pollEvery, func() bool {
		if exited = p.hasExited(); exited {
			return true
		}
		c, err := dialRESP(p.addr, min(time.Second, time.Until(deadline)))
		if err == nil {
			var r reply
			r, err = c.do("PING")
			c.close()
			if err == nil && r.kind == '+' && r.str == "PONG" {
				return true
			}
			if err == nil {
				err = fmt.Errorf("PING answered %v", r)
			}
		}
		last = err
		return false
	})
	switch {
	case exited:
		return fmt.Errorf("exited (%v) before answering PING", p.cmd.ProcessState)
	case ponged:
		return nil
	}
	return fmt.Errorf("no PONG on %s within %v (last: %v)", p.addr, bound, last)
}

// kill sends SIGKILL and waits (bounded) until the process is gone.
func (p *lockdProc) kill() {
	p.t.Helper()
	if !p.hasExited() {
		p.killed.Store(true)
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.t.Fatalf("%s: kill: %v", p.name, err)
	}
	if _, ok := p.waitExit(exitTimeout); !ok {
		p.t.Fatalf("%s (pid %d) still running %v after SIGKILL", p.name, p.cmd.Process.Pid, exitTimeout)
	}
}

// signal sends sig (SIGTERM: a clean shutdown) and returns at once.
func (p *lockdProc) signal(sig os.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("%s: signal %v: %v", p.name, sig, err)
	}
}

// waitExit waits up to bound for the process to exit and returns its exit code.
func (p *lockdProc) waitExit(bound time.Duration) (code int, exited bool) {
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode(), true
	case <-time.After(bound):
		return 0, false
	}
}

// conn dials the process's RESP port; the connection is closed in t.Cleanup.
func (p *lockdProc) conn() *respConn {
	p.t.Helper()
	c, err := dialRESP(p.addr, opTimeout)
	if err != nil {
		p.t.Fatalf("%s: dial %s: %v", p.name, p.addr, err)
	}
	p.t.Cleanup(c.close)
	return c
}

// must sends one command and fails the test on an I/O error or an error reply.
func must(t testing.TB, c *respConn, args ...string) reply {
	t.Helper()
	r, err := c.do(args...)
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	if r.isErr() {
		t.Fatalf("%s: %v", strings.Join(args, " "), r)
	}
	return r
}

// mustInt is must for commands that reply with an integer.
func mustInt(t testing.TB, c *respConn, args ...string) int64 {
	t.Helper()
	r := must(t, c, args...)
	if r.kind != ':' {
		t.Fatalf("%s: want an integer, got %v", strings.Join(args, " "), r)
	}
	return r.n
}

// port returns the port number of a host:port address.
func port(addr string) string {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if _, err := strconv.Atoi(p); err != nil {
		return addr
	}
	return p
}
