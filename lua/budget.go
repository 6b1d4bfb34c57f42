package lua

import (
	"context"
	"errors"
	"fmt"
	"runtime/metrics"
	"strings"
	"time"

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

func (b *budget) Deadline() (time.Time, bool) { return time.Time{}, false }
func (b *budget) Value(any) any               { return nil }

var _ context.Context = (*budget)(nil)
