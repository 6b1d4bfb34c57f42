//go:build faults

package logstore

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// ErrInjected is returned by a Faulty store's log writes while failing writes
// are switched on: a test fault standing for a disk that refuses writes.
var ErrInjected = errors.New("logstore: injected write failure (test fault)")

// Faulty wraps a raft.LogStore with disk faults that a test switches on and off
// while Raft runs: slow writes (a slow fsync), failing writes, and — a planted
// bug, never a fault a correct system must survive — a disk that acknowledges
// writes before they are durable, so that a crash loses acknowledged entries.
//
// Reads pass through. It is test machinery: production stores are never
// wrapped, and it builds only with the faults tag. All methods are safe for
// concurrent use.
type Faulty struct {
	inner raft.LogStore
	WriteFaults

	// The lying disk: while lag > 0, StoreLogs keeps the entries in pending and
	// returns at once; a flusher writes them to inner once they are lag old.
	mu      sync.Mutex
	lag     time.Duration
	pending []pendingLog // contiguous indexes above inner's last, oldest first
	stop    chan struct{}
	done    chan struct{}
}

// WriteFaults are the slow and failing writes a test switches on and off:
// a store's write methods call Before first (Faulty; multiraft's
// FaultyStorage). The zero value injects nothing.
type WriteFaults struct {
	delay          atomic.Int64 // ns added to every write
	fail           atomic.Bool  // writes fail with ErrInjected
	writes, failed atomic.Uint64
}

type pendingLog struct {
	log *raft.Log
	at  time.Time
}

// NewFaulty returns inner with no fault switched on.
func NewFaulty(inner raft.LogStore) *Faulty { return &Faulty{inner: inner} }

var (
	_ raft.LogStore = (*Faulty)(nil)
	_ DurableLog    = (*Faulty)(nil)
)

// SetWriteDelay makes every write (Faulty: StoreLog, StoreLogs, DeleteRange)
// take at least d longer; 0 removes the delay.
func (f *WriteFaults) SetWriteDelay(d time.Duration) { f.delay.Store(int64(max(d, 0))) }

// SetFailWrites makes every write fail with ErrInjected (nothing of it is
// written) until it is called with false.
func (f *WriteFaults) SetFailWrites(on bool) { f.fail.Store(on) }

// WriteDelay reports the delay added to each write.
func (f *WriteFaults) WriteDelay() time.Duration { return time.Duration(f.delay.Load()) }

// FailWrites reports whether writes fail now.
func (f *WriteFaults) FailWrites() bool { return f.fail.Load() }

// Counts returns the writes attempted and those failed by injection.
func (f *WriteFaults) Counts() (writes, failed uint64) { return f.writes.Load(), f.failed.Load() }

// SetLyingDisk is the planted bug: with lag > 0, log writes are acknowledged at
// once but reach the wrapped store only lag later, so a kill -9 loses the
// entries of the last lag. 0 writes what is pending and stops lying.
func (f *Faulty) SetLyingDisk(lag time.Duration) error {
	f.mu.Lock()
	f.lag = max(lag, 0)
	if f.lag > 0 && f.stop == nil {
		f.stop, f.done = make(chan struct{}), make(chan struct{})
		go f.flusher(f.stop, f.done)
	}
	var stop, done chan struct{}
	if f.lag == 0 && f.stop != nil {
		stop, done = f.stop, f.done
		f.stop, f.done = nil, nil
	}
	f.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lag == 0 {
		return f.flushLocked(time.Time{})
	}
	return nil
}

// Durable reports the wrapped store's Durable, except that the lying disk
// counts every entry it acknowledged as on disk: its lie covers the fsync
// too, as a disk that acknowledges a sync it did not do. A wrapped store
// that does not report durability has every stored entry on disk.
func (f *Faulty) Durable() uint64 {
	if d, ok := f.inner.(DurableLog); ok && f.LyingDisk() == 0 {
		return d.Durable()
	}
	last, _ := f.LastIndex()
	return last
}

// WaitDurable is the wrapped store's WaitDurable, except that the lying disk
// returns at once for every entry it acknowledged (see Durable).
func (f *Faulty) WaitDurable(index uint64) error {
	_, err := f.WaitDurableOr(index, nil)
	return err
}

// WaitDurableOr is the wrapped store's WaitDurableOr, except that the lying
// disk returns at once for every entry it acknowledged (see Durable).
func (f *Faulty) WaitDurableOr(index uint64, cancel <-chan struct{}) (bool, error) {
	if f.LyingDisk() > 0 {
		if last, err := f.LastIndex(); err == nil && index <= last {
			return true, nil
		}
	}
	if d, ok := f.inner.(DurableLog); ok {
		return d.WaitDurableOr(index, cancel)
	}
	return true, nil
}

// LyingDisk reports the lag of the planted bug (0: off).
func (f *Faulty) LyingDisk() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lag
}

func (f *Faulty) flusher(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			f.mu.Lock()
			f.flushLocked(now.Add(-f.lag))
			f.mu.Unlock()
		}
	}
}

// flushLocked writes the pending entries stored before cutoff (all of them for
// a zero cutoff) to the wrapped store.
func (f *Faulty) flushLocked(cutoff time.Time) error {
	n := 0
	for n < len(f.pending) && (cutoff.IsZero() || f.pending[n].at.Before(cutoff)) {
		n++
	}
	if n == 0 {
		return nil
	}
	logs := make([]*raft.Log, n)
	for i := range logs {
		logs[i] = f.pending[i].log
	}
	if err := f.inner.StoreLogs(logs); err != nil {
		return err
	}
	f.pending = slices.Delete(f.pending, 0, n)
	return nil
}

// Before applies the write faults to one write: the delay, then the
// failure (ErrInjected: the write must then do nothing).
func (f *WriteFaults) Before() error {
	f.writes.Add(1)
	if d := f.delay.Load(); d > 0 {
		time.Sleep(time.Duration(d)) // the injected slowness itself
	}
	if f.fail.Load() {
		f.failed.Add(1)
		return ErrInjected
	}
	return nil
}

// FirstIndex implements raft.LogStore.
func (f *Faulty) FirstIndex() (uint64, error) {
	i, err := f.inner.FirstIndex()
	if err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if i == 0 && len(f.pending) > 0 {
		i = f.pending[0].log.Index
	}
	return i, nil
}

// LastIndex implements raft.LogStore.
func (f *Faulty) LastIndex() (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.pending); n > 0 {
		return f.pending[n-1].log.Index, nil
	}
	return f.inner.LastIndex()
}

// GetLog implements raft.LogStore.
func (f *Faulty) GetLog(index uint64, log *raft.Log) error {
	f.mu.Lock()
	for _, p := range f.pending {
		if p.log.Index == index {
			*log = *p.log
			log.Data = slices.Clone(p.log.Data)
			log.Extensions = slices.Clone(p.log.Extensions)
			f.mu.Unlock()
			return nil
		}
	}
	f.mu.Unlock()
	return f.inner.GetLog(index, log)
}

// StoreLog implements raft.LogStore.
func (f *Faulty) StoreLog(log *raft.Log) error { return f.StoreLogs([]*raft.Log{log}) }

// StoreLogs implements raft.LogStore.
func (f *Faulty) StoreLogs(logs []*raft.Log) error {
	if err := f.Before(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lag == 0 {
		if err := f.flushLocked(time.Time{}); err != nil {
			return err
		}
		return f.inner.StoreLogs(logs)
	}
	if len(logs) == 0 {
		return nil
	}
	// Entries at or above the first new index are replaced.
	first := logs[0].Index
	f.pending = slices.DeleteFunc(f.pending, func(p pendingLog) bool { return p.log.Index >= first })
	now := time.Now()
	for _, l := range logs {
		c := *l
		c.Data = slices.Clone(l.Data)
		c.Extensions = slices.Clone(l.Extensions)
		f.pending = append(f.pending, pendingLog{log: &c, at: now})
	}
	return nil
}

// DeleteRange implements raft.LogStore.
func (f *Faulty) DeleteRange(lo, hi uint64) error {
	if err := f.Before(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending = slices.DeleteFunc(f.pending, func(p pendingLog) bool { return p.log.Index >= lo && p.log.Index <= hi })
	return f.inner.DeleteRange(lo, hi)
}
