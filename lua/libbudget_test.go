package lua

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockd/lockd/resp"
)

// Hostile library calls, each of which ran for seconds to minutes as a
// single VM instruction before library work was charged to the budget.
var libraryRunaways = []struct{ name, src string }{
	// Lazy repetitions backtrack through every way to split the subject:
	// gopher-lua's matcher ran this one for minutes.
	{"backtracking find", `return string.find(string.rep('a', 40), '.-.-.-.-.-.-.-.-.-.-.-.-b')`},
	{"backtracking match", `return string.match(string.rep('a', 40), '(.-)(.-)(.-)(.-)(.-)(.-)(.-)(.-)(.-)(.-)$b')`},
	{"backtracking gmatch", `for w in string.gmatch(string.rep('a', 40), 'a*a*a*a*a*a*a*a*a*a*b') do end`},
	// Quadratic gsub: every start position scans to the end of the subject
	// (and gopher-lua copied the whole result once per substitution).
	{"quadratic gsub", `return string.gsub(string.rep('a', 200000), '.-b', '')`},
	{"many substitutions", `local s = string.rep('a', 1000000) for i = 1, 100 do redis.call('ping') s = string.gsub(s, 'a', 'a') end return #s`},
	{"rep", `local n = 0 for i = 1, 100000 do redis.call('ping') n = n + #string.rep('x', 1000000) end return n`},
	{"concat", `local t = {} for i = 1, 1000 do t[i] = string.rep('x', 1000) end local n = 0 for i = 1, 100000 do redis.call('ping') n = n + #table.concat(t) end return n`},
	{"sort", `local t = {} for i = 1, 100000 do t[i] = (i * 7919) % 100003 end for i = 1, 1000 do redis.call('ping') table.sort(t) end`},
	{"insert at the front", `local t = {} for i = 1, 200000 do if i % 1000 == 0 then redis.call('ping') end table.insert(t, 1, i) end`},
	{"upper", `local s = string.rep('x', 10000000) local n = 0 for i = 1, 100000 do redis.call('ping') n = n + #string.upper(s) end return n`},
}

// runBounded runs src with lim in a goroutine and fails the test if it does
// not return within wait: before library work was charged, these scripts
// ran on long after their budget.
func runBounded(t *testing.T, e *Engine, sha string, h Host, lim Limits, wait time.Duration) resp.Value {
	t.Helper()
	done := make(chan resp.Value, 1)
	go func() { done <- e.Run(sha, nil, nil, h, lim) }()
	select {
	case v := <-done:
		return v
	case <-time.After(wait):
		t.Fatalf("the script did not stop within %v", wait)
		return resp.Value{}
	}
}

// TestLibraryWorkIsCounted: work inside string and table library calls is
// charged to the instruction budget, so each runaway above stops with the
// budget error, quickly, and at the same point on every run (the host
// calls made before it stopped are the same).
func TestLibraryWorkIsCounted(t *testing.T) {
	const budget = 2_000_000
	for _, c := range libraryRunaways {
		t.Run(c.name, func(t *testing.T) {
			// The pings between library calls show where the run stopped.
			src := "redis.call('ping') " + c.src
			var calls []int
			for i := 0; i < 2; i++ {
				start := time.Now()
				calls = append(calls, callsAtBudgetStop(t, src, budget, 20*time.Second))
				if took := time.Since(start); took > 2*time.Second {
					t.Errorf("stopped after %v", took)
				}
			}
			if calls[0] != calls[1] {
				t.Errorf("stopped after %d then %d host calls", calls[0], calls[1])
			}
		})
	}
}

// TestLibraryBudgetExact: a library call's charge is exact. There is a
// budget with which a pattern search finishes, and one unit less stops it,
// every time; so replicas, which run with the same budget, agree on whether
// and where a run stops.
func TestLibraryBudgetExact(t *testing.T) {
	for _, src := range []string{
		`return string.find(string.rep('a', 60), '.-.-.-b')`,
		`return string.gsub(string.rep('ab', 500), '(a)(b)', '%2%1')`,
		`return #string.rep('xyz', 100000)`,
		`local t = {} for i = 1, 500 do t[i] = 'v' .. i end return #table.concat(t, ',')`,
	} {
		e := New()
		sha, _ := e.Load([]byte(src))
		want := render(e.Run(sha, nil, nil, nil, Limits{}))
		lo, hi := int64(1), int64(100_000_000) // lo stops, hi finishes
		if v := e.Run(sha, nil, nil, nil, Limits{MaxInstructions: hi}); render(v) != want {
			t.Fatalf("%q: %s with the largest budget", src, render(v))
		}
		for hi-lo > 1 {
			mid := (lo + hi) / 2
			if IsBudgetError(e.Run(sha, nil, nil, nil, Limits{MaxInstructions: mid})) {
				lo = mid
			} else {
				hi = mid
			}
		}
		for i := 0; i < 3; i++ {
			if v := e.Run(sha, nil, nil, nil, Limits{MaxInstructions: hi - 1}); !IsBudgetError(v) {
				t.Fatalf("%q: budget %d: %s", src, hi-1, render(v))
			}
			if v := e.Run(sha, nil, nil, nil, Limits{MaxInstructions: hi}); render(v) != want {
				t.Fatalf("%q: budget %d: %s", src, hi, render(v))
			}
		}
		if hi < 1000 {
			t.Errorf("%q finished within %d units: its library work is not charged", src, hi)
		}
	}
}

// TestCancelInsideLibraryCall: SCRIPT KILL (Limits.Cancel) stops a run that
// is inside one long pattern search, with no instruction budget at all.
func TestCancelInsideLibraryCall(t *testing.T) {
	e := New()
	sha, _ := e.Load([]byte(libraryRunaways[0].src))
	cancel := make(chan struct{})
	go func() {
		time.Sleep(50 * time.Millisecond) // let the run get into string.find
		close(cancel)
	}()
	v := runBounded(t, e, sha, nil, Limits{Cancel: cancel}, 20*time.Second)
	if !IsKilledError(v) {
		t.Fatalf("got %.200q", render(v))
	}
}

// callsAtBudgetStop runs src in a fresh engine with budget instructions
// (failing the test unless it returns within wait with the budget error) and
// returns how many host calls it made before it was stopped.
func callsAtBudgetStop(t *testing.T, src string, budget int64, wait time.Duration) int {
	t.Helper()
	e := New()
	sha, err := e.Load([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	h := &countingHost{}
	v := runBounded(t, e, sha, h, Limits{MaxInstructions: budget}, wait)
	if !IsBudgetError(v) || string(v.Str) != fmt.Sprintf("ERR script exceeded its instruction budget of %d instructions", budget) {
		t.Fatalf("%.80q: got %.200q", src, render(v))
	}
	return h.n
}
