package multiraft

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkGroups: 64 clients proposing 64-byte commands through a 3-node
// in-process cluster on disk, leaders spread, with 1 and with 8 groups (the
// same load), the nodes linked in memory (mem) or by TCP peer ports (tcp).
// Issue 50 asks the 8-group shape for 0.9× the one-group throughput; the
// metrics say where a difference comes from.
func BenchmarkGroups(b *testing.B) {
	for _, link := range []string{"mem", "tcp"} {
		for _, groups := range []int{1, 8} {
			b.Run(link+"/groups="+strconv.Itoa(groups), func(b *testing.B) {
				benchGroups(b, groups, link == "tcp")
			})
		}
	}
}

func benchGroups(b *testing.B, groups int, overTCP bool) {
	c := newClusterOver(b, 3, groups, nil, overTCP)
	leads := c.spread()
	fsyncs0, turns0, frames0 := c.counters()
	cmd := []byte(fmt.Sprintf("%064d", 0))
	elapsed, cpu := drive(b, func(i int) func() error {
		g := Group(i % groups)
		n := c.nodes[leads[g]]
		return func() error {
			_, err := n.Propose(context.Background(), g, cmd)
			return err
		}
	})
	fsyncs, turns, frames := c.counters()
	ops := float64(b.N)
	b.ReportMetric(ops/elapsed.Seconds(), "ops/s")
	b.ReportMetric(float64(fsyncs-fsyncs0)/ops, "fsyncs/op")
	b.ReportMetric(float64(turns-turns0)/ops, "turns/op")
	b.ReportMetric(float64(frames-frames0)/ops, "frames/op")
	b.ReportMetric(float64(cpu.Microseconds())/ops, "cpu-µs/op")
}

// counters sums the nodes' journal records (fsyncs), driver turns and
// frames sent.
func (c *cluster) counters() (fsyncs, turns, frames uint64) {
	for _, id := range c.ids {
		txns, _ := c.shs[id].Commits()
		fsyncs += txns
		turns += c.nodes[id].Turns.Load()
		frames += c.nodes[id].Frames.Load()
	}
	return fsyncs, turns, frames
}

// drive runs 64 clients until they have done b.N operations in all, client
// i calling the function op(i) returns once per operation (an error ends
// the client and fails b), and returns the wall and process CPU time they
// took; b's timer covers only them.
func drive(b *testing.B, op func(client int) func() error) (wall, cpu time.Duration) {
	var next atomic.Int64
	var wg sync.WaitGroup
	cpu0 := cpuTime()
	b.ResetTimer()
	start := time.Now()
	for i := range 64 {
		do := op(i)
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := do(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	wall = time.Since(start)
	b.StopTimer()
	return wall, cpuTime() - cpu0
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
