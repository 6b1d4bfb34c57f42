package group

import (
	"context"

	"github.com/lockd/lockd/command"
)

// Replication is what the group records of the Redis master it follows
// (fsm.Keyspace.ReplicaOf and ReplicationPosition): the master's address
// ("" = none) and, in group 0, the position a link resumes from and the
// link it belongs to (the REPLICAOF entry's index, the full sync's epoch).
func (s *Store) Replication() (master string, pos Position) {
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	pos.ReplID, pos.Offset, pos.DB, pos.Link.Epoch = s.m.ks.ReplicationPosition()
	pos.Link.Since, pos.Halted = s.m.ks.ReplicaOfSince(), s.m.ks.ReplicationHalted()
	pos.Skipped = s.m.ks.ReplicationSkipped()
	return s.m.ks.ReplicaOf(), pos
}

// Position is where a link to a Redis master resumes (Replication), and
// Halted what the link stopped at, if it did (-replica-unsupported stop).
type Position struct {
	ReplID     string
	Offset, DB int64
	Link       command.Link
	Halted     string
	Skipped    map[string]int64 // what was not imported, by reason
}

// EnsureFeature turns feature f on in the group's settings if every member
// understands it and it is not on yet, waiting a moment for members to greet
// this leader (ensureFeature). For a Node's internal entries that need f.
func (s *Store) EnsureFeature(ctx context.Context, f uint64) { s.ensureFeature(ctx, f) }

// readOnly reports whether r is refused because the group follows a Redis
// master (REPLICAOF), as a Redis replica refuses it: a command with Redis's
// "write" flag (command.FlagDataWrite), or a transaction that queues one.
// Scripts run (a write they call is refused in the apply), and so do PUBLISH,
// SCRIPT LOAD and the entries a node builds itself. The apply decides
// (fsm.Keyspace.refuseWrite); this spares such a write its log entry.
func (s *Store) readOnly(r command.Request) bool {
	if !s.m.following.Load() {
		return false
	}
	if tx, ok := r.Op.(command.Tx); ok {
		return tx.WritesData()
	}
	return r.Spec.Flags.Has(command.FlagDataWrite)
}

// FrozenSlots reports whether the group has a slot frozen: a slot move in
// progress (fsm.Keyspace.Frozen).
func (s *Store) FrozenSlots() bool {
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	return len(s.m.ks.Frozen()) > 0
}
