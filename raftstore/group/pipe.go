package group

import (
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/raftstore/appendpipe"
	"github.com/lockd/lockd/raftstore/mux"
	"github.com/lockd/lockd/raftstore/raftio"
)

// pipeHeader is group g's appendpipe header on the peer port: 0x00+g, free
// beside the Raft ('R', 0x81+) and forwarding ('F', 0xC1+) headers.
func pipeHeader(g int) byte { return byte(g) }

// errNoAppendPipe is the dial error of a group with Config.noAppendPipe.
var errNoAppendPipe = errors.New("raftstore: appendpipe disabled (test)")

// newPipeTransport wraps the group's NetworkTransport in an
// appendpipe.Transport serving the group's pipe header on the peer port. Its
// dials go through the same fault-test wrappers as the Raft layer's (a
// partition cuts the pipe too). With cfg.noAppendPipe (tests of a rolling
// upgrade: a node from before appendpipe) the header is not served and the
// node's own pipelines fall back, as its peers' do when they dial it; with
// cfg.pipeVersion (tests: 1, a node from before batch entries) it greets
// with that version instead of pipeVersion. acks
// hears what the node's pipelines learn of their followers' logs.
func newPipeTransport(cfg Config, peer *mux.Mux, inner *raft.NetworkTransport, acks appendpipe.AckObserver, lg *slog.Logger) *appendpipe.Transport {
	layer := peer.Handle(pipeHeader(cfg.Group))
	var stream raft.StreamLayer = layer
	if cfg.faults != nil {
		stream = faultLayer{layer, cfg.faults}
	}
	stream, _ = raftio.WithDialVia(cfg.DialVia, stream, nil)
	dial := stream.Dial
	if cfg.noAppendPipe {
		layer.Close()
		dial = func(raft.ServerAddress, time.Duration) (net.Conn, error) { return nil, errNoAppendPipe }
	}
	version := pipeVersion
	if cfg.pipeVersion != 0 {
		version = cfg.pipeVersion
	}
	return appendpipe.New(appendpipe.Config{Inner: inner, Listener: layer, Dial: dial,
		Timeout: 10 * time.Second, Logger: lg.With("group", cfg.Group), Acks: acks, Version: version})
}

// pipeVersion is the version this lockd's appendpipe server greets leaders
// with (appendpipe.Config.Version). 2: the node applies batch entries
// (command.KindBatch). 3: it understands session owners as well
// (command.KindSettings and what FeatureOwners turns on). A node from before
// batch entries greets with 1, or (from before appendpipe) not at all. 4: it
// keeps WATCH tombstones and holds sorted sets and lists (pipeTypesFeatures).
// 5: pipeMigrationFeatures.
const pipeVersion = pipeVersionMigration

// The pipe versions that announce what a follower applies.
const (
	pipeVersionBatch     byte = 2 // batch entries
	pipeVersionOwners    byte = 3 // session owners (owners.go)
	pipeVersionTypes     byte = 4 // pipeTypesFeatures
	pipeVersionMigration byte = 5 // pipeMigrationFeatures
)

// pipeMigrationFeatures are the features a follower of pipeVersionMigration
// understands: the same-value SET … NX grant and what migration from Redis
// adds.
const pipeMigrationFeatures = command.FeatureSameValueNX | command.FeatureMigration

// pipeTypesFeatures are the features a follower of pipeVersionTypes
// understands: WATCH tombstones and the sorted set and list kinds.
const pipeTypesFeatures = command.FeatureWatchDeletes | command.FeatureCollections

// batchEntries reports whether this leader may put a run of writes into one
// batch entry: Config.NoBatchEntries is unset and every other member of the
// group's latest configuration (voter or not) greeted this node's pipelines
// with a version that applies them (appendpipe.Transport.PeerVersion). A
// member that has not (a node from before batch entries in a rolling
// upgrade, or one no pipeline of this node has reached yet: just added, or
// down since this node started) gets entries of one write each, which every
// version applies; the first pipeline that connects to it tells. A lone
// voter has no one to ask. Called by doLocal; does not block.
func (s *Store) batchEntries() bool {
	if s.cfg.NoBatchEntries {
		return false
	}
	return s.membersAtLeast(pipeVersionBatch)
}

// membersAtLeast reports whether every other member of the group's latest
// configuration (voter or not) greeted this node's pipelines with version v
// or later (see batchEntries). Does not block.
func (s *Store) membersAtLeast(v byte) bool {
	if s.trans == nil {
		return true // on the engine: every member is a lockd that has it
	}
	for _, srv := range latestServers(s.raft) {
		if srv.ID != raft.ServerID(s.cfg.NodeID) && s.trans.PeerVersion(srv.Address) < v {
			return false
		}
	}
	return true
}
