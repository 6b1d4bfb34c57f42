package memtrim

import (
	"context"
	"runtime"
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
		{"quiet with a large excess", Sample{Allocs: 1000 * mb}, Sample{Live: 300 * mb, Held: 800 * mb, Allocs: 1010 * mb}, 64 * mb, true},
		{"busy: allocating into the excess", Sample{Allocs: 1000 * mb}, Sample{Live: 300 * mb, Held: 800 * mb, Allocs: 1300 * mb}, 64 * mb, false},
		{"excess below the slack", Sample{}, Sample{Live: 10 * mb, Held: 60 * mb}, 64 * mb, false},
		{"excess below half the live heap", Sample{}, Sample{Live: 400 * mb, Held: 550 * mb}, 64 * mb, false},
		{"nothing beyond the live heap", Sample{}, Sample{Live: 400 * mb, Held: 300 * mb}, 64 * mb, false},
	}
	for _, c := range cases {
		if got := Worth(c.prev, c.cur, c.slack); got != c.want {
			t.Errorf("%s: Worth = %v, want %v", c.name, got, c.want)
		}
	}
}

var sink [][]byte

// TestRunReturnsGarbage: after a burst of garbage and a quiet interval, Run
// trims once and the memory the runtime holds drops.
func TestRunReturnsGarbage(t *testing.T) {
	// Keep some live data and make lots of garbage, without a collection
	// releasing it on its own in between.
	keep := make([][]byte, 0, 64)
	for i := 0; i < 64; i++ {
		keep = append(keep, make([]byte, 1<<20))
	}
	for i := 0; i < 256; i++ {
		sink = append(sink, make([]byte, 1<<20))
	}
	runtime.GC() // the live heap now includes sink
	sink = nil   // garbage from here on, still held by the runtime
	type trim struct{ before, after uint64 }
	trims := make(chan trim, 8)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Run(ctx, Config{Interval: 20 * time.Millisecond, MinGap: time.Millisecond, Slack: 16 << 20,
		OnTrim: func(b, a uint64) { trims <- trim{b, a} }})
	// The first reading still sees sink as live (no collection since); force a
	// collection so the live count drops and the garbage shows as excess.
	runtime.GC()
	select {
	case tr := <-trims:
		if tr.after >= tr.before || tr.before-tr.after < 100<<20 {
			t.Fatalf("trim: held %d MiB before, %d MiB after; want at least 100 MiB returned", tr.before>>20, tr.after>>20)
		}
	case <-time.After(10 * time.Second):
		s := Read()
		t.Fatalf("no trim within 10s (live %d MiB, held %d MiB)", s.Live>>20, s.Held>>20)
	}
	runtime.KeepAlive(keep)
}
