package memtrim

import (
	"context"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestWorth(t *testing.T) {
	const mb = 1 << 20
	cases := []struct {
		name      string
		prev, cur Sample
		slack     uint64
		want      bool
	}{
		{"quiet with much reclaimable", Sample{Allocs: 1000 * mb}, Sample{Live: 300 * mb, Reclaimable: 500 * mb, Allocs: 1010 * mb}, 32 * mb, true},
		{"busy: allocating as much as a trim would return", Sample{Allocs: 1000 * mb}, Sample{Live: 300 * mb, Reclaimable: 500 * mb, Allocs: 1300 * mb}, 32 * mb, false},
		{"reclaimable below the slack", Sample{}, Sample{Live: 10 * mb, Reclaimable: 20 * mb}, 32 * mb, false},
		{"reclaimable below an eighth of the live heap", Sample{}, Sample{Live: 400 * mb, Reclaimable: 45 * mb}, 32 * mb, false},
		{"reclaimable over an eighth of the live heap", Sample{}, Sample{Live: 400 * mb, Reclaimable: 55 * mb}, 32 * mb, true},
		{"held far beyond live, nothing reclaimable (runtime metadata, stacks)", Sample{}, Sample{Live: 100 * mb, Held: 400 * mb}, 32 * mb, false},
	}
	for _, c := range cases {
		if got := Worth(c.prev, c.cur, c.slack); got != c.want {
			t.Errorf("%s: Worth = %v, want %v", c.name, got, c.want)
		}
	}
}

var sink [][]byte

// keepLive allocates mib MiB that stay live until the test ends.
func keepLive(t *testing.T, mib int) {
	keep := make([][]byte, 0, mib)
	for i := 0; i < mib; i++ {
		keep = append(keep, make([]byte, 1<<20))
	}
	t.Cleanup(func() { runtime.KeepAlive(keep) })
}

// makeGarbage leaves about 256 MiB of collected garbage held by the runtime
// (beside 64 MiB kept live until the test ends) and returns the held bytes.
func makeGarbage(t *testing.T) uint64 {
	keepLive(t, 64)
	for i := 0; i < 256; i++ {
		sink = append(sink, make([]byte, 1<<20))
	}
	runtime.GC() // the live heap now includes sink
	sink = nil   // garbage from here on, still held by the runtime
	runtime.GC()
	return Read().Held
}

// TestRunReturnsGarbage: after a burst of garbage and a quiet interval, Run
// trims once and the memory the runtime holds drops.
func TestRunReturnsGarbage(t *testing.T) {
	makeGarbage(t)
	type trim struct{ before, after uint64 }
	trims := make(chan trim, 8)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Run(ctx, Config{Interval: 20 * time.Millisecond, MinGap: time.Millisecond, Slack: 16 << 20,
		OnTrim: func(b, a uint64, _ time.Duration) { trims <- trim{b, a} }})
	select {
	case tr := <-trims:
		if tr.after >= tr.before || tr.before-tr.after < 100<<20 {
			t.Fatalf("trim: held %d MiB before, %d MiB after; want at least 100 MiB returned", tr.before>>20, tr.after>>20)
		}
	case <-time.After(10 * time.Second):
		s := Read()
		t.Fatalf("no trim within 10s (live %d MiB, held %d MiB)", s.Live>>20, s.Held>>20)
	}
}

// TestAfterReturnsGarbageOnce: calls to After in a row end in one trim, d
// after the last of them, which returns the garbage.
func TestAfterReturnsGarbageOnce(t *testing.T) {
	before := makeGarbage(t)
	for range 3 {
		After(50 * time.Millisecond)
	}
	deadline := time.Now().Add(10 * time.Second)
	for Read().Held+(100<<20) > before {
		if time.Now().After(deadline) {
			t.Fatalf("held %d MiB 10s after After, %d MiB before; want at least 100 MiB returned", Read().Held>>20, before>>20)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReclaimable: Reclaimable counts garbage not yet collected and free
// pages not yet returned, and not the live heap: right after a trim it is
// small whatever is live; garbage made after it shows in full.
func TestReclaimable(t *testing.T) {
	keepLive(t, 64)
	debug.FreeOSMemory()
	s := Read()
	if s.Live < 64<<20 {
		t.Fatalf("live %d MiB, want the 64 MiB kept", s.Live>>20)
	}
	if s.Reclaimable > 16<<20 {
		t.Fatalf("right after a trim: reclaimable %d MiB (live %d MiB), want under 16", s.Reclaimable>>20, s.Live>>20)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no collection until the test ends
	for i := 0; i < 128; i++ {
		sink = append(sink, make([]byte, 1<<20))
	}
	sink = nil // garbage, not yet collected
	if r := Read().Reclaimable; r < 120<<20 {
		t.Fatalf("after 128 MiB of garbage: reclaimable %d MiB, want at least 120", r>>20)
	}
}

// TestPolicyRecheck: a trim that ends a burst is followed by one more,
// Recheck later, once an interval is quiet, even where Worth sees nothing to
// return (its live figure is the first trim's); a trim at the end of a quiet
// stretch schedules none, and MinGap holds for both.
func TestPolicyRecheck(t *testing.T) {
	const mb = 1 << 20
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	p := newPolicy(Config{Slack: 32 * mb, MinGap: 10 * time.Second, Recheck: 15 * time.Second})

	// A burst: 4 GiB allocated, much reclaimable, then a quiet interval.
	prev := Sample{Allocs: 4000 * mb}
	burst := Sample{Live: 250 * mb, Reclaimable: 300 * mb, Allocs: 4010 * mb}
	if !p.decide(prev, burst, at(0)) {
		t.Fatal("no trim after a burst with 300 MiB reclaimable")
	}
	p.trimmed(burst, at(0))

	// After it, nothing Worth a trim: the garbage is under the slack.
	idle := func(s int) (Sample, Sample) {
		a := uint64(4010*mb + s*mb/4) // 0.25 MiB/s
		return Sample{Live: 250 * mb, Reclaimable: 8 * mb, Allocs: a - 5*mb/4}, Sample{Live: 250 * mb, Reclaimable: 8 * mb, Allocs: a}
	}
	for s := 5; s < 15; s += 5 {
		if prev, cur := idle(s); p.decide(prev, cur, at(s)) {
			t.Fatalf("trim at %ds, before the recheck is due", s)
		}
	}
	// Due, but the interval allocated a quarter of the slack: not quiet.
	if p.decide(Sample{Allocs: 4020 * mb}, Sample{Live: 250 * mb, Reclaimable: 8 * mb, Allocs: 4028 * mb}, at(15)) {
		t.Fatal("recheck taken during an interval that allocated 8 MiB")
	}
	prev, cur := idle(20)
	if !p.decide(prev, cur, at(20)) {
		t.Fatal("no recheck 20s after a trim that ended a burst")
	}
	p.trimmed(cur, at(20))

	// The recheck followed a quiet stretch: nothing more until Worth says so.
	for s := 25; s < 120; s += 5 {
		if prev, cur := idle(s); p.decide(prev, cur, at(s)) {
			t.Fatalf("trim at %ds after a recheck that ended no burst", s)
		}
	}
	much := Sample{Live: 250 * mb, Reclaimable: 64 * mb, Allocs: 4100 * mb}
	if !p.decide(Sample{Allocs: 4099 * mb}, much, at(120)) {
		t.Fatal("no trim with 64 MiB reclaimable and a quiet interval")
	}
	p.trimmed(much, at(120))
	if p.decide(Sample{Allocs: 4099 * mb}, much, at(125)) {
		t.Fatal("trim 5s after the last one, inside MinGap")
	}
	if p.decide(prev, cur, at(200)) {
		t.Fatal("recheck after a trim that ended no burst (90 MiB allocated since the one before, under live + slack)")
	}
}
