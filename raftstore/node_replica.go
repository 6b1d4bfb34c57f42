package raftstore

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/raftstore/group"
	"github.com/lockd/lockd/rdb"
	"github.com/lockd/lockd/replica"
	"github.com/lockd/lockd/resp"
)

// Following a Redis master (REPLICAOF; issue 48). REPLICAOF host port writes
// the master's address into every group (a KindReplication entry): from then
// on every group's leader refuses clients' writes (READONLY), and the node
// that leads group 0 runs the replication link (package replica). Its sink
// commits what the master sends through Raft, in the keys' own groups, as
// KindReplicated entries that carry each command's replication offset; each
// group applies only the commands past the offset it recorded, so a run the
// link sends again after a reconnect, a leader change or a restart is
// applied once. Group 0 records the position the link resumes from (every
// group has applied the stream up to it), so a new leader of group 0
// continues with a partial PSYNC. REPLICAOF NO ONE clears the address:
// the link stops and writes are accepted; what was imported stays.
//
// What lockd does not hold is counted, never dropped silently: values of
// types lockd has no kind for (sets, streams, modules), keys of databases
// other than 0, commands lockd does not have, and commands whose keys span
// groups that lockd cannot split (RENAME across groups, …).

// replicaPollEvery is how often a node checks whether it should run the
// link (it leads group 0 and a master is set) or stop it.
const replicaPollEvery = 200 * time.Millisecond

// positionEvery bounds how often the sink records the resume position in
// group 0 while commands stream: every write would double the entries; a
// position some batches old only makes a resumed link send those batches
// again, which the groups skip.
const positionEvery = 250 * time.Millisecond

// loadChunkBytes bounds one command built from an RDB value (RPUSH, HSET, ZADD
// of a large value are split) and loadEntryBytes one group's entry of them.
const (
	loadChunkBytes = 256 << 10
	loadEntryBytes = 1 << 20
)

// nodeReplica is a node's side of following a master: the link it runs, if
// any, and what it counted.
type nodeReplica struct {
	n *Node

	mu      sync.Mutex
	master  string             // the master the running link follows
	link    *replica.Link      // nil when none runs here
	stop    context.CancelFunc // stops link
	done    chan struct{}      // closed when link's Run returned
	user    string             // masteruser
	pass    string             // masterauth
	skipped map[string]int64   // what was not imported and is not yet in group 0, by reason
	loaded  int64              // keys loaded by full syncs
	// stopOnSkip: the link stops at the first thing it cannot import
	// (SetStopOnUnsupported) instead of counting it; where it stopped is
	// recorded in group 0 (a "halt"), so no node runs the link again until
	// the next REPLICAOF.
	stopOnSkip bool
	since      uint64 // the REPLICAOF the running link follows
}

// errHalted ends a link session that met what it cannot import while the
// node stops at the first such thing.
var errHalted = errors.New("stopped at the first value or command lockd cannot import")

// ReplicationStatus is what INFO replication shows on a node.
type ReplicationStatus struct {
	// Master is the address the cluster follows ("" = none: a master).
	Master string
	// Link is the link's status when this node runs it (it leads group 0).
	Link *replica.Status
	// Skipped counts what was not imported under this REPLICAOF, by reason
	// ("type stream", "db 1", "command sadd", "cross-group rename"): group 0's
	// record (every node shows it), plus what this node's link counted since
	// its last record.
	Skipped map[string]int64
	// Loaded counts keys loaded by full syncs on this node.
	Loaded int64
	// Halted says what the link stopped at (SetStopOnUnsupported), "" while
	// it runs or counts.
	Halted string
}

// SetStopOnUnsupported makes the link stop at the first value or command it
// cannot import (a set, a stream, a key of another database, a command lockd
// lacks or cannot split across groups) instead of counting it and going on
// (the default): the link stays down, INFO replication's lockd_link_error
// names what it met, and REPLICAOF NO ONE (then REPLICAOF again, once the
// source is fixed) starts over. Set it on every node (-replica-unsupported,
// CONFIG SET lockd-replica-unsupported stop|count).
func (n *Node) SetStopOnUnsupported(stop bool) {
	n.repl.mu.Lock()
	n.repl.stopOnSkip = stop
	n.repl.mu.Unlock()
}

// StopOnUnsupported reports SetStopOnUnsupported's setting.
func (n *Node) StopOnUnsupported() bool {
	n.repl.mu.Lock()
	defer n.repl.mu.Unlock()
	return n.repl.stopOnSkip
}

// SetMasterAuth sets the credentials the link authenticates with (CONFIG
// SET masteruser|masterauth, or the flags): the next session uses them.
func (n *Node) SetMasterAuth(user, pass string) {
	n.repl.mu.Lock()
	n.repl.user, n.repl.pass = user, pass
	n.repl.mu.Unlock()
}

// MasterAuth returns the credentials SetMasterAuth set.
func (n *Node) MasterAuth() (user, pass string) {
	n.repl.mu.Lock()
	defer n.repl.mu.Unlock()
	return n.repl.user, n.repl.pass
}

// ReplicaOf makes the cluster follow the Redis master at addr (host:port), or
// stop following with addr "" (REPLICAOF NO ONE). It writes the address to
// every group (group 0 last: the link starts from it) and reports whether the
// cluster already followed addr. Needs command.FeatureMigration. An error's
// text is a whole Redis error reply ("ERR …", "TRYAGAIN …").
func (n *Node) ReplicaOf(ctx context.Context, addr string) (already bool, err error) {
	if addr != "" {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return false, fmt.Errorf("ERR %w", err)
		}
		addr = net.JoinHostPort(strings.ToLower(host), port) // hosts compare as Redis compares them
		if frozen := n.frozenSlots(); frozen {
			return false, errors.New("ERR a slot move is in progress: REPLICAOF once it ends (the offsets each group records hold only while the shard map stays)")
		}
	}
	cur, _ := n.gs()[0].Replication()
	if addr == "" && cur == "" && n.followsNone() {
		return false, nil // nothing to stop: as Redis, OK whatever the groups' features
	}
	already = cur == addr && addr != ""
	name := command.Link{Since: newEpoch()} // this REPLICAOF, in every group
	for g := len(n.gs()) - 1; g >= 0; g-- {
		n.ensureFeature(ctx, g, command.FeatureMigration)
		v := n.proposeInternal(ctx, g, command.KindReplication, command.ReplicationArgs(command.Replication{Op: "master", Master: addr, Link: name}))
		if v.IsError() {
			return false, errors.New(string(v.Str))
		}
	}
	return already, nil
}

// followsNone reports whether no group this node hosts follows a master.
func (n *Node) followsNone() bool {
	for _, g := range n.gs() {
		if m, _ := g.Replication(); m != "" {
			return false
		}
	}
	return true
}

// frozenSlots reports whether a group this node hosts has a slot frozen (a
// slot move in progress).
func (n *Node) frozenSlots() bool {
	for _, g := range n.gs() {
		if g.FrozenSlots() {
			return true
		}
	}
	return false
}

// Replication reports what INFO replication shows.
func (n *Node) Replication() ReplicationStatus {
	master, pos := n.gs()[0].Replication()
	r := &n.repl
	r.mu.Lock()
	defer r.mu.Unlock()
	st := ReplicationStatus{Master: master, Loaded: r.loaded, Skipped: pos.Skipped, Halted: pos.Halted}
	for k, v := range r.skipped { // counted here, not recorded yet
		st.Skipped[k] += v
	}
	if r.link != nil {
		s := r.link.Status()
		st.Link = &s
	}
	return st
}

// replicaLoop runs the link on the node that leads group 0 while a master is
// set, and stops it elsewhere, until the node closes.
func (n *Node) replicaLoop() {
	defer n.wg.Done()
	t := time.NewTicker(replicaPollEvery)
	defer t.Stop()
	for {
		master, since := "", uint64(0)
		if n.gs()[0].IsLeader() {
			var pos group.Position
			master, pos = n.gs()[0].Replication()
			since = pos.Link.Since
			if pos.Halted != "" {
				master = "" // the link stopped at what it cannot import: until the next REPLICAOF
			}
		}
		n.repl.follow(master, since)
		select {
		case <-n.closed:
			n.repl.follow("", 0)
			return
		case <-t.C:
		}
	}
}

// follow makes the running link follow master ("" = run none) under the
// REPLICAOF named since (a new one restarts the link).
func (r *nodeReplica) follow(master string, since uint64) {
	r.mu.Lock()
	if r.link != nil && r.master == master && r.since == since {
		r.mu.Unlock()
		return
	}
	stop, done := r.stop, r.done
	r.link, r.stop, r.done, r.master = nil, nil, nil, ""
	r.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	if master == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	port := 0
	if _, p, err := net.SplitHostPort(r.n.cfg.ClientAddr); err == nil {
		port, _ = strconv.Atoi(p)
	}
	sink := &nodeSink{r: r, n: r.n, link: command.Link{Since: since}}
	link := replica.New(replica.Config{Addr: master, User: r.user, Password: r.pass, ListenPort: port, TLS: r.n.cfg.MasterTLS,
		Logger: r.n.log.With("replica_of", master)}, sink)
	ctx, cancel := context.WithCancel(context.Background())
	done = make(chan struct{})
	r.link, r.stop, r.done, r.master, r.since = link, cancel, done, master, since
	r.n.log.Info("following a Redis master", "master", master)
	go func() {
		defer close(done)
		link.Run(ctx)
	}()
}

// skip records that something was not imported, for reason: counted, or,
// with stopOnSkip, errHalted (the sink then records the halt: nodeSink.skip).
func (r *nodeReplica) skip(reason string, n int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopOnSkip {
		r.n.log.Error("the link to the Redis master stopped at what lockd cannot import", "reason", reason)
		return errHalted
	}
	if r.skipped == nil {
		r.skipped = map[string]int64{}
	}
	if r.skipped[reason] == 0 {
		r.n.log.Warn("not imported from the Redis master (counted in INFO replication)", "reason", reason)
	}
	r.skipped[reason] += n
	return nil
}

// nodeSink is the replica.Sink that commits through the node's groups. Its
// entries carry its link (command.Link: the REPLICAOF it follows, and the
// full sync its data comes from), so that a group refuses them once another
// link took over; and it proposes only while this node leads group 0.
type nodeSink struct {
	r      *nodeReplica
	n      *Node
	link   command.Link
	replID string    // the master's replication id the stream follows
	posAt  time.Time // when the position was last recorded
	// During a full sync, the RDB's keys as commands, per group, not yet
	// proposed, and their size.
	load     [][]command.ReplicatedCmd
	loadSize []int
}

// skip is nodeReplica.skip, and, when the link stops there, the halt
// recorded in group 0 (replicaLoop then stops the link, on whichever node
// leads group 0, until the next REPLICAOF). Where the thing is a command's
// error in an applied entry, the entries of that batch have applied.
func (s *nodeSink) skip(ctx context.Context, reason string) error {
	err := s.r.skip(reason, 1)
	if err == errHalted {
		s.internal(ctx, 0, command.KindReplication, command.ReplicationArgs(command.Replication{Op: "halt", Link: s.link,
			Reason: "stopped at " + reason + " (lockd-replica-unsupported stop)"}))
	}
	return err
}

// Position implements replica.Sink: group 0's record. The sink takes the
// record's full sync as its own (a partial resync continues it).
func (s *nodeSink) Position() replica.Position {
	_, pos := s.n.gs()[0].Replication()
	s.link.Epoch = pos.Link.Epoch
	if pos.ReplID == "" || pos.Link.Since != s.link.Since {
		return replica.Position{}
	}
	s.replID = pos.ReplID
	return replica.Position{ReplID: pos.ReplID, Offset: pos.Offset, DB: int(pos.DB)}
}

// errNotLeading ends a session of a link whose node no longer leads group 0.
var errNotLeading = errors.New("this node no longer leads group 0")

// internal proposes an internal entry to group g while this node leads group
// 0 (the link's node; another may run one already), and returns its reply.
func (s *nodeSink) internal(ctx context.Context, g int, kind command.Kind, args [][]byte) (resp.Value, error) {
	if !s.n.gs()[0].IsLeader() {
		return resp.Value{}, errNotLeading
	}
	v := s.n.proposeInternal(ctx, g, kind, args)
	if v.IsError() {
		return v, fmt.Errorf("group %d: %s", g, v.Str)
	}
	return v, nil
}

// propose proposes cmds, a run of group g's in stream order, as
// KindReplicated entries of at most maxRunBytes each (the group records
// offset after the last; each earlier entry the End of its own last
// command), and checks their replies: an error of an entry fails it (the
// link reconnects and sends the run again); a command's own error counts it
// as not imported, and so does a command too large for any entry.
func (s *nodeSink) propose(ctx context.Context, g int, offset int64, cmds []command.ReplicatedCmd) error {
	for len(cmds) > 0 {
		n, size := 0, 0
		for n < len(cmds) && (n == 0 || size+command.Size(cmds[n].Args) <= maxRunBytes) {
			size += command.Size(cmds[n].Args)
			n++
		}
		if size > maxCommandBytes {
			if err := s.skip(ctx, "too large "+strings.ToLower(string(cmds[0].Args[0]))); err != nil {
				return err
			}
			cmds = cmds[1:]
			continue
		}
		off := offset
		if n < len(cmds) {
			off = cmds[n-1].End
		}
		if err := s.proposeRun(ctx, g, off, cmds[:n]); err != nil {
			return err
		}
		cmds = cmds[n:]
	}
	return nil
}

// Entry bounds of the sink: maxRunBytes for a run of commands (as a batch
// entry of clients' writes, group.maxBatchBytes, so that a follower writes
// and applies it between heartbeats), maxCommandBytes for one command
// (-max-write-bytes' default: a larger one cost elections in the test
// cluster, raftstore/DESIGN.md).
const (
	maxRunBytes     = 256 << 10
	maxCommandBytes = group.DefaultMaxWriteBytes
)

// proposeRun proposes one KindReplicated entry of cmds.
func (s *nodeSink) proposeRun(ctx context.Context, g int, offset int64, cmds []command.ReplicatedCmd) error {
	v, err := s.internal(ctx, g, command.KindReplicated, command.ReplicatedArgs(s.link, offset, cmds))
	if err != nil {
		return err
	}
	for i, e := range v.Elems {
		if e.IsError() && i < len(cmds) {
			s.n.log.Warn("a command from the Redis master failed on lockd", "command", string(cmds[i].Args[0]), "reply", string(e.Str))
			if err := s.skip(ctx, "command "+strings.ToLower(string(cmds[i].Args[0]))); err != nil {
				return err
			}
		}
	}
	return nil
}

// record writes the position to group 0.
// The counts of what was not imported go first (group 0's record of them:
// every node's INFO shows them, and they outlive this link).
func (s *nodeSink) record(ctx context.Context, at replica.Position) error {
	s.r.mu.Lock()
	pending := s.r.skipped
	s.r.skipped = nil
	s.r.mu.Unlock()
	reasons := make([]string, 0, len(pending))
	for reason := range pending {
		reasons = append(reasons, reason)
	}
	slices.Sort(reasons)
	for i, reason := range reasons {
		if _, err := s.internal(ctx, 0, command.KindReplication, command.ReplicationArgs(command.Replication{Op: "skipped", Link: s.link,
			Reason: reason, Offset: pending[reason]})); err != nil {
			s.r.mu.Lock() // counted again at the next record (the link resends what follows anyway)
			for _, r := range reasons[i:] {
				if s.r.skipped == nil {
					s.r.skipped = map[string]int64{}
				}
				s.r.skipped[r] += pending[r]
			}
			s.r.mu.Unlock()
			return err
		}
	}
	_, err := s.internal(ctx, 0, command.KindReplication, command.ReplicationArgs(command.Replication{Op: "position", Link: s.link,
		ReplID: at.ReplID, Offset: at.Offset, DB: int64(at.DB)}))
	if err == nil {
		s.posAt = time.Now()
	}
	return err
}

// everyGroup proposes a KindReplication entry to every group, group 0 first.
func (s *nodeSink) everyGroup(ctx context.Context, r command.Replication) error {
	for g := range s.n.gs() {
		if _, err := s.internal(ctx, g, command.KindReplication, command.ReplicationArgs(r)); err != nil {
			return err
		}
	}
	return nil
}

// BeginFull implements replica.Sink: a new full sync (a fresh epoch) is
// written to every group, group 0 first — which clears the position, so a
// link restarted mid-load asks for a full sync again, and makes every group
// refuse the entries of an earlier sync still in flight — then every group
// is emptied, as a Redis replica flushes before it loads.
func (s *nodeSink) BeginFull(ctx context.Context, at replica.Position) error {
	s.link.Epoch = newEpoch()
	if err := s.everyGroup(ctx, command.Replication{Op: "full", Link: s.link}); err != nil {
		return err
	}
	for g := range s.n.gs() {
		if err := s.proposeRun(ctx, g, 0, []command.ReplicatedCmd{{Args: [][]byte{[]byte("FLUSHALL")}}}); err != nil {
			return err
		}
	}
	s.load = make([][]command.ReplicatedCmd, len(s.n.gs()))
	s.loadSize = make([]int, len(s.n.gs()))
	return nil
}

// Load implements replica.Sink: the key becomes commands in its group's next
// entry.
func (s *nodeSink) Load(ctx context.Context, e rdb.Entry) error {
	switch {
	case e.Skipped != "":
		return s.skip(ctx, "type "+e.Skipped)
	case e.DB != 0:
		return s.skip(ctx, "db "+strconv.Itoa(e.DB))
	}
	cmds, ok := loadCommands(e)
	if !ok {
		return s.skip(ctx, "type "+e.Value.Type.String())
	}
	g := s.n.groupOf(e.Key)
	for _, c := range cmds {
		s.load[g] = append(s.load[g], command.ReplicatedCmd{Args: c})
		s.loadSize[g] += command.Size(c)
	}
	s.r.mu.Lock()
	s.r.loaded++
	s.r.mu.Unlock()
	if s.loadSize[g] >= loadEntryBytes {
		return s.flushLoad(ctx, g)
	}
	return nil
}

// flushLoad proposes group g's loaded keys.
func (s *nodeSink) flushLoad(ctx context.Context, g int) error {
	if len(s.load[g]) == 0 {
		return nil
	}
	err := s.propose(ctx, g, 0, s.load[g])
	s.load[g], s.loadSize[g] = nil, 0
	return err
}

// EndFull implements replica.Sink: the rest of the RDB is proposed, every
// group records the stream's start as its offset, and group 0 the position.
func (s *nodeSink) EndFull(ctx context.Context, at replica.Position) error {
	for g := range s.load {
		if err := s.flushLoad(ctx, g); err != nil {
			return err
		}
	}
	if err := s.everyGroup(ctx, command.Replication{Op: "offset", Link: s.link, Offset: at.Offset}); err != nil {
		return err
	}
	s.replID = at.ReplID
	return s.record(ctx, at)
}

// newEpoch names a full sync, or a REPLICAOF: random, so that two links (of
// two nodes that both believed they led group 0 for a moment, or of two
// REPLICAOFs) never share one.
func newEpoch() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) | 1 // never 0, which is "none yet"
}

// Apply implements replica.Sink: the commands go to their keys' groups, one
// entry per group (in parallel), each command with its End; the position is
// recorded at most every positionEvery.
func (s *nodeSink) Apply(ctx context.Context, cmds []replica.Command) error {
	if len(cmds) == 0 {
		return nil
	}
	per := make([][]command.ReplicatedCmd, len(s.n.gs()))
	add := func(args [][]byte, db int, end int64) error {
		if db != 0 {
			return s.skip(ctx, "db "+strconv.Itoa(db))
		}
		parts, skipped := s.route(args)
		if skipped != "" {
			return s.skip(ctx, skipped)
		}
		for g, part := range parts {
			if part != nil {
				per[g] = append(per[g], command.ReplicatedCmd{End: end, Args: part})
			}
		}
		return nil
	}
	for _, c := range cmds {
		if c.Tx == nil {
			if err := add(c.Args, c.DB, c.End); err != nil {
				return err
			}
			continue
		}
		for i, args := range c.Tx {
			db := c.DB
			if i < len(c.TxDB) {
				db = c.TxDB[i]
			}
			if err := add(args, db, c.End); err != nil {
				return err
			}
		}
	}
	last := cmds[len(cmds)-1]
	errs := make([]error, len(per))
	var wg sync.WaitGroup
	for g, part := range per {
		if len(part) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[g] = s.propose(ctx, g, last.End, part)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if time.Since(s.posAt) >= positionEvery {
		return s.record(ctx, last.Position(s.replID))
	}
	return nil
}

// Advance implements replica.Sink: a new replication id is recorded at once,
// an offset past PINGs at most every positionEvery.
func (s *nodeSink) Advance(ctx context.Context, at replica.Position) error {
	if at.ReplID != s.replID || time.Since(s.posAt) >= positionEvery {
		s.replID = at.ReplID
		return s.record(ctx, at)
	}
	return nil
}

// route splits a command the master sent by the groups of its keys: one
// element per group (nil where the group gets none). FLUSHALL and FLUSHDB go
// to every group (as FLUSHALL); a command lockd does not have is not
// imported; a command without keys goes to group 0; DEL, UNLINK, EXISTS,
// TOUCH and MSET over several groups are split; another command whose keys
// span groups is not imported: skipped names why.
func (s *nodeSink) route(args [][]byte) (out [][][]byte, skipped string) {
	out = make([][][]byte, len(s.n.gs()))
	name := strings.ToLower(string(args[0]))
	switch name {
	case "flushall", "flushdb": // lockd has one database: FLUSHDB of 0 is FLUSHALL
		all := append([][]byte{[]byte("FLUSHALL")}, args[1:]...)
		for g := range out {
			out[g] = all
		}
		return out, ""
	}
	if _, spec, _ := command.Parse(args); spec == nil {
		// A command lockd does not have: skipped before anything of its
		// batch is proposed (so -replica-unsupported stop stops before it).
		return nil, "command " + name
	}
	keys := command.CommandKeys(args)
	groups := map[int]bool{}
	for _, k := range keys {
		groups[s.n.groupOf(k)] = true
	}
	switch {
	case len(groups) == 0:
		out[0] = args
		return out, ""
	case len(groups) == 1:
		for g := range groups {
			out[g] = args
		}
		return out, ""
	}
	spec, _ := command.Lookup(args[0])
	switch {
	case spec != nil && spec.Route == command.RouteSplit && name != "mset":
		for _, k := range args[1:] {
			g := s.n.groupOf(k)
			if out[g] == nil {
				out[g] = [][]byte{args[0]}
			}
			out[g] = append(out[g], k)
		}
	case name == "mset":
		for i := 1; i+1 < len(args); i += 2 {
			g := s.n.groupOf(args[i])
			if out[g] == nil {
				out[g] = [][]byte{args[0]}
			}
			out[g] = append(out[g], args[i], args[i+1])
		}
	default:
		return nil, "cross-group " + name
	}
	return out, ""
}

// loadCommands turns one key of an RDB into the commands that build it:
// SET with PXAT for a string; RPUSH, HSET or ZADD in chunks of at most
// loadChunkBytes, then PEXPIREAT, for the collections. False for a type
// lockd does not hold (a set).
func loadCommands(e rdb.Entry) ([][][]byte, bool) {
	var out [][][]byte
	v := e.Value
	chunked := func(name string, items [][]byte, per int) {
		cmd := [][]byte{[]byte(name), e.Key}
		size := 0
		for i := 0; i < len(items); i += per {
			cmd = append(cmd, items[i:i+per]...)
			for _, x := range items[i : i+per] {
				size += len(x)
			}
			if size >= loadChunkBytes {
				out = append(out, cmd)
				cmd, size = [][]byte{[]byte(name), e.Key}, 0
			}
		}
		if len(cmd) > 2 {
			out = append(out, cmd)
		}
	}
	switch v.Type {
	case rdb.String:
		cmd := [][]byte{[]byte("SET"), e.Key, v.Str}
		if e.ExpireMs != 0 {
			cmd = append(cmd, []byte("PXAT"), strconv.AppendInt(nil, e.ExpireMs, 10))
		}
		return [][][]byte{cmd}, true
	case rdb.List:
		chunked("RPUSH", v.List, 1)
	case rdb.Hash:
		items := make([][]byte, 0, 2*len(v.Hash))
		for _, f := range v.Hash {
			items = append(items, f.Field, f.Value)
		}
		chunked("HSET", items, 2)
	case rdb.ZSet:
		items := make([][]byte, 0, 2*len(v.ZSet))
		for _, m := range v.ZSet {
			items = append(items, strconv.AppendFloat(nil, m.Score, 'g', -1, 64), m.Member)
		}
		chunked("ZADD", items, 2)
	default:
		return nil, false
	}
	if len(out) > 0 && e.ExpireMs != 0 {
		out = append(out, [][]byte{[]byte("PEXPIREAT"), e.Key, strconv.AppendInt(nil, e.ExpireMs, 10)})
	}
	return out, true
}

// ReplicationInfo is INFO's replication section on this node while the
// cluster follows a Redis master, in a Redis replica's field names (nil
// while it follows none). Only the node that runs the link (it leads group 0) knows the
// link: the others say master_link_status:down and lockd_link_here:0 — ask
// the leader of group 0 (RAFT GROUPS) for the offsets. lockd_skipped names
// what was not imported, with counts.
func (n *Node) ReplicationInfo() [][2]string {
	st := n.Replication()
	if st.Master == "" {
		return nil // a master: the front door's own lines
	}
	host, port, _ := net.SplitHostPort(st.Master)
	out := [][2]string{{"role", "slave"}, {"master_host", host}, {"master_port", port}}
	l := st.Link
	if l == nil {
		l = &replica.Status{State: replica.StateConnect, Err: st.Halted}
	}
	up := "down"
	if l.State == replica.StateConnected {
		up = "up"
	}
	lastIO := int64(-1)
	if !l.LastIO.IsZero() {
		lastIO = int64(time.Since(l.LastIO) / time.Second)
	}
	itoa := func(v int64) string { return strconv.FormatInt(v, 10) }
	out = append(out, [2]string{"master_link_status", up}, [2]string{"master_last_io_seconds_ago", itoa(lastIO)},
		[2]string{"master_sync_in_progress", boolDigit(l.SyncInProgress)})
	out = append(out, [2]string{"slave_read_repl_offset", itoa(l.Offset)}, [2]string{"slave_repl_offset", itoa(l.Offset)})
	if l.SyncInProgress {
		total, perc := int64(-1), 0.0 // a diskless master announces no size
		if l.SyncLeftBytes >= 0 {
			total = l.SyncReadBytes + l.SyncLeftBytes
		}
		if total > 0 {
			perc = float64(l.SyncReadBytes) / float64(total) * 100
		}
		out = append(out, [2]string{"master_sync_total_bytes", itoa(total)}, [2]string{"master_sync_read_bytes", itoa(l.SyncReadBytes)},
			[2]string{"master_sync_left_bytes", itoa(l.SyncLeftBytes)}, [2]string{"master_sync_perc", strconv.FormatFloat(perc, 'f', 2, 64)},
			[2]string{"master_sync_last_io_seconds_ago", itoa(lastIO)})
	}
	if up != "up" {
		// Since the last read from the master (Redis: since the link went
		// down); -1 when this node has read nothing from it.
		out = append(out, [2]string{"master_link_down_since_seconds", itoa(lastIO)})
	}
	out = append(out, [2]string{"slave_priority", "100"}, [2]string{"slave_read_only", "1"}, [2]string{"replica_announced", "1"},
		[2]string{"connected_slaves", "0"}, [2]string{"master_failover_state", "no-failover"},
		[2]string{"master_replid", l.ReplID}, [2]string{"master_repl_offset", itoa(l.Offset)})
	var skipped []string
	for k, v := range st.Skipped {
		skipped = append(skipped, strings.ReplaceAll(k, " ", "_")+"="+itoa(v))
	}
	slices.Sort(skipped)
	out = append(out, [2]string{"lockd_link_here", boolDigit(st.Link != nil)}, [2]string{"lockd_full_syncs", itoa(l.FullSyncs)},
		[2]string{"lockd_partial_syncs", itoa(l.PartialSyncs)}, [2]string{"lockd_keys_loaded", itoa(st.Loaded)},
		[2]string{"lockd_skipped", strings.Join(skipped, ",")}, [2]string{"lockd_link_error", l.Err})
	return out
}

// Role is ROLE's reply on this node: a master's ["master", 0, []] while the
// cluster follows none, else ["slave", host, port, state, offset] with the
// link's state and offset (the node that runs it; "connect" and -1
// elsewhere, as a Redis replica without a link).
func (n *Node) Role() (master bool, host string, port int64, state string, offset int64) {
	st := n.Replication()
	if st.Master == "" {
		return true, "", 0, "", 0
	}
	h, p, _ := net.SplitHostPort(st.Master)
	port, _ = strconv.ParseInt(p, 10, 64)
	state, offset = string(replica.StateConnect), -1
	if st.Link != nil {
		state, offset = string(st.Link.State), st.Link.Offset
	}
	return false, h, port, state, offset
}
