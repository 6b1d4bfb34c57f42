package test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
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

// TestBenchTable runs make bench's script (scripts/compare.sh) as narrowly as
// it goes, one lockd node and redis-server at one client for 300 ms a run,
// with BENCH_TABLE pointing into the test's temp dir, and checks the Markdown
// page it writes there: the run's date and commit, the warning that this is
// not a full run, a table row for every run, and the target those rows decide.
// The page docs/benchmarks.md links to (docs/bench/latest.md, written by a
// real make bench) must stay as it was.
func TestBenchTable(t *testing.T) {
	for _, tool := range []string{"go", "redis-server", "redis-cli"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH (%v): scripts/compare.sh needs it (`make test` installs redis)", tool, err)
		}
	}
	tracked := filepath.Join("..", "docs", "bench", "latest.md")
	before, _ := os.ReadFile(tracked)
	dir := t.TempDir()
	table := filepath.Join(dir, "bench", "latest.md")

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join("..", "scripts", "compare.sh"))
	cmd.Env = append(benchEnv(os.Environ()),
		"BENCH_SYSTEMS=lockd-1 redis", "BENCH_CLIENTS=1", "BENCH_DURATION=300ms", "BENCH_TABLE="+table, "TMPDIR="+dir)
	// On timeout SIGTERM, on which the script stops what it started, not
	// SIGKILL, which would leave its servers running.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("compare.sh: %v (ctx: %v)\nstdout:\n%s\nstderr:\n%s", err, ctx.Err(), stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "workload    clients  server") {
		t.Errorf("compare.sh printed no text table; stdout:\n%s", stdout.String())
	}
	b, err := os.ReadFile(table)
	if err != nil {
		t.Fatalf("compare.sh wrote no table at BENCH_TABLE: %v; stderr:\n%s", err, stderr.String())
	}
	page := string(b)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)\A# make bench: the latest run$`),
		regexp.MustCompile("(?m)^> \\*\\*Not a full `make bench`:\\*\\* a partial run: only systems `lockd-1 redis`.*only clients `1`.*runs of 300ms \\(BENCH_DURATION\\)"),
		regexp.MustCompile(`(?m)^- \*\*When:\*\* \d{4}-\d\d-\d\d \d\d:\d\d to .*UTC$`),
		regexp.MustCompile("(?m)^- \\*\\*Commit:\\*\\* `([0-9a-f]{7,}(\\+dirty)?|unknown[^`]*)` \\(built with go"),
		regexp.MustCompile(`(?m)^- \*\*Machine:\*\* .*\d+ CPUs`),
		regexp.MustCompile(`(?m)^\| workload \| clients \| server \| cycles/s \| ops/s \| acquire p50 \|.*\| /etcd-mutex \|$`),
		regexp.MustCompile(`(?m)^\|---\|--:\|`),
		regexp.MustCompile(`(?m)^- lockd-1, uncontended, 1 clients: >= 1x redis — [0-9.]+x: (met|MISSED|\*\*MISSED\*\*)$`),
		regexp.MustCompile(`(?m)^- 1 million held locks.*make bench-memory`),
	} {
		if !want.MatchString(page) {
			t.Errorf("the table page has no line matching %s; page:\n%s", want, page)
		}
	}
	// One row per run: | workload | 1 | `server` | cycles/s | ops/s | 5 latencies | errors | 3 ratios |.
	num := `[0-9]+(\.[0-9]+)?`
	for _, w := range []string{"uncontended", "hot-key"} {
		for _, server := range []string{"lockd-1", "lockd-1-lock", "redis"} {
			ratio := num // a lockd row's /redis
			if server == "redis" {
				ratio = "-"
			}
			row := regexp.MustCompile("(?m)^\\| " + w + " \\| 1 \\| `" + regexp.QuoteMeta(server) + "` \\| [1-9][0-9]* \\| " + num +
				strings.Repeat(" \\| "+num, 6) + " \\| 0 \\| " + ratio + " \\| - \\| - \\|$")
			if !row.MatchString(page) {
				t.Errorf("the table page has no row for %s %s matching %s; page:\n%s", w, server, row, page)
			}
		}
	}
	// Written through a temporary file beside it, which must be gone.
	if ents, err := os.ReadDir(filepath.Dir(table)); err != nil || len(ents) != 1 {
		t.Errorf("BENCH_TABLE's directory holds %v (%v), want latest.md alone", ents, err)
	}
	if after, _ := os.ReadFile(tracked); !bytes.Equal(before, after) {
		t.Errorf("compare.sh with BENCH_TABLE set changed %s", tracked)
	}
}

// benchEnv is env without the BENCH_ and LOCKD_GROUPS settings a developer
// may have exported, which would change what the narrow run does.
func benchEnv(env []string) []string {
	var kept []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "BENCH_") && !strings.HasPrefix(kv, "LOCKD_GROUPS=") && !strings.HasPrefix(kv, "TMPDIR=") {
			kept = append(kept, kv)
		}
	}
	return kept
}
