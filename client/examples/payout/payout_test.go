package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockd/lockd/server"
	"github.com/redis/go-redis/v9"
)

// Bounds. Every wait polls or blocks on an event, and is bounded by one of these.
const (
	// stepTimeout bounds a worker reaching its next line or exiting; B's
	// wait for A's session to lapse (5 s TTL) is one step.
	stepTimeout = 20 * time.Second
)

// TestMain runs the worker instead of the tests when PAYOUT_WORKER=1: the
// test starts each worker as a separate process from its own binary, so that
// SIGSTOP freezes everything the worker runs, its keepalives included.
func TestMain(m *testing.M) {
	if os.Getenv("PAYOUT_WORKER") == "1" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// The seed's scenario with a real PostgreSQL and real processes: worker A
// takes the lock, reads the batch as pending, and is stopped (SIGSTOP) right
// before its write; its keepalives stop with it. Worker B waits in the lock's
// queue until lockd ends A's session, gets the lock with a larger token and
// pays. A is resumed (SIGCONT) and writes. With the fence A's write is
// rejected and the batch is paid once; without it (the negative control) the
// batch is paid twice. (A's -gate only fixes where in its code the stop
// lands: after its last check of the lock, before its write.)
func TestPayoutPausedWorker(t *testing.T) {
	dsn := startPostgres(t)
	lockdAddr := startLockd(t)
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, Schema); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		batch int64
		fence bool
	}{{"fenced", 1, true}, {"unfenced", 2, false}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if err := Setup(ctx, db, c.batch, 12_500); err != nil {
				t.Fatal(err)
			}
			common := []string{"-lockd", lockdAddr, "-pg", dsn, "-batch", strconv.FormatInt(c.batch, 10),
				"-fence=" + strconv.FormatBool(c.fence), "-session-ttl", "5s"}

			a := startWorker(t, append(common, "-name", "A", "-gate")...)
			tokA := a.token(t, "READY token=")
			a.signal(t, syscall.SIGSTOP)

			// B queues for the lock. A is stopped: its keepalives stop, lockd
			// ends its session after one TTL and hands the lock to B.
			b := startWorker(t, append(common, "-name", "B")...)
			tokB := b.token(t, "PAID token=")
			if code := b.wait(t); code != exitOK {
				t.Fatalf("B exited %d", code)
			}
			if info := lockInfo(t, lockdAddr, fmt.Sprintf("payouts/batch-%d", c.batch)); info != nil {
				t.Fatalf("the lock is still held after B: %v", info)
			}
			if tokB <= tokA {
				t.Fatalf("B's token %d is not larger than A's %d", tokB, tokA)
			}

			a.signal(t, syscall.SIGCONT)
			a.release(t)
			if got := a.expect(t, "RESUMED"); !strings.Contains(got, "lock-lost-locally=true") {
				t.Errorf("A did not know on resuming that its lock was lost: %q", got)
			}
			var want int
			if c.fence {
				a.expect(t, "REJECTED token="+strconv.FormatInt(tokA, 10))
				want = exitRejected
			} else {
				a.expect(t, "PAID token="+strconv.FormatInt(tokA, 10))
				want = exitOK
			}
			if code := a.wait(t); code != want {
				t.Fatalf("A exited %d, want %d", code, want)
			}

			var paid []string
			rows, err := db.QueryContext(ctx, `SELECT worker, token FROM payments WHERE batch_id = $1 ORDER BY id`, c.batch)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var w string
				var tok int64
				rows.Scan(&w, &tok)
				paid = append(paid, fmt.Sprintf("%s/%d", w, tok))
			}
			if c.fence {
				if len(paid) != 1 || paid[0] != fmt.Sprintf("B/%d", tokB) {
					t.Fatalf("fenced: payments %v, want B's alone", paid)
				}
				var fence int64
				db.QueryRowContext(ctx, `SELECT token FROM fences WHERE resource = $1`, fmt.Sprintf("payouts/batch-%d", c.batch)).Scan(&fence)
				if fence != tokB {
					t.Fatalf("fence %d, want B's token %d", fence, tokB)
				}
			} else if len(paid) != 2 {
				t.Fatalf("unfenced: payments %v, want the batch paid twice (the negative control)", paid)
			}
			t.Logf("tokens A=%d B=%d; payments %v", tokA, tokB, paid)
		})
	}
}

// lockInfo is LOCK.INFO name (nil when free).
func lockInfo(t *testing.T, addr, name string) any {
	t.Helper()
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	v, err := rc.Do(context.Background(), "LOCK.INFO", name).Result()
	if err == redis.Nil {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// startLockd starts a single-node lockd in this process, closed with the test.
func startLockd(t *testing.T) string {
	t.Helper()
	s, err := server.New(server.Config{RESPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatalf("start lockd: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s.RESPAddr()
}

// worker is a payout worker process.
type worker struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // its stdout, line by line; closed at EOF
	exited chan struct{}
	mu     sync.Mutex
	seen   []string // every line read so far, and stderr, for failure messages
	stderr strings.Builder
}

func startWorker(t *testing.T, args ...string) *worker {
	t.Helper()
	w := &worker{name: args[len(args)-1], lines: make(chan string, 64), exited: make(chan struct{})}
	for i, a := range args {
		if a == "-name" {
			w.name = args[i+1]
		}
	}
	w.cmd = exec.Command(os.Args[0], args...)
	w.cmd.Env = append(os.Environ(), "PAYOUT_WORKER=1")
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var err error
	if w.stdin, err = w.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	w.cmd.Stderr = &lockedWriter{mu: &w.mu, w: &w.stderr}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		close(w.lines)
	}()
	go func() { w.cmd.Wait(); close(w.exited) }()
	t.Cleanup(func() {
		w.cmd.Process.Kill() // also ends a stopped process
		<-w.exited
	})
	return w
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// expect reads lines until one contains want, and returns it.
func (w *worker) expect(t *testing.T, want string) string {
	t.Helper()
	timeout := time.After(stepTimeout)
	for {
		select {
		case line, ok := <-w.lines:
			if !ok {
				t.Fatalf("worker %s ended without %q; output %q, stderr %q", w.name, want, w.seen, w.errText())
			}
			w.seen = append(w.seen, line)
			if strings.Contains(line, want) {
				return line
			}
		case <-timeout:
			t.Fatalf("worker %s: no %q within %v; output %q", w.name, want, stepTimeout, w.seen)
		}
	}
}

// token reads the line with prefix and parses the token that follows it.
func (w *worker) token(t *testing.T, prefix string) int64 {
	t.Helper()
	line := w.expect(t, prefix)
	tok, err := strconv.ParseInt(strings.Fields(lineAfter(line, prefix))[0], 10, 64)
	if err != nil {
		t.Fatalf("worker %s: %q: %v", w.name, line, err)
	}
	return tok
}

func (w *worker) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := w.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v to worker %s: %v", sig, w.name, err)
	}
}

// release lets a gated worker go on to its write.
func (w *worker) release(t *testing.T) {
	t.Helper()
	if _, err := io.WriteString(w.stdin, "go\n"); err != nil {
		t.Fatalf("worker %s: %v", w.name, err)
	}
}

// wait waits for the worker to exit and returns its exit code.
func (w *worker) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-w.exited:
	case <-time.After(stepTimeout):
		t.Fatalf("worker %s did not exit within %v; output %q", w.name, stepTimeout, w.seen)
	}
	return w.cmd.ProcessState.ExitCode()
}

func (w *worker) errText() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stderr.String()
}
