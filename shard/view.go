package shard

// View is one node's picture of the cluster: the shard map it routes by and,
// for each group, its members with the leader first. The RESP door builds
// CLUSTER SLOTS, SHARDS, NODES and INFO and its -MOVED redirects from it. A
// View is a snapshot: it may be stale by the time it is read (a leader may
// have changed), which only costs a client a forwarding hop or a redirect.
type View struct {
	Map    Map
	Self   string        // this node's id
	Groups []GroupView   // index = group id, len = Map.Groups
	Nodes  []NodeAddress // every node known in any group, by id
}

// GroupView is one Raft group as a node sees it.
type GroupView struct {
	// Members are the group's voters, its serving leader first (when it has
	// one).
	Members []Member
}

// Leader returns the group's serving leader, if it has one.
func (g GroupView) Leader() (Member, bool) {
	if len(g.Members) > 0 && g.Members[0].Leader {
		return g.Members[0], true
	}
	return Member{}, false
}

// Member is one voter of a group.
type Member struct {
	ID       string // node id
	RESPAddr string // host:port for clients ("" when unknown)
	PeerAddr string // host:port of its peer port
	Leader   bool   // it leads the group now
	Applied  uint64 // its applied index, as far as this node knows (0: unknown)
}

// NodeAddress is a node and where clients reach it.
type NodeAddress struct {
	ID       string
	RESPAddr string
	PeerAddr string
}

// LeaderOf returns the leader of the group that owns slot, if it has one.
func (v *View) LeaderOf(slot uint16) (Member, bool) {
	g := v.Map.Group(slot)
	if g >= len(v.Groups) {
		return Member{}, false
	}
	return v.Groups[g].Leader()
}
