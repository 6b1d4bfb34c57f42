package logstore

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// BenchmarkStoreLogs measures one StoreLogs call of 64 small entries on disk,
// i.e. one synced badger transaction.
func BenchmarkStoreLogs(b *testing.B) {
	const batch = 64
	s := openStore(b, b.TempDir(), Options{})
	data := make([]byte, 100)
	logs := make([]*raft.Log, batch)
	for i := range logs {
		logs[i] = &raft.Log{Term: 1, Type: raft.LogCommand, Data: data, AppendedAt: time.Now()}
	}
	next := uint64(1)
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range logs {
			l.Index = next
			next++
		}
		if err := s.StoreLogs(logs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "logs/s")
}

// BenchmarkSharedStoreLogs is BenchmarkStoreLogs through a Shared's
// committer, as a follower writes (synced: the call returns once on disk) and
// as a group leader writes (deferred: the call returns once queued; here it
// then waits for WaitDurable, as the leader's apply does, so both measure the
// time until the batch is on disk). The two differ by what the leader saves:
// with deferral it replicates while its own write runs.
func BenchmarkSharedStoreLogs(b *testing.B) {
	for _, deferred := range []bool{false, true} {
		name := "synced"
		if deferred {
			name = "deferred"
		}
		b.Run(name, func(b *testing.B) {
			const batch = 64
			_, s := openGroup(b, b.TempDir(), Options{})
			s.DeferSyncWhen(func() bool { return deferred })
			data := make([]byte, 100)
			logs := make([]*raft.Log, batch)
			next := uint64(1)
			var queued time.Duration
			b.ReportAllocs()
			for b.Loop() {
				for i := range logs { // fresh entries: a deferred batch stays readable until written
					logs[i] = &raft.Log{Index: next, Term: 1, Type: raft.LogCommand, Data: data}
					next++
				}
				start := time.Now()
				if err := s.StoreLogs(logs); err != nil {
					b.Fatal(err)
				}
				queued += time.Since(start)
				if err := s.WaitDurable(next - 1); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(queued.Microseconds())/float64(b.N), "us-blocked-in-StoreLogs/op")
		})
	}
}
