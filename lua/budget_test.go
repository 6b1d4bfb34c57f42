package lua

import (
	"testing"
	"time"

	"github.com/lockd/lockd/resp"
)

// countingHost counts the commands a run gets through.
type countingHost struct{ n int }

func (h *countingHost) Call(args [][]byte) resp.Value { h.n++; return resp.OK }

func TestBudgetStopsRunawayScriptsDeterministically(t *testing.T) {
	const budget = 10000
	for _, src := range []string{
		`while true do redis.call('ping') end`,
		`local i = 0 while true do i = i + 1; if i % 7 == 0 then redis.call('ping') end end`,
		// pcall cannot swallow the budget error: the next instruction raises it again.
		`while true do pcall(function() while true do redis.call('ping') end end) end`,
		`while true do xpcall(function() while true do redis.call('ping') end end, function(e) while true do redis.call('ping') end end) end`,
		// Instructions run in coroutines count too.
		`local co = coroutine.wrap(function() while true do redis.call('ping') end end) co()`,
		`while true do local co = coroutine.create(function() redis.call('ping') end) coroutine.resume(co) end`,
		`local function f() redis.call('ping') return f() end return f()`,
		`table.sort({3,2,1,5,4,6,7,8,9}, function(a, b) while true do redis.call('ping') end end)`,
		`string.gsub(string.rep('a', 100), 'a', function() while true do redis.call('ping') end end)`,
	} {
		calls := []int{callsAtBudgetStop(t, src, budget, 20*time.Second), callsAtBudgetStop(t, src, budget, 20*time.Second)}
		if calls[0] != calls[1] || calls[0] == 0 {
			t.Errorf("%q: stopped after %d then %d host calls", src, calls[0], calls[1])
		}
	}
}

func TestBudgetExactCount(t *testing.T) {
	// "local i = 0 while i < N do i = i + 1 end return i" is a fixed number
	// of instructions; find the smallest budget that lets it finish, then
	// check one less stops it.
	src := `local i = 0 while i < 100 do i = i + 1 end return i`
	e := New()
	sha, _ := e.Load([]byte(src))
	need := int64(-1)
	for b := int64(1); b < 2000; b++ {
		if v := e.Run(sha, nil, nil, nil, Limits{MaxInstructions: b}); !IsBudgetError(v) {
			if v.Int != 100 {
				t.Fatalf("got %s", render(v))
			}
			need = b
			break
		}
	}
	if need < 300 {
		t.Fatalf("needed only %d instructions", need)
	}
	for i := 0; i < 3; i++ {
		if v := e.Run(sha, nil, nil, nil, Limits{MaxInstructions: need - 1}); !IsBudgetError(v) {
			t.Fatalf("budget %d: %s", need-1, render(v))
		}
		if v := e.Run(sha, nil, nil, nil, Limits{MaxInstructions: need}); v.Int != 100 {
			t.Fatalf("budget %d: %s", need, render(v))
		}
	}
	// 0 means unlimited.
	if v := e.Run(sha, nil, nil, nil, Limits{}); v.Int != 100 {
		t.Fatalf("unlimited: %s", render(v))
	}
}

func TestStringLimit(t *testing.T) {
	e := New()
	lim := Limits{MaxStringLen: 1 << 20}
	for _, src := range []string{
		`return string.rep('x', 2^21)`,
		`return ('ab'):rep(2^20)`,
		`local t = {} for i = 1, 1100 do t[i] = string.rep('x', 1000) end return table.concat(t)`,
		`local t = {} for i = 1, 1100 do t[i] = string.rep('x', 1000) end return string.format(string.rep('%s', 1100), unpack(t))`,
	} {
		sha, err := e.Load([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		v := e.Run(sha, nil, nil, nil, lim)
		want := "ERR user_script:1: resulting string too large script: " + sha + ", on @user_script:1."
		if string(v.Str) != want {
			t.Errorf("%q: got %s", src, render(v))
		}
	}
	// Below the limit, and Lua's C int conversion of the count (2^31 wraps
	// to a negative count, as in Redis).
	if v := run(t, e, nil, `return {#string.rep('ab', 1000), #string.rep('x', 2^31)}`, nil, nil); render(v) != "*2\r\n:2000\r\n:0\r\n" {
		t.Fatalf("got %s", render(v))
	}
}

func TestCancel(t *testing.T) {
	e := New()
	sha, _ := e.Load([]byte(`while true do redis.call('ping') end`))
	cancel := make(chan struct{})
	h := &countingHost{}
	go close(cancel)
	v := e.Run(sha, nil, nil, h, Limits{Cancel: cancel})
	if !IsKilledError(v) || string(v.Str) != KilledErrorText || IsBudgetError(v) {
		t.Fatalf("got %s", render(v))
	}
	// A cancel channel that never closes changes nothing.
	sha, _ = e.Load([]byte(`local n = 0 for i = 1, 5000 do n = n + 1 end return n`))
	if v := e.Run(sha, nil, nil, nil, Limits{Cancel: make(chan struct{})}); v.Int != 5000 {
		t.Fatalf("got %s", render(v))
	}
}

// MaxAllocBytes stops scripts that build huge strings in a few instructions
// (string concatenation doubles a string per instruction), even under pcall.
func TestAllocLimit(t *testing.T) {
	const limit = 64 << 20
	for _, src := range []string{
		`local s = 'x' for i = 1, 40 do s = s .. s end return #s`,
		`local t = {} for i = 1, 100 do t[i] = string.rep('x', 10000000) end return #t`,
		`local s = 'x' for i = 1, 40 do pcall(function() s = s .. s end) end return #s`,
	} {
		e := New()
		sha, err := e.Load([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		v := e.Run(sha, nil, nil, &countingHost{}, Limits{MaxInstructions: 50_000_000, MaxAllocBytes: limit})
		if !IsMemoryError(v) || string(v.Str) != "ERR script exceeded its memory budget of 67108864 bytes" {
			t.Fatalf("%q: got %s", src, render(v))
		}
	}
	// A script within its allowance is unaffected.
	e := New()
	sha, _ := e.Load([]byte(`local s = 'x' for i = 1, 16 do s = s .. s end return #s`))
	if v := e.Run(sha, nil, nil, &countingHost{}, Limits{MaxInstructions: 1_000_000, MaxAllocBytes: limit}); v.Kind != resp.KindInt || v.Int != 65536 {
		t.Fatalf("a small script: %s", render(v))
	}
}
