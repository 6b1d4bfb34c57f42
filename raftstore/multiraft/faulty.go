package multiraft

import (
	"errors"
	"sync/atomic"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
)

// FaultyStorage is a Storage whose writes can be made slow or failing, for
// fault tests (lockd's -fault-control): each Save, SaveSnapshot and Compact
// waits the delay, then fails while failures are switched on. A failed write
// halts the Node, as a real one does.
type FaultyStorage struct {
	Storage
	delay          atomic.Int64 // nanoseconds
	fail           atomic.Bool
	writes, failed atomic.Uint64
}

// ErrInjected is the error of a write FaultyStorage was told to fail.
var ErrInjected = errors.New("multiraft: injected write failure")

// NewFaultyStorage returns inner with no fault switched on.
func NewFaultyStorage(inner Storage) *FaultyStorage { return &FaultyStorage{Storage: inner} }

// SetWriteDelay makes every write take at least d longer (0: none).
func (f *FaultyStorage) SetWriteDelay(d time.Duration) { f.delay.Store(int64(max(d, 0))) }

// SetFailWrites makes every write fail (true) or not.
func (f *FaultyStorage) SetFailWrites(on bool) { f.fail.Store(on) }

// WriteDelay and FailWrites report the faults switched on.
func (f *FaultyStorage) WriteDelay() time.Duration { return time.Duration(f.delay.Load()) }
func (f *FaultyStorage) FailWrites() bool          { return f.fail.Load() }

// Counts reports the writes made and those failed.
func (f *FaultyStorage) Counts() (writes, failed uint64) { return f.writes.Load(), f.failed.Load() }

func (f *FaultyStorage) before() error {
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

// Save implements Storage.
func (f *FaultyStorage) Save(ups []Update) error {
	if err := f.before(); err != nil {
		return err
	}
	return f.Storage.Save(ups)
}

// SaveSnapshot implements Storage.
func (f *FaultyStorage) SaveSnapshot(g Group, snap pb.Snapshot, replaceLog bool) error {
	if err := f.before(); err != nil {
		return err
	}
	return f.Storage.SaveSnapshot(g, snap, replaceLog)
}

// Compact implements Storage.
func (f *FaultyStorage) Compact(g Group, to uint64) error {
	if err := f.before(); err != nil {
		return err
	}
	return f.Storage.Compact(g, to)
}
