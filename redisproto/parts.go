package redisproto

import (
	"context"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// PartStore is a Store that answers a batch in parts: raftstore.Node, whose
// batch spans Raft groups and each group answers its own requests. The event
// loop uses it so that a turn stalled by one group (no leader for a moment)
// answers each of its connections as soon as that connection's own requests
// are done, not when the whole batch is (turnParts, parts_linux.go).
type PartStore interface {
	// DoParts is Store.Do that may also call part, from any goroutine and
	// before it returns, with requests whose replies are final: res[j] is the
	// reply of reqs[idx[j]]. Each request is reported at most once; one not
	// reported gets its reply in DoParts's result only. part must not keep
	// idx or res.
	DoParts(ctx context.Context, reqs []command.Request, part func(idx []int, res []resp.Value)) []resp.Value
}
