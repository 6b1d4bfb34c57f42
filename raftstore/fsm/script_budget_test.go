package fsm

import (
	"strings"
	"testing"
	"time"
)

// TestScriptLibraryBudgetInApply: a script whose pattern searches run away
// is stopped inside apply by its instruction budget, identically on two
// replicas: the same error, after the same effects (the counter it bumps
// between searches). Before library work was charged, each search was one
// instruction and the run went on for hours.
func TestScriptLibraryBudgetInApply(t *testing.T) {
	const src = `local s = string.rep('a', 30) while true do redis.call('incr', KEYS[1]) string.find(s, '.-.-.-.-b') end`
	var replies, counts []string
	for i := 0; i < 2; i++ {
		h := newHarness(t)
		h.ks.budget = 3_000_000
		done := make(chan string, 1)
		go func() { done <- h.doArgs("EVAL", src, "1", "n") }()
		select {
		case got := <-done:
			replies = append(replies, got)
		case <-time.After(20 * time.Second):
			t.Fatal("the script was not stopped within 20s")
		}
		counts = append(counts, h.doArgs("GET", "n"))
	}
	if !strings.HasPrefix(replies[0], "-ERR script exceeded its instruction budget of 3000000 instructions") || replies[0] != replies[1] {
		t.Fatalf("replies %q, %q", replies[0], replies[1])
	}
	if counts[0] != counts[1] || counts[0] == "$-1\r\n" {
		t.Fatalf("the replicas stopped after %q and %q increments", counts[0], counts[1])
	}
	t.Logf("both stopped with %q after %q increments", replies[0], counts[0])
}
