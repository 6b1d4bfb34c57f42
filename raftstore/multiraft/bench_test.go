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
	var fsyncs0, turns0, frames0 uint64
	for _, id := range c.ids {
		txns, _ := c.shs[id].Commits()
		fsyncs0 += txns
		turns0 += c.nodes[id].Turns.Load()
		frames0 += c.nodes[id].Frames.Load()
	}
	cmd := []byte(fmt.Sprintf("%064d", 0))
	var next atomic.Int64
	var wg sync.WaitGroup
	cpu0 := cpuTime()
	b.ResetTimer()
	start := time.Now()
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := Group(i % groups)
			n := c.nodes[leads[g]]
			for next.Add(1) <= int64(b.N) {
				if _, err := n.Propose(context.Background(), g, cmd); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	cpu := cpuTime() - cpu0
	var fsyncs, turns, frames uint64
	for _, id := range c.ids {
		txns, _ := c.shs[id].Commits()
		fsyncs += txns
		turns += c.nodes[id].Turns.Load()
		frames += c.nodes[id].Frames.Load()
	}
	ops := float64(b.N)
	b.ReportMetric(ops/elapsed.Seconds(), "ops/s")
	b.ReportMetric(float64(fsyncs-fsyncs0)/ops, "fsyncs/op")
	b.ReportMetric(float64(turns-turns0)/ops, "turns/op")
	b.ReportMetric(float64(frames-frames0)/ops, "frames/op")
	b.ReportMetric(float64(cpu.Microseconds())/ops, "cpu-µs/op")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
