package group

import (
	"time"

	"github.com/hashicorp/raft"
)

// consensus is what a group asks of its Raft engine, all in one place:
// hashicorp/raft's *raft.Raft today, whose methods these are, each with its
// contract. The node-wide engine (package multiraft) is to satisfy it next
// (issue 50), which will turn the hashicorp-specific parts (futures,
// observers, reloadable config) into the group's own terms one by one.
type consensus interface {
	// The log: proposing, and where it stands.
	Apply(cmd []byte, timeout time.Duration) raft.ApplyFuture
	Barrier(timeout time.Duration) raft.Future
	Snapshot() raft.SnapshotFuture
	AppliedIndex() uint64
	CommitIndex() uint64
	LastIndex() uint64

	// Leadership.
	State() raft.RaftState
	LeaderWithID() (raft.ServerAddress, raft.ServerID)
	CurrentTerm() uint64
	LastContact() time.Time
	VerifyLeader() raft.Future
	LeaderCh() <-chan bool
	RegisterObserver(or *raft.Observer)
	DeregisterObserver(or *raft.Observer)
	LeadershipTransfer() raft.Future
	LeadershipTransferToServer(id raft.ServerID, address raft.ServerAddress) raft.Future

	// Members.
	BootstrapCluster(configuration raft.Configuration) raft.Future
	GetConfiguration() raft.ConfigurationFuture
	AddVoter(id raft.ServerID, address raft.ServerAddress, prevIndex uint64, timeout time.Duration) raft.IndexFuture
	AddNonvoter(id raft.ServerID, address raft.ServerAddress, prevIndex uint64, timeout time.Duration) raft.IndexFuture
	DemoteVoter(id raft.ServerID, prevIndex uint64, timeout time.Duration) raft.IndexFuture
	RemoveServer(id raft.ServerID, prevIndex uint64, timeout time.Duration) raft.IndexFuture

	// Running.
	Stats() map[string]string
	ReloadableConfig() raft.ReloadableConfig
	ReloadConfig(rc raft.ReloadableConfig) error
	Shutdown() raft.Future
}

var _ consensus = (*raft.Raft)(nil)
