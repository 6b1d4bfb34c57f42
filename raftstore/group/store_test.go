package group

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/lua"
	"github.com/lockd/lockd/resp"
)

func open(t *testing.T, dir string, threshold uint64) *Store {
	t.Helper()
	return openConfig(t, Config{DataDir: dir, PeerAddr: "127.0.0.1:0", SnapshotThreshold: threshold, ApplyTimeout: 3 * time.Second})
}

// openConfig opens a single-node store and waits (bounded) until it serves;
// the caller closes it.
func openConfig(t *testing.T, cfg Config) *Store {
	t.Helper()
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func do(s *Store, cmd ...string) resp.Value {
	var args [][]byte
	for _, a := range cmd {
		args = append(args, []byte(a))
	}
	op, spec, err := command.Parse(args)
	if err != nil {
		return resp.Error(err.Error())
	}
	return s.Do(context.Background(), []command.Request{{Args: args, Op: op, Spec: spec}})[0]
}

func TestSnapshotAndRestart(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 64)
	tokens := map[string]int64{}
	for i := 0; i < 300; i++ {
		k := fmt.Sprintf("k%d", i%100)
		v := do(s, "SET", k, fmt.Sprint(i), "PX", "600000", "FENCE")
		if v.Kind != resp.KindInt {
			t.Fatalf("SET FENCE: %v", v)
		}
		tokens[k] = v.Int
	}
	if err := s.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	do(s, "SET", "after", "snapshot")
	s.Close()
	snaps, _ := filepath.Glob(filepath.Join(dir, "group-0", "snapshots", "*"))
	if len(snaps) == 0 {
		t.Fatal("no snapshot on disk")
	}

	s = open(t, dir, 64)
	defer s.Close()
	for k, tok := range tokens {
		if v := do(s, "FENCE", k); v.Int != tok {
			t.Fatalf("FENCE %s after restart = %v, want %d", k, v, tok)
		}
	}
	if v := do(s, "GET", "k7"); v.String() != "207" {
		t.Fatalf("GET k7 = %q", v.String())
	}
	if v := do(s, "GET", "after"); v.String() != "snapshot" {
		t.Fatalf("entry after the snapshot lost: %v", v)
	}
	if v := do(s, "PTTL", "k1"); v.Int <= 590000 {
		t.Fatalf("PTTL after restart = %d: downtime must not shorten it", v.Int)
	}
}

// A node that has lost its quorum rejects writes and reads with errors a client
// can act on, and applies nothing.
func TestNoQuorumFailsClearly(t *testing.T) {
	s := open(t, t.TempDir(), 0)
	defer s.Close()
	if v := do(s, "SET", "k", "before"); v.String() != "OK" {
		t.Fatalf("SET = %v", v)
	}
	// Add a voter that does not exist: the configuration now needs 2 of 2.
	s.raft.AddVoter("ghost", "127.0.0.1:1", 0, 500*time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for s.raft.State() == raft.Leader {
		if time.Now().After(deadline) {
			t.Fatal("still leader without a quorum")
		}
		time.Sleep(10 * time.Millisecond)
	}
	v := do(s, "SET", "k", "after")
	if !v.IsError() || !(strings.HasPrefix(v.String(), "TRYAGAIN ") || strings.HasPrefix(v.String(), "UNKNOWNOUTCOME ")) {
		t.Fatalf("SET without quorum = %q", v.String())
	}
	if v := do(s, "GET", "k"); !v.IsError() || !strings.HasPrefix(v.String(), "TRYAGAIN ") {
		t.Fatalf("GET without quorum = %q", v.String())
	}
	s.m.mu.RLock()
	got := s.m.ks.Read(command.Get{Key: []byte("k")}, s.m.ks.Now(), 0)
	s.m.mu.RUnlock()
	if got.String() != "before" {
		t.Fatalf("state without quorum = %q, want before", got.String())
	}
}

func TestApplyErrorsAreSorted(t *testing.T) {
	cases := []struct {
		err  error
		want error
	}{
		{raft.ErrNotLeader, ErrNotApplied},
		{raft.ErrEnqueueTimeout, ErrNotApplied},
		{raft.ErrLeadershipTransferInProgress, ErrNotApplied},
		{raft.ErrLeadershipLost, ErrUnknownOutcome},
		{raft.ErrRaftShutdown, ErrUnknownOutcome},
		{errors.New("something new"), ErrUnknownOutcome},
	}
	for _, c := range cases {
		if got := mapApplyErr(c.err); got != c.want {
			t.Errorf("%v -> %v, want %v", c.err, got, c.want)
		}
	}
	// go-redis retries these prefixes by itself: the not-applied error must use
	// one, the unknown-outcome error must not.
	retried := []string{"LOADING ", "READONLY ", "CLUSTERDOWN ", "TRYAGAIN ", "MASTERDOWN "}
	has := func(e error) bool {
		for _, p := range retried {
			if strings.HasPrefix(e.Error(), p) {
				return true
			}
		}
		return false
	}
	if !has(ErrNotApplied) || has(ErrUnknownOutcome) {
		t.Fatal("error prefixes do not sort retry-safe from unknown outcomes")
	}
}

func TestLogClock(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newLogClock(func() time.Time { return now })
	c.reset(5000)
	now = now.Add(250 * time.Millisecond)
	if v, _ := c.read(); v != 5250 {
		t.Fatalf("read = %d, want 5250", v)
	}
	now = now.Add(-time.Hour) // a clock that goes back changes nothing
	if v, _ := c.read(); v != 5250 {
		t.Fatalf("read after a backwards jump = %d, want 5250", v)
	}
	// A new term continues from the log's time even below this node's earlier
	// readings, which may include an election gap it did not lead through (see
	// TestLogClockForgetsAnEarlierTerm); the FSM keeps log time monotonic.
	c.reset(100)
	if v, _ := c.read(); v != 100 {
		t.Fatalf("read after reset to an older base = %d, want 100", v)
	}
}

func TestOpenUnusableDir(t *testing.T) {
	f := filepath.Join(t.TempDir(), "f")
	os.WriteFile(f, nil, 0o644)
	if _, err := Open(Config{DataDir: f, PeerAddr: "127.0.0.1:0"}); err == nil || !strings.Contains(err.Error(), f) {
		t.Fatalf("Open on a file = %v", err)
	}
}

// A pipeline of writes goes into the log as batch entries (command.KindBatch)
// and shares fsyncs: far fewer entries and synced log writes than writes.
// With NoBatchEntries every write is an entry of its own, the fsyncs still
// shared.
func TestPipelineSharesFsync(t *testing.T) {
	for _, noBatch := range []bool{false, true} {
		s := openConfig(t, Config{DataDir: t.TempDir(), PeerAddr: "127.0.0.1:0", ApplyTimeout: 3 * time.Second, NoBatchEntries: noBatch})
		before := s.logs.Batches()
		entries := pipelinedEntries(t, s, 500, "k")
		batches := s.logs.Batches() - before
		s.Close()
		if noBatch && entries != 500 {
			t.Fatalf("NoBatchEntries: %d entries for 500 writes, want one each", entries)
		}
		if !noBatch && entries > 50 {
			t.Fatalf("%d entries for 500 pipelined writes: batch entries expected", entries)
		}
		if batches > 50 {
			t.Fatalf("500 pipelined writes took %d synced log writes", batches)
		}
		t.Logf("500 pipelined writes (NoBatchEntries %v): %d entries, %d synced log writes", noBatch, entries, batches)
	}
}

// pipelinedEntries has s run n SETs as one request batch (a pipeline) and
// returns how many log entries they took.
func pipelinedEntries(t *testing.T, s *Store, n int, prefix string) uint64 {
	t.Helper()
	var reqs []command.Request
	for i := 0; i < n; i++ {
		reqs = append(reqs, req("SET", fmt.Sprintf("%s%d", prefix, i), "v"))
	}
	first := s.raft.LastIndex()
	for i, v := range s.Do(context.Background(), reqs) {
		if v.String() != "OK" {
			t.Fatalf("SET %d: %v", i, v)
		}
	}
	return s.raft.LastIndex() - first
}

// A pipeline larger than maxBatchBytes goes into several batch entries, none
// over the bound.
func TestBatchEntriesStaySmall(t *testing.T) {
	s := open(t, t.TempDir(), 0)
	defer s.Close()
	val := bytes.Repeat([]byte("v"), 1000)
	var reqs []command.Request
	for i := 0; i < 300; i++ { // about 300 KB
		args := [][]byte{[]byte("SET"), []byte(fmt.Sprintf("k%d", i)), val}
		op, spec, _ := command.Parse(args)
		reqs = append(reqs, command.Request{Args: args, Op: op, Spec: spec})
	}
	first := s.raft.LastIndex()
	for i, v := range s.Do(context.Background(), reqs) {
		if v.String() != "OK" {
			t.Fatalf("write %d: %v", i, v)
		}
	}
	last := s.raft.LastIndex()
	if n := last - first; n < 300*1000/maxBatchBytes || n > 300*1000/maxBatchBytes+2 {
		t.Fatalf("%d entries for 300 KB of writes, want about %d", n, 300*1000/maxBatchBytes+1)
	}
	for i := first + 1; i <= last; i++ {
		var l raft.Log
		if err := s.logs.GetLog(i, &l); err != nil {
			t.Fatal(err)
		}
		if len(l.Data) > maxBatchBytes {
			t.Fatalf("entry %d holds %d bytes, over %d", i, len(l.Data), maxBatchBytes)
		}
	}
}

// Writes that share a batch entry still get a token each, rising in the
// order they were sent, and the writes after the batch rise past them.
func TestBatchTokens(t *testing.T) {
	s := open(t, t.TempDir(), 0)
	defer s.Close()
	do := func(cmds ...string) []resp.Value {
		var reqs []command.Request
		for _, c := range cmds {
			args := bytes.Fields([]byte(c))
			op, spec, err := command.Parse(args)
			if err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs, command.Request{Args: args, Op: op, Spec: spec})
		}
		return s.Do(context.Background(), reqs)
	}
	first := s.raft.LastIndex()
	out := do("SET x v FENCE", "SET y v FENCE", "SET x w FENCE", "GET x", "SET z v FENCE")
	if entries := s.raft.LastIndex() - first; entries != 2 {
		t.Fatalf("%d entries for two runs of writes around a read, want 2 batch entries", entries)
	}
	var last int64
	for i, v := range out {
		if i == 3 {
			if v.String() != "w" {
				t.Fatalf("GET x after the batch = %v, want w", v)
			}
			continue
		}
		if v.Kind != resp.KindInt || v.Int <= last {
			t.Fatalf("reply %d = %v, want a token above %d (replies %v)", i, v, last, out)
		}
		last = v.Int
	}
	if v := do("SET q v FENCE")[0]; v.Kind != resp.KindInt || v.Int != last+1 {
		t.Fatalf("the next write's token = %v, want %d", v, last+1)
	}
	// INFO raft's applied_token: the last applied command's logical index.
	if got, idx := s.AppliedToken(), s.raft.AppliedIndex(); got != uint64(last+1) || got <= idx {
		t.Fatalf("applied token %d (Raft applied index %d), want %d, above the index", got, idx, last+1)
	}
}

func TestCheckPeers(t *testing.T) {
	p := func(id, addr string) Peer { return Peer{ID: id, Addr: addr} }
	cases := []struct {
		peers []Peer
		want  string // "" = valid
	}{
		{[]Peer{p("n1", "a:1"), p("n2", "a:2")}, ""},
		{[]Peer{p("n1", "a:1"), p("n1", "a:2")}, `node id "n1" appears twice`},
		{[]Peer{p("n1", "a:1"), p("n2", "a:1")}, "peer address a:1 appears twice"},
		{[]Peer{p("n2", "a:2"), p("n3", "a:3")}, `this node's id "n1" is not in the list`},
		{[]Peer{p("n1", "a:9"), p("n2", "a:2")}, "this node (n1) is listed at a:9 but its peer address is a:1"},
		{[]Peer{p("n1", "a:1"), p("", "a:2")}, "empty node id or address"},
	}
	for _, c := range cases {
		err := CheckPeers(c.peers, "n1", "a:1")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.peers, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrBadPeers)):
			t.Errorf("%v: err %v, want %q", c.peers, err, c.want)
		}
	}
	// Open refuses a bad list before touching the data directory.
	dir := t.TempDir() + "/data"
	_, err := Open(Config{NodeID: "n1", DataDir: dir, PeerAddr: "127.0.0.1:0", Peers: []Peer{p("n2", "127.0.0.1:1")}})
	if !errors.Is(err, ErrBadPeers) {
		t.Fatalf("Open with a bad peer list: %v", err)
	}
	if _, serr := os.Stat(dir); !os.IsNotExist(serr) {
		t.Fatalf("a refused configuration created %s", dir)
	}
}

// SCRIPT KILL stops a script in its dry run; it never enters the log.
func TestKillScriptInDryRun(t *testing.T) {
	s := open(t, t.TempDir(), 0)
	defer s.Close()
	if s.KillScripts() {
		t.Fatal("KillScripts with nothing running reported a kill")
	}
	v := killDryRun(t, s, "local i = 0 while true do i = i + 1 end")
	if !strings.HasPrefix(v.String(), "ERR Script killed by user with SCRIPT KILL...") {
		t.Fatalf("killed script answered %q", v.String())
	}
}

// killDryRun runs EVAL src on s, kills it with SCRIPT KILL once it is
// running, and returns its reply; it fails the test unless the script shows
// up within 10 s, answers within 10 s of the kill, and leaves the log as it
// was.
func killDryRun(t *testing.T, s *Store, src string) resp.Value {
	t.Helper()
	before := s.raft.LastIndex()
	done := make(chan resp.Value, 1)
	go func() { done <- do(s, "EVAL", src, "0") }()
	deadline := time.Now().Add(10 * time.Second)
	for !s.KillScripts() {
		if time.Now().After(deadline) {
			t.Fatal("the script never showed up as running")
		}
		time.Sleep(time.Millisecond)
	}
	var v resp.Value
	select {
	case v = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("killed script did not return within 10s")
	}
	if s.raft.LastIndex() != before {
		t.Fatalf("a killed script reached the log (%d -> %d)", before, s.raft.LastIndex())
	}
	return v
}

// fakeClock is an injectable monotonic clock for expiry tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Sessions: keepalives (no log writes) keep a session's locks; a session that
// misses them expires one TTL after the last one and its locks are released in
// the expiry entry; SESSION.CLOSE releases everything at once.
func TestSessions(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	s := openConfig(t, Config{DataDir: t.TempDir(), PeerAddr: "127.0.0.1:0", ApplyTimeout: 3 * time.Second, Now: clk.now})
	defer s.Close()
	open := do(s, "SESSION.OPEN", "TTL", "6000", "NAME", "worker-17")
	if open.Kind != resp.KindMap || open.Elems[3].Int != 6000 || open.Elems[5].Int != 2000 {
		t.Fatalf("SESSION.OPEN = %#v", open)
	}
	id := fmt.Sprint(open.Elems[1].Int)
	if v := do(s, "SESSION.OPEN", "TTL", "999999"); v.Elems[3].Int != 60000 {
		t.Fatalf("TTL not clamped to 60 s: %v", v.Elems[3].Int)
	}
	tok := do(s, "LOCK.ACQUIRE", "a", "w17", "SESSION", id)
	do(s, "LOCK.ACQUIRE", "b", "w17", "SESSION", id)
	if tok.Kind != resp.KindInt {
		t.Fatalf("acquire with a session: %v", tok)
	}
	if v := do(s, "LOCK.ACQUIRE", "c", "w17", "SESSION", "424242"); !strings.HasPrefix(v.String(), "NOSESSION") {
		t.Fatalf("acquire with an unknown session: %v", v)
	}
	// Keepalives every 4 s keep it alive well past its TTL, without log writes.
	before := s.raft.LastIndex()
	for i := 0; i < 5; i++ {
		clk.add(4 * time.Second)
		if v := do(s, "SESSION.KEEPALIVE", id); v.Int != 6000 {
			t.Fatalf("keepalive = %v", v)
		}
	}
	if s.raft.LastIndex() != before {
		t.Fatalf("keepalives wrote %d log entries", s.raft.LastIndex()-before)
	}
	if v := do(s, "LOCK.VALIDATE", "a", fmt.Sprint(tok.Int)); v.Int != 1 {
		t.Fatal("the session's lock was lost while kept alive")
	}
	// Silence: one TTL later the session ends and both locks are free.
	clk.add(6 * time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for do(s, "EXISTS", "a", "b").Int != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the lapsed session's locks were not released")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if v := do(s, "SESSION.KEEPALIVE", id); !strings.HasPrefix(v.String(), "NOSESSION") {
		t.Fatalf("keepalive of an expired session = %v", v)
	}
	// Close releases everything at once.
	s2 := do(s, "SESSION.OPEN")
	id2 := fmt.Sprint(s2.Elems[1].Int)
	do(s, "LOCK.ACQUIRE", "x", "o", "SESSION", id2)
	do(s, "LOCK.ACQUIRE", "y", "o", "SESSION", id2, "SHARED")
	if v := do(s, "SESSION.CLOSE", id2); v.Int != 2 {
		t.Fatalf("SESSION.CLOSE released %v locks, want 2", v)
	}
	if v := do(s, "EXISTS", "x", "y"); v.Int != 0 {
		t.Fatalf("closed session's locks remain: %v", v)
	}
	if v := do(s, "SESSION.CLOSE", id2); !strings.HasPrefix(v.String(), "NOSESSION") {
		t.Fatalf("second close = %v", v)
	}
}

// A session opened in a namespace lives as long as the TTL its reply reports
// (the namespace's DEFAULTTTL here, 60 s, not the 15 s default of the
// request): the leader times it by the reply.
func TestSessionTTLFromNamespace(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	s := openConfig(t, Config{DataDir: t.TempDir(), PeerAddr: "127.0.0.1:0", ApplyTimeout: 3 * time.Second, Now: clk.now})
	defer s.Close()
	if v := do(s, "NAMESPACE.SET", "jobs/", "DEFAULTTTL", "60000"); v.String() != "OK" {
		t.Fatalf("NAMESPACE.SET = %v", v)
	}
	open := do(s, "SESSION.OPEN", "NAMESPACE", "jobs/")
	if open.Kind != resp.KindMap || open.Elems[3].Int != 60000 {
		t.Fatalf("SESSION.OPEN = %v, want ttl_ms 60000", open)
	}
	id := fmt.Sprint(open.Elems[1].Int)
	if v := do(s, "LOCK.ACQUIRE", "jobs/a", "w", "SESSION", id); v.Kind != resp.KindInt {
		t.Fatalf("acquire with the session: %v", v)
	}
	// The leader's timer for it: lapsed one reported TTL from now, not before.
	sid := uint64(open.Elems[1].Int)
	now := clk.now()
	if lapsed := s.sessions.lapsed(now.Add(59 * time.Second)); slices.Contains(lapsed, sid) {
		t.Fatalf("the leader times the session by the request's TTL: lapsed 59 s after opening, reported ttl_ms %d", open.Elems[3].Int)
	}
	if lapsed := s.sessions.lapsed(now.Add(60 * time.Second)); !slices.Contains(lapsed, sid) {
		t.Fatal("the session did not lapse one reported TTL after opening")
	}
}

// The leader's admission of scripts: a statically bounded script (the
// compare-and-delete unlock) skips the dry run and behaves as before; a
// runaway script is still refused by the dry run, and a script that does not
// compile or is not cached is still refused, none of them entering the log.
func TestScriptAdmission(t *testing.T) {
	s := open(t, t.TempDir(), 0)
	defer s.Close()
	const unlock = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`
	if v := do(s, "SET", "lock", "tok-1"); v.String() != "OK" {
		t.Fatalf("SET = %v", v)
	}
	if v := do(s, "EVAL", unlock, "1", "lock", "tok-2"); v.Kind != resp.KindInt || v.Int != 0 {
		t.Fatalf("unlock with the wrong token = %v, want 0", v)
	}
	if v := do(s, "GET", "lock"); v.String() != "tok-1" {
		t.Fatalf("GET after a refused unlock = %v, want tok-1", v)
	}
	if v := do(s, "EVALSHA", lua.SHA1Hex([]byte(unlock)), "1", "lock", "tok-1"); v.Kind != resp.KindInt || v.Int != 1 {
		t.Fatalf("unlock with the token = %v, want 1", v)
	}
	if v := do(s, "EXISTS", "lock"); v.Int != 0 {
		t.Fatalf("EXISTS after unlock = %v, want 0", v)
	}
	if v := do(s, "EVAL", "local n = 0 for i = 1, 3 do n = n + i end return n", "0"); v.Int != 6 {
		t.Fatalf("a script with a loop = %v, want 6", v)
	}
	c := s.LockCounters()
	if c.ScriptsBounded != 2 || c.ScriptsBudget != 0 {
		t.Fatalf("scripts admitted without a dry run = %d, refused = %d; want 2, 0", c.ScriptsBounded, c.ScriptsBudget)
	}

	before := s.raft.LastIndex()
	if v := do(s, "EVAL", "while true do end", "0"); !lua.IsBudgetError(v) {
		t.Fatalf("runaway script = %v, want the budget error", v)
	}
	if n := s.LockCounters().ScriptsBudget; n != 1 {
		t.Fatalf("scripts refused for their budget = %d, want 1", n)
	}
	_, compileErr := lua.New().Load([]byte("return ("))
	if v := do(s, "EVAL", "return (", "0"); v.String() != compileErr.Error() {
		t.Fatalf("script that does not compile = %q, want %q", v.String(), compileErr.Error())
	}
	if v := do(s, "EVALSHA", lua.SHA1Hex([]byte("return 1")), "0"); v.String() != lua.ErrNoScript {
		t.Fatalf("EVALSHA of an unknown script = %q", v.String())
	}
	if after := s.raft.LastIndex(); after != before {
		t.Fatalf("a refused script reached the log (last index %d -> %d)", before, after)
	}
	if n := s.LockCounters().ScriptsBounded; n != 2 {
		t.Fatalf("scripts admitted without a dry run = %d, want 2", n)
	}
}

// TestSnapshotsFollowTheInterval: once SnapshotThreshold entries arrived, a
// group snapshots on its own within its SnapshotInterval (hashicorp/raft's
// default of two minutes would let a burst's whole log wait for a crash to
// replay it), and the log before the snapshot is cut.
func TestSnapshotsFollowTheInterval(t *testing.T) {
	dir := t.TempDir()
	s := openConfig(t, Config{DataDir: dir, PeerAddr: "127.0.0.1:0", SnapshotThreshold: 64, TrailingLogs: 16,
		SnapshotInterval: 100 * time.Millisecond, ApplyTimeout: 3 * time.Second})
	defer s.Close()
	for i := 0; i < 200; i++ {
		if v := do(s, "SET", fmt.Sprintf("k%d", i), "v"); v.IsError() {
			t.Fatalf("SET: %v", v)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		snaps, _ := filepath.Glob(filepath.Join(dir, "group-0", "snapshots", "*", "meta.json"))
		first, _ := s.logs.FirstIndex()
		if len(snaps) > 0 && first > 1 {
			t.Logf("%d snapshot(s); the log now starts at %d", len(snaps), first)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot and cut log 10s after 200 entries (snapshots %v, first index %d)", snaps, first)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A write longer than Config.MaxWriteBytes is answered with an error before it
// is proposed: nothing is appended, the leader keeps its term, and the writes
// around it in a pipeline go through; one that fits is stored whole. A limit
// above what the log accepts counts as the log's: a write the log would refuse
// made the leader step down (its StoreLogs failed), and its clients waited out
// an election.
func TestWriteTooLarge(t *testing.T) {
	for _, tc := range []struct {
		name string
		max  int
	}{{"default", 0}, {"above the log's limit", 1 << 30}} {
		t.Run(tc.name, func(t *testing.T) {
			s := openConfig(t, Config{DataDir: t.TempDir(), PeerAddr: "127.0.0.1:0", ApplyTimeout: 3 * time.Second, MaxWriteBytes: tc.max})
			defer s.Close()
			most := DefaultMaxWriteBytes
			if tc.max != 0 {
				most = s.logs.MaxData()
			}
			if v := do(s, "SET", "k", "small"); v.String() != "OK" {
				t.Fatalf("SET = %v", v)
			}
			big := strings.Repeat("v", most)
			term, last := s.raft.CurrentTerm(), s.raft.LastIndex()
			out := s.Do(context.Background(), []command.Request{
				req("SET", "a", "1"), req("SET", "k", big), req("LOCK.ACQUIRE", big, "o", "PX", "1000", "WAIT", "1000"), req("SET", "b", "2")})
			for i, want := range []string{"OK", "", "", "OK"} {
				if want == "" {
					if !out[i].IsError() || !strings.HasPrefix(out[i].String(), ErrTooLarge.Error()+": ") {
						t.Fatalf("reply %d = %.200q, want %q", i, out[i].String(), ErrTooLarge.Error()+": …")
					}
				} else if out[i].String() != want {
					t.Fatalf("reply %d = %v, want %s", i, out[i], want)
				}
			}
			if got, want := s.raft.LastIndex(), last+2; got != want || s.raft.CurrentTerm() != term || !s.IsLeader() {
				t.Fatalf("after the refusals: last index %d (want %d), term %d (was %d), leader %v", got, want, s.raft.CurrentTerm(), term, s.IsLeader())
			}
			if v := do(s, "GET", "k"); v.String() != "small" {
				t.Fatalf("GET k = %.100q, want small", v.String())
			}
			if tc.max != 0 {
				return
			}
			fits := big[:most-100]
			if v := do(s, "SET", "k", fits); v.String() != "OK" {
				t.Fatalf("SET of %d bytes = %.200q", len(fits), v.String())
			}
			if v := do(s, "GET", "k"); v.String() != fits {
				t.Fatalf("GET k: %d bytes, want %d", len(v.String()), len(fits))
			}
		})
	}
}
