package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/server"
)

// TestEndToEnd runs each workload for a second against an in-process
// single-node lockd, through the command's own flags and -json report.
func TestEndToEnd(t *testing.T) {
	srv, err := server.New(server.Config{RESPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Logf("close: %v", err)
		}
	})
	addr := srv.RESPAddr()

	for _, tc := range []struct {
		name, workload string
		extra          []string
	}{
		{"contended", "contended", []string{"-fence", "-names", "4"}},
		{"uncontended", "uncontended", []string{"-fence", "-pipeline", "4"}},
		{"mixed", "mixed", nil},
		// The seed mix on lockd's sessions: keepalives renew a session.
		{"sessions", "mixed", []string{"-sessions", "-pipeline", "2"}},
		// lockd's lock records: one name, waiting in its queue instead of polling.
		{"lock-wait", "contended", []string{"-lock", "-wait", "4s", "-fence", "-names", "1"}},
		{"lock", "uncontended", []string{"-lock", "-fence", "-pipeline", "4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-addr", addr, "-workload", tc.workload, "-clients", "8",
				"-duration", "1s", "-json", "-quiet"}, tc.extra...)
			r, stdout := runJSON(t, args)
			if r.Grants == 0 {
				t.Errorf("no grants:\n%s", stdout)
			}
			if r.FenceViolations != 0 {
				t.Errorf("%d fencing violations: %v", r.FenceViolations, r.ErrorSamples)
			}
			checkOneSecondRun(t, r)
			switch tc.name {
			case "lock-wait":
				// 8 clients queue for one name; each wait (4s) is far longer
				// than a hand-over, so an acquire hardly ever comes back empty.
				if !r.Lock || r.WaitMS != 4000 || r.Taken*20 > r.Grants {
					t.Errorf("lock %v, wait %dms: %d grants, %d acquires that came back empty", r.Lock, r.WaitMS, r.Grants, r.Taken)
				}
				if r.FenceChecked != r.Grants || r.Lost != 0 {
					t.Errorf("%d grants, %d tokens checked, %d releases of a lock no longer held", r.Grants, r.FenceChecked, r.Lost)
				}
			case "contended":
				if r.Taken == 0 {
					t.Errorf("8 clients on 4 names never found one taken")
				}
				if r.FenceChecked != r.Grants {
					t.Errorf("%d grants but %d tokens checked", r.Grants, r.FenceChecked)
				}
			case "uncontended", "lock":
				if r.Taken != 0 || r.Lost != 0 {
					t.Errorf("%d acquires of a client's own fresh names found them taken, %d releases found them gone", r.Taken, r.Lost)
				}
			case "sessions":
				if !r.Sessions || r.Note != sessionKeepaliveNote || r.Errors.Total != 0 || r.Lost != 0 {
					t.Errorf("sessions %v, note %q: %d errors (%v), %d keepalives, releases or reads that found a lock gone",
						r.Sessions, r.Note, r.Errors.Total, r.ErrorSamples, r.Lost)
				}
				if share := r.Mix["keepalive"]; share < 0.07 || share > 0.09 {
					t.Errorf("keepalives are %.3f of the mix, want 0.08", share)
				}
			case "mixed":
				if r.Note == "" || (r.Errors.Total == 0 && (r.MixFallbacks != 0 || r.Lost != 0)) {
					t.Errorf("note %q, %d fallbacks, %d lost", r.Note, r.MixFallbacks, r.Lost)
				}
				if share := r.Mix["keepalive"]; share < 0.07 || share > 0.09 {
					t.Errorf("keepalives are %.3f of the mix, want 0.08", share)
				}
			}
		})
	}

	// -n bounds a run by operations instead of time.
	t.Run("n", func(t *testing.T) {
		checkOpsBound(t, 500, "-addr", addr, "-workload", "mixed", "-clients", "4")
	})
}

// checkOpsBound runs lockbench with args plus -n n and checks that exactly n
// operations were sent.
func checkOpsBound(t *testing.T, n int, args ...string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args = append(args, "-n", strconv.Itoa(n), "-json", "-quiet")
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var r result
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Ops+r.Errors.Total != uint64(n) {
		t.Errorf("-n %d sent %d operations", n, r.Ops+r.Errors.Total)
	}
}

func TestParseFlags(t *testing.T) {
	var sink bytes.Buffer
	cfg, err := parseFlags([]string{"-addr", "a:1,b:2", "-addr", "c:3", "-workload", "mixed"}, &sink)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.addrs, " "); got != "a:1 b:2 c:3" {
		t.Errorf("addrs %q", got)
	}
	if cfg.duration != 10*time.Second || cfg.n != 0 {
		t.Errorf("neither -duration nor -n: duration %v n %d, want 10s and 0", cfg.duration, cfg.n)
	}
	if cfg, err = parseFlags([]string{"-n", "100"}, &sink); err != nil || cfg.duration != 0 || cfg.addrs[0] != "127.0.0.1:6379" {
		t.Errorf("-n 100: %+v, %v", cfg, err)
	}
	if cfg, err = parseFlags([]string{"-etcd", "mutex", "-ttl", "1500ms"}, &sink); err != nil || cfg.addrs[0] != "127.0.0.1:2379" || cfg.leaseSeconds() != 2 {
		t.Errorf("-etcd mutex -ttl 1500ms: %+v, %v; want etcd's default address and a 2s lease", cfg, err)
	}
	for _, bad := range [][]string{
		{"-workload", "sessions"}, {"-clients", "0"}, {"-ttl", "1500us"}, {"-pipeline", "0"},
		{"-resp", "4"}, {"-names", "0"}, {"extra"}, {"-etcd", "lease"}, {"-etcd", "txn", "-workload", "mixed"},
		{"-etcd", "mutex", "-pipeline", "2"}, {"-wait", "1s"}, {"-lock", "-workload", "mixed"},
		{"-lock", "-etcd", "txn"}, {"-lock", "-wait", "5s"}, {"-lock", "-wait", "1500us"},
		{"-sessions"}, {"-sessions", "-workload", "mixed", "-lock"}, {"-sessions", "-workload", "mixed", "-etcd", "txn"},
		{"-direct", "-workload", "mixed"}, {"-direct", "-workload", "contended", "-names", "2"}, {"-direct", "-etcd", "txn"},
	} {
		if _, err := parseFlags(bad, &sink); !errors.Is(err, errUsage) {
			t.Errorf("%q: err %v, want a usage error", bad, err)
		}
	}
}

func TestCheckToken(t *testing.T) {
	s := &shared{tokens: map[string]*tokenTrack{"a": {}, "b": {}}}
	for _, g := range []struct {
		name  string
		token int64
	}{{"a", 5}, {"b", 3}, {"a", 9}, {"b", 4}, {"a", 9}, {"a", 7}, {"c", 1}} {
		s.checkToken(g.name, g.token)
	}
	if s.checked.Load() != 6 || s.violations.Load() != 2 {
		t.Errorf("checked %d, violations %d; want 6 and 2 (a: 9 after 9, 7 after 9)", s.checked.Load(), s.violations.Load())
	}
}

func TestClassify(t *testing.T) {
	for msg, want := range map[string]errClass{
		"TRYAGAIN write not applied: no leader":                         ecTryAgain,
		"UNKNOWNOUTCOME the write may or may not have been applied (x)": ecUnknownOutcome,
		"ERR syntax error":                         ecOther,
		"dial tcp 127.0.0.1:1: connection refused": ecOther,
	} {
		if got := classify(errors.New(msg)); got != want {
			t.Errorf("%q: %s, want %s", msg, errClassNames[got], errClassNames[want])
		}
	}
}

// runJSON runs lockbench with args (which include -json) and decodes its
// report; it also returns the raw output for messages.
func runJSON(t *testing.T, args []string) (result, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if code := run(ctx, args, &stdout, &stderr); code != 0 {
		t.Fatalf("lockbench %s: exit %d\nstderr: %s\nstdout: %s", strings.Join(args, " "), code, stderr.String(), stdout.String())
	}
	var r result
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("-json output: %v\n%s", err, stdout.String())
	}
	return r, stdout.String()
}

// checkOneSecondRun checks what every -duration 1s run reports: about a
// second, and acquire and release latencies that make sense. Errors are
// logged, not failures: a loaded machine can time a command out.
func checkOneSecondRun(t *testing.T, r result) {
	t.Helper()
	if r.Errors.Total != 0 {
		t.Logf("%d errors: %v", r.Errors.Total, r.ErrorSamples)
	}
	if r.Seconds < 1 || r.Seconds > 10 {
		t.Errorf("ran %.2fs, want about 1s", r.Seconds)
	}
	kinds := map[string]kindResult{}
	for _, k := range r.Kinds {
		kinds[k.Kind] = k
	}
	for _, k := range []string{"acquire", "release"} {
		if kr := kinds[k]; kr.Count == 0 || kr.P50MS <= 0 || kr.P99MS < kr.P50MS || kr.MaxMS < kr.P999MS {
			t.Errorf("%s latency: %+v", k, kr)
		}
	}
}
