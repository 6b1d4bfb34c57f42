package group

import (
	"context"

	"github.com/lockd/lockd/command"
)

// Replication is what the group records of the Redis master it follows
// (fsm.Keyspace.ReplicaOf and ReplicationPosition): the master's address
// ("" = none) and, in group 0, the position a link resumes from.
func (s *Store) Replication() (master, replID string, offset, db int64) {
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	replID, offset, db = s.m.ks.ReplicationPosition()
	return s.m.ks.ReplicaOf(), replID, offset, db
}

// ReplicaOfSince is the logical index of the group's last REPLICAOF entry
// (fsm.Keyspace.ReplicaOfSince).
func (s *Store) ReplicaOfSince() uint64 {
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	return s.m.ks.ReplicaOfSince()
}

// EnsureFeature turns feature f on in the group's settings if every member
// understands it and it is not on yet, waiting a moment for members to greet
// this leader (ensureFeature). For a Node's internal entries that need f.
func (s *Store) EnsureFeature(ctx context.Context, f uint64) { s.ensureFeature(ctx, f) }

// readOnly reports whether op, a write, is refused because the group follows
// a Redis master (REPLICAOF): as on a Redis replica, clients' writes are, but
// SCRIPT LOAD|FLUSH, EVAL_RO and the entries a node builds itself (Admin)
// are not.
// The writes the master sends come as KindReplicated entries, which are
// internal (an Admin "propose").
func (s *Store) readOnly(op command.Op) bool {
	switch op := op.(type) {
	case command.Admin, command.ScriptLoad, command.ScriptFlush:
		return false
	case command.Eval:
		if op.RO {
			return false // EVAL_RO loads its script, and changes no key
		}
	}
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	return s.m.ks.ReplicaOf() != ""
}
