package command

import "strings"

// Redis's commands are described by Redis 7.0.15's own files (redisjson/);
// the generator turns them into meta_redis.go. See DESIGN.md, "Metadata".
//go:generate go run ./internal/metagen -in redisjson -out meta_redis.go

// CommandMeta is what COMMAND INFO and COMMAND DOCS report about one command
// (or one subcommand, named "container|sub") beyond what the front door needs
// to run it. Where a Spec and its CommandMeta disagree, the CommandMeta is what
// COMMAND reports: it is Redis 7.0.15's own description of the command.
//
// The slices are shared: callers must not modify them.
type CommandMeta struct {
	Arity      int      // Redis convention: negative = at least -Arity arguments
	Flags      []string // command flags, in Redis's order
	FirstKey   int      // legacy key positions
	LastKey    int
	Step       int
	Categories []string // ACL categories, "@" included, in Redis's order
	Tips       []string // command tips ("nondeterministic_output", "request_policy:…")
	KeySpecs   []KeySpec
	Doc        Doc
}

// KeySpec is one key specification: where the keys of a command are and what
// the command does with them.
type KeySpec struct {
	Notes string   // optional free text ("" = none)
	Flags []string // "RW", "RO", "OW", "RM", then "access", "update", "insert", "delete", …
	Begin BeginSearch
	Find  FindKeys
}

// BeginSearch says where the search for a key spec's keys starts.
type BeginSearch struct {
	Type      string // "index", "keyword" or "unknown"
	Index     int    // Type "index": the argument index of the first key
	Keyword   string // Type "keyword": the keyword that precedes the keys
	StartFrom int    // Type "keyword": where to start looking for it (negative: from the end)
}

// FindKeys says which arguments, from where BeginSearch stopped, are keys.
type FindKeys struct {
	Type      string // "range", "keynum" or "unknown"
	LastKey   int    // Type "range": index of the last key relative to the first (-1 = last argument)
	KeyStep   int    // "range" and "keynum": arguments from one key to the next
	Limit     int    // Type "range": when LastKey is -1, stop after 1/Limit of the remaining arguments (0 = all)
	KeyNumIdx int    // Type "keynum": index of the argument holding the number of keys
	FirstKey  int    // Type "keynum": index of the first key, relative to BeginSearch
}

// Doc is a command's COMMAND DOCS entry, without the argument and history
// trees. The texts are Redis's own, so that clients show what they show for
// Redis.
type Doc struct {
	Summary         string
	Since           string
	Group           string
	Complexity      string   // "" = not reported
	DocFlags        []string // "deprecated", "syscmd"
	DeprecatedSince string   // "" = not reported
	ReplacedBy      string   // "" = not reported
}

// Meta returns the COMMAND INFO / DOCS description of the command (or of the
// subcommand "container|sub") named name, in any case.
func Meta(name string) (CommandMeta, bool) {
	m, ok := metaTable[strings.ToLower(name)]
	return m, ok
}

// metaTable describes every command lockd answers, by lower-case name: the
// commands Redis 7.0.15 has as that Redis reports them (redisMeta, generated
// from redisjson/ into meta_redis.go), and lockd's own (lockdMeta, below).
var metaTable = mergeMeta(redisMeta, lockdMeta)

// mergeMeta returns one table holding the entries of all tables. A name in
// two of them is a programming error (a hand-written entry shadowing Redis's,
// or the reverse): it panics, so the package cannot start with it.
func mergeMeta(tables ...map[string]CommandMeta) map[string]CommandMeta {
	n := 0
	for _, t := range tables {
		n += len(t)
	}
	out := make(map[string]CommandMeta, n)
	for _, t := range tables {
		for name, m := range t {
			if _, dup := out[name]; dup {
				panic("command: two metadata entries for " + name)
			}
			out[name] = m
		}
	}
	return out
}

// words splits a space-separated list: the tables are easier to read that
// way. It and the helpers below are shared by lockdMeta and the generated
// redisMeta.
func words(s string) []string { return strings.Fields(s) }

func atIndex(i int) BeginSearch { return BeginSearch{Type: "index", Index: i} }

func keyNum(numIdx, first, step int) FindKeys {
	return FindKeys{Type: "keynum", KeyNumIdx: numIdx, FirstKey: first, KeyStep: step}
}

func keysRange(last, step, limit int) FindKeys {
	return FindKeys{Type: "range", LastKey: last, KeyStep: step, Limit: limit}
}

// lockdMeta describes the commands lockd answers that Redis 7.0.15 lacks, in
// the conventions of Redis's own descriptions (meta_redis.go). An entry here
// must not name a command of redisMeta: mergeMeta refuses the table then.
var lockdMeta = map[string]CommandMeta{
	// ---- Cluster membership (RAFT and its subcommands).
	"raft": {
		Arity:      -2,
		Categories: words("@slow"),
		Doc:        Doc{Summary: "A container for Raft cluster membership commands (lockd)", Since: "0.1.0", Group: "server", Complexity: "Depends on subcommand."},
	},
	"raft|add": {
		Arity: 4, Flags: words("admin noscript"),
		Categories: words("@admin @slow @dangerous"),
		Doc:        Doc{Summary: "Add a voter to the cluster (lockd)", Since: "0.1.0", Group: "server", Complexity: "O(1)"},
	},
	"raft|remove": {
		Arity: 3, Flags: words("admin noscript"),
		Categories: words("@admin @slow @dangerous"),
		Doc:        Doc{Summary: "Remove a node from the cluster (lockd)", Since: "0.1.0", Group: "server", Complexity: "O(1)"},
	},
	"raft|transfer": {
		Arity: -2, Flags: words("admin noscript"),
		Categories: words("@admin @slow @dangerous"),
		Doc:        Doc{Summary: "Transfer leadership to a node (lockd)", Since: "0.1.0", Group: "server", Complexity: "O(1)"},
	},
	"raft|members": {
		Arity: 2, Flags: words("loading stale"),
		Categories: words("@slow"),
		Doc:        Doc{Summary: "List the members of the cluster (lockd)", Since: "0.1.0", Group: "server", Complexity: "O(N) where N is the number of members"},
	},
	"raft|groups": {
		Arity: 2, Flags: words("loading stale"),
		Categories: words("@slow"),
		Doc:        Doc{Summary: "List the Raft groups: leader, term, indexes, voters and slots (lockd)", Since: "0.1.0", Group: "server", Complexity: "O(N) where N is the number of groups"},
	},
	"raft|moveslots": {
		Arity: 5, Flags: words("admin noscript"),
		Categories: words("@admin @slow @dangerous"),
		Doc:        Doc{Summary: "Move a range of slots to another Raft group, online (lockd)", Since: "0.1.0", Group: "server", Complexity: "O(N) where N is the number of keys in the slots"},
	},
	"raft|addgroups": {
		Arity: 3, Flags: words("admin noscript"),
		Categories: words("@admin @slow @dangerous"),
		Doc:        Doc{Summary: "Add Raft groups to the cluster and move their share of the slots to them, online (lockd)", Since: "0.1.0", Group: "server", Complexity: "O(N) where N is the number of keys in the slots moved"},
	},
	"raft|help": {
		Arity: 2, Flags: words("loading stale"),
		Categories: words("@slow"),
		Doc:        Doc{Summary: "Show helpful text about the different subcommands", Since: "0.1.0", Group: "server", Complexity: "O(1)"},
	},

	// ---- Locks (lock.go), namespaces (namespace.go) and sessions (session.go).
	"lock.acquire": {
		Arity: -3, Flags: words("write denyoom"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@write @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RW insert"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Acquire a lock, shared lock or semaphore slot with a fencing token (lockd)", Since: "0.1.0", Group: "lock", Complexity: "O(N) where N is the number of holders"},
	},
	"lock.release": {
		Arity: 3, Flags: words("write fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@write @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RW delete"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Release a lock held under a fencing token (lockd)", Since: "0.1.0", Group: "lock", Complexity: "O(N) where N is the number of holders"},
	},
	"lock.extend": {
		Arity: 4, Flags: words("write fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@write @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RW update"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Extend the lease of a lock held under a fencing token (lockd)", Since: "0.1.0", Group: "lock", Complexity: "O(N) where N is the number of holders"},
	},
	"lock.validate": {
		Arity: 3, Flags: words("readonly fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@read @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RO access"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Check whether a fencing token holds a lock now (lockd)", Since: "0.1.0", Group: "lock", Complexity: "O(N) where N is the number of holders"},
	},
	"lock.info": {
		Arity: 2, Flags: words("readonly fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@read @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RO access"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Show a lock's mode, holders and waiters (lockd)", Since: "0.1.0", Group: "lock", Complexity: "O(N) where N is the number of holders"},
	},
	"pop.cancel": {
		Arity: 3, Flags: words("write fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@write @list @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RW"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Withdraw a blocked pop (BLPOP, BLMOVE, BZPOPMIN …) waiting on a key under its node's tag (lockd)", Since: "0.3.0", Group: "list", Complexity: "O(log N) where N is the number of blocked pops"},
	},
	"pop.renew": {
		Arity: -2, Flags: words("write fast"),
		Categories: words("@write @list @fast"),
		Doc:        Doc{Summary: "Renew the leases of the blocked pops a node holds the clients of (lockd)", Since: "0.3.0", Group: "list", Complexity: "O(N log M) for N tags and M blocked pops"},
	},
	"pop.wait": {
		Arity: -4, Flags: words("write"),
		Categories: words("@write @list @slow @blocking"),
		Doc:        Doc{Summary: "A blocking pop (BLPOP … BZPOPMAX) tagged by the node that holds its client (lockd)", Since: "0.3.0", Group: "list", Complexity: "The inner command's"},
	},
	"lock.cancel": {
		Arity: -3, Flags: words("write fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@write @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RW delete"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Withdraw a queued LOCK.ACQUIRE; answers the token if it was granted already (lockd)", Since: "0.2.0", Group: "lock", Complexity: "O(N) where N is the number of holders and waiters"},
	},
	"namespace.set": {
		Arity: -2, Flags: words("write admin"),
		Categories: words("@write @admin @slow"),
		Doc:        Doc{Summary: "Create or change a namespace: limits, lock-delay and safety class of a key prefix (lockd)", Since: "0.2.0", Group: "lock", Complexity: "O(N) where N is the number of namespaces"},
	},
	"namespace.get": {
		Arity: 2, Flags: words("readonly"),
		Categories: words("@read @slow"),
		Doc:        Doc{Summary: "Show a namespace's settings (lockd)", Since: "0.2.0", Group: "lock", Complexity: "O(log N) where N is the number of namespaces"},
	},
	"namespace.list": {
		Arity: 1, Flags: words("readonly"),
		Categories: words("@read @slow"),
		Doc:        Doc{Summary: "List the namespaces' prefixes (lockd)", Since: "0.2.0", Group: "lock", Complexity: "O(N) where N is the number of namespaces"},
	},
	"namespace.del": {
		Arity: 2, Flags: words("write admin"),
		Categories: words("@write @admin @slow"),
		Doc:        Doc{Summary: "Delete a namespace (its keys stay) (lockd)", Since: "0.2.0", Group: "lock", Complexity: "O(N) where N is the number of namespaces"},
	},
	"session.open": {
		Arity: -1, Flags: words("write denyoom fast"),
		Categories: words("@write @fast"),
		Doc:        Doc{Summary: "Open a session: its locks live while it is kept alive (lockd)", Since: "0.1.0", Group: "lock", Complexity: "O(N) where N is the number of locks of the session"},
	},
	"session.keepalive": {
		Arity: 2, Flags: words("readonly fast"),
		Categories: words("@read @fast"),
		Doc:        Doc{Summary: "Keep a session alive; no log write (lockd)", Since: "0.1.0", Group: "lock", Complexity: "O(N) where N is the number of locks of the session"},
	},
	"session.close": {
		Arity: 2, Flags: words("write fast"),
		Categories: words("@write @fast"),
		Doc:        Doc{Summary: "Close a session and release its locks (lockd)", Since: "0.1.0", Group: "lock", Complexity: "O(N) where N is the number of locks of the session"},
	},

	// ---- Commands of later Redis versions: DELEX, DIGEST and CLIENT SETINFO / NO-TOUCH are
	// described as the Redis versions that added them describe them; FENCE is
	// lockd's own.
	"delex": {
		Arity: -2, Flags: words("write fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@write @string @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RW delete"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Conditionally removes the specified key based on value or digest comparison.", Since: "8.4.0", Group: "string", Complexity: "O(1) for IFEQ/IFNE, O(N) for IFDEQ/IFDNE where N is the length of the string value."},
	},
	"digest": {
		Arity: 2, Flags: words("readonly fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@read @string @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RO access"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Returns the XXH3 hash of a string value.", Since: "8.4.0", Group: "string", Complexity: "O(N) where N is the length of the string value."},
	},
	"fence": {
		Arity: -2, Flags: words("readonly fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@keyspace @read @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RO access"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Return the fencing token of a key's current value (lockd extension)", Since: "0.1.0", Group: "generic", Complexity: "O(1)"},
	},
	"client|no-touch": {
		Arity: 3, Flags: words("noscript loading stale"),
		Categories: words("@slow @connection"),
		Doc:        Doc{Summary: "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.", Since: "7.2.0", Group: "connection", Complexity: "O(1)"},
	},
	"client|setinfo": {
		Arity: 4, Flags: words("noscript loading stale"),
		Categories: words("@slow @connection"),
		Doc:        Doc{Summary: "Sets information specific to the client or connection.", Since: "7.2.0", Group: "connection", Complexity: "O(1)"},
	},
}
