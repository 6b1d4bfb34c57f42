package lua

import (
	"context"
	"errors"
	"fmt"
	"runtime/metrics"
	"strings"
	"time"

	glua "github.com/yuin/gopher-lua"

	"github.com/lockd/lockd/resp"
)

// ErrBudget is the error a run ends with when it executes more VM
// instructions than Limits.MaxInstructions allows. Run reports it as an error
// reply whose text starts with BudgetErrorPrefix; IsBudgetError recognises it.
var ErrBudget = errors.New("script exceeded its instruction budget")

// BudgetErrorPrefix starts the error reply of a run stopped by its
// instruction budget: "ERR script exceeded its instruction budget of N
// instructions".
const BudgetErrorPrefix = "ERR script exceeded its instruction budget"

func budgetReply(max int64) string {
	return fmt.Sprintf("%s of %d instructions", BudgetErrorPrefix, max)
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// budget is the context.Context gopher-lua consults before every VM
// instruction (mainLoopWithContext calls Done() once per instruction). It
// counts those calls instead of watching a clock, so a run stops at exactly
// the same instruction on every replica. Once spent, Done stays closed: a
// pcall in the script may catch the error, but the next instruction raises
// it again, so the script cannot outlive its budget.
type budget struct {
	left   int64
	spent  bool
	cancel <-chan struct{} // Limits.Cancel: SCRIPT KILL (nil: none)
	killed bool
	n      int64

	// Limits.MaxAllocBytes: the process's allocation counter when the run
	// started, and whether the run went past its allowance.
	maxAlloc   int64
	allocStart uint64
	sample     []metrics.Sample
	oom        bool
}

// ErrMemory is the error a run ends with when it allocates more than
// Limits.MaxAllocBytes.
var ErrMemory = errors.New("script exceeded its memory budget")

// MemoryErrorPrefix starts the error reply of a run stopped by
// Limits.MaxAllocBytes: "ERR script exceeded its memory budget of N bytes".
const MemoryErrorPrefix = "ERR script exceeded its memory budget"

func memoryReply(max int64) string {
	return fmt.Sprintf("%s of %d bytes", MemoryErrorPrefix, max)
}

// heapAllocs is the runtime/metrics counter of bytes allocated so far.
const heapAllocs = "/gc/heap/allocs:bytes"

// allocCheckEvery is how many instructions pass between two reads of the
// allocation counter (a read costs about 0.2 µs): a few, because one
// instruction can double a string.
const allocCheckEvery = 4

func (b *budget) startAllocs(max int64) {
	b.maxAlloc = max
	b.sample = []metrics.Sample{{Name: heapAllocs}}
	metrics.Read(b.sample)
	b.allocStart = b.sample[0].Value.Uint64()
}

func (b *budget) Done() <-chan struct{} {
	if b.left <= 0 || b.killed || b.oom {
		b.spent = !b.killed && !b.oom
		return closedChan
	}
	b.left--
	if b.maxAlloc > 0 && b.left%allocCheckEvery == 0 {
		metrics.Read(b.sample)
		if int64(b.sample[0].Value.Uint64()-b.allocStart) > b.maxAlloc {
			b.oom = true
			return closedChan
		}
	}
	if b.cancel != nil {
		if b.n++; b.n&1023 == 0 {
			select {
			case <-b.cancel:
				b.killed = true
				return closedChan
			default:
			}
		}
	}
	return nil // a nil channel never fires: the select takes its default
}

// KilledErrorText is the error reply of a run stopped through Limits.Cancel.
// (Redis 7.0.15 appends the usual " script: <sha>, on @user_script:<line>."
// to it; IsKilledError accepts both forms.)
const KilledErrorText = "ERR Script killed by user with SCRIPT KILL..."

// IsKilledError reports whether v is the error reply of a run stopped
// through Limits.Cancel.
func IsKilledError(v resp.Value) bool {
	return v.Kind == resp.KindError && strings.HasPrefix(string(v.Str), KilledErrorText)
}

func (b *budget) Err() error {
	if b.oom {
		return ErrMemory
	}
	if b.spent || b.killed {
		return ErrBudget
	}
	return nil
}

// take moves at least n units, and up to extra more as far as the budget
// goes, from the budget to a meter, and returns how many it moved. It
// reports false when fewer than n are left (the budget is then spent, as if
// the instructions had run out), when the run was cancelled, or when it went
// past its allocation allowance; the meter then raises the run's error.
// Every take also polls the cancel channel and the allocation counter, so a
// run inside a long library call is stopped within one meterChunk.
func (b *budget) take(n, extra int64) (int64, bool) {
	if b.killed || b.oom || b.spent {
		return 0, false
	}
	if b.left < n {
		b.left, b.spent = 0, true
		return 0, false
	}
	got := min(n+extra, b.left)
	b.left -= got
	if b.cancel != nil {
		select {
		case <-b.cancel:
			b.killed = true
			return 0, false
		default:
		}
	}
	if b.maxAlloc > 0 {
		metrics.Read(b.sample)
		if int64(b.sample[0].Value.Uint64()-b.allocStart) > b.maxAlloc {
			b.oom = true
			return 0, false
		}
	}
	return got, true
}

// Work inside library calls is charged to the instruction budget in the
// same units as VM instructions: one unit per pattern-matching step (a
// pattern item tried at one subject position), per element a table
// function moves or compares, and per bytesPerUnit bytes a function reads or
// produces. A unit is sized to cost about what a VM instruction costs
// (16-30 ns each measured on the development VM: lua/DESIGN.md, "Budgets"),
// so the budget bounds a run's CPU whether it is spent in the VM or in the
// library, and the same count stops it on every replica.
const bytesPerUnit = 32

// meterChunk is how many units a meter takes from the budget at once: the
// interval at which a library call polls SCRIPT KILL and the allocation
// counter.
const meterChunk = 4096

// meter charges one library call's work to the run's budget. It takes units
// from the budget in chunks and gives back what it did not use (done), so
// the count is exact: a call needing one unit more than the budget has left
// is stopped at that unit, on every replica. A meter must be done before the
// library call runs Lua code (a gsub replacement function), whose
// instructions the budget counts itself.
type meter struct {
	L      *glua.LState
	b      *budget // nil: the run has no budget
	credit int64   // units taken from the budget, not used yet
	odd    int     // bytes read or produced, not yet charged (< bytesPerUnit)
}

// meter starts the meter of one library call.
func (s *state) meter(L *glua.LState) *meter { return &meter{L: L, b: s.r.budget} }

// step charges one unit.
func (m *meter) step() {
	if m.credit > 0 {
		m.credit--
		return
	}
	m.refill(1)
}

// charge charges n units.
func (m *meter) charge(n int64) {
	if m.credit >= n {
		m.credit -= n
		return
	}
	m.refill(n)
}

// bytes charges for n bytes read or produced.
func (m *meter) bytes(n int) {
	m.odd += n
	if m.odd >= bytesPerUnit {
		m.charge(int64(m.odd / bytesPerUnit))
		m.odd %= bytesPerUnit
	}
}

func (m *meter) refill(n int64) {
	if m.b == nil {
		m.credit = 1 << 62 // no budget: nothing to count
		return
	}
	got, ok := m.b.take(n-m.credit, meterChunk)
	if !ok {
		m.credit = 0
		m.L.RaiseError("%s", m.b.Err().Error())
	}
	m.credit += got - n
}

// done gives the units the meter took and did not use back to the budget.
func (m *meter) done() {
	if m.b != nil && m.credit > 0 {
		m.b.left += m.credit
	}
	m.credit = 0
}

func (b *budget) Deadline() (time.Time, bool) { return time.Time{}, false }
func (b *budget) Value(any) any               { return nil }

var _ context.Context = (*budget)(nil)
