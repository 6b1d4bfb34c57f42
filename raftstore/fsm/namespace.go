package fsm

import (
	"sort"
	"strings"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// Namespace is the replicated configuration of a key prefix (NAMESPACE.SET).
// Zero values mean "not set": no MAXTTL, the built-in default TTL, no rate limit,
// no lock-delay; MaxWaiters is -1 when unset (command.DefaultMaxWaiters).
type Namespace struct {
	Prefix     string
	MaxTTL     int64 // ms
	DefaultTTL int64 // ms
	MaxWaiters int64
	Rate       int64 // operations per second, enforced by the leader
	LockDelay  int64 // ms
	Safety     string
	FencedBy   string
}

// namespaceFor returns the namespace with the longest prefix of name; the zero
// Namespace (MaxWaiters -1) when none matches.
func (k *Keyspace) namespaceFor(name []byte) Namespace {
	best := -1
	for i, ns := range k.namespaces {
		if strings.HasPrefix(string(name), ns.Prefix) && (best < 0 || len(ns.Prefix) > len(k.namespaces[best].Prefix)) {
			best = i
		}
	}
	if best < 0 {
		return Namespace{MaxWaiters: -1}
	}
	return k.namespaces[best]
}

// NamespaceFor is namespaceFor for the leader's rate limiter: ok is false when no
// namespace matches.
func (k *Keyspace) NamespaceFor(name []byte) (Namespace, bool) {
	ns := k.namespaceFor(name)
	return ns, ns.Prefix != ""
}

// HasNamespaces reports whether any namespace is set.
func (k *Keyspace) HasNamespaces() bool { return len(k.namespaces) > 0 }

func (k *Keyspace) findNamespace(prefix []byte) int {
	i := sort.Search(len(k.namespaces), func(i int) bool { return k.namespaces[i].Prefix >= string(prefix) })
	if i < len(k.namespaces) && k.namespaces[i].Prefix == string(prefix) {
		return i
	}
	return -1
}

// NAMESPACE.SET: OK, or an error when the result would be inconsistent.
func (k *Keyspace) namespaceSet(op command.NamespaceSet) resp.Value {
	ns := Namespace{Prefix: string(op.Prefix), MaxWaiters: -1}
	i := k.findNamespace(op.Prefix)
	if i >= 0 {
		ns = k.namespaces[i]
	}
	set := func(dst *int64, v int64) {
		if v >= 0 {
			*dst = v
		}
	}
	set(&ns.MaxTTL, op.MaxTTL)
	set(&ns.DefaultTTL, op.DefaultTTL)
	set(&ns.MaxWaiters, op.MaxWaiters)
	set(&ns.Rate, op.Rate)
	set(&ns.LockDelay, op.LockDelay)
	if op.Safety != "" {
		ns.Safety = op.Safety
	}
	if op.FencedBySet {
		ns.FencedBy = string(op.FencedBy)
	}
	if ns.MaxTTL > 0 && ns.DefaultTTL > ns.MaxTTL {
		return resp.Error("ERR DEFAULTTTL must not exceed MAXTTL")
	}
	// Copy on write: a script dry run's clone shares the slice.
	next := append([]Namespace(nil), k.namespaces...)
	if i >= 0 {
		next[i] = ns
	} else {
		next = append(next, ns)
		sort.Slice(next, func(a, b int) bool { return next[a].Prefix < next[b].Prefix })
	}
	k.namespaces = next
	return resp.OK
}

// NAMESPACE.DEL: 1 when the namespace existed.
func (k *Keyspace) namespaceDel(op command.NamespaceDel) resp.Value {
	i := k.findNamespace(op.Prefix)
	if i < 0 {
		return resp.Zero
	}
	next := append([]Namespace(nil), k.namespaces[:i]...)
	k.namespaces = append(next, k.namespaces[i+1:]...)
	return resp.One
}

// NAMESPACE.GET: the settings as a map, nil when there is no such namespace.
func (k *Keyspace) namespaceGet(op command.NamespaceGet) resp.Value {
	i := k.findNamespace(op.Prefix)
	if i < 0 {
		return resp.Nil
	}
	ns := k.namespaces[i]
	maxWaiters := ns.MaxWaiters
	if maxWaiters < 0 {
		maxWaiters = command.DefaultMaxWaiters
	}
	defaultTTL := ns.DefaultTTL
	if defaultTTL == 0 {
		defaultTTL = command.DefaultLockTTL
	}
	safety := ns.Safety
	if safety == "" {
		safety = "efficiency"
	}
	return resp.Map(
		resp.BulkString("prefix"), resp.BulkString(ns.Prefix),
		resp.BulkString("maxttl"), resp.Int(ns.MaxTTL),
		resp.BulkString("defaultttl"), resp.Int(defaultTTL),
		resp.BulkString("maxwaiters"), resp.Int(maxWaiters),
		resp.BulkString("rate"), resp.Int(ns.Rate),
		resp.BulkString("lockdelay"), resp.Int(ns.LockDelay),
		resp.BulkString("safety"), resp.BulkString(safety),
		resp.BulkString("fencedby"), resp.BulkString(ns.FencedBy),
	)
}

// NAMESPACE.LIST: the prefixes, sorted.
func (k *Keyspace) namespaceList() resp.Value {
	out := make([]resp.Value, len(k.namespaces))
	for i, ns := range k.namespaces {
		out[i] = resp.BulkString(ns.Prefix)
	}
	return resp.Array(out...)
}
