package group

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/lua"
	"github.com/lockd/lockd/resp"
)

// backtracking is a pattern search that took minutes as one VM instruction
// before library work was charged to the budget.
const backtracking = `return string.find(string.rep('a', 40), '.-.-.-.-.-.-.-.-.-.-.-.-b')`

// doWithin runs do in a goroutine and fails the test if it takes longer
// than wait.
func doWithin(t *testing.T, s *Store, wait time.Duration, cmd ...string) resp.Value {
	t.Helper()
	done := make(chan resp.Value, 1)
	go func() { done <- do(s, cmd...) }()
	select {
	case v := <-done:
		return v
	case <-time.After(wait):
		s.KillScripts()
		t.Fatalf("%.60q did not return within %v", cmd, wait)
		return resp.Value{}
	}
}

// The leader's dry run stops a runaway pattern search with the budget error,
// within about a second, and the script never enters the log.
func TestDryRunStopsLibraryRunaway(t *testing.T) {
	s := open(t, t.TempDir(), 0)
	defer s.Close()
	for _, src := range []string{
		backtracking,
		`return string.gsub(string.rep('a', 300000), '.-b', '')`,
	} {
		before := s.raft.LastIndex()
		start := time.Now()
		v := doWithin(t, s, 20*time.Second, "EVAL", src, "0")
		if !lua.IsBudgetError(v) {
			t.Fatalf("%q answered %.200q", src, v.String())
		}
		t.Logf("%q refused after %v", src, time.Since(start))
		if s.raft.LastIndex() != before {
			t.Fatalf("a refused script reached the log (%d -> %d)", before, s.raft.LastIndex())
		}
	}
}

// SCRIPT KILL stops a dry run inside one long library call.
func TestKillScriptInLibraryCall(t *testing.T) {
	s := open(t, t.TempDir(), 0)
	defer s.Close()
	if v := killDryRun(t, s, backtracking); !lua.IsKilledError(v) {
		t.Fatalf("killed script answered %q", v.String())
	}
}

// A script's write commands obey MaxWriteBytes as a client's own would: a
// larger one is refused with ErrTooLarge, even when the script catches the
// error and carries on, and nothing the script did is applied.
func TestScriptWriteTooLarge(t *testing.T) {
	const most = 4096
	s := openConfig(t, Config{DataDir: t.TempDir(), PeerAddr: "127.0.0.1:0", ApplyTimeout: 3 * time.Second, MaxWriteBytes: most})
	defer s.Close()
	// What a client's own SET of the value answers.
	plain := do(s, "SET", "k", strings.Repeat("x", 5000)).String()
	if !strings.HasPrefix(plain, ErrTooLarge.Error()+": ") {
		t.Fatalf("plain SET = %.100q", plain)
	}
	arg := strings.Repeat("y", 3000) // the request fits; twice it does not
	for _, c := range []struct {
		src  string
		args []string
	}{
		{`return redis.call('SET', KEYS[1], string.rep('x', 5000))`, nil},
		{`redis.call('SET', KEYS[2], 'first') return redis.call('SET', KEYS[1], string.rep('x', 5000))`, nil},
		{`pcall(redis.call, 'SET', KEYS[1], string.rep('x', 5000)) redis.call('SET', KEYS[2], 'after') return 'done'`, nil},
		{`return redis.pcall('SET', KEYS[1], string.rep('x', 5000))`, nil},
		// Statically bounded: it skips the dry run unless its arguments
		// could build a write over the limit.
		{`return redis.call('SET', KEYS[1], ARGV[1] .. ARGV[1])`, []string{arg}},
	} {
		before := s.raft.LastIndex()
		cmd := append([]string{"EVAL", c.src, "2", "k", "k2"}, c.args...)
		v := do(s, cmd...)
		if !strings.HasPrefix(v.String(), ErrTooLarge.Error()+": ") || !strings.HasSuffix(v.String(), fmt.Sprintf("at most %d", most)) || strings.Contains(v.String(), "script:") {
			t.Errorf("%q answered %.200q, want %q", c.src, v.String(), ErrTooLarge.Error()+": N bytes, at most 4096")
		}
		if s.raft.LastIndex() != before {
			t.Errorf("%q: a refused script reached the log (%d -> %d)", c.src, before, s.raft.LastIndex())
		}
		if v := do(s, "EXISTS", "k", "k2"); v.Int != 0 {
			t.Errorf("%q: %d of its keys exist after the refusal", c.src, v.Int)
		}
	}
	// Below the limit, scripts write as before (bounded and not).
	if v := do(s, "EVAL", `return redis.call('SET', KEYS[1], string.rep('x', 3000))`, "1", "k"); v.String() != "OK" {
		t.Fatalf("a 3000-byte write = %.200q", v.String())
	}
	if v := do(s, "EVAL", `return redis.call('SET', KEYS[1], ARGV[1] .. ARGV[1])`, "1", "k", "abc"); v.String() != "OK" {
		t.Fatalf("a small bounded write = %.200q", v.String())
	}
	if v := do(s, "GET", "k"); v.String() != "abcabc" {
		t.Fatalf("GET k = %.100q", v.String())
	}
}
