package test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The fenced-resource workload. Worker *processes* (this test binary, re-run
// as TestChaosWorkerProcess, so that the nemesis can SIGSTOP a client that
// holds a lock) loop: acquire a resource's lock with a lease, read the
// resource with the token, think, write back what they read plus one element
// of their own, release. Resource r0 is guarded by a Redis-style lock (SET
// name owner NX PX ttl FENCE), r1 by LOCK.ACQUIRE name owner PX ttl, half the
// time with WAIT (blocked in the name's FIFO queue).
//
// The resource is served by this test process. Fenced, it rejects a read or
// write whose token is below the highest it has seen (a read raises it too,
// so a paused holder cannot overwrite what a later holder read). Unfenced (the
// negative control) it accepts everything. Either way it records every
// accepted write; an accepted element missing from the final record is a
// lost update.

const (
	chaosTTL        = 1000 // ms: the lease of the workload's locks
	chaosResources  = 2
	chaosWait       = 1500            // ms: how long a LOCK.ACQUIRE … WAIT blocks at most
	chaosOpTimeout  = 3 * time.Second // one lockd request of a worker (more than chaosWait)
	chaosWorkerEnv  = "LOCKD_CHAOS_WORKER"
	chaosEventToken = "EV"
)

func chaosLockName(r int) string { return "chaos:lock:r" + strconv.Itoa(r) }

// resState is one immutable version of a resource: its parent plus one element.
type resState struct {
	parent *resState
	elem   string
	n      int
}

func (s *resState) has(elem string) bool {
	for ; s != nil; s = s.parent {
		if s.elem == elem {
			return true
		}
	}
	return false
}

// resource is one shared record.
type resource struct {
	versions []*resState // versions[v]: version v (0: empty)
	cur      int
	highest  int64  // highest token seen
	owner    string // who presented it first
	accepted []string
	rejected int
}

// resourceServer serves the resources over HTTP on 127.0.0.1.
type resourceServer struct {
	mu         sync.Mutex
	fenced     bool
	res        []*resource
	violations []string
	srv        *http.Server
	addr       string
}

func startResourceServer(t *testing.T, fenced bool) *resourceServer {
	t.Helper()
	rs := &resourceServer{fenced: fenced}
	for i := 0; i < chaosResources; i++ {
		rs.res = append(rs.res, &resource{versions: []*resState{nil}})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rs.addr = ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("/read", rs.handle(false))
	mux.HandleFunc("/write", rs.handle(true))
	rs.srv = &http.Server{Handler: mux}
	go rs.srv.Serve(ln)
	t.Cleanup(func() { rs.srv.Close() })
	return rs
}

// check applies the token rule and reports whether the request passes. A token
// equal to the highest seen, presented by a different owner, is a repeated
// token: lockd granted one token twice.
func (rs *resourceServer) check(r *resource, tok int64, owner string) bool {
	if tok == r.highest && owner != r.owner && r.owner != "" {
		rs.violations = append(rs.violations, fmt.Sprintf("token %d presented by %s and by %s", tok, r.owner, owner))
	}
	if rs.fenced && tok < r.highest {
		r.rejected++
		return false
	}
	if tok > r.highest {
		r.highest, r.owner = tok, owner
	}
	return true
}

func (rs *resourceServer) handle(write bool) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		ri, _ := strconv.Atoi(q.Get("r"))
		tok, _ := strconv.ParseInt(q.Get("tok"), 10, 64)
		owner := q.Get("owner")
		rs.mu.Lock()
		defer rs.mu.Unlock()
		if ri < 0 || ri >= len(rs.res) {
			http.Error(w, "no such resource", http.StatusNotFound)
			return
		}
		r := rs.res[ri]
		if !rs.check(r, tok, owner) {
			http.Error(w, "stale token", http.StatusConflict)
			return
		}
		if !write {
			fmt.Fprint(w, r.cur)
			return
		}
		base, err := strconv.Atoi(q.Get("base"))
		if err != nil || base < 0 || base >= len(r.versions) {
			http.Error(w, "bad base", http.StatusBadRequest)
			return
		}
		// Write what the client read plus its element: a blind overwrite of
		// whatever was written since, exactly as a read-modify-write does.
		parent := r.versions[base]
		n := 1
		if parent != nil {
			n = parent.n + 1
		}
		r.versions = append(r.versions, &resState{parent: parent, elem: q.Get("elem"), n: n})
		r.cur = len(r.versions) - 1
		r.accepted = append(r.accepted, q.Get("elem"))
		fmt.Fprint(w, "ok")
	}
}

// lost returns the accepted elements missing from the final records, and the
// number of accepted writes.
func (rs *resourceServer) lost() (lost []string, accepted, rejected int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for i, r := range rs.res {
		final := r.versions[r.cur]
		for _, e := range r.accepted {
			if !final.has(e) {
				lost = append(lost, fmt.Sprintf("r%d:%s", i, e))
			}
		}
		accepted += len(r.accepted)
		rejected += r.rejected
	}
	return lost, accepted, rejected
}

// chaosWorkerConfig is handed to a worker process in its environment.
type chaosWorkerConfig struct {
	ID       int
	Seed     uint64
	Addrs    []string // lockd RESP addresses
	Resource string   // resource server address
}

// TestChaosWorkerProcess is not a test: it is the body of a worker process
// started by the chaos suite (with LOCKD_CHAOS_WORKER set); otherwise it skips.
func TestChaosWorkerProcess(t *testing.T) {
	cfgJSON := os.Getenv(chaosWorkerEnv)
	if cfgJSON == "" {
		t.Skip("the body of a chaos worker process; run by the chaos suite")
	}
	var cfg chaosWorkerConfig
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		t.Fatal(err)
	}
	runChaosWorker(cfg, os.Stdout)
}

// A worker's events, one line each on its stdout:
//
//	EV acq <name> <owner> <sentNs> <ackNs> <token|nil|unk|rej>
//	EV hold <name> <owner> <token>          (read done; about to think, then write)
//	EV free <name> <owner>                  (done with this lock)
func runChaosWorker(cfg chaosWorkerConfig, out *os.File) {
	w := bufio.NewWriter(out)
	emit := func(format string, args ...any) {
		fmt.Fprintf(w, chaosEventToken+" "+format+"\n", args...)
		w.Flush()
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(cfg.ID)))
	hc := &http.Client{Timeout: 5 * time.Second}
	var c *respConn
	next := cfg.ID
	do := func(args ...string) (reply, error) {
		if c == nil {
			addr := cfg.Addrs[next%len(cfg.Addrs)]
			next++
			var err error
			if c, err = dialRESP(addr, chaosOpTimeout); err != nil {
				c = nil
				return reply{}, errNotSent{err}
			}
		}
		r, err := c.do(args...)
		if err != nil || isRetryable(r) {
			c.close()
			c = nil
		}
		return r, err
	}
	for seq := 0; ; seq++ {
		ri := rng.IntN(chaosResources)
		name := chaosLockName(ri)
		owner := fmt.Sprintf("w%d-%d", cfg.ID, seq)
		var args []string
		if ri == 0 {
			args = []string{"SET", name, owner, "NX", "PX", strconv.Itoa(chaosTTL), "FENCE"}
		} else {
			args = []string{"LOCK.ACQUIRE", name, owner, "PX", strconv.Itoa(chaosTTL)}
			if rng.IntN(2) == 0 {
				// Blocked in the name's FIFO queue until granted or the wait
				// ends (workload 3: the replay checks the queue's order).
				args = append(args, "WAIT", strconv.Itoa(chaosWait))
			}
		}
		sent := time.Now()
		r, err := do(args...)
		ack := time.Now()
		res := "unk"
		switch {
		case err != nil:
			if _, ok := err.(errNotSent); ok {
				res = "rej"
			}
		case r.kind == ':':
			res = strconv.FormatInt(r.n, 10)
		case r.null:
			res = "nil"
		case r.isErr() && strings.HasPrefix(r.str, "TRYAGAIN"):
			res = "rej"
		}
		emit("acq %s %s %d %d %s", name, owner, sent.UnixNano(), ack.UnixNano(), res)
		if r.kind != ':' || err != nil {
			time.Sleep(time.Duration(5+rng.IntN(20)) * time.Millisecond) // back-off between attempts
			continue
		}
		tok := r.n
		q := fmt.Sprintf("r=%d&tok=%d&owner=%s", ri, tok, owner)
		base := ""
		if res, err := hc.Get("http://" + cfg.Resource + "/read?" + q); err == nil {
			var b [32]byte
			n, _ := res.Body.Read(b[:])
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				base = string(b[:n])
			}
		}
		if base != "" {
			emit("hold %s %s %d", name, owner, tok)
			// The work under the lock: usually short, sometimes longer.
			think := time.Duration(5+rng.IntN(40)) * time.Millisecond
			if rng.IntN(10) == 0 {
				think = time.Duration(100+rng.IntN(300)) * time.Millisecond
			}
			time.Sleep(think)
			if res, err := hc.Post("http://"+cfg.Resource+"/write?"+q+"&base="+base+"&elem="+owner, "", nil); err == nil {
				res.Body.Close()
			}
		}
		if ri == 0 {
			do("DELEX", name, "IFEQ", owner)
		} else {
			do("LOCK.RELEASE", name, strconv.FormatInt(tok, 10))
		}
		emit("free %s %s", name, owner)
	}
}

// isRetryable: a reply after which the worker reconnects (maybe elsewhere).
func isRetryable(r reply) bool {
	return r.isErr() && (strings.HasPrefix(r.str, "TRYAGAIN") || strings.HasPrefix(r.str, "UNKNOWNOUTCOME"))
}

// chaosAcquire is one acquire attempt as a worker reported it.
type chaosAcquire struct {
	name, owner string
	sent, ack   time.Time
	token       int64 // > 0: granted
	unknown     bool  // outcome unknown
}

// chaosWorker is the parent's handle on one worker process.
type chaosWorker struct {
	id      int
	cmd     *exec.Cmd
	exited  chan struct{}
	mu      sync.Mutex
	acqs    []chaosAcquire
	holding bool // between a hold and a free event
	paused  bool
}

// startChaosWorker starts one worker process and parses its events.
func startChaosWorker(t *testing.T, cfg chaosWorkerConfig) *chaosWorker {
	t.Helper()
	b, _ := json.Marshal(cfg)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestChaosWorkerProcess$", "-test.count", "1")
	cmd.Env = append(os.Environ(), chaosWorkerEnv+"="+string(b), "LOCKD_TEST_BIN="+lockdBin)
	dieWithTest(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start worker %d: %v", cfg.ID, err)
	}
	w := &chaosWorker{id: cfg.ID, cmd: cmd, exited: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			w.event(strings.Fields(sc.Text()))
		}
		cmd.Wait()
		close(w.exited)
	}()
	t.Cleanup(func() { w.stop() })
	return w
}

func (w *chaosWorker) event(f []string) {
	if len(f) < 2 || f[0] != chaosEventToken {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch f[1] {
	case "acq":
		if len(f) != 7 {
			return
		}
		s, _ := strconv.ParseInt(f[4], 10, 64)
		a, _ := strconv.ParseInt(f[5], 10, 64)
		acq := chaosAcquire{name: f[2], owner: f[3], sent: time.Unix(0, s), ack: time.Unix(0, a)}
		switch f[6] {
		case "unk":
			acq.unknown = true
		case "nil", "rej":
		default:
			acq.token, _ = strconv.ParseInt(f[6], 10, 64)
		}
		w.acqs = append(w.acqs, acq)
	case "hold":
		w.holding = true
	case "free":
		w.holding = false
	}
}

// pause SIGSTOPs (on) or SIGCONTs the worker.
func (w *chaosWorker) pause(on bool) {
	sig := syscall.SIGCONT
	if on {
		sig = syscall.SIGSTOP
	}
	w.cmd.Process.Signal(sig)
	w.mu.Lock()
	w.paused = on
	w.mu.Unlock()
}

func (w *chaosWorker) isHolding() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.holding && !w.paused
}

// stop kills the worker and waits (bounded) for its events to end.
func (w *chaosWorker) stop() {
	w.cmd.Process.Signal(syscall.SIGCONT)
	w.cmd.Process.Kill()
	select {
	case <-w.exited:
	case <-time.After(exitTimeout):
	}
}

func (w *chaosWorker) history() []chaosAcquire {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]chaosAcquire(nil), w.acqs...)
}
