package raftstore

import "github.com/lockd/lockd/raftstore/group"

// The names of one group (raftstore/group) that the rest of lockd uses
// through raftstore: a Node is configured, and counts its locks, as each of
// its groups does.
type (
	// Config configures a Node and each of its groups (group.Config).
	Config = group.Config
	// Peer is one voter of a cluster (group.Peer).
	Peer = group.Peer
	// LockCounters is what the lock service holds and has done
	// (group.LockCounters), for metrics.
	LockCounters = group.LockCounters
)

const (
	// MaxGroups bounds the Raft groups of a cluster (group.MaxGroups).
	MaxGroups = group.MaxGroups
	// DefaultLogBytes is a node's Config.LogBytes when it sets none
	// (group.DefaultLogBytes).
	DefaultLogBytes = group.DefaultLogBytes
	// DefaultMaxWriteBytes is Config.MaxWriteBytes when it is 0
	// (group.DefaultMaxWriteBytes).
	DefaultMaxWriteBytes = group.DefaultMaxWriteBytes
	// DefaultMaxSessionsPerUser is Config.MaxSessionsPerUser when it is 0
	// (group.DefaultMaxSessionsPerUser).
	DefaultMaxSessionsPerUser = group.DefaultMaxSessionsPerUser
)

// ErrTooLarge is group.ErrTooLarge: a write whose log entry would exceed
// Config.MaxWriteBytes, refused before it was proposed.
var ErrTooLarge = group.ErrTooLarge
