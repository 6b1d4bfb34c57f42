package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockd/lockd/internal/loopback"
)

// etcdStartTimeout bounds how long a fresh single-member etcd may take to
// answer a linearizable read.
const etcdStartTimeout = 20 * time.Second

// startEtcd starts a single-member etcd (Debian's etcd-server; `make test`
// installs it) on free 127.0.0.1 ports with its data in a t.TempDir, waits,
// polling with a bound, until it serves a linearizable read, and stops it in
// t.Cleanup. It returns the client address.
func startEtcd(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Fatalf("etcd is not on PATH (%v): the -etcd tests need it (Debian: apt-get install etcd-server; `make test` installs it)", err)
	}
	dir := t.TempDir()
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // a free port can be taken between probe and bind
		addrs, err := loopback.Addrs(2) // distinct: the client's and the peer's
		if err != nil {
			t.Fatal(err)
		}
		client, peer := addrs[0], "http://"+addrs[1]
		logPath := filepath.Join(dir, fmt.Sprintf("etcd-%d.log", attempt))
		logFile, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "--name", "e1", "--data-dir", filepath.Join(dir, fmt.Sprintf("data-%d", attempt)),
			"--listen-client-urls", "http://"+client, "--advertise-client-urls", "http://"+client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", "e1="+peer, "--logger", "zap", "--log-level", "warn")
		cmd.Stdout, cmd.Stderr = logFile, logFile
		if err := cmd.Start(); err != nil {
			logFile.Close()
			t.Fatalf("start etcd: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		stop := func() {
			_ = cmd.Process.Kill()
			<-exited
			logFile.Close()
		}
		if lastErr = waitEtcd(client, exited); lastErr == nil {
			t.Cleanup(stop)
			return client
		}
		stop()
		log, _ := os.ReadFile(logPath)
		t.Logf("etcd on %s did not start (%v); its log:\n%s", client, lastErr, log)
	}
	t.Fatalf("etcd did not start: %v", lastErr)
	return ""
}

// waitEtcd polls a linearizable read until it succeeds, the process exits or
// etcdStartTimeout passes.
func waitEtcd(addr string, exited <-chan struct{}) error {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(etcdStartTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err = c.Get(ctx, "probe")
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("etcd exited: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer within %v: %w", etcdStartTimeout, err)
		}
	}
}

// TestEtcdEndToEnd runs both -etcd recipes, uncontended and on one hot name,
// for a second each against a real single-member etcd, through the command's
// flags and -json report; afterwards no key of the run is left.
func TestEtcdEndToEnd(t *testing.T) {
	addr := startEtcd(t)
	for _, recipe := range []string{etcdTxn, etcdMutex} {
		for _, workload := range []string{"uncontended", "contended"} {
			t.Run(recipe+"/"+workload, func(t *testing.T) {
				prefix := "lb-" + recipe + "-" + workload
				args := []string{"-etcd", recipe, "-addr", addr, "-workload", workload, "-clients", "8",
					"-duration", "1s", "-json", "-quiet", "-prefix", prefix}
				if workload == "contended" {
					args = append(args, "-names", "1", "-fence")
				}
				r, stdout := runJSON(t, args)
				if r.Etcd != recipe || r.Grants == 0 || r.GrantsPerSec <= 0 {
					t.Errorf("etcd %q, %d grants, %.1f grants/s:\n%s", r.Etcd, r.Grants, r.GrantsPerSec, stdout)
				}
				checkOneSecondRun(t, r)
				if r.Lost != 0 {
					t.Errorf("%d releases found the lock gone: the clients' leases are kept alive", r.Lost)
				}
				switch {
				case workload == "uncontended" && r.Taken != 0:
					t.Errorf("%d acquires of a client's own fresh names found them taken", r.Taken)
				case workload == "contended" && recipe == etcdMutex && r.Taken != 0:
					t.Errorf("the mutex waits, yet %d acquires found the name taken", r.Taken)
				case workload == "contended" && recipe == etcdTxn && r.Taken == 0:
					t.Errorf("8 clients trying one name never found it taken")
				case workload == "contended" && (r.FenceViolations != 0 || r.FenceChecked != r.Grants):
					t.Errorf("%d grants, %d revisions checked, %d violations: %v", r.Grants, r.FenceChecked, r.FenceViolations, r.ErrorSamples)
				}

				c, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				resp, err := c.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
				if err != nil {
					t.Fatal(err)
				}
				if resp.Count != 0 {
					t.Errorf("%d keys under %q left after the run", resp.Count, prefix)
				}
			})
		}
	}

	t.Run("n", func(t *testing.T) {
		checkOpsBound(t, 200, "-etcd", etcdTxn, "-addr", addr, "-clients", "4")
	})
}

// TestEtcdUnreachable: an endpoint where nothing listens fails the run before
// it starts, with the address in the message.
func TestEtcdUnreachable(t *testing.T) {
	addrs, err := loopback.Addrs(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := addrs[0]
	var stdout, stderr bytes.Buffer
	args := []string{"-etcd", etcdTxn, "-addr", addr, "-clients", "1", "-duration", "1s", "-quiet", "-timeout", "500ms"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if code := run(ctx, args, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), addr) {
		t.Errorf("exit %d, stderr %q; want 1 and a message naming %s", code, stderr.String(), addr)
	}
}
