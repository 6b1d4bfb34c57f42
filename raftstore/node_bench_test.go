package raftstore

import (
	"context"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lockd/lockd/command"
)

// BenchmarkNodeGroups: uncontended LOCK.ACQUIRE → LOCK.RELEASE cycles by 64
// clients spread over a 3-node in-process cluster, with 1 and with 8 groups
// (the same load; what sharding costs or buys on this machine).
func BenchmarkNodeGroups(b *testing.B) {
	for _, groups := range []int{1, 8} {
		b.Run("groups="+strconv.Itoa(groups), func(b *testing.B) {
			c := newNodeClusterTB(b, 3, groups)
			c.waitSpread()
			clients := 64
			if v, err := strconv.Atoi(os.Getenv("BENCH_CLIENTS")); err == nil {
				clients = v
			}
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for i := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					nd := c.nodes[i%3]
					name := "bench:" + strconv.Itoa(i)
					for next.Add(1) <= int64(b.N) {
						v := nd.Do(context.Background(), []command.Request{req("LOCK.ACQUIRE", name, "me", "PX", "10000")})[0]
						if v.IsError() {
							b.Error(v)
							return
						}
						nd.Do(context.Background(), []command.Request{req("LOCK.RELEASE", name, strconv.FormatInt(v.Int, 10))})
					}
				}()
			}
			wg.Wait()
			if sh := c.nodes[0].sharedLog; sh != nil {
				txns, calls := sh.Commits()
				b.ReportMetric(float64(calls)/float64(max(txns, 1)), "appends/fsync")
			}
		})
	}
}
