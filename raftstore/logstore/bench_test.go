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
