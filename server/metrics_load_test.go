package server

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// scrape reads /metrics into name{labels} -> value.
func scrape(t *testing.T, s *Server) map[string]float64 {
	t.Helper()
	res, err := http.Get("http://" + s.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// inParallel runs f(0) … f(n-1), each on a goroutine of its own, and waits
// for them all.
func inParallel(n int, f func(w int)) {
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() { f(w) })
	}
	wg.Wait()
}

// TestMetricsFollowLoad runs a known mix of operations from several clients
// and checks that each series moved by exactly what was done.
func TestMetricsFollowLoad(t *testing.T) {
	s := start(t, t.TempDir())
	defer s.Close()
	ctx := context.Background()
	before := scrape(t, s)
	const workers, cycles = 8, 25
	inParallel(workers, func(w int) {
		c := client(t, s, 2)
		for i := range cycles {
			name := fmt.Sprintf("m/%d/%d", w, i)
			tok, err := c.Do(ctx, "LOCK.ACQUIRE", name, "o", "PX", "60000").Int64()
			if err != nil {
				t.Errorf("acquire: %v", err)
				return
			}
			if n, _ := c.Do(ctx, "LOCK.RELEASE", name, tok).Int64(); n != 1 {
				t.Errorf("release %s %d = %d", name, tok, n)
			}
		}
	})
	c := client(t, s, 2)
	held, _ := c.Do(ctx, "LOCK.ACQUIRE", "m/held", "o", "PX", "60000").Int64()
	c.Do(ctx, "NAMESPACE.SET", "m/", "MAXWAITERS", "0")
	c.Do(ctx, "LOCK.ACQUIRE", "m/held", "p", "WAIT", "100") // QUEUEFULL
	after := scrape(t, s)
	delta := func(name string) float64 { return after[name] - before[name] }
	for name, want := range map[string]float64{
		"lockd_lock_grants_total":     workers*cycles + 1,
		"lockd_lock_releases_total":   workers * cycles,
		"lockd_lock_queue_full_total": 1,
		"lockd_locks_held":            1,
		"lockd_locks":                 1,
	} {
		if got := delta(name); got != want {
			t.Errorf("%s moved by %v, want %v", name, got, want)
		}
	}
	// Every write was committed through the log: at least one commit sample per
	// write, and the synced log writes shared among them.
	writes := float64(workers*cycles*2 + 3)
	if got := delta("lockd_raft_commit_seconds_count"); got < writes {
		t.Errorf("lockd_raft_commit_seconds_count moved by %v, want at least %v", got, writes)
	}
	if got := delta("lockd_fsync_seconds_count"); got < 1 || got > writes {
		t.Errorf("lockd_fsync_seconds_count moved by %v, want 1..%v", got, writes)
	}
	for name, want := range map[string]float64{
		`lockd_resp_commands_total{command="lock.acquire",result="ok"}`:        workers*cycles + 1,
		`lockd_resp_commands_total{command="lock.release",result="ok"}`:        workers * cycles,
		`lockd_resp_commands_total{command="lock.acquire",result="QUEUEFULL"}`: 1,
		`lockd_command_duration_seconds_count{command="lock.release"}`:         workers * cycles,
	} {
		if got := delta(name); got != want {
			t.Errorf("%s moved by %v, want %v", name, got, want)
		}
	}
	if v, _ := c.Do(ctx, "LOCK.VALIDATE", "m/held", held).Int64(); v != 1 {
		t.Fatal("the held lock is not held")
	}
}

// TestSharedLogMetrics: on a node whose groups share one log, concurrent
// writes to several groups are counted as group writes in
// lockd_raft_log_write_batches_total (every group's, one per
// lockd_fsync_seconds observation) and as the synced writes (one journal
// fdatasync each) that held them, never more of those than group writes; a
// node with one group (no shared log) has no such series.
func TestSharedLogMetrics(t *testing.T) {
	s, err := New(Config{RESPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", DataDir: t.TempDir(), Groups: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	before := scrape(t, s)
	const workers, cycles = 16, 20
	inParallel(workers, func(w int) {
		c := client(t, s, 2)
		for i := range cycles {
			if err := c.Do(ctx, "SET", fmt.Sprintf("shared/%d/%d", w, i), "v").Err(); err != nil {
				t.Errorf("SET: %v", err)
				return
			}
		}
	})
	after := scrape(t, s)
	commits := after["lockd_log_commits_total"] - before["lockd_log_commits_total"]
	writes := after["lockd_raft_log_write_batches_total"] - before["lockd_raft_log_write_batches_total"]
	fsyncs := after["lockd_fsync_seconds_count"] - before["lockd_fsync_seconds_count"]
	if commits < 1 || writes < commits {
		t.Errorf("commits moved by %v, group writes by %v: want 1 <= commits <= writes", commits, writes)
	}
	// One observation per group write; the scrape reads the series one after
	// the other while a group's background entries may land between them.
	if d := writes - fsyncs; d < -8 || d > 8 {
		t.Errorf("group writes moved by %v, lockd_fsync_seconds_count by %v: want them within 8 of each other", writes, fsyncs)
	}
	if writes > workers*cycles+8 {
		t.Errorf("group writes moved by %v for %d SETs", writes, workers*cycles)
	}

	one := start(t, t.TempDir())
	defer one.Close()
	for name := range scrape(t, one) {
		if strings.HasPrefix(name, "lockd_log_commits_total") {
			t.Errorf("a one-group node exports %s", name)
		}
	}
}
