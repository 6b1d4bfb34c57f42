package client_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockd/lockd/client"
	"github.com/redis/go-redis/v9"
)

// binDir holds the lockd binary that buildLockd built (TestMain removes it).
var binDir string

// buildLockd builds cmd/lockd once per test binary.
var buildLockd = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "lockd-client-bin-")
	if err != nil {
		return "", err
	}
	binDir = dir
	bin := filepath.Join(dir, "lockd")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/lockd/lockd/cmd/lockd").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build lockd: %v\n%s", err, out)
	}
	return bin, nil
})

// lockdNode is one lockd process of a test cluster.
type lockdNode struct {
	id, addr string
	log      string // the process's stdout and stderr
	cmd      *exec.Cmd
	exited   chan struct{}
}

// startTries bounds the starts of a test cluster whose free ports were taken
// by another process between freePort and lockd's bind.
const startTries = 3

// startLockdCluster starts n lockd processes on 127.0.0.1 and waits until
// one leads and every node knows it. They are killed with the test. A node
// that exits because a port is taken makes it start all n again on new
// ports (at most startTries times); any other exit, or no agreed leader
// within startTimeout, fails the test with the nodes' logs.
func startLockdCluster(t *testing.T, n int) []*lockdNode {
	t.Helper()
	bin, err := buildLockd()
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 1; ; attempt++ {
		nodes := spawnLockdCluster(t, bin, n)
		var gone *lockdNode
		deadline := time.Now().Add(startTimeout)
		for {
			if _, ok := leaderOf(nodes); ok {
				return nodes
			}
			for _, nd := range nodes {
				select {
				case <-nd.exited:
					gone = nd
				default:
				}
			}
			if gone != nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(pollEvery)
		}
		for _, nd := range nodes {
			nd.kill()
		}
		if gone != nil && attempt < startTries && strings.Contains(readLog(gone), "address already in use") {
			t.Logf("%s: a port was taken (attempt %d); starting the cluster again", gone.id, attempt)
			continue
		}
		var logs strings.Builder
		for _, nd := range nodes {
			fmt.Fprintf(&logs, "--- %s (%s):\n%s\n", nd.id, nd.addr, lastLines(readLog(nd), 40))
		}
		if gone != nil {
			t.Fatalf("%s exited while the cluster started\n%s", gone.id, logs.String())
		}
		t.Fatalf("not within %v: a leader that every node knows\n%s", startTimeout, logs.String())
	}
}

// spawnLockdCluster starts n lockd processes on fresh ports and returns at
// once; each is killed with the test.
func spawnLockdCluster(t *testing.T, bin string, n int) []*lockdNode {
	t.Helper()
	var nodes []*lockdNode
	var peers []string
	peerAddrs := make([]string, n)
	ports := freePorts(t, 2*n) // distinct: a node's two, and the nodes' among each other
	for i := range n {
		id := fmt.Sprintf("n%d", i+1)
		peerAddrs[i] = fmt.Sprintf("127.0.0.1:%d", ports[2*i])
		peers = append(peers, id+"="+peerAddrs[i])
		nodes = append(nodes, &lockdNode{id: id, addr: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1])})
	}
	for i, nd := range nodes {
		dir := t.TempDir()
		nd.log = filepath.Join(dir, "lockd.log")
		nd.cmd = exec.Command(bin, "-node-id", nd.id, "-addr", nd.addr, "-peer-addr", peerAddrs[i],
			"-data-dir", filepath.Join(dir, "data"), "-peers", strings.Join(peers, ","), "-http-addr", "")
		logf, err := os.Create(nd.log)
		if err != nil {
			t.Fatal(err)
		}
		nd.cmd.Stdout, nd.cmd.Stderr = logf, logf
		nd.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := nd.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		nd.exited = make(chan struct{})
		go func() { nd.cmd.Wait(); logf.Close(); close(nd.exited) }()
		t.Cleanup(func() { nd.kill() })
	}
	return nodes
}

// kill stops nd's process, if it still runs, and waits until it is gone.
func (nd *lockdNode) kill() {
	nd.cmd.Process.Kill()
	<-nd.exited
}

// readLog returns what nd's process wrote so far.
func readLog(nd *lockdNode) string {
	b, _ := os.ReadFile(nd.log)
	return string(b)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// raftInfo reads a node's INFO raft fields.
func raftInfo(addr string) map[string]string {
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second})
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := rc.Info(ctx, "raft").Result()
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	return m
}

// leaderOf returns the index of the node that leads, when every node given
// answers and agrees who it is.
func leaderOf(nodes []*lockdNode) (int, bool) {
	leader, known := -1, ""
	for i, nd := range nodes {
		m := raftInfo(nd.addr)
		if m == nil || m["raft_leader"] == "" || (known != "" && m["raft_leader"] != known) {
			return -1, false
		}
		known = m["raft_leader"]
		if m["raft_state"] == "leader" {
			leader = i
		}
	}
	return leader, leader >= 0
}

// A 3-node cluster loses its leader to kill -9 while a client holds a lease
// and a session lock through a follower and another goroutine acquires and
// releases in a loop. The held locks survive (extend, validate, a session
// that is not lost), nobody else gets them, tokens keep growing, and every
// lock the client returned during the failover was really held. The names
// share a {hash tag}, so they live in one group: tokens rise across the
// names of one group (the guarantee is per name; one group gives all its
// names one sequence).
func TestLockdClusterLeaderKill(t *testing.T) {
	t.Parallel()
	nodes := startLockdCluster(t, 3)
	li, _ := leaderOf(nodes)
	via := nodes[(li+1)%3] // a follower that survives
	ctx := context.Background()
	l := client.New(newRedis(t, via.addr))

	s, err := l.OpenSession(ctx, client.WithSessionTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	px, err := l.Acquire(ctx, "{ha}:px", client.WithTTL(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	held, err := l.Acquire(ctx, "{ha}:session", client.WithSession(s))
	if err != nil {
		t.Fatal(err)
	}
	maxBefore := max(mustToken(t, px), mustToken(t, held))
	t0 := time.Now()
	phase := func(what string) { t.Logf("+%v %s", time.Since(t0).Round(time.Millisecond), what) }

	// The churn: acquire, check with the server, release, as fast as it goes.
	stop := make(chan struct{})
	var churn struct {
		sync.Mutex
		grants   int
		refused  map[string]int // by sentinel
		tokens   []int64
		problems []string
	}
	churn.refused = map[string]int{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			lk, err := l.Acquire(actx, "{ha}:churn", client.WithTTL(3*time.Second))
			cancel()
			churn.Lock()
			switch {
			case err == nil:
				churn.grants++
				churn.tokens = append(churn.tokens, mustTokenNoT(lk))
			case errors.Is(err, client.ErrUnavailable), errors.Is(err, client.ErrUnknownOutcome),
				errors.Is(err, client.ErrNotObtained):
				churn.refused[strings.SplitN(err.Error(), ":", 3)[1]]++
			default:
				churn.problems = append(churn.problems, "acquire: "+err.Error())
			}
			churn.Unlock()
			if err != nil {
				continue
			}
			vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			ok, verr := l.Validate(vctx, "{ha}:churn", mustTokenNoT(lk))
			cancel()
			if verr == nil && !ok && lk.Err() == nil {
				churn.Lock()
				churn.problems = append(churn.problems, fmt.Sprintf("token %d was returned but is not held", mustTokenNoT(lk)))
				churn.Unlock()
			}
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			lk.Release(rctx)
			cancel()
		}
	}()
	waitUntil(t, 10*time.Second, "the churn's first grants", func() bool {
		churn.Lock()
		defer churn.Unlock()
		return churn.grants >= 5
	})

	phase("churn running")
	churn.Lock()
	maxBefore = max(maxBefore, churn.tokens[len(churn.tokens)-1])
	churn.Unlock()
	nodes[li].kill()
	rest := append(append([]*lockdNode(nil), nodes[:li]...), nodes[li+1:]...)
	waitUntil(t, 20*time.Second, "a new leader", func() bool {
		_, ok := leaderOf(rest)
		return ok
	})
	phase("new leader")
	// The lease survives: Extend goes through (retried while the cluster
	// elects), the token still validates, and nobody else gets the lock.
	waitUntil(t, px.Remaining(), "extending the lease through the failover", func() bool {
		return px.Extend(ctx, 20*time.Second) == nil
	})
	for _, lk := range []*client.Lock{px, held} {
		if ok, err := l.Validate(ctx, lk.Name(), mustToken(t, lk)); !ok || err != nil {
			t.Fatalf("%s after the failover: validate %v %v", lk.Name(), ok, err)
		}
		if _, err := l.Acquire(ctx, lk.Name()); !errors.Is(err, client.ErrNotObtained) {
			t.Fatalf("%s taken by another owner after the failover: %v", lk.Name(), err)
		}
	}
	if held.Err() != nil || s.Err() != nil {
		t.Fatalf("the session did not survive the failover: %v", s.Err())
	}
	phase("held locks checked")
	waitUntil(t, 10*time.Second, "grants after the failover", func() bool {
		churn.Lock()
		defer churn.Unlock()
		return len(churn.tokens) > 0 && churn.tokens[len(churn.tokens)-1] > maxBefore
	})
	phase("churn granted again")
	close(stop)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the churn did not stop")
	}
	phase("churn stopped")
	next, err := l.Acquire(ctx, "{ha}:new")
	if err != nil {
		t.Fatal(err)
	}
	churn.Lock()
	defer churn.Unlock()
	if tok := mustToken(t, next); tok <= churn.tokens[len(churn.tokens)-1] || tok <= maxBefore {
		t.Fatalf("a grant after the failover has token %d", tok)
	}
	for i := 1; i < len(churn.tokens); i++ {
		if churn.tokens[i] <= churn.tokens[i-1] {
			t.Fatalf("churn tokens not increasing: %v", churn.tokens)
		}
	}
	if len(churn.problems) > 0 {
		t.Fatalf("churn: %v", churn.problems)
	}
	if err := px.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("churn: %d grants; refused or unresolved during the failover: %v", churn.grants, churn.refused)
}

func mustTokenNoT(lk *client.Lock) int64 {
	tok, _ := lk.Token()
	return tok
}
