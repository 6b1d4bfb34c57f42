package group

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// openBench opens a single-node store with its badger log in a temporary
// directory and waits until it serves.
func openBench(b *testing.B) *Store {
	b.Helper()
	s, err := Open(Config{DataDir: b.TempDir(), PeerAddr: "127.0.0.1:0", ApplyTimeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.WaitServing(ctx); err != nil {
		b.Fatal(err)
	}
	return s
}

func benchRequest(argv ...[]byte) (command.Request, error) {
	op, spec, err := command.Parse(argv)
	return command.Request{Args: argv, Op: op, Spec: spec}, err
}

// acquireRelease runs one LOCK.ACQUIRE name → LOCK.RELEASE name token cycle,
// each a Store.Do of its own (two commits, two fsyncs unless shared).
func acquireRelease(s *Store, name []byte) error {
	ctx := context.Background()
	acq, err := benchRequest([]byte("LOCK.ACQUIRE"), name, []byte("owner-1"), []byte("PX"), []byte("30000"))
	if err != nil {
		return err
	}
	tok := s.Do(ctx, []command.Request{acq})[0]
	if tok.Kind != resp.KindInt {
		return fmt.Errorf("LOCK.ACQUIRE = %v", tok)
	}
	rel, err := benchRequest([]byte("LOCK.RELEASE"), name, strconv.AppendInt(nil, tok.Int, 10))
	if err != nil {
		return err
	}
	if v := s.Do(ctx, []command.Request{rel})[0]; v.Kind != resp.KindInt || v.Int != 1 {
		return fmt.Errorf("LOCK.RELEASE = %v", v)
	}
	return nil
}

// BenchmarkDoAcquireRelease: one op is an acquire→release cycle through
// Store.Do on a single node with a real (synced) badger log, one caller at a
// time: the latency floor of a write (two commits). Runs only with -bench:
//
//	go test -run '^$' -bench DoAcquireRelease -benchtime 2s ./raftstore
func BenchmarkDoAcquireRelease(b *testing.B) {
	s := openBench(b)
	name := []byte("lock:bench")
	b.ReportAllocs()
	for b.Loop() {
		if err := acquireRelease(s, name); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cycles/s")
}

// BenchmarkDoAcquireReleaseParallel: the same cycle from 64 concurrent
// callers on disjoint names (b.SetParallelism(32) on 2 cores), showing how
// well commits share one fsync.
func BenchmarkDoAcquireReleaseParallel(b *testing.B) {
	s := openBench(b)
	var next atomic.Int64
	b.SetParallelism(32)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		name := []byte("lock:bench:" + strconv.FormatInt(next.Add(1), 10))
		for pb.Next() {
			if err := acquireRelease(s, name); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cycles/s")
}
