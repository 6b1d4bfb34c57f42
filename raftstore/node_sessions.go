package raftstore

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/outcome"
	"github.com/lockd/lockd/raftstore/group"
	"github.com/lockd/lockd/resp"
)

// Sessions across groups. A session is opened in group 0 (its id is an index
// of group 0's log, unique in the cluster) and exists lazily in each other
// group it touches: the first LOCK.ACQUIRE … SESSION id that a group does not
// know makes the node check with group 0 that the session lives and then
// attach it there (a KindSessionAttach entry with the session's TTL). A
// keepalive renews it in every group, a close ends it in every group, and when
// group 0 reports it gone the node closes it everywhere else, so that its
// locks in every group are released. A session's owner travels with its
// attach (owners.go): each group checks the sessions it knows.

// isNoSession reports a NOSESSION reply.
func isNoSession(v resp.Value) bool { return v.Outcome == outcome.NoSession }

// sessionAll runs SESSION.KEEPALIVE or SESSION.CLOSE in every group.
//
// KEEPALIVE answers group 0's reply. Groups that do not know the session
// (never attached) are skipped; a group whose keepalive failed otherwise makes
// the reply that error, so the client treats the keepalive as failed and
// retries (its locks there stay safe by their own timers). When group 0 no
// longer knows the session, it is closed in every other group and the reply
// is NOSESSION. CLOSE answers the number of locks released in all groups.
// Group 0, which knows every session and its owner, runs first: when it
// refuses the user (NOPERM) no other group is asked, so that a group whose
// copy of the session has no owner (attached before owners were on) changes
// nothing either.
func (n *Node) sessionAll(ctx context.Context, r command.Request) resp.Value {
	first := n.runGroup(ctx, 0, []command.Request{r})[0]
	if first.Outcome == outcome.Denied {
		return first
	}
	res := n.eachGroup(func(g int) resp.Value {
		if g == 0 {
			return first
		}
		return n.runGroup(ctx, g, []command.Request{r})[0]
	})
	if _, ok := r.Op.(command.SessionClose); ok {
		var sum int64
		for _, v := range res {
			if v.IsError() && !isNoSession(v) {
				return v
			}
			sum += v.Int
		}
		if isNoSession(res[0]) && sum == 0 {
			return res[0]
		}
		return resp.Int(sum)
	}
	op := r.Op.(command.SessionKeepalive)
	if isNoSession(res[0]) {
		n.closeEverywhere(ctx, op.ID)
		return res[0]
	}
	if res[0].IsError() {
		return res[0]
	}
	for _, v := range res[1:] {
		if v.IsError() && !isNoSession(v) {
			return v
		}
	}
	return res[0]
}

// closeEverywhere ends a session that group 0 no longer knows in every other
// group (bounded; a group that cannot be reached ends it by its own timer).
func (n *Node) closeEverywhere(ctx context.Context, id uint64) {
	r, err := group.ParseRequest("", [][]byte{[]byte("SESSION.CLOSE"), strconv.AppendUint(nil, id, 10)})
	if err != nil {
		return
	}
	c, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	n.eachGroup(func(g int) resp.Value {
		if g == 0 {
			return resp.OK
		}
		return n.do(c, g, []command.Request{r})[0]
	})
}

// acquire runs a LOCK.ACQUIRE that may block or names a session in a group
// other than 0: alone, attaching the session to the group first when the
// group does not know it, and queueing again in the new group when the name's
// slot moved while it waited.
func (n *Node) acquire(ctx context.Context, r command.Request, g int) resp.Value {
	op := r.Op.(command.LockAcquire)
	start := time.Now()
	for attempt := 0; ; attempt++ {
		v := n.doRetrying(ctx, g, []command.Request{r})[0]
		switch {
		case isNoSession(v) && g != 0 && op.Session != 0 && attempt < 3:
			if a := n.attach(ctx, g, op.Session, r.User); a.IsError() {
				return a
			}
		case isMoveReply(v) && time.Since(start) < moveRetryFor:
			if !n.pause(ctx, 10*time.Millisecond) {
				return v
			}
			n.loadShardMap()
			if op.Wait > 0 { // wait only what is left of the client's WAIT
				left := op.Wait - time.Since(start).Milliseconds()
				if left <= 0 {
					return resp.Nil
				}
				r = withWait(r, left)
				op = r.Op.(command.LockAcquire)
			}
			g = n.groupOf(op.Name)
		default:
			return v
		}
	}
}

// withWait returns the acquire with its WAIT set to ms.
func withWait(r command.Request, ms int64) command.Request {
	args := append([][]byte(nil), r.Args...)
	for i := 1; i+1 < len(args); i++ {
		if strings.EqualFold(string(args[i]), "WAIT") {
			args[i+1] = strconv.AppendInt(nil, ms, 10)
			break
		}
	}
	if w, err := group.ParseRequest(r.User, args); err == nil {
		return w
	}
	return r
}

// attach makes session id exist in group g for user: group 0 must still know
// it and let user use it (a keepalive there as user, which also renews it:
// NOPERM for another user's session), and g gets it with group 0's TTL and
// owner (read from this node's replica of group 0 once it has applied the
// session's opening).
func (n *Node) attach(ctx context.Context, g int, id uint64, user string) resp.Value {
	keepalive, err := group.ParseRequest(user, [][]byte{[]byte("SESSION.KEEPALIVE"), strconv.AppendUint(nil, id, 10)})
	if err != nil {
		return resp.Error("ERR internal: " + err.Error())
	}
	ttl := n.doRetrying(ctx, 0, []command.Request{keepalive})[0]
	if ttl.IsError() {
		return ttl
	}
	owner, open, err := n.gs()[0].AppliedSessionOwner(ctx, id)
	switch {
	case err != nil:
		return command.ErrorReply(err)
	case !open:
		return command.ErrNoSession.Reply()
	case owner != "":
		return n.proposeInternal(ctx, g, command.KindSessionAttach, command.SessionAttachOwnerArgs(id, ttl.Int, owner))
	}
	return n.proposeInternal(ctx, g, command.KindSessionAttach, command.SessionAttachArgs(id, ttl.Int))
}
