package test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/raftstore/fsm"
	"github.com/lockd/lockd/raftstore/group"
	"github.com/lockd/lockd/raftstore/logstore"
	"github.com/lockd/lockd/resp"
	"github.com/lockd/lockd/shard"
)

// The replay: after a run every process is stopped, each replica's Raft log is
// read from its badger directory and applied, entry by entry, to a fresh
// fsm.Keyspace — the same code the replicas ran. At every index an
// independent model of the workload's locks (holder, token, lease deadline in
// log time) checks the FSM's decisions: no grant while another holder's lease
// is live, the token of a grant is its logical index (its entry's Raft index,
// plus one for each command before it in batch entries) and rises per name, log time never
// goes back. Replicas must hold the same entries up to the run's final marker
// and reach byte-identical states there.
//
// A sharded cluster (-groups N > 1) keeps N logs per replica, one per Raft
// group, in one shared badger DB (<data>/raft, a key prefix per group). Each
// group is replayed on its own, up to its own marker (replayGroup), and the
// groups' results are merged (replayGroups): a name lives in one group, so
// every grant of a name comes from that group's log, while tokens — indexes
// of a group's log — are unique per group only (tokenKey).

// tokenKey names a grant cluster-wide: a token is unique within its group.
type tokenKey struct {
	group int
	token uint64
}

// replayGrant is a grant found in the log.
type replayGrant struct {
	group      int // the Raft group whose log holds it
	index      uint64
	name       string
	owner      string
	now        int64 // log time of the grant
	ttl        int64
	released   bool // released in the log before the next grant of the name
	expiredNow int64
}

// replayResult is what the replay of all replicas found.
type replayResult struct {
	violations []string
	grants     map[tokenKey]*replayGrant // by group and index (= token), from the first replica
	byName     map[string][]*replayGrant // in log order
	entries    uint64                    // entries replayed per replica (up to the markers, all groups)
	handovers  int                       // grants to queued waiters (FIFO checked)
	smap       *shard.Map                // the groups of names; nil: one group
	perGroup   []groupReplay             // per group, in group order (replayGroups)
	replicas   int                       // logs replayed to the marker (replayGroup)
	stale      int                       // former members' logs, replayed as far as they go
	staleTails int                       // of those, the ones that end in entries of another term than the reference's
}

// groupReplay is what the replay found in one group.
type groupReplay struct {
	marker, entries uint64
	token           uint64 // the marker's token: above its index by what batch entries added
	grants          int
	names           int
	replicas        int // logs that reached the marker
	stale           int // former members' logs (replayGroup)
	staleTails      int // of those, ending in entries a later leader replaced
}

// groupOf returns the group that holds name (0 with one group).
func (r *replayResult) groupOf(name string) int {
	if r.smap == nil {
		return 0
	}
	return r.smap.GroupOf([]byte(name))
}

// readReplicaLogs reads every entry of every group's Raft log of the replica
// whose data directory is dir, no process holding it open: with one group
// <dir>/group-0/raft (its own badger DB), with several the shared DB
// <dir>/raft, group g under its prefix. The result is indexed by group.
func readReplicaLogs(dir string, groups int) ([][]raft.Log, error) {
	if _, err := os.Stat(filepath.Join(dir, "ENGINE")); err == nil {
		// Created with -engine (CHAOS_ENGINE): every group in <dir>/engine,
		// read in hashicorp/raft's shape.
		sh, err := logstore.OpenShared(filepath.Join(dir, "engine"), logstore.Options{})
		if err != nil {
			return nil, err
		}
		defer sh.Close()
		return group.EngineLogs(sh, groups)
	}
	if groups <= 1 {
		s, err := logstore.Open(filepath.Join(dir, "group-0", "raft"), logstore.Options{})
		if err != nil {
			return nil, err
		}
		defer s.Close()
		l, err := readStoreLog(s)
		return [][]raft.Log{l}, err
	}
	sh, err := logstore.OpenShared(filepath.Join(dir, "raft"), logstore.Options{})
	if err != nil {
		return nil, err
	}
	defer sh.Close()
	out := make([][]raft.Log, groups)
	for g := range out {
		s, err := sh.Group(g, nil)
		if err != nil {
			return nil, fmt.Errorf("group %d: %w", g, err)
		}
		out[g], err = readStoreLog(s)
		s.Close()
		if err != nil {
			return nil, fmt.Errorf("group %d: %w", g, err)
		}
	}
	return out, nil
}

// readStoreLog reads every entry of one group's log.
func readStoreLog(s *logstore.Store) ([]raft.Log, error) {
	first, err := s.FirstIndex()
	if err != nil {
		return nil, err
	}
	last, err := s.LastIndex()
	if err != nil {
		return nil, err
	}
	if first > 1 {
		return nil, fmt.Errorf("log starts at %d: compacted (the replay needs the whole log)", first)
	}
	out := make([]raft.Log, 0, last)
	for i := first; i <= last && i > 0; i++ {
		var l raft.Log
		if err := s.GetLog(i, &l); err != nil {
			return nil, fmt.Errorf("index %d: %w", i, err)
		}
		out = append(out, l)
	}
	return out, nil
}

// isChaosLock reports whether a key is one of the workload's locks.
func isChaosLock(name string) bool {
	return strings.HasPrefix(name, "chaos:lock:") || strings.HasPrefix(name, "chaos:dead:")
}

// modelWaiter is a queued LOCK.ACQUIRE … WAIT (its id is the index of the
// entry that queued it).
type modelWaiter struct {
	id              uint64
	name, owner     string
	ttl, deadline   int64
	granted, ledout bool
}

type modelHolder struct {
	owner    string
	token    uint64
	deadline int64
	grant    *replayGrant
}

// replayOne applies one replica's log up to marker, checking the model at
// every index, and returns the final state's snapshot bytes.
func replayOne(id string, group int, logs []raft.Log, marker uint64, res *replayResult, record bool) ([]byte, error) {
	ks := fsm.New()
	held := map[string]*modelHolder{}
	lastTok := map[string]uint64{}
	waiters := map[uint64]*modelWaiter{}
	queues := map[string][]*modelWaiter{} // FIFO, by arrival in the log
	var now int64
	viol := func(format string, args ...any) {
		res.violations = append(res.violations, id+": "+fmt.Sprintf(format, args...))
	}
	// live returns name's holder, forgetting one whose lease ended.
	live := func(name string) *modelHolder {
		h := held[name]
		if h != nil && h.deadline <= now {
			h.grant.expiredNow = now
			delete(held, name)
			h = nil
		}
		return h
	}
	// grant records a grant of name at index (checked against the holder).
	grant := func(index uint64, how, name, owner string, tok uint64, ttl int64) {
		if tok != index {
			viol("index %d: %s %s granted token %d, not its index", index, how, name, tok)
		}
		if tok <= lastTok[name] {
			viol("index %d: %s granted token %d, not above the previous token %d", index, name, tok, lastTok[name])
		}
		lastTok[name] = tok
		if h := live(name); h != nil {
			viol("index %d: %s granted to %s (token %d, %s) at log time %d while %s holds it (token %d) until %d: two holders",
				index, name, owner, tok, how, now, h.owner, h.token, h.deadline)
		}
		g := &replayGrant{group: group, index: index, name: name, owner: owner, now: now, ttl: ttl}
		if ttl < 0 {
			viol("index %d: %s granted without a lease", index, name)
			ttl = 1 << 40
		}
		held[name] = &modelHolder{owner: owner, token: tok, deadline: now + ttl, grant: g}
		if record {
			res.grants[tokenKey{group, index}] = g
			res.byName[name] = append(res.byName[name], g)
		}
	}
	// dequeue removes w from its queue.
	dequeue := func(w *modelWaiter) {
		q := queues[w.name]
		for i, x := range q {
			if x == w {
				queues[w.name] = append(q[:i:i], q[i+1:]...)
				return
			}
		}
	}
	// A batch entry's commands each have a logical index of their own (the
	// entry's, then one more for each next command), which every later
	// index carries on: offset is what the model adds to a Raft index.
	var offset uint64
	for _, l := range logs {
		if l.Index > marker {
			break
		}
		if l.Type != raft.LogCommand {
			continue
		}
		e, err := command.Decode(l.Data)
		if err != nil {
			return nil, fmt.Errorf("index %d: %w", l.Index, err)
		}
		if e.Time > now {
			now = e.Time
		}
		first := true
		err = ks.ApplyEach(l.Index, e, func(e command.Entry, reply resp.Value) {
			if !first {
				offset++
			}
			first = false
			index := l.Index + offset
			ks.TakeEvents()
			wakes := ks.TakeWakes()
			if ks.Now() != now {
				viol("index %d: the FSM's log time is %d, max of the stamped times is %d", index, ks.Now(), now)
				now = ks.Now()
			}
			if e.Kind == command.KindCommand && len(e.Args) >= 2 && isChaosLock(string(e.Args[1])) {
				modelCommand(index, e, reply, now, live, grant, waiters, queues, held, viol)
			}
			// Hand-overs to waiters (in this entry, after its own command).
			for _, wk := range wakes {
				w := waiters[wk.Waiter]
				if w == nil {
					viol("index %d: a wake for waiter %d, which no entry queued", index, wk.Waiter)
					continue
				}
				dequeue(w)
				if wk.Token == 0 {
					w.ledout = true
					continue
				}
				for _, x := range queues[w.name] {
					if x.id < w.id && x.deadline > now {
						viol("index %d: %s handed to waiter %d (%s) while waiter %d (%s), queued before it, still waited: not FIFO",
							index, w.name, w.id, w.owner, x.id, x.owner)
						break
					}
				}
				if w.deadline < now {
					viol("index %d: %s handed to waiter %d whose wait had ended at %d (now %d)", index, w.name, w.id, w.deadline, now)
				}
				w.granted = true
				if record {
					res.handovers++
				}
				grant(index, "handed over", w.name, w.owner, wk.Token, w.ttl)
			}
		})
		if err != nil {
			return nil, fmt.Errorf("index %d: %w", l.Index, err)
		}
	}
	var buf bytes.Buffer
	if _, err := ks.Snapshot().WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// modelCommand applies one command on a workload lock to the model.
func modelCommand(index uint64, e command.Entry, reply resp.Value, now int64, live func(string) *modelHolder,
	grant func(uint64, string, string, string, uint64, int64), waiters map[uint64]*modelWaiter,
	queues map[string][]*modelWaiter, held map[string]*modelHolder, viol func(string, ...any)) {
	cmd, name := strings.ToUpper(string(e.Args[0])), string(e.Args[1])
	h := live(name)
	switch cmd {
	case "SET", "LOCK.ACQUIRE":
		if len(e.Args) < 3 {
			return
		}
		owner := string(e.Args[2])
		ttl, wait := int64(-1), int64(0)
		for i := 3; i+1 < len(e.Args); i++ {
			switch strings.ToUpper(string(e.Args[i])) {
			case "PX":
				ttl, _ = strconv.ParseInt(string(e.Args[i+1]), 10, 64)
			case "WAIT":
				wait, _ = strconv.ParseInt(string(e.Args[i+1]), 10, 64)
			}
		}
		if id, ok := fsm.QueuedWaiter(reply); ok {
			if id != index {
				viol("index %d: %s queued waiter %d, not its index", index, name, id)
			}
			if h == nil && len(queues[name]) == 0 {
				viol("index %d: %s queued %s although the lock was free and nobody waited", index, name, owner)
			}
			w := &modelWaiter{id: id, name: name, owner: owner, ttl: ttl, deadline: now + wait}
			waiters[id] = w
			queues[name] = append(queues[name], w)
			return
		}
		if reply.Kind != resp.KindInt {
			return // not granted (or an error): the model does not change
		}
		if h != nil && h.owner == owner && uint64(reply.Int) == h.token {
			return // the holder asking again gets its grant back
		}
		grant(index, cmd, name, owner, uint64(reply.Int), ttl)
	case "LOCK.CANCEL":
		if len(e.Args) < 3 {
			return
		}
		wid, _ := strconv.ParseUint(string(e.Args[2]), 10, 64)
		if w := waiters[wid]; w != nil && reply.Kind != resp.KindInt {
			w.ledout = true
			q := queues[name]
			for i, x := range q {
				if x == w {
					queues[name] = append(q[:i:i], q[i+1:]...)
					break
				}
			}
		}
		if reply.Kind == resp.KindInt && len(e.Args) == 4 && h != nil && uint64(reply.Int) == h.token {
			h.grant.released = true
			delete(held, name)
		}
	case "DELEX", "LOCK.RELEASE":
		if reply.Kind != resp.KindInt || reply.Int != 1 {
			return
		}
		ok := h != nil
		if ok && cmd == "DELEX" {
			ok = len(e.Args) == 4 && string(e.Args[3]) == h.owner
		}
		if ok && cmd == "LOCK.RELEASE" {
			ok = len(e.Args) == 3 && string(e.Args[2]) == strconv.FormatUint(h.token, 10)
		}
		if !ok {
			viol("index %d: %s released %s, which the model says is not held by that holder", index, cmd, name)
		}
		if h != nil {
			h.grant.released = true
			delete(held, name)
		}
	}
}

var errNoMarker = errors.New("a replica does not reach the final marker")

// replayReplicas replays every replica's log of a cluster with one group up
// to marker and compares them.
func replayReplicas(ids []string, logs [][]raft.Log, marker uint64) replayResult {
	return replayGroup(0, ids, logs, marker)
}

// reaches reports whether log holds an entry at marker or after.
func reaches(log []raft.Log, marker uint64) bool {
	return len(log) > 0 && log[len(log)-1].Index >= marker
}

// configAt returns the servers (voters and non-voters) of the last
// configuration entry at or before index in log, and whether there is one.
func configAt(log []raft.Log, index uint64) (members map[string]bool, found bool, err error) {
	for _, l := range log {
		if l.Index > index {
			break
		}
		if l.Type != raft.LogConfiguration {
			continue
		}
		var conf raft.Configuration
		func() {
			defer func() {
				if r := recover(); r != nil { // DecodeConfiguration panics on a bad entry
					err = fmt.Errorf("index %d: configuration entry: %v", l.Index, r)
				}
			}()
			conf = raft.DecodeConfiguration(l.Data)
		}()
		if err != nil {
			return nil, false, err
		}
		members, found = map[string]bool{}, true
		for _, srv := range conf.Servers {
			members[string(srv.ID)] = true
		}
	}
	return members, found, nil
}

// replayGroup replays every replica's log of group g up to marker (the
// group's Raft index of the run's final marker) and compares them.
//
// With placement (issue 49) a node holds the logs of some groups only, so
// which logs are the group's is read from the group's own log: the reference
// is the first log that reaches the marker, and the members are the servers
// of its last configuration entry up to the marker (every log given, when it
// has none: a hand-made history). Every member's log must reach the marker;
// every log that does is replayed, must hold the reference's entries up to
// the marker and reach the same state. A log that stops short of the marker
// on a node that is no member there is a former member's, left when it was
// removed: it is replayed as far as it goes (the model's checks), and must
// agree with the reference wherever they hold an entry of the same term
// (Raft's log matching). Where its term differs it ends in entries its
// removal left uncommitted, which a later leader replaced: counted
// (staleTails), not a violation. An empty log (a node that never hosted the
// group, or whose data was wiped) holds nothing to check.
func replayGroup(g int, ids []string, logs [][]raft.Log, marker uint64) replayResult {
	res := replayResult{grants: map[tokenKey]*replayGrant{}, byName: map[string][]*replayGrant{}, entries: marker}
	ref := slices.IndexFunc(logs, func(l []raft.Log) bool { return reaches(l, marker) })
	var members map[string]bool
	found := false
	if ref >= 0 {
		var err error
		if members, found, err = configAt(logs[ref], marker); err != nil {
			res.violations = append(res.violations, fmt.Sprintf("%s: %v", ids[ref], err))
		}
	}
	states := make([][]byte, len(ids))
	for i, id := range ids {
		switch {
		case reaches(logs[i], marker):
			st, err := replayOne(id, g, logs[i], marker, &res, i == ref)
			if err != nil {
				res.violations = append(res.violations, fmt.Sprintf("%s: replay: %v", id, err))
			}
			states[i] = st
			res.replicas++
		case !found || members[id]:
			res.violations = append(res.violations, fmt.Sprintf("%s: %v (log ends at %d, marker %d)", id, errNoMarker, len(logs[i]), marker))
		case len(logs[i]) > 0:
			res.stale++
			if _, err := replayOne(id, g, logs[i], marker, &res, false); err != nil {
				res.violations = append(res.violations, fmt.Sprintf("%s: replay of its stale log: %v", id, err))
			}
		}
	}
	// The same entries at every index up to the marker, and the same state.
	for i := range ids {
		if ref < 0 || i == ref || len(logs[i]) == 0 {
			continue
		}
		member := reaches(logs[i], marker) || !found || members[ids[i]]
		a, b := logs[ref], logs[i]
		for j := 0; j < len(a) && j < len(b) && a[j].Index <= marker; j++ {
			if a[j].Index == b[j].Index && a[j].Term == b[j].Term && a[j].Type == b[j].Type && bytes.Equal(a[j].Data, b[j].Data) {
				continue
			}
			if !member && a[j].Index == b[j].Index && a[j].Term != b[j].Term {
				res.staleTails++
				break
			}
			res.violations = append(res.violations, fmt.Sprintf("replicas %s and %s diverge at index %d (terms %d, %d)",
				ids[ref], ids[i], a[j].Index, a[j].Term, b[j].Term))
			break
		}
		if states[ref] != nil && states[i] != nil && !bytes.Equal(states[ref], states[i]) {
			res.violations = append(res.violations, fmt.Sprintf("replicas %s and %s reach different states at the marker %d", ids[ref], ids[i], marker))
		}
	}
	// One report per problem, not one per replica.
	seen := map[string]bool{}
	var out []string
	for _, v := range res.violations {
		k := v
		if _, rest, ok := strings.Cut(v, ": "); ok && strings.HasPrefix(rest, "index ") {
			k = rest
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, v)
		}
	}
	res.violations = out
	return res
}

// replayGroups replays a sharded cluster: logs[r][g] is replica ids[r]'s log
// of group g, markers[g] the index of the final marker in group g, whose key
// is keys[g] (a SET of it must be that entry), smap the shard map the cluster
// ran with. Every group is replayed on its own (replayGroup) and the results
// merged: violations are prefixed by the group (when there are several), grants keyed by group and
// token, and a grant is a violation unless its name belongs to its group.
func replayGroups(ids []string, logs [][][]raft.Log, markers []uint64, keys []string, smap shard.Map) replayResult {
	res := replayResult{grants: map[tokenKey]*replayGrant{}, byName: map[string][]*replayGrant{}, smap: &smap}
	for g, marker := range markers {
		var gl [][]raft.Log
		for r := range ids {
			gl = append(gl, logs[r][g])
		}
		viol := func(format string, args ...any) {
			v := fmt.Sprintf(format, args...)
			if len(markers) > 1 {
				v = fmt.Sprintf("group %d: %s", g, v)
			}
			res.violations = append(res.violations, v)
		}
		token := marker
		if len(ids) > 0 {
			// The marker is a token; the replay needs its entry's Raft
			// index, from the first log that holds it (with placement a
			// node may hold none of this group's log, or an old part).
			var first error
			found := false
			for r, l := range gl {
				at, err := markerEntry(l, marker, keys[g])
				if err == nil {
					marker, found = at, true
					break
				}
				if first == nil && len(l) > 0 {
					first = fmt.Errorf("%s: %w", ids[r], err)
				}
			}
			if !found {
				if first == nil {
					first = errors.New("no replica holds any of this group's log")
				}
				viol("%v", first)
			}
		}
		rg := replayGroup(g, ids, gl, marker)
		for _, v := range rg.violations {
			viol("%s", v)
		}
		for k, gr := range rg.grants {
			res.grants[k] = gr
		}
		for name, gs := range rg.byName {
			if owner := smap.GroupOf([]byte(name)); owner != g {
				viol("%d grants of %s are in this group's log, but the shard map puts %s in group %d", len(gs), name, name, owner)
			}
			res.byName[name] = append(res.byName[name], gs...)
		}
		res.entries += rg.entries
		res.handovers += rg.handovers
		res.perGroup = append(res.perGroup, groupReplay{marker: marker, token: token, entries: rg.entries, grants: len(rg.grants), names: len(rg.byName),
			replicas: rg.replicas, stale: rg.stale, staleTails: rg.staleTails})
	}
	return res
}

// markerEntry finds the final marker in log: the command whose logical
// index is token (a batch entry's commands count one each, as
// fsm.Keyspace.ApplyEach numbers them; the groups of a chaos run import
// nothing, so their token base grows only so), which must be a SET of key.
// It returns the Raft index of the entry that holds it.
func markerEntry(log []raft.Log, token uint64, key string) (uint64, error) {
	var offset uint64
	for _, l := range log {
		if l.Type != raft.LogCommand || l.Index+offset > token {
			continue
		}
		e, err := command.Decode(l.Data)
		if err != nil {
			return 0, fmt.Errorf("entry %d: %w", l.Index, err)
		}
		cmds := [][][]byte{e.Args}
		if e.Kind == command.KindBatch {
			if cmds, err = command.ParseBatch(e.Args); err != nil {
				return 0, fmt.Errorf("entry %d: %w", l.Index, err)
			}
		}
		if j := token - l.Index - offset; j < uint64(len(cmds)) {
			c := cmds[j]
			if (e.Kind != command.KindCommand && e.Kind != command.KindBatch) || len(c) < 2 || !strings.EqualFold(string(c[0]), "SET") || string(c[1]) != key {
				return 0, fmt.Errorf("the command of token %d (entry %d) is not the final marker (SET %s)", token, l.Index, key)
			}
			return l.Index, nil
		}
		offset += uint64(len(cmds) - 1)
	}
	return 0, fmt.Errorf("the log has no command of token %d (the final marker)", token)
}
