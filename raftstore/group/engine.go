package group

import (
	"bytes"
	"io"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/raftstore/fsm"
	"github.com/lockd/lockd/raftstore/multiraft"
)

// engineMachine runs a group's machine as a multiraft state machine: the
// same entries, replies and snapshots as under hashicorp/raft, so that a
// group can move to the node-wide engine (issue 50) with its state
// machine unchanged. Not yet used by a Store.
type engineMachine struct {
	m    *machine
	logs []raft.Log
	ptrs []*raft.Log
}

var _ multiraft.StateMachine = (*engineMachine)(nil)

// Apply implements multiraft.StateMachine through the machine's ApplyBatch.
func (e *engineMachine) Apply(cmds []multiraft.Command) []any {
	if cap(e.logs) < len(cmds) {
		e.logs = make([]raft.Log, len(cmds))
		e.ptrs = make([]*raft.Log, len(cmds))
	}
	logs, ptrs := e.logs[:len(cmds)], e.ptrs[:len(cmds)]
	for i, c := range cmds {
		logs[i] = raft.Log{Index: c.Index, Type: raft.LogCommand, Data: c.Data}
		ptrs[i] = &logs[i]
	}
	out := e.m.ApplyBatch(ptrs)
	clear(logs) // the entries' data is the engine's
	return out
}

// Snapshot implements multiraft.StateMachine: the keyspace's snapshot (a
// view that later applies leave alone), written out as it persists under
// hashicorp/raft. The log's byte bound (logbytes.go) is told, as by
// machine.Snapshot: its count restarts here, and the trailing entries it
// sets apply to this snapshot's compaction.
func (e *engineMachine) Snapshot() (func() ([]byte, error), error) {
	if e.m.bytes != nil {
		e.m.bytes.captured() // on the driver, between applies
	}
	e.m.mu.RLock()
	snap := e.m.ks.Snapshot()
	e.m.mu.RUnlock()
	return func() ([]byte, error) {
		var b bytes.Buffer
		if _, err := snap.WriteTo(&b); err != nil {
			return nil, err
		}
		if e.m.bytes != nil {
			e.m.bytes.persisted(int64(b.Len()))
		}
		return b.Bytes(), nil
	}, nil
}

// AppliedIndex implements multiraft.AppliedIndexer: a read that waits for
// the index of an entry the machine never sees (a barrier, a membership
// change) is not held until the next command.
func (e *engineMachine) AppliedIndex(index uint64) { e.m.setApplied(index) }

// Restore implements multiraft.StateMachine; nil restores the empty state.
func (e *engineMachine) Restore(data []byte) error {
	if data == nil {
		var b bytes.Buffer
		if _, err := fsm.New().Snapshot().WriteTo(&b); err != nil {
			return err
		}
		data = b.Bytes()
	}
	return e.m.Restore(io.NopCloser(bytes.NewReader(data)))
}
