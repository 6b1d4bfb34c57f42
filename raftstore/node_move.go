package raftstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
	"github.com/lockd/lockd/shard"
)

// Moving slots between groups (RAFT MOVESLOTS from to group). The move runs on
// group 0's leader (a node that is not forwards it there), one at a time, in
// four log entries per source group:
//
//  1. freeze, in the source: the slots' keys are refused with TRYAGAIN from
//     here on, and the entry's reply is an export of their items (values,
//     locks with holders and leases, the sessions they belong to) and the
//     highest token the source ever issued;
//  2. import, in the target: it raises its token base above that token, so
//     every later grant of a moved name gets a larger token, and stores the
//     items (sessions are attached);
//  3. the new shard map, in group 0: nodes route the slots to the target;
//  4. drop, in the source: the items go, later requests for the slots are
//     answered MOVED (every node's router follows the new map), and the
//     waiters queued on moved names are woken to queue again in the target.
//
// Requests that meet a frozen or dropped slot are retried by the router, so a
// client sees a short pause, never an error. A failed step before the map
// changed thaws the source (the move did not happen); tokens stay increasing
// either way, since the target's base only grows.

// dropRetryFor bounds the retries of a move's last step.
const dropRetryFor = 30 * time.Second

// nodeAdmin runs the Node-level admin actions that must happen on group 0's
// leader (Store.admin calls it there).
func (n *Node) nodeAdmin(ctx context.Context, op command.Admin) (resp.Value, bool) {
	switch op.Action {
	case "nodeadd", "noderemove":
		return n.placeAdmin(ctx, op), true
	case "moves":
		return n.movesReply(), true
	case "addgroups":
		k, err := strconv.Atoi(op.ID)
		if err != nil {
			return resp.Error("ERR value is not an integer or out of range"), true
		}
		return n.addGroups(ctx, k), true
	case "moveslots":
	default:
		return resp.Value{}, false
	}
	a, b, ok := strings.Cut(op.ID, "-")
	from, err1 := strconv.ParseUint(a, 10, 16)
	to, err2 := strconv.ParseUint(b, 10, 16)
	g, err3 := strconv.Atoi(op.Addr)
	if !ok || err1 != nil || err2 != nil || err3 != nil || from > to || to >= shard.Slots {
		return resp.Error("ERR slots must be 0 to 16383, from <= to"), true
	}
	if g < 0 || g >= len(n.gs()) {
		return resp.Error(fmt.Sprintf("ERR no such group %d (the cluster has %d)", g, len(n.gs()))), true
	}
	return n.moveSlots(ctx, uint16(from), uint16(to), g), true
}

// moveSlots moves slots from..to to group dst (see above). It answers the
// number of slots that changed group.
func (n *Node) moveSlots(ctx context.Context, from, to uint16, dst int) resp.Value {
	n.moveMu.Lock()
	defer n.moveMu.Unlock()
	if err := n.gs()[0].ReadBarrier(ctx); err != nil { // the latest map is applied here
		return command.ErrorReply(err)
	}
	if master, _ := n.gs()[0].Replication(); master != "" {
		// Each group's record of the master's offset holds only while its
		// slots stay (fsm/replica.go).
		return resp.Error("ERR slots do not move while the cluster follows a Redis master (REPLICAOF NO ONE first)")
	}
	n.loadShardMap()
	moved, m := 0, n.ShardMap()
	for _, r := range m.Ranges() {
		a, b := max(r.From, from), min(r.To, to)
		if a > b || r.Group == dst {
			continue
		}
		if v := n.moveRange(ctx, a, b, r.Group, dst); v.IsError() {
			return v
		}
		moved += int(b-a) + 1
	}
	return resp.Int(int64(moved))
}

// moveRange moves slots a..b, all owned by src, to dst.
func (n *Node) moveRange(ctx context.Context, a, b uint16, src, dst int) resp.Value {
	log := n.log.With("from_slot", a, "to_slot", b, "source", src, "target", dst)
	blob := n.proposeInternal(ctx, src, command.KindMigrate, command.MigrateArgs("freeze", a, b))
	if blob.IsError() {
		log.Warn("slot move: freeze failed", "err", blob.String())
		return blob
	}
	thaw := func(why resp.Value) resp.Value {
		if v := n.proposeInternal(context.Background(), src, command.KindMigrate, command.MigrateArgs("thaw", a, b)); v.IsError() {
			log.Error("slot move: thaw after a failure failed; the slots stay frozen until RAFT MOVESLOTS is run again", "err", v.String())
		}
		return why
	}
	if v := n.proposeInternal(ctx, dst, command.KindImport, command.ImportArgs(blob.Str)); v.IsError() {
		log.Warn("slot move: import failed", "err", v.String())
		return thaw(v)
	}
	next, err := n.ShardMap().Assign(a, b, dst)
	enc := next.Encode()
	if err != nil {
		return thaw(resp.Error("ERR " + err.Error()))
	}
	if v := n.proposeInternal(ctx, 0, command.KindShardMap, command.ShardMapArgs(enc)); v.IsError() {
		log.Warn("slot move: shard map update failed", "err", v.String())
		return thaw(v)
	}
	n.noteShardMap(enc)
	// The map already names dst, so the drop must happen: it is idempotent,
	// and it is retried (bounded) through elections and unknown outcomes.
	// Until it applies the source stays frozen and serves nothing stale.
	for end := time.Now().Add(dropRetryFor); ; {
		v := n.proposeInternal(context.Background(), src, command.KindMigrate, command.MigrateArgs("drop", a, b))
		if !v.IsError() {
			break
		}
		if time.Now().After(end) {
			log.Error("slot move: drop in the source failed; the source keeps the slots frozen", "err", v.String())
			return v
		}
		select {
		case <-n.closed:
			return v
		case <-time.After(100 * time.Millisecond):
		}
	}
	log.Info("slots moved", "map_version", next.Version)
	return resp.OK
}
