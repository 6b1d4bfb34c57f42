package test

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// benchTimeout bounds one small redis-benchmark run.
const benchTimeout = 2 * time.Minute

// errorLine matches what redis-benchmark prints for an error reply ("Error from
// server: ERR ...", after which it exits 1) or any other failure.
var errorLine = regexp.MustCompile(`ERR|(?i:error)`)

// TestBenchSmoke runs redis-benchmark, briefly, against a real lockd process, as
// scripts/bench.sh does with full counts: every request must be answered without
// an error reply. redis-benchmark is a dependency of the suite (`make test`
// installs it), so a missing one fails the test.
func TestBenchSmoke(t *testing.T) {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		t.Fatalf("redis-benchmark is not on PATH (%v): the suite needs it (Debian: apt-get install redis-tools; `make test` installs it)", err)
	}
	p := startLockd(t, "lockd-bench", filepath.Join(t.TempDir(), "data"))
	host, prt := "127.0.0.1", port(p.addr)
	start := time.Now()

	for _, tc := range []struct {
		name  string
		args  []string
		tests []string // the titles redis-benchmark must report a rate for
	}{
		{"set-get", []string{"-t", "set,get", "-n", "2000", "-c", "10"}, []string{"SET", "GET"}},
		{"set-get-pipelined", []string{"-t", "set,get", "-n", "2000", "-c", "10", "-P", "16"}, []string{"SET", "GET"}},
		{"set-nx-px", []string{"-n", "2000", "-c", "10", "SET", "k", "v", "NX", "PX", "10000"}, []string{"SET k v NX PX 10000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
			defer cancel()
			args := append([]string{"-h", host, "-p", prt, "-q"}, tc.args...)
			out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
			// Progress lines end in \r; one line per \r or \n.
			text := strings.ReplaceAll(string(out), "\r", "\n")
			if ctx.Err() != nil {
				t.Fatalf("redis-benchmark %s did not finish within %v; output:\n%s", strings.Join(args, " "), benchTimeout, text)
			}
			if err != nil {
				t.Errorf("redis-benchmark %s: %v", strings.Join(args, " "), err)
			}
			for _, line := range strings.Split(text, "\n") {
				if errorLine.MatchString(line) {
					t.Errorf("redis-benchmark reported an error: %s", strings.TrimSpace(line))
				}
			}
			for _, title := range tc.tests {
				if !strings.Contains(text, title+": ") || !regexp.MustCompile(regexp.QuoteMeta(title)+`: [0-9.]+ requests per second`).MatchString(text) {
					t.Errorf("redis-benchmark reported no rate for %q; output:\n%s", title, text)
				}
			}
		})
	}

	// The NX run left its key, fenced and expiring (unless the whole test took
	// so long on a slow machine that it expired).
	if time.Since(start) > 8*time.Second {
		t.Logf("redis-benchmark runs took %v: not checking the key k, whose 10s TTL may have run out", time.Since(start))
		return
	}
	c := p.conn()
	if r := must(t, c, "GET", "k"); r.str != "v" {
		t.Errorf("GET k after SET k v NX PX 10000 = %v, want \"v\"", r)
	}
	if pttl := mustInt(t, c, "PTTL", "k"); pttl <= 0 || pttl > 10000 {
		t.Errorf("PTTL k = %d, want in (0, 10000]", pttl)
	}
	if tok := mustInt(t, c, "FENCE", "k"); tok <= 0 {
		t.Errorf("FENCE k = %d, want a positive token", tok)
	}
}
