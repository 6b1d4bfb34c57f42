//go:build faults

package multiraft

import (
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/lockd/lockd/raftstore/logstore"
)

// FaultyStorage is a Storage whose writes can be made slow or failing, for
// fault tests (lockd's -fault-control): each Save, SaveSnapshot and Compact
// applies its WriteFaults first (logstore.ErrInjected when failing). A
// failed write halts the Node, as a real one does. Built only with the
// faults tag.
type FaultyStorage struct {
	Storage
	logstore.WriteFaults
}

// NewFaultyStorage returns inner with no fault switched on.
func NewFaultyStorage(inner Storage) *FaultyStorage { return &FaultyStorage{Storage: inner} }

// Save implements Storage.
func (f *FaultyStorage) Save(ups []Update) error {
	if err := f.Before(); err != nil {
		return err
	}
	return f.Storage.Save(ups)
}

// SaveSnapshot implements Storage.
func (f *FaultyStorage) SaveSnapshot(g Group, snap pb.Snapshot, replaceLog bool) error {
	if err := f.Before(); err != nil {
		return err
	}
	return f.Storage.SaveSnapshot(g, snap, replaceLog)
}

// Compact implements Storage.
func (f *FaultyStorage) Compact(g Group, to uint64) error {
	if err := f.Before(); err != nil {
		return err
	}
	return f.Storage.Compact(g, to)
}
