package fsm

import (
	"strconv"
	"testing"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// The apply-path benchmarks run only with -bench, e.g.
//
//	go test -run '^$' -bench . -benchtime 200000x ./raftstore/fsm
//
// Each decodes the entry from its log bytes first, as the Raft FSM does, so
// the numbers cover decode + parse + execute of one committed entry, and
// then take the entry's events. Lock events are built as when someone
// subscribes to them; the NoListeners variant sets the node's event filter to
// "nobody listens", as a node without subscribers runs.

// benchApplier applies encoded entries at increasing indexes and log times.
type benchApplier struct {
	ks    *Keyspace
	index uint64
}

func (a *benchApplier) apply(b *testing.B, data []byte) resp.Value {
	e, err := command.Decode(data)
	if err != nil {
		b.Fatal(err)
	}
	a.index++
	e.Time = int64(a.index)
	e.Wall = wall + e.Time
	v := a.ks.Apply(a.index, e)
	a.ks.TakeEvents() // as the Raft FSM does after each batch
	return v
}

func encoded(argv ...[]byte) []byte {
	return command.Entry{Kind: command.KindCommand, Args: argv}.Encode()
}

// BenchmarkApplyLockAcquireRelease: one op is LOCK.ACQUIRE of a free name
// (granted) followed by LOCK.RELEASE of it, over 1024 names in turn, so the
// keyspace stays small.
func BenchmarkApplyLockAcquireRelease(b *testing.B) { benchAcquireRelease(b, New()) }

// BenchmarkApplyLockAcquireReleaseNoListeners is the same cycle on a node
// where nobody subscribes to the event channels.
func BenchmarkApplyLockAcquireReleaseNoListeners(b *testing.B) {
	ks := New()
	ks.SetEventFilter(func(string) bool { return false })
	benchAcquireRelease(b, ks)
}

func benchAcquireRelease(b *testing.B, ks *Keyspace) {
	const names = 1024
	acq := make([][]byte, names)
	for i := range acq {
		acq[i] = encoded([]byte("LOCK.ACQUIRE"), []byte("lock:"+strconv.Itoa(i)), []byte("owner-1"), []byte("PX"), []byte("30000"))
	}
	a := &benchApplier{ks: ks}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		n := i % names
		i++
		tok := a.apply(b, acq[n])
		if tok.Kind != resp.KindInt {
			b.Fatalf("LOCK.ACQUIRE = %v", tok)
		}
		rel := encoded([]byte("LOCK.RELEASE"), []byte("lock:"+strconv.Itoa(n)), strconv.AppendInt(nil, tok.Int, 10))
		if v := a.apply(b, rel); v.Kind != resp.KindInt || v.Int != 1 {
			b.Fatalf("LOCK.RELEASE = %v", v)
		}
	}
}

// BenchmarkApplyLockAcquireHeld: one op is LOCK.ACQUIRE of a new name that
// stays held (PX one hour), so the keyspace grows by b.N locks: the cost of
// adding a held lock, as when filling a node with many locks.
func BenchmarkApplyLockAcquireHeld(b *testing.B) {
	a := &benchApplier{ks: New()}
	name := []byte("lock:")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		data := encoded([]byte("LOCK.ACQUIRE"), strconv.AppendInt(name[:5:5], int64(i), 10), []byte("owner-1"), []byte("PX"), []byte("3600000"))
		if v := a.apply(b, data); v.Kind != resp.KindInt {
			b.Fatalf("LOCK.ACQUIRE = %v", v)
		}
	}
}

// BenchmarkApplySetNXPX: one op is the Redis-style cycle, SET name owner NX PX
// (granted) then DELEX name IFEQ owner (compare-and-delete), over 1024 names.
func BenchmarkApplySetNXPX(b *testing.B) {
	const names = 1024
	set := make([][]byte, names)
	del := make([][]byte, names)
	for i := range set {
		k := []byte("lock:" + strconv.Itoa(i))
		set[i] = encoded([]byte("SET"), k, []byte("owner-1"), []byte("NX"), []byte("PX"), []byte("30000"))
		del[i] = encoded([]byte("DELEX"), k, []byte("IFEQ"), []byte("owner-1"))
	}
	a := &benchApplier{ks: New()}
	if v := a.apply(b, del[0]); v.Kind == resp.KindError {
		b.Fatalf("DELEX = %v", v)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		n := i % names
		i++
		if v := a.apply(b, set[n]); v.Kind == resp.KindError || v.Kind == resp.KindNull {
			b.Fatalf("SET NX PX = %v", v)
		}
		if v := a.apply(b, del[n]); v.Kind != resp.KindInt || v.Int != 1 {
			b.Fatalf("DELEX IFEQ = %v", v)
		}
	}
}
