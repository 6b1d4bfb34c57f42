//go:build linux

package test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fdLimit is the open-file limit the attacked node runs under.
const fdLimit = 1024

// spawnWithFDLimit starts a lone lockd (as spawnPinged) whose open-file limit
// is n, soft and hard, so that Go cannot raise it.
func spawnWithFDLimit(t *testing.T, n int, extra ...string) *lockdProc {
	t.Helper()
	wrapper := filepath.Join(t.TempDir(), "lockd-nofile")
	script := fmt.Sprintf("#!/bin/sh\nulimit -n %d || exit 97\nexec %q \"$@\"\n", n, lockdBin)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	real := lockdBin
	lockdBin = wrapper // spawnLockdArgs executes lockdBin; no test here runs in parallel
	defer func() { lockdBin = real }()
	return spawnPinged(t, "fdlimit", t.TempDir(), extra...)
}

// openFDs counts the descriptors process pid has open.
func openFDs(pid int) int {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// Issue 44, item 3: idle HTTP keep-alive connections must not take a node
// down. 3,000 connections that each asked /healthz once and then stay open,
// against a node limited to 1,024 descriptors, used to take every
// descriptor: the next RESP connection's accept failed with EMFILE and the
// accept loop's error ended the process. Now the HTTP port holds at most half
// the limit (the others wait in the kernel's queue), and a failed accept is
// retried: the node goes on answering RESP clients, and HTTP again once the
// idle connections close.
func TestIdleHTTPConnectionsLeaveRESPServing(t *testing.T) {
	const attack = 3000
	// The connections the node does not accept wait in the kernel's accept
	// queue, which holds up to somaxconn of them.
	if b, err := os.ReadFile("/proc/sys/net/core/somaxconn"); err == nil {
		if n, _ := strconv.Atoi(strings.TrimSpace(string(b))); n < attack {
			t.Skipf("net.core.somaxconn is %d: the kernel cannot queue the %d connections of the attack", n, attack)
		}
	}
	p := spawnWithFDLimit(t, fdLimit)
	limits, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/limits")
	if err != nil || !strings.Contains(string(limits), strconv.Itoa(fdLimit)) {
		t.Fatalf("the node's limits do not show %d open files: %v\n%s", fdLimit, err, limits)
	}

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range attack {
		c, err := net.DialTimeout("tcp", p.httpAddr, time.Second)
		if err != nil {
			break // the kernel's accept queue is full
		}
		c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: lockd\r\n\r\n"))
		conns = append(conns, c)
	}
	if len(conns) < attack*3/4 {
		t.Fatalf("only %d of %d attack connections opened", len(conns), attack)
	}
	// Let the node take what it will: poll its descriptor count until it
	// stops growing (bounded).
	pid := p.cmd.Process.Pid
	last, stable := -1, time.Now()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && time.Since(stable) < 300*time.Millisecond; time.Sleep(pollEvery) {
		if n := openFDs(pid); n != last {
			last, stable = n, time.Now()
		}
	}
	t.Logf("%d idle HTTP connections open; the node holds %d descriptors of %d", len(conns), last, fdLimit)

	// The node answers RESP: new clients, several of them.
	for i := range 20 {
		var err error
		deadline := time.Now().Add(opTimeout)
		for time.Now().Before(deadline) {
			var c *respConn
			if c, err = dialRESP(p.addr, time.Second); err == nil {
				var r reply
				r, err = c.do("PING")
				c.close()
				if err == nil && r.str == "PONG" {
					break
				}
			}
			if p.hasExited() {
				t.Fatalf("the node exited under %d idle HTTP connections:\n%s", len(conns), p.stderr)
			}
			time.Sleep(pollEvery)
		}
		if err != nil {
			t.Fatalf("RESP client %d under the attack: %v", i, err)
		}
	}
	c := p.conn()
	must(t, c, "SET", "k", "v")
	if r := must(t, c, "GET", "k"); r.str != "v" {
		t.Fatalf("GET k = %v", r)
	}

	// Once the idle connections go, HTTP answers again.
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	var res *http.Response
	hc := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(readyTimeout); time.Now().Before(deadline); time.Sleep(pollEvery) {
		if res, err = hc.Get("http://" + p.httpAddr + "/healthz"); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("/healthz after the attack: %v", err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("/healthz after the attack: %s", res.Status)
	}
	if p.hasExited() {
		t.Fatalf("the node exited:\n%s", p.stderr)
	}
}
