package raftstore

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/raftstore/group"
	"github.com/lockd/lockd/resp"
)

// The router: Node.Do sends every command of a batch to the group that owns
// its keys. Commands for one group keep their order and travel together (one
// fsync); the sub-batches of different groups run concurrently, since they
// touch different keys. A command that is not simply "one group" — keyless
// commands that concern every group, multi-key commands that span groups, a
// blocking acquire — is a barrier: the commands before it finish first and
// the ones after it start after it, as in Redis.

// ErrCrossSlot is the reply to a multi-key command or script whose keys live
// in different groups (Redis Cluster's text; lockd refuses only across groups,
// not across slots of one group).
const ErrCrossSlot = "CROSSSLOT Keys in request don't hash to the same slot"

// routeKind says how a request is routed.
type routeKind int

const (
	toGroup    routeKind = iota // one group: the target
	crossSlot                   // keys in several groups, not splittable
	splitKeys                   // command.RouteSplit over several groups: split and combine
	fanWrite                    // command.RouteEveryGroup: every group, in order
	fanRead                     // command.RouteCombine: every group, combined
	sessionAll                  // command.RouteSessions: every group where it may exist
	adminAll                    // command.RouteAdmin's membership changes: every group
	barrier                     // one group, but alone (a blocking acquire)
)

type route struct {
	kind  routeKind
	group int
}

// target decides where a request goes: by its row's route
// (command.Route), plus the rules that depend on the Op (a transaction's
// keys, a waiting acquire, a membership change). A request without a row
// goes to group 0.
func (n *Node) target(r command.Request) route {
	if r.Spec == nil {
		return route{}
	}
	switch r.Spec.Route {
	case command.RouteSplit:
		return n.keysRoute(command.CommandKeys(r.Args), true)
	case command.RouteEveryGroup:
		return route{kind: fanWrite}
	case command.RouteCombine:
		return route{kind: fanRead}
	case command.RouteSessions:
		return route{kind: sessionAll}
	case command.RouteAdmin:
		if op, ok := r.Op.(command.Admin); ok {
			switch op.Action {
			case "add", "remove", "transfer":
				return route{kind: adminAll}
			}
		}
		return route{}
	case command.RouteGroupZero, command.RouteLocal:
		return route{}
	}
	// command.RouteKeys
	switch op := r.Op.(type) {
	case command.Tx:
		var keys [][]byte
		for _, w := range op.Watch {
			keys = append(keys, w.Key)
		}
		for _, c := range op.Cmds {
			keys = append(keys, command.CommandKeys(c)...)
		}
		return n.keysRoute(keys, false)
	case command.Versions:
		return n.keysRoute(op.Keys, false)
	case command.LockAcquire:
		g := n.groupOf(op.Name)
		if op.Wait > 0 || op.Session != 0 && g != 0 {
			return route{kind: barrier, group: g}
		}
		return route{group: g}
	case command.BlockingPop: // alone, as a barrier (node_bpop.go)
		t := n.keysRoute(command.CommandKeys(r.Args), false)
		if t.kind == toGroup {
			t.kind = barrier
		}
		return t
	}
	return n.keysRoute(command.CommandKeys(r.Args), false)
}

// keysRoute routes by keys: no keys go to group 0, keys of one group to it,
// and keys of several groups are split when the command allows it.
func (n *Node) keysRoute(keys [][]byte, splittable bool) route {
	if len(keys) == 0 {
		return route{}
	}
	g := n.groupOf(keys[0])
	for _, k := range keys[1:] {
		if n.groupOf(k) != g {
			if splittable {
				return route{kind: splitKeys}
			}
			return route{kind: crossSlot}
		}
	}
	return route{group: g}
}

// Do executes one connection's batch and returns one reply per request (see
// the router's comment above). It may block until the writes commit, and a
// blocking acquire blocks it until granted or timed out.
func (n *Node) Do(ctx context.Context, reqs []command.Request) []resp.Value {
	return n.DoParts(ctx, reqs, nil)
}

// DoParts is Do that also reports each group's replies as that group answers
// them (redisproto.PartStore): part, when not nil, is called from the group's
// goroutine with the indexes of its requests and their replies, and once for
// each request of another kind, all before DoParts returns. A node of one
// group reports nothing: its one part is the result.
func (n *Node) DoParts(ctx context.Context, reqs []command.Request, part func(idx []int, res []resp.Value)) []resp.Value {
	if len(reqs) == 1 {
		if op, ok := reqs[0].Op.(command.Admin); ok && op.Action == "groups" {
			return []resp.Value{n.groupsInfo(ctx)}
		}
	}
	if len(n.gs()) == 1 {
		return n.gs()[0].Do(ctx, reqs)
	}
	out := make([]resp.Value, len(reqs))
	pend := make([][]int, len(n.gs())) // grown below if groups are added meanwhile
	waiting := 0
	flush := func() {
		if waiting == 0 {
			return
		}
		run := func(g int, idx []int) {
			sub := make([]command.Request, len(idx))
			for j, i := range idx {
				sub[j] = reqs[i]
			}
			res := n.runGroup(ctx, g, sub)
			for j, i := range idx {
				out[i] = res[j]
			}
			if part != nil {
				part(idx, res)
			}
		}
		busy := 0
		for _, idx := range pend {
			if len(idx) > 0 {
				busy++
			}
		}
		// Every group's part but the last runs on a goroutine of its own;
		// the last runs on this one, which waits for the others anyway.
		var wg sync.WaitGroup
		for g, idx := range pend {
			switch {
			case len(idx) == 0:
			case busy == 1:
				run(g, idx)
			default:
				busy--
				wg.Add(1)
				go func() {
					defer wg.Done()
					run(g, idx)
				}()
			}
		}
		wg.Wait()
		for g := range pend {
			pend[g] = pend[g][:0]
		}
		waiting = 0
	}
	for i, r := range reqs {
		t := n.target(r)
		if t.kind == toGroup {
			for t.group >= len(pend) {
				pend = append(pend, nil)
			}
			pend[t.group] = append(pend[t.group], i)
			waiting++
			continue
		}
		flush()
		out[i] = n.doSpecial(ctx, r, t)
		if part != nil {
			part([]int{i}, out[i:i+1])
		}
	}
	flush()
	return out
}

// doSpecial runs one request that is not simply "one group".
func (n *Node) doSpecial(ctx context.Context, r command.Request, t route) resp.Value {
	switch t.kind {
	case crossSlot:
		return resp.Error(ErrCrossSlot)
	case splitKeys:
		return n.doSplit(ctx, r)
	case fanWrite:
		return n.fanWrite(ctx, r)
	case fanRead:
		return n.fanRead(ctx, r)
	case sessionAll:
		return n.sessionAll(ctx, r)
	case adminAll:
		return n.adminAll(ctx, r)
	case barrier:
		if _, ok := r.Op.(command.BlockingPop); ok {
			return n.blockingPop(ctx, r, t.group)
		}
		return n.acquire(ctx, r, t.group)
	}
	return n.runGroup(ctx, t.group, []command.Request{r})[0]
}

// moveRetryFor bounds how long a request keeps following a slot that is
// moving between groups.
const moveRetryFor = 10 * time.Second

// isMoveReply reports a group's refusal of a key it no longer owns (MOVED) or
// is handing over (TRYAGAIN … moving): nothing was changed, and the request
// is sent again by the current map.
func isMoveReply(v resp.Value) bool { return v.Outcome.SlotRefused() }

// isRefused reports a reply that says nothing was done and the request may
// simply be sent again (no leader ready: an election or a leadership
// transfer, such as the ones that spread leaders).
func isRefused(v resp.Value) bool { return v.Outcome.Refused() }

// doRetrying runs a sub-batch on group g, and runs it again (bounded by
// group.ElectionWait) while every reply is a refusal: nothing was applied, so a
// leadership hand-over costs the client a pause instead of an error.
func (n *Node) doRetrying(ctx context.Context, g int, reqs []command.Request) []resp.Value {
	end := time.Now().Add(group.ElectionWait)
	for {
		out := n.do(ctx, g, reqs)
		if !allRefused(out) || time.Now().After(end) || !n.pause(ctx, 20*time.Millisecond) {
			return out
		}
	}
}

// pause waits d before a request is sent again, and reports false when ctx
// ends or the node closes first (the caller answers what it has).
func (n *Node) pause(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-n.closed:
		return false
	case <-time.After(d):
		return true
	}
}

// runGroup runs a sub-batch on group g; requests refused because their slot
// moved meanwhile are routed again by the newer map (bounded).
func (n *Node) runGroup(ctx context.Context, g int, reqs []command.Request) []resp.Value {
	out := n.doRetrying(ctx, g, reqs)
	var again []int
	for i, v := range out {
		if isMoveReply(v) {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return out
	}
	end := time.Now().Add(moveRetryFor)
	for len(again) > 0 && time.Now().Before(end) {
		if !n.pause(ctx, 10*time.Millisecond) {
			return out
		}
		n.loadShardMap()
		sub := make([]command.Request, len(again))
		for j, i := range again {
			sub[j] = reqs[i]
		}
		res := n.Do(ctx, sub)
		var still []int
		for j, i := range again {
			out[i] = res[j]
			if isMoveReply(res[j]) {
				still = append(still, i)
			}
		}
		again = still
	}
	return out
}

// eachGroup runs f for every group concurrently and returns the replies by
// group.
func (n *Node) eachGroup(f func(g int) resp.Value) []resp.Value {
	count := len(n.gs())
	out := make([]resp.Value, count)
	var wg sync.WaitGroup
	for g := range count {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[g] = f(g)
		}()
	}
	wg.Wait()
	return out
}

// fanWrite applies a cluster-wide write (FLUSHALL, SCRIPT LOAD|FLUSH,
// NAMESPACE.SET|DEL, ACL SETUSER|DELUSER) to every group. Each is idempotent,
// so a client that sees an error simply sends it again. The reply is group
// 0's, or the first group's error.
func (n *Node) fanWrite(ctx context.Context, r command.Request) resp.Value {
	res := n.eachGroup(func(g int) resp.Value { return n.runGroup(ctx, g, []command.Request{r})[0] })
	for _, v := range res {
		if v.IsError() {
			return v
		}
	}
	return res[0]
}

// scanGroupBits is how many low bits of a SCAN cursor name the group: the
// cursor is the group's own cursor (a key hash) with its low bits replaced by
// the group, so a scan walks group 0, then 1, and so on. Dropping the low bits
// may return a few keys twice, which SCAN allows.
const scanGroupBits = 6

// fanRead combines a read over every group: DBSIZE adds, KEYS concatenates,
// SCAN walks the groups one after another.
func (n *Node) fanRead(ctx context.Context, r command.Request) resp.Value {
	if op, ok := r.Op.(command.Scan); ok {
		return n.scan(ctx, r, op)
	}
	res := n.eachGroup(func(g int) resp.Value { return n.runGroup(ctx, g, []command.Request{r})[0] })
	var sum int64
	var elems []resp.Value
	for _, v := range res {
		if v.IsError() {
			return v
		}
		sum += v.Int
		elems = append(elems, v.Elems...)
	}
	if _, ok := r.Op.(command.DBSize); ok {
		return resp.Int(sum)
	}
	return resp.Array(elems...)
}

func (n *Node) scan(ctx context.Context, r command.Request, op command.Scan) resp.Value {
	const mask = 1<<scanGroupBits - 1
	g := int(op.Cursor & mask)
	if g >= len(n.gs()) {
		return resp.Array(resp.BulkString("0"), resp.EmptyList)
	}
	inner := op.Cursor &^ mask
	args := append([][]byte(nil), r.Args...)
	args[1] = strconv.AppendUint(nil, inner, 10)
	sub := r
	sub.Args = args
	op.Cursor = inner
	sub.Op = op
	v := n.runGroup(ctx, g, []command.Request{sub})[0]
	if v.IsError() || len(v.Elems) != 2 {
		return v
	}
	next, err := strconv.ParseUint(v.Elems[0].String(), 10, 64)
	if err != nil {
		return v
	}
	switch {
	case next != 0:
		next = max(next&^mask, 1<<scanGroupBits) | uint64(g)
	case g+1 < len(n.gs()):
		next = uint64(g + 1)
	}
	return resp.Array(resp.BulkString(strconv.FormatUint(next, 10)), v.Elems[1])
}

// doSplit runs DEL/UNLINK/EXISTS/MGET whose keys span groups as one command
// per group (each atomic in its group; the whole is not atomic, as with a
// Redis Cluster proxy) and combines the replies: counts add, MGET values go
// back to their positions.
func (n *Node) doSplit(ctx context.Context, r command.Request) resp.Value {
	keys := r.Args[1:]
	byGroup := make([][]int, len(n.gs()))
	for i, k := range keys {
		g := n.groupOf(k)
		for g >= len(byGroup) {
			byGroup = append(byGroup, nil) // a group added meanwhile
		}
		byGroup[g] = append(byGroup[g], i)
	}
	res := make([]resp.Value, len(byGroup))
	var wg sync.WaitGroup
	for g, idx := range byGroup {
		if len(idx) == 0 {
			continue
		}
		args := [][]byte{r.Args[0]}
		for _, i := range idx {
			args = append(args, keys[i])
		}
		part, err := group.ParseRequest(r.User, args)
		if err != nil {
			return resp.Error("ERR internal: " + err.Error())
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[g] = n.runGroup(ctx, g, []command.Request{part})[0]
		}()
	}
	wg.Wait()
	if _, ok := r.Op.(command.MGet); ok {
		vals := make([]resp.Value, len(keys))
		for g, idx := range byGroup {
			if len(idx) == 0 {
				continue
			}
			if res[g].IsError() || len(res[g].Elems) != len(idx) {
				return res[g]
			}
			for j, i := range idx {
				vals[i] = res[g].Elems[j]
			}
		}
		return resp.Array(vals...)
	}
	var sum int64
	for g, idx := range byGroup {
		if len(idx) == 0 {
			continue
		}
		if res[g].IsError() {
			return res[g]
		}
		sum += res[g].Int
	}
	return resp.Int(sum)
}

// adminAll runs RAFT ADD/REMOVE/TRANSFER on every group: membership is the
// same in every group. A transfer moves the leadership of every group that
// the named node (or, without one, any other node) can take.
func (n *Node) adminAll(ctx context.Context, r command.Request) resp.Value {
	if op := r.Op.(command.Admin); op.Action == "add" || op.Action == "remove" {
		nodes := len(n.gs()[0].Configuration())
		after := nodes + 1
		if op.Action == "remove" {
			after = nodes - 1
		}
		if n.placed(nodes) || n.placed(after) && n.allPlacing() {
			// (While a member runs a lockd from before placement, a join
			// adds a voter to every group, as that lockd expects.)
			// A placed cluster: group 0's leader places (node_place.go).
			op.Action = "node" + op.Action
			return n.do(ctx, 0, []command.Request{{Op: op, Spec: command.AdminSpec, User: r.User}})[0]
		}
	}
	res := n.eachGroup(func(g int) resp.Value { return n.do(ctx, g, []command.Request{r})[0] })
	for g, v := range res {
		if v.IsError() {
			return resp.Failed(v.Outcome, v.String()+" (group "+strconv.Itoa(g)+")")
		}
	}
	return res[0]
}
