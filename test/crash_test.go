package test

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The crash workload. Every writer owns its keys (no other writer touches them)
// and writes values v1, v2, ... with one growing sequence, so after a crash each
// key must hold exactly its last acknowledged value or the later value whose
// outcome is unknown; nothing else is explainable.
const (
	crashWriters = 8
	crashCycles  = 3
	plainKeys    = 4     // per writer: SET k value FENCE
	ttlKeys      = 2     // per writer: SET k value PX ttlMs FENCE
	ttlMs        = 60000 // the TTL of the PX writes
	loadMin      = 300 * time.Millisecond
	loadMax      = 1500 * time.Millisecond
	minAcks      = 50               // a cycle kills only after this many acknowledged writes ...
	progressMax  = 10 * time.Second // ... which must come within this
	// downtime keeps the server down a while after each kill (this is the outage
	// under test, not synchronisation): a TTL that counted wall time instead of
	// log time would lose at least this much, far more than ttlSlack.
	downtime = time.Second
	// ttlSlack is what the TTL bounds allow beyond the measured times. The bounds
	// below are exact up to millisecond truncation (a few ms), so this is ample.
	ttlSlack = 250 * time.Millisecond
)

// ttlRef says that a key had pttl ms left at a log time that the current lockd
// process read at some instant in [lo, hi] (the test's clock).
type ttlRef struct {
	pttl   int64
	lo, hi time.Time
}

// unknownWrite is a request whose reply never came: it may or may not be applied.
type unknownWrite struct {
	val    int64     // value number (SET)
	sent   time.Time // when it was sent
	minTok int64     // the writer's last acknowledged token in the key's group when it was sent
}

// groupTok is a fencing token and the Raft group whose log index it is:
// tokens are unique within a group, not across groups.
type groupTok struct {
	group int
	tok   int64
}

type keyState struct {
	name    string
	group   int // the Raft group that holds it
	ttl     bool
	has     bool  // a value is known to be present
	val     int64 // its value number
	tok     int64 // its fencing token
	ref     ttlRef
	unknown *unknownWrite // at most one: a writer stops at its first failure
}

type counterState struct {
	name    string
	group   int   // the Raft group that holds it
	val     int64 // last acknowledged (after a restart: observed) value
	unknown int   // INCRs whose outcome is unknown since
}

// crashWriter is one load goroutine's state. Only its goroutine touches it during
// the load; the test reads it after the load has stopped.
type crashWriter struct {
	id      int
	pad     string // appended to every value after a '.' (crashRun.pad)
	rng     *rand.Rand
	seq     int64 // last value number used; grows across cycles
	keys    []*keyState
	ctr     *counterState
	lastTok map[int]int64 // by group: the writer's requests are sequential, so its tokens in one group grow

	// per cycle
	floorTok    map[int]int64     // by group: every token acknowledged in this cycle must exceed it
	acked       []groupTok        // tokens acknowledged in this cycle
	lastAckSend map[int]time.Time // by group: when the last acknowledged write (of any kind) there was sent
	failAt      time.Time
	failErr     error
	violations  []string
}

func newCrashWriter(id int, seed uint64, pad int) *crashWriter {
	w := &crashWriter{id: id, rng: rand.New(rand.NewPCG(seed, uint64(id))),
		ctr: &counterState{name: fmt.Sprintf("crash:w%d:ctr", id)}, lastTok: map[int]int64{}}
	for i := 0; i < plainKeys+ttlKeys; i++ {
		k := &keyState{name: fmt.Sprintf("crash:w%d:k%d", id, i), ttl: i >= plainKeys}
		if k.ttl {
			k.name = fmt.Sprintf("crash:w%d:ttl%d", id, i-plainKeys)
		}
		w.keys = append(w.keys, k)
	}
	if pad > 0 {
		w.pad = "." + strings.Repeat("p", pad)
	}
	return w
}

// valueNum is the value number n of a value the writers wrote ("v<n>", or
// "v<n>.<padding>"); false for anything else.
func valueNum(s string) (int64, bool) {
	num, _, _ := strings.Cut(s, ".")
	if !strings.HasPrefix(num, "v") {
		return 0, false
	}
	v, err := strconv.ParseInt(num[1:], 10, 64)
	return v, err == nil
}

func (w *crashWriter) violate(format string, args ...any) {
	w.violations = append(w.violations, fmt.Sprintf("writer %d: ", w.id)+fmt.Sprintf(format, args...))
}

// run issues writes one at a time until stop is set or a request fails. A
// failed request's outcome is recorded as unknown and the writer stops, so each
// writer has at most one unknown write per cycle.
func (w *crashWriter) run(addr string, stop *atomic.Bool, acks *atomic.Int64) {
	c, err := dialRESP(addr, opTimeout)
	if err != nil {
		w.failAt, w.failErr = time.Now(), err
		return
	}
	defer c.close()
	for !stop.Load() {
		var ok bool
		if w.rng.IntN(10) < 2 {
			ok = w.incr(c)
		} else {
			ok = w.set(c, w.keys[w.rng.IntN(len(w.keys))])
		}
		if !ok {
			return
		}
		acks.Add(1)
	}
}

// SET key v<n> [PX ttlMs] FENCE
func (w *crashWriter) set(c *respConn, k *keyState) bool {
	w.seq++
	args := []string{"SET", k.name, "v" + strconv.FormatInt(w.seq, 10) + w.pad}
	if k.ttl {
		args = append(args, "PX", strconv.Itoa(ttlMs))
	}
	args = append(args, "FENCE")
	sent := time.Now()
	r, err := c.do(args...)
	if err == nil && r.kind != ':' {
		w.violate("%s: want a token, got %v", strings.Join(args, " "), r)
	}
	if err != nil || r.kind != ':' {
		k.unknown = &unknownWrite{val: w.seq, sent: sent, minTok: w.lastTok[k.group]}
		w.failAt, w.failErr = time.Now(), err
		return false
	}
	ack := time.Now()
	switch {
	case r.n <= w.floorTok[k.group]:
		w.violate("%s: token %d is not above %d, the largest token of group %d seen before this cycle", args[1], r.n, w.floorTok[k.group], k.group)
	case r.n <= w.lastTok[k.group]:
		w.violate("%s: token %d is not above this writer's previous token %d in group %d", args[1], r.n, w.lastTok[k.group], k.group)
	}
	w.lastTok[k.group] = r.n
	w.acked = append(w.acked, groupTok{k.group, r.n})
	k.has, k.val, k.tok = true, w.seq, r.n
	k.ref = ttlRef{pttl: ttlMs, lo: sent, hi: ack}
	w.lastAckSend[k.group] = sent
	return true
}

// INCR counter
func (w *crashWriter) incr(c *respConn) bool {
	sent := time.Now()
	r, err := c.do("INCR", w.ctr.name)
	if err == nil && r.kind != ':' {
		w.violate("INCR %s: want an integer, got %v", w.ctr.name, r)
	}
	if err != nil || r.kind != ':' {
		w.ctr.unknown++
		w.failAt, w.failErr = time.Now(), err
		return false
	}
	if r.n != w.ctr.val+1 {
		w.violate("INCR %s replied %d after %d (it has a single writer)", w.ctr.name, r.n, w.ctr.val)
	}
	w.ctr.val = r.n
	w.lastAckSend[w.ctr.group] = sent
	return true
}

// TestCrashUnderLoad kills lockd with SIGKILL in the middle of a write load,
// restarts it on the same data directory, and checks that every acknowledged
// write survived (values, fencing tokens, counters), that tokens keep growing
// across the restart (in each Raft group: a token is an index of its group's
// log), and that the downtime did not eat into any TTL. Three cycles, each
// building on the state the previous one verified. The node runs 8 groups (a
// lone node's default is one): each recovers its own log on restart.
func TestCrashUnderLoad(t *testing.T) { crashUnderLoad(t, crashRun{flags: crashGroups}) }

// TestCrashUnderLoadLargeValues is TestCrashUnderLoad with values of 32 KiB
// and a log bound of 2 MiB over two groups (-log-bytes): each group
// snapshots for its log's bytes every few dozen writes and keeps a handful
// of entries after each, so a kill lands among snapshots, log cuts and
// journal files emptied and removed.
func TestCrashUnderLoadLargeValues(t *testing.T) {
	crashUnderLoad(t, crashRun{flags: []string{"-groups", "2", "-log-bytes", strconv.Itoa(2 << 20)}, pad: 32 << 10,
		witnessOf: "snapshots for the log's bytes", witness: func(t *testing.T, p *lockdProc, _ string) int {
			info, err := raftInfo(p.addr)
			if err != nil {
				t.Fatalf("INFO raft: %v", err)
			}
			n, _ := strconv.Atoi(info["raft_snapshots_by_bytes"])
			return n
		}})
}

// TestCrashUnderLoadEntryFiles is TestCrashUnderLoad with values of 1 MiB
// and a log that is never cut (no snapshot comes before 10^6 entries or
// 1 TiB), so that journal files fill and their oldest one's entries move
// into badger, each in a file of its own (logstore's entry files), and a
// kill lands among those moves and files; it asserts that entry files were
// there.
func TestCrashUnderLoadEntryFiles(t *testing.T) {
	crashUnderLoad(t, crashRun{flags: []string{"-groups", "2", "-snapshot-threshold", "1000000",
		"-trailing-logs", "1000000000", "-log-bytes", "1099511627776"}, pad: 1 << 20,
		witnessOf: "log entries in files of their own", witness: func(t *testing.T, _ *lockdProc, dir string) int {
			return countEntryFiles(t, dir)
		}})
}

// crashRun configures crashUnderLoad.
type crashRun struct {
	flags []string // lockd's flags, at the start and at every restart
	pad   int      // bytes of padding in every value the writers SET
	// witness, if set, counts before each kill what the run is there to
	// kill lockd among (witnessOf names it), from the running process or
	// its data directory: unless some kill saw it, the run fails.
	witness   func(t *testing.T, p *lockdProc, dir string) int
	witnessOf string
}

func crashUnderLoad(t *testing.T, run crashRun) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CRASH_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("CRASH_SEED: %v", err)
		}
	}
	t.Logf("seed %d (rerun with CRASH_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := filepath.Join(t.TempDir(), "data")

	ws := make([]*crashWriter, crashWriters)
	for i := range ws {
		ws[i] = newCrashWriter(i, seed, run.pad)
	}
	seen := map[groupTok]string{} // every token acknowledged or observed, and what it was
	maxTok := map[int]int64{}     // by group

	p := startLockdArgs(t, "lockd-run1", dir, run.flags...)
	var keys []string
	for _, w := range ws {
		keys = append(keys, w.ctr.name)
		for _, k := range w.keys {
			keys = append(keys, k.name)
		}
	}
	for cycle := 1; cycle <= crashCycles; cycle++ {
		keys = append(keys, freshKey(cycle))
	}
	groups := keyGroups(t, p.addr, keys...)
	t.Logf("the keys span groups %v", groupSet(groups))
	for _, w := range ws {
		for _, k := range w.keys {
			k.group = groups[k.name]
		}
		w.ctr.group = groups[w.ctr.name]
	}
	var witnessed []int // run.witness before each kill
	defer func() {
		if run.witness != nil && !t.Failed() {
			if slices.Max(append(witnessed, 0)) == 0 {
				t.Errorf("no %s before any kill: the kills did not land among them", run.witnessOf)
			}
			t.Logf("%s before each kill: %v", run.witnessOf, witnessed)
		}
	}()
	for cycle := 1; cycle <= crashCycles; cycle++ {
		// Load, then kill while it runs.
		var stop atomic.Bool
		var acks atomic.Int64
		var wg sync.WaitGroup
		addr := p.addr
		for _, w := range ws {
			w.floorTok, w.acked, w.lastAckSend, w.failAt, w.failErr = maps.Clone(maxTok), nil, map[int]time.Time{}, time.Time{}, nil
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.run(addr, &stop, &acks)
			}()
		}
		loadFor := loadMin + time.Duration(rng.Int64N(int64(loadMax-loadMin)))
		start := time.Now()
		for time.Since(start) < loadFor || acks.Load() < minAcks {
			if time.Since(start) > progressMax {
				stop.Store(true)
				p.kill()
				wg.Wait()
				t.Fatalf("cycle %d: only %d writes acknowledged in %v", cycle, acks.Load(), progressMax)
			}
			time.Sleep(pollEvery)
		}
		if run.witness != nil {
			witnessed = append(witnessed, run.witness(t, p, dir))
		}
		killAt := time.Now()
		p.kill()
		deadAt := time.Now() // the process is gone: nothing is stamped after this
		stop.Store(true)
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * opTimeout):
			t.Fatalf("cycle %d: writers still running %v after the kill", cycle, 2*opTimeout)
		}

		lastAckSend := map[int]time.Time{} // by group
		unknowns := 0
		for _, w := range ws {
			for _, v := range w.violations {
				t.Error(v)
			}
			w.violations = nil
			if !w.failAt.IsZero() && w.failAt.Before(killAt) {
				t.Errorf("cycle %d: writer %d failed before the kill (server up): %v", cycle, w.id, w.failErr)
			}
			for g, at := range w.lastAckSend {
				if at.After(lastAckSend[g]) {
					lastAckSend[g] = at
				}
			}
			for _, gt := range w.acked {
				if prev, dup := seen[gt]; dup {
					t.Errorf("cycle %d: token %d of group %d acknowledged to writer %d was already %s", cycle, gt.tok, gt.group, w.id, prev)
				}
				seen[gt] = fmt.Sprintf("acknowledged to writer %d in cycle %d", w.id, cycle)
				maxTok[gt.group] = max(maxTok[gt.group], gt.tok)
			}
			if !w.failAt.IsZero() {
				unknowns++
			}
		}
		t.Logf("cycle %d: killed after %v of load, %d writes acknowledged, %d with unknown outcome; largest tokens by group %v",
			cycle, killAt.Sub(start).Round(time.Millisecond), acks.Load(), unknowns, maxTok)
		if t.Failed() {
			return
		}

		// Stay down, restart on the same data directory, check.
		time.Sleep(downtime)
		p = startLockdArgs(t, fmt.Sprintf("lockd-run%d", cycle+1), dir, run.flags...)
		t.Logf("cycle %d: down for %v, serving again %v after the restart",
			cycle, p.started.Sub(deadAt).Round(time.Millisecond), time.Since(p.started).Round(time.Millisecond))
		var res resolved
		verifyRecovered(t, p, ws, seen, maxTok, deadAt, lastAckSend, cycle, &res)
		t.Logf("cycle %d: recovered; of the writes with unknown outcome %d were applied, %d were not",
			cycle, res.applied, res.lost)
		if t.Failed() {
			return
		}

		// A fresh write after the restart gets a token above every earlier
		// one of its group.
		c := p.conn()
		fresh := freshKey(cycle)
		g := groups[fresh]
		tok := mustInt(t, c, "SET", fresh, "y", "FENCE")
		if top := maxTok[g]; tok <= top {
			t.Fatalf("cycle %d: SET %s y FENCE after the restart returned token %d, not above %d, the largest of group %d (%s)",
				cycle, fresh, tok, top, g, seen[groupTok{g, top}])
		}
		seen[groupTok{g, tok}] = fmt.Sprintf("the fresh write after restart %d", cycle)
		maxTok[g] = tok
	}
}

// freshKey is the key written after restart cycle.
func freshKey(cycle int) string { return fmt.Sprintf("crash:fresh%d", cycle) }

// crashGroups are TestCrashUnderLoad's group flags (the restarts pass them
// too; the count is fixed in the data directory anyway).
var crashGroups = []string{"-groups", "8"}

// resolved counts how the unknown outcomes of a cycle turned out.
type resolved struct{ applied, lost int }

// verifyRecovered reads every key of the workload from the restarted process and
// checks it against what was acknowledged before the kill; unknown outcomes are
// resolved by what is found. It raises maxTok (by group) to the tokens found.
func verifyRecovered(t *testing.T, p *lockdProc, ws []*crashWriter, seen map[groupTok]string, maxTok map[int]int64,
	deadAt time.Time, lastAckSend map[int]time.Time, cycle int, res *resolved) {
	t.Helper()
	c := p.conn()
	for _, w := range ws {
		for _, k := range w.keys {
			verifyKey(t, p, c, k, w.pad, seen, maxTok, deadAt, lastAckSend, cycle, res)
		}
		r := must(t, c, "GET", w.ctr.name)
		got := int64(0)
		if !r.null {
			n, err := strconv.ParseInt(r.str, 10, 64)
			if err != nil {
				t.Fatalf("cycle %d: GET %s = %v, not a number", cycle, w.ctr.name, r)
			}
			got = n
		}
		if got < w.ctr.val || got > w.ctr.val+int64(w.ctr.unknown) {
			t.Errorf("cycle %d: counter %s is %d after the restart; acknowledged %d, plus %d INCRs of unknown outcome",
				cycle, w.ctr.name, got, w.ctr.val, w.ctr.unknown)
		}
		if w.ctr.unknown > 0 {
			res.applied += int(got - w.ctr.val)
			res.lost += w.ctr.unknown - int(got-w.ctr.val)
		}
		w.ctr.val, w.ctr.unknown = got, 0
	}
}

func verifyKey(t *testing.T, p *lockdProc, c *respConn, k *keyState, pad string, seen map[groupTok]string,
	maxTok map[int]int64, deadAt time.Time, lastAckSend map[int]time.Time, cycle int, res *resolved) {
	t.Helper()
	u := k.unknown
	k.unknown = nil
	r := must(t, c, "GET", k.name)
	if u != nil {
		if v, _ := valueNum(r.str); !r.null && v == u.val {
			res.applied++
		} else {
			res.lost++
		}
	}
	if r.null {
		if k.has {
			t.Errorf("cycle %d: %s is gone after the restart; v%d was acknowledged with token %d", cycle, k.name, k.val, k.tok)
		}
		return // never acknowledged, and the unknown write (if any) did not apply
	}
	v, ok := valueNum(r.str)
	if !ok || r.str != "v"+strconv.FormatInt(v, 10)+pad {
		t.Errorf("cycle %d: %s holds %.40q (%d bytes), which no writer wrote", cycle, k.name, r.str, len(r.str))
		return
	}
	tok := mustInt(t, c, "FENCE", k.name)
	ref := k.ref
	switch {
	case k.has && v == k.val:
		if tok != k.tok {
			t.Errorf("cycle %d: FENCE %s = %d after the restart, but v%d was acknowledged with token %d", cycle, k.name, tok, v, k.tok)
		}
	case u != nil && v == u.val:
		// The write in flight at the kill was applied: its token is new, and
		// above the writer's previous one.
		if prev, dup := seen[groupTok{k.group, tok}]; dup {
			t.Errorf("cycle %d: FENCE %s = %d for v%d (unknown outcome, applied), but that token was already %s", cycle, k.name, tok, v, prev)
		}
		if tok <= u.minTok {
			t.Errorf("cycle %d: FENCE %s = %d for v%d, not above the writer's earlier token %d", cycle, k.name, tok, v, u.minTok)
		}
		seen[groupTok{k.group, tok}] = fmt.Sprintf("FENCE %s after restart %d (a write of unknown outcome)", k.name, cycle)
		ref = ttlRef{pttl: ttlMs, lo: u.sent, hi: deadAt}
	default:
		want := "nothing"
		if k.has {
			want = fmt.Sprintf("v%d (acknowledged)", k.val)
		}
		if u != nil {
			want += fmt.Sprintf(" or v%d (unknown outcome)", u.val)
		}
		t.Errorf("cycle %d: %s holds v%d after the restart; want %s", cycle, k.name, v, want)
		return
	}
	k.has, k.val, k.tok = true, v, tok
	maxTok[k.group] = max(maxTok[k.group], tok)

	sent := time.Now()
	pttl := mustInt(t, c, "PTTL", k.name)
	got := time.Now()
	if !k.ttl {
		if pttl != -1 {
			t.Errorf("cycle %d: PTTL %s = %d, want -1 (written without a TTL)", cycle, k.name, pttl)
		}
		return
	}
	// Log time only runs while a lockd process runs. Up time since the
	// reference: at most deadAt-ref.lo in the killed process, plus at most
	// got-p.started in this one; the downtime in between must not count.
	upMax := deadAt.Sub(ref.lo) + got.Sub(p.started)
	lo := ref.pttl - upMax.Milliseconds() - ttlSlack.Milliseconds()
	// And log time did advance: the restarted process resumes the group's log
	// time at least from the last acknowledged write in that group (each group
	// keeps its own log time), sent after the reference (if it was).
	hi := ref.pttl + ttlSlack.Milliseconds()
	if d := lastAckSend[k.group].Sub(ref.hi); d > 0 {
		hi -= d.Milliseconds()
	}
	if pttl <= 0 || pttl < lo || pttl > hi {
		t.Errorf("cycle %d: PTTL %s = %d after the restart, want in [%d, %d]: %d ms left at the reference, "+
			"up for at most %v since (down for %v, which must not count)",
			cycle, k.name, pttl, lo, hi, ref.pttl, upMax.Round(time.Millisecond), p.started.Sub(deadAt).Round(time.Millisecond))
	}
	k.ref = ttlRef{pttl: pttl, lo: sent, hi: got}
}

// TestKillIdleRestart kills an idle lockd with SIGKILL and restarts it with only
// its addresses and data directory: the data is there. Then it starts processes
// that must refuse to run — a second lockd on the same data directory, and lockd
// on a port that is taken — and checks that each exits non-zero at once with a
// clear message, not a panic, and leaves the running one intact.
func TestKillIdleRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	p1 := startLockd(t, "lockd-first", dir)
	c := p1.conn()
	tokA := mustInt(t, c, "SET", "idle:a", "1", "FENCE")
	sentT := time.Now()
	tokT := mustInt(t, c, "SET", "idle:t", "1", "PX", strconv.Itoa(ttlMs), "FENCE")
	for i := 1; i <= 3; i++ {
		if n := mustInt(t, c, "INCR", "idle:n"); n != int64(i) {
			t.Fatalf("INCR idle:n = %d, want %d", n, i)
		}
	}
	p1.kill()
	deadAt := time.Now()
	time.Sleep(downtime) // the outage under test, not synchronisation

	p2 := startLockd(t, "lockd-restarted", dir)
	c = p2.conn()
	if r := must(t, c, "GET", "idle:a"); r.str != "1" {
		t.Errorf("GET idle:a after the restart = %v, want \"1\"", r)
	}
	if tok := mustInt(t, c, "FENCE", "idle:a"); tok != tokA {
		t.Errorf("FENCE idle:a after the restart = %d, want %d", tok, tokA)
	}
	if tok := mustInt(t, c, "FENCE", "idle:t"); tok != tokT {
		t.Errorf("FENCE idle:t after the restart = %d, want %d", tok, tokT)
	}
	pttl := mustInt(t, c, "PTTL", "idle:t")
	upMax := deadAt.Sub(sentT) + time.Since(p2.started)
	if lo := ttlMs - upMax.Milliseconds() - ttlSlack.Milliseconds(); pttl <= 0 || pttl < lo || pttl > ttlMs {
		t.Errorf("PTTL idle:t after the restart = %d, want in [%d, %d] (up for at most %v, down for %v)",
			pttl, lo, ttlMs, upMax.Round(time.Millisecond), p2.started.Sub(deadAt).Round(time.Millisecond))
	}
	if n := mustInt(t, c, "INCR", "idle:n"); n != 4 {
		t.Errorf("INCR idle:n after the restart = %d, want 4", n)
	}
	// Above idle:a's token before the crash, and above idle:t's too when both
	// live in one group (a token is an index of the group's log).
	groups := keyGroups(t, p2.addr, "idle:a", "idle:t")
	floor := tokA
	if groups["idle:a"] == groups["idle:t"] {
		floor = max(tokA, tokT)
	}
	tokB := mustInt(t, c, "SET", "idle:a", "2", "FENCE")
	if tokB <= floor {
		t.Errorf("SET idle:a 2 FENCE after the restart = %d, not above %d, the largest token of its group before it (groups %v)", tokB, floor, groups)
	}
	checkReadyz(t, p2)

	t.Run("second-lockd-on-same-data-dir", func(t *testing.T) {
		out := expectRefusal(t, "lockd-second", dir, func() lockdAddrs { return freeLockdAddrs(t) }, "")
		if !strings.Contains(out, dir) && !strings.Contains(strings.ToLower(out), "lock") {
			t.Errorf("the error does not name the data directory %s or a lock:\n%s", dir, out)
		}
	})

	type portCase struct {
		name   string
		addrs  func(a lockdAddrs) lockdAddrs
		taken  string
		noData bool // the port is checked before the data directory is touched
	}
	for _, pc := range []portCase{
		{"resp-port-in-use", func(a lockdAddrs) lockdAddrs { a.resp = p2.addr; return a }, p2.addr, true},
		{"http-port-in-use", func(a lockdAddrs) lockdAddrs { a.http = p2.httpAddr; return a }, p2.httpAddr, true},
		{"peer-port-in-use", func(a lockdAddrs) lockdAddrs { a.peer = p2.peerAddr; return a }, p2.peerAddr, false},
	} {
		t.Run(pc.name, func(t *testing.T) {
			other := filepath.Join(t.TempDir(), "data")
			out := expectRefusal(t, "lockd-"+pc.name, other, func() lockdAddrs { return pc.addrs(freeLockdAddrs(t)) }, pc.taken)
			if !strings.Contains(out, port(pc.taken)) {
				t.Errorf("the error does not name port %s:\n%s", port(pc.taken), out)
			}
			if _, err := os.Stat(other); pc.noData && err == nil {
				t.Errorf("lockd created its data directory %s although it could not bind %s", other, pc.taken)
			}
		})
	}

	// The refused processes left the running one and its data alone.
	c = p2.conn()
	if r := must(t, c, "GET", "idle:a"); r.str != "2" {
		t.Errorf("GET idle:a = %v after the refused starts, want \"2\"", r)
	}
	if tok := mustInt(t, c, "SET", "idle:a", "3", "FENCE"); tok <= tokB {
		t.Errorf("SET idle:a 3 FENCE = %d, not above %d", tok, tokB)
	}
	checkReadyz(t, p2)
}

// expectRefusal starts a process that must not start: it exits non-zero,
// promptly, with an error message and without a panic. It returns its output.
// A start that failed only because one of its fresh ports was taken meanwhile
// (any port but taken, the one under test) is retried on other ports.
func expectRefusal(t *testing.T, name, dataDir string, addrs func() lockdAddrs, taken string) string {
	t.Helper()
	var (
		p      *lockdProc
		code   int
		exited bool
		out    string
	)
	for attempt := 1; ; attempt++ {
		p = spawnLockd(t, name, dataDir, addrs())
		code, exited = p.waitExit(exitTimeout)
		out = p.stderr.String()
		raced := strings.Contains(out, "address already in use") && (taken == "" || !strings.Contains(out, taken))
		if !exited || !raced || attempt == startTries {
			break
		}
		t.Logf("%s: lost a race for a free port (attempt %d), retrying on other ports", name, attempt)
	}
	if !exited {
		t.Fatalf("%s still runs %v after start; want it to refuse at once. Output:\n%s", p.name, exitTimeout, out)
	}
	if code == 0 {
		t.Errorf("%s exited 0; want a non-zero exit. Output:\n%s", p.name, out)
	}
	if strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
		t.Errorf("%s panicked instead of reporting an error:\n%s", p.name, out)
	}
	if strings.TrimSpace(out) == "" {
		t.Errorf("%s exited %d without a word", p.name, code)
	}
	t.Logf("%s exited %d: %s", p.name, code, lastLine(out))
	return out
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// checkReadyz expects GET /readyz to answer 200.
func checkReadyz(t *testing.T, p *lockdProc) {
	t.Helper()
	hc := &http.Client{Timeout: opTimeout}
	resp, err := hc.Get("http://" + p.httpAddr + "/readyz")
	if err != nil {
		t.Errorf("GET /readyz: %v", err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /readyz = %s, want 200", resp.Status)
	}
}

// countEntryFiles counts the files under dir that hold one log entry each
// (logstore's entry files: entry-<prefix>-<index>.log in badger's directory).
func countEntryFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed meanwhile
		}
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "entry-") && strings.HasSuffix(d.Name(), ".log") {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatalf("count entry files: %v", err)
	}
	return n
}
