package raftstore

import (
	"context"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/raftstore/group"
	"github.com/lockd/lockd/resp"
)

// blockingPop runs a blocking pop (BLPOP … BZPOPMAX) alone in group g, as a
// barrier: the commands before it finish first and the ones after it wait
// for its reply, as in Redis. When its keys' slot moves to another group
// while it waits (its waiter woken with MOVED), it is queued again there,
// waiting only what is left of its timeout.
func (n *Node) blockingPop(ctx context.Context, r command.Request, g int) resp.Value {
	op := r.Op.(command.BlockingPop)
	start := time.Now()
	for {
		v := n.doRetrying(ctx, g, []command.Request{r})[0]
		if !isMoveReply(v) || time.Since(start) >= moveRetryFor || !n.pause(ctx, 10*time.Millisecond) {
			return v
		}
		n.loadShardMap()
		if op.Timeout > 0 {
			left := op.Timeout - time.Since(start).Milliseconds()
			if left <= 0 {
				return resp.NilArray // a timeout's reply
			}
			if w, err := group.ParseRequest(r.User, op.WithTimeout(r.Args, left)); err == nil {
				r = w
				op = r.Op.(command.BlockingPop)
			}
		}
		t := n.keysRoute(command.CommandKeys(r.Args), false)
		if t.kind != toGroup {
			return resp.Error(ErrCrossSlot)
		}
		g = t.group
	}
}
