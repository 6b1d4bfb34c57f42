package multiraft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/hashicorp/raft"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/lockd/lockd/raftstore/logstore"
)

// Update is what one group makes durable in a turn.
type Update struct {
	Group Group
	// HardState, when not nil, replaces the group's stored one. The driver
	// passes it when the term or vote changed: the commit index is not
	// needed on disk (a restarted replica learns it from the leader).
	HardState *pb.HardState
	// Entries (contiguous, ascending) replace every stored entry from
	// Entries[0].Index on.
	Entries []pb.Entry
}

// Storage keeps every group's Raft log, hard state and last snapshot on disk.
type Storage interface {
	// Load returns what group g stored (all empty for a new group).
	Load(g Group) (Stored, error)
	// Save makes every update durable before it returns (a group's
	// entries before its hard state). Updates of different groups may share
	// one fsync: that is what the driver gives them to Save together for.
	Save(ups []Update) error
	// SaveSnapshot makes snap group g's stored snapshot, durably; with
	// replaceLog (a snapshot from the leader) the log it stored goes too.
	SaveSnapshot(g Group, snap pb.Snapshot, replaceLog bool) error
	// Compact drops group g's entries up to index to (inclusive), which a
	// saved snapshot covers.
	Compact(g Group, to uint64) error
}

// Stored is a group's state on disk.
type Stored struct {
	HardState pb.HardState
	Snapshot  pb.Snapshot
	Entries   []pb.Entry // contiguous, ascending; some may precede Snapshot's index
}

// LogStorage is Storage over a node's shared logstore: each group a Store
// of it, written through its committer, so that one turn's groups share
// one journal record and fdatasync.
type LogStorage struct {
	sh *logstore.Shared

	mu     sync.Mutex
	stores map[Group]*logstore.Store
}

// NewLogStorage returns a Storage over sh; the caller closes sh after the
// Node stopped.
func NewLogStorage(sh *logstore.Shared) *LogStorage {
	return &LogStorage{sh: sh, stores: map[Group]*logstore.Store{}}
}

// hardStateKey is where a group's hard state lies in its stable store
// (hardState).
var hardStateKey = []byte("multiraft-hs")

// Log returns group g's part of the shared log, for what its owner reads
// of it (its last index, its write count, the largest entry it accepts);
// only the Node writes to it, and it is closed with the shared log.
func (s *LogStorage) Log(g Group) (*logstore.Store, error) { return s.store(g) }

func (s *LogStorage) store(g Group) (*logstore.Store, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.stores[g]; st != nil {
		return st, nil
	}
	if g > 255 {
		return nil, fmt.Errorf("multiraft: group %d: a logstore holds groups 0 to 255", g)
	}
	st, err := s.sh.Group(int(g), nil)
	if err != nil {
		return nil, err
	}
	s.stores[g] = st
	return st, nil
}

// snapshotKey is where a group's last snapshot lies in its stable store
// (its protobuf encoding); firstSnapshotKey its first (a new group's).
var (
	snapshotKey      = []byte("multiraft-snap")
	firstSnapshotKey = []byte("multiraft-first")
)

// Load implements Storage.
func (s *LogStorage) Load(g Group) (Stored, error) {
	var out Stored
	st, err := s.store(g)
	if err != nil {
		return out, err
	}
	switch v, err := st.Get(hardStateKey); {
	case errors.Is(err, logstore.ErrKeyNotFound):
	case err != nil:
		return out, err
	case len(v) != len(hardState{}):
		return out, fmt.Errorf("multiraft: group %d: hard state of %d bytes", g, len(v))
	default:
		out.HardState = hardState(v).decode()
	}
	switch v, err := st.Get(snapshotKey); {
	case errors.Is(err, logstore.ErrKeyNotFound):
	case err != nil:
		return out, err
	default:
		if err := out.Snapshot.Unmarshal(v); err != nil {
			return out, fmt.Errorf("multiraft: group %d: stored snapshot: %w", g, err)
		}
	}
	var last uint64
	if out.Entries, last, err = readEntries(g, st); err != nil {
		return out, err
	}
	out.HardState.Commit = min(out.HardState.Commit, max(last, out.Snapshot.Metadata.Index))
	return out, nil
}

// readEntries reads every entry of group g's log st, and its last index.
func readEntries(g Group, st *logstore.Store) (ents []pb.Entry, last uint64, err error) {
	first, err := st.FirstIndex()
	if err != nil {
		return nil, 0, err
	}
	if last, err = st.LastIndex(); err != nil {
		return nil, 0, err
	}
	for i := first; first != 0 && i <= last; i++ {
		var l raft.Log
		if err := st.GetLog(i, &l); err != nil {
			return nil, 0, fmt.Errorf("multiraft: group %d: entry %d: %w", g, i, err)
		}
		ents = append(ents, fromLog(&l))
	}
	return ents, last, nil
}

// SaveSnapshot implements Storage: the snapshot through the journal, then,
// with replaceLog, the log's deletion (a crash between the two leaves old
// entries that the snapshot covers or the leader replaces).
func (s *LogStorage) SaveSnapshot(g Group, snap pb.Snapshot, replaceLog bool) error {
	st, err := s.store(g)
	if err != nil {
		return err
	}
	data, err := snap.Marshal()
	if err != nil {
		return err
	}
	if snap.Metadata.Index == 1 {
		// A new group's first snapshot (AddGroup), kept for what reads the
		// whole log later (ReadGroupLog): later snapshots replace the other.
		if err := st.Set(firstSnapshotKey, data); err != nil {
			return err
		}
	}
	if err := st.Set(snapshotKey, data); err != nil || !replaceLog {
		return err
	}
	return st.DeleteRange(1, math.MaxUint64) // it skips the indexes it does not hold
}

// Compact implements Storage.
func (s *LogStorage) Compact(g Group, to uint64) error {
	st, err := s.store(g)
	if err != nil {
		return err
	}
	return st.DeleteRange(1, to)
}

// Save implements Storage: every group's entries in one journal record
// (StoreTogether), on the caller's goroutine; the rare rest (a follower's
// conflicting entries removed, a new term or vote) through the committer,
// group by group, the removals before and the hard states after.
func (s *LogStorage) Save(ups []Update) error {
	parts := make([]logstore.LogWrite, 0, len(ups))
	for i := range ups {
		up := &ups[i]
		if len(up.Entries) == 0 {
			continue
		}
		st, err := s.store(up.Group)
		if err != nil {
			return err
		}
		from := up.Entries[0].Index
		// A follower's log replaced from a conflict on: the old entries go
		// first, so that a crash between the two writes leaves a shorter log,
		// never one with a stale tail after new entries.
		if last, err := st.LastIndex(); err != nil {
			return err
		} else if last >= from {
			if err := st.DeleteRange(from, last); err != nil {
				return err
			}
		}
		logs := make([]raft.Log, len(up.Entries))
		ptrs := make([]*raft.Log, len(up.Entries))
		for i := range up.Entries {
			logs[i] = toLog(&up.Entries[i])
			ptrs[i] = &logs[i]
		}
		parts = append(parts, logstore.LogWrite{Store: st, Logs: ptrs})
	}
	if len(parts) > 0 {
		if err := s.sh.StoreTogether(parts); err != nil {
			return err
		}
	}
	for i := range ups {
		hs := ups[i].HardState
		if hs == nil {
			continue
		}
		st, err := s.store(ups[i].Group)
		if err != nil {
			return err
		}
		v := encodeHardState(hs)
		if err := st.Set(hardStateKey, v[:]); err != nil {
			return err
		}
	}
	return nil
}

// entryTypes are the Extensions that record an entry's type: nil for a
// normal entry, so that the common case costs nothing.
var entryTypes = [...][]byte{nil, {byte(pb.EntryConfChange)}, {byte(pb.EntryConfChangeV2)}}

// toLog is e as the logstore keeps it; fromLog reads it back.
func toLog(e *pb.Entry) raft.Log {
	l := raft.Log{Index: e.Index, Term: e.Term, Type: raft.LogCommand, Data: e.Data}
	if int(e.Type) < len(entryTypes) {
		l.Extensions = entryTypes[e.Type]
	}
	return l
}

func fromLog(l *raft.Log) pb.Entry {
	e := pb.Entry{Index: l.Index, Term: l.Term, Data: l.Data}
	if len(l.Extensions) == 1 {
		e.Type = pb.EntryType(l.Extensions[0])
	}
	return e
}

// hardState is a hard state as stored: term, vote and commit, 8 bytes each.
type hardState [24]byte

func encodeHardState(hs *pb.HardState) (v hardState) {
	binary.LittleEndian.PutUint64(v[:], hs.Term)
	binary.LittleEndian.PutUint64(v[8:], hs.Vote)
	binary.LittleEndian.PutUint64(v[16:], hs.Commit)
	return v
}

func (v hardState) decode() pb.HardState {
	return pb.HardState{Term: binary.LittleEndian.Uint64(v[:]), Vote: binary.LittleEndian.Uint64(v[8:]),
		Commit: binary.LittleEndian.Uint64(v[16:])}
}
