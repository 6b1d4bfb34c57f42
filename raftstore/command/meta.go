package command

import "strings"

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

// words splits a space-separated list: the table is easier to read that way.
func words(s string) []string { return strings.Fields(s) }

func atIndex(i int) BeginSearch { return BeginSearch{Type: "index", Index: i} }

func keyNum(numIdx, first, step int) FindKeys {
	return FindKeys{Type: "keynum", KeyNumIdx: numIdx, FirstKey: first, KeyStep: step}
}

func keysRange(last, step, limit int) FindKeys {
	return FindKeys{Type: "range", LastKey: last, KeyStep: step, Limit: limit}
}

// metaTable describes every command lockd answers. The entries for commands
// Redis 7.0.15 has are what that Redis reports for them (COMMAND INFO and
// COMMAND DOCS), byte for byte once rendered; the lockd-only commands at the
// end follow the same conventions.
var metaTable = map[string]CommandMeta{
	// ---- keyspace commands (command.Specs)
	"dbsize": {
		Arity: 1, Flags: words("readonly fast"),
		Categories: words("@keyspace @read @fast"),
		Tips:       []string{"request_policy:all_shards", "response_policy:agg_sum"},
		Doc:        Doc{Summary: "Return the number of keys in the selected database", Since: "1.0.0", Group: "server", Complexity: "O(1)"},
	},
	"decr": {
		Arity: 2, Flags: words("write denyoom fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@write @string @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RW access update"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Decrement the integer value of a key by one", Since: "1.0.0", Group: "string", Complexity: "O(1)"},
	},
	"decrby": {
		Arity: 3, Flags: words("write denyoom fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@write @string @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RW access update"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Decrement the integer value of a key by the given number", Since: "1.0.0", Group: "string", Complexity: "O(1)"},
	},
	"del": {
		Arity: -2, Flags: words("write"), FirstKey: 1, LastKey: -1, Step: 1,
		Categories: words("@keyspace @write @slow"),
		Tips:       []string{"request_policy:multi_shard", "response_policy:agg_sum"},
		KeySpecs:   []KeySpec{{Flags: words("RM delete"), Begin: atIndex(1), Find: keysRange(-1, 1, 0)}},
		Doc:        Doc{Summary: "Delete a key", Since: "1.0.0", Group: "generic", Complexity: "O(N) where N is the number of keys that will be removed. When a key to remove holds a value other than a string, the individual complexity for this key is O(M) where M is the number of elements in the list, set, sorted set or hash. Removing a single key that holds a string value is O(1)."},
	},
	"exists": {
		Arity: -2, Flags: words("readonly fast"), FirstKey: 1, LastKey: -1, Step: 1,
		Categories: words("@keyspace @read @fast"),
		Tips:       []string{"request_policy:multi_shard", "response_policy:agg_sum"},
		KeySpecs:   []KeySpec{{Flags: words("RO"), Begin: atIndex(1), Find: keysRange(-1, 1, 0)}},
		Doc:        Doc{Summary: "Determine if a key exists", Since: "1.0.0", Group: "generic", Complexity: "O(N) where N is the number of keys to check."},
	},
	"expire": {
		Arity: -3, Flags: words("write fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@keyspace @write @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RW update"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Set a key's time to live in seconds", Since: "1.0.0", Group: "generic", Complexity: "O(1)"},
	},
	"expireat": {
		Arity: -3, Flags: words("write fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@keyspace @write @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RW update"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Set the expiration for a key as a UNIX timestamp", Since: "1.2.0", Group: "generic", Complexity: "O(1)"},
	},
	"expiretime": {
		Arity: 2, Flags: words("readonly fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@keyspace @read @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RO access"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Get the expiration Unix timestamp for a key", Since: "7.0.0", Group: "generic", Complexity: "O(1)"},
	},
	"flushall": {
		Arity: -1, Flags: words("write"),
		Categories: words("@keyspace @write @slow @dangerous"),
		Tips:       []string{"request_policy:all_shards", "response_policy:all_succeeded"},
		Doc:        Doc{Summary: "Remove all keys from all databases", Since: "1.0.0", Group: "server", Complexity: "O(N) where N is the total number of keys in all databases"},
	},
	"eval": {
		Arity: -3, Flags: words("noscript stale skip_monitor no_mandatory_keys movablekeys"),
		Categories: words("@slow @scripting"),
		KeySpecs: []KeySpec{{Notes: "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE",
			Flags: words("RW access update"), Begin: atIndex(2), Find: keyNum(0, 1, 1)}},
		Doc: Doc{Summary: "Execute a Lua script server side", Since: "2.6.0", Group: "scripting", Complexity: "Depends on the script that is executed."},
	},
	"evalsha": {
		Arity: -3, Flags: words("noscript stale skip_monitor no_mandatory_keys movablekeys"),
		Categories: words("@slow @scripting"),
		KeySpecs:   []KeySpec{{Flags: words("RW access update"), Begin: atIndex(2), Find: keyNum(0, 1, 1)}},
		Doc:        Doc{Summary: "Execute a Lua script server side", Since: "2.6.0", Group: "scripting", Complexity: "Depends on the script that is executed."},
	},
	"eval_ro": {
		Arity: -3, Flags: words("readonly noscript stale skip_monitor no_mandatory_keys movablekeys"),
		Categories: words("@slow @scripting"),
		KeySpecs: []KeySpec{{Notes: "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS",
			Flags: words("RO access"), Begin: atIndex(2), Find: keyNum(0, 1, 1)}},
		Doc: Doc{Summary: "Execute a read-only Lua script server side", Since: "7.0.0", Group: "scripting", Complexity: "Depends on the script that is executed."},
	},
	"evalsha_ro": {
		Arity: -3, Flags: words("readonly noscript stale skip_monitor no_mandatory_keys movablekeys"),
		Categories: words("@slow @scripting"),
		KeySpecs:   []KeySpec{{Flags: words("RO access"), Begin: atIndex(2), Find: keyNum(0, 1, 1)}},
		Doc:        Doc{Summary: "Execute a read-only Lua script server side", Since: "7.0.0", Group: "scripting", Complexity: "Depends on the script that is executed."},
	},
	"script": {
		Arity:      -2,
		Categories: words("@slow"),
		Doc:        Doc{Summary: "A container for Lua scripts management commands", Since: "2.6.0", Group: "scripting", Complexity: "Depends on subcommand."},
	},
	"script|exists": {
		Arity: -3, Flags: words("noscript"),
		Categories: words("@slow @scripting"),
		Tips:       []string{"request_policy:all_shards", "response_policy:agg_logical_and"},
		Doc:        Doc{Summary: "Check existence of scripts in the script cache.", Since: "2.6.0", Group: "scripting", Complexity: "O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation)."},
	},
	"script|flush": {
		Arity: -2, Flags: words("noscript"),
		Categories: words("@slow @scripting"),
		Tips:       []string{"request_policy:all_nodes", "response_policy:all_succeeded"},
		Doc:        Doc{Summary: "Remove all the scripts from the script cache.", Since: "2.6.0", Group: "scripting", Complexity: "O(N) with N being the number of scripts in cache"},
	},
	"script|help": {
		Arity: 2, Flags: words("loading stale"),
		Categories: words("@slow @scripting"),
		Doc:        Doc{Summary: "Show helpful text about the different subcommands", Since: "5.0.0", Group: "scripting", Complexity: "O(1)"},
	},
	"script|kill": {
		Arity: 2, Flags: words("noscript allow_busy"),
		Categories: words("@slow @scripting"),
		Tips:       []string{"request_policy:all_shards", "response_policy:one_succeeded"},
		Doc:        Doc{Summary: "Kill the script currently in execution.", Since: "2.6.0", Group: "scripting", Complexity: "O(1)"},
	},
	"script|load": {
		Arity: 3, Flags: words("noscript stale"),
		Categories: words("@slow @scripting"),
		Tips:       []string{"request_policy:all_nodes", "response_policy:all_succeeded"},
		Doc:        Doc{Summary: "Load the specified Lua script into the script cache.", Since: "2.6.0", Group: "scripting", Complexity: "O(N) with N being the length in bytes of the script body."},
	},
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
	"raft|help": {
		Arity: 2, Flags: words("loading stale"),
		Categories: words("@slow"),
		Doc:        Doc{Summary: "Show helpful text about the different subcommands", Since: "0.1.0", Group: "server", Complexity: "O(1)"},
	},
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
	"get": {
		Arity: 2, Flags: words("readonly fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@read @string @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RO access"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Get the value of a key", Since: "1.0.0", Group: "string", Complexity: "O(1)"},
	},
	"getdel": {
		Arity: 2, Flags: words("write fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@write @string @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RW access delete"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Get the value of a key and delete the key", Since: "6.2.0", Group: "string", Complexity: "O(1)"},
	},
	"getex": {
		Arity: -2, Flags: words("write fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@write @string @fast"),
		KeySpecs:   []KeySpec{{Notes: "RW and UPDATE because it changes the TTL", Flags: words("RW access update"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Get the value of a key and optionally set its expiration", Since: "6.2.0", Group: "string", Complexity: "O(1)"},
	},
	"getrange": {
		Arity: 4, Flags: words("readonly"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@read @string @slow"),
		KeySpecs:   []KeySpec{{Flags: words("RO access"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Get a substring of the string stored at a key", Since: "2.4.0", Group: "string", Complexity: "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings."},
	},
	"hdel": {
		Arity: -3, Flags: words("write fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@write @hash @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RW delete"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Delete one or more hash fields", Since: "2.0.0", Group: "hash", Complexity: "O(N) where N is the number of fields to be removed."},
	},
	"hexists": {
		Arity: 3, Flags: words("readonly fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@read @hash @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RO"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Determine if a hash field exists", Since: "2.0.0", Group: "hash", Complexity: "O(1)"},
	},
	"hget": {
		Arity: 3, Flags: words("readonly fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@read @hash @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RO access"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Get the value of a hash field", Since: "2.0.0", Group: "hash", Complexity: "O(1)"},
	},
	"hgetall": {
		Arity: 2, Flags: words("readonly"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@read @hash @slow"),
		Tips:       []string{"nondeterministic_output_order"},
		KeySpecs:   []KeySpec{{Flags: words("RO access"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Get all the fields and values in a hash", Since: "2.0.0", Group: "hash", Complexity: "O(N) where N is the size of the hash."},
	},
	"hincrby": {
		Arity: 4, Flags: words("write denyoom fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@write @hash @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RW access update"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Increment the integer value of a hash field by the given number", Since: "2.0.0", Group: "hash", Complexity: "O(1)"},
	},
	"hkeys": {
		Arity: 2, Flags: words("readonly"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@read @hash @slow"),
		Tips:       []string{"nondeterministic_output_order"},
		KeySpecs:   []KeySpec{{Flags: words("RO access"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Get all the fields in a hash", Since: "2.0.0", Group: "hash", Complexity: "O(N) where N is the size of the hash."},
	},
	"hlen": {
		Arity: 2, Flags: words("readonly fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@read @hash @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RO"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Get the number of fields in a hash", Since: "2.0.0", Group: "hash", Complexity: "O(1)"},
	},
	"hmget": {
		Arity: -3, Flags: words("readonly fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@read @hash @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RO access"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Get the values of all the given hash fields", Since: "2.0.0", Group: "hash", Complexity: "O(N) where N is the number of fields being requested."},
	},
	"hmset": {
		Arity: -4, Flags: words("write denyoom fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@write @hash @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RW update"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Set multiple hash fields to multiple values", Since: "2.0.0", Group: "hash", Complexity: "O(N) where N is the number of fields being set.", DocFlags: words("deprecated"), DeprecatedSince: "4.0.0", ReplacedBy: "`HSET` with multiple field-value pairs"},
	},
	"hset": {
		Arity: -4, Flags: words("write denyoom fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@write @hash @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RW update"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Set the string value of a hash field", Since: "2.0.0", Group: "hash", Complexity: "O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs."},
	},
	"hsetnx": {
		Arity: 4, Flags: words("write denyoom fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@write @hash @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RW insert"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Set the value of a hash field, only if the field does not exist", Since: "2.0.0", Group: "hash", Complexity: "O(1)"},
	},
	"hvals": {
		Arity: 2, Flags: words("readonly"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@read @hash @slow"),
		Tips:       []string{"nondeterministic_output_order"},
		KeySpecs:   []KeySpec{{Flags: words("RO access"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Get all the values in a hash", Since: "2.0.0", Group: "hash", Complexity: "O(N) where N is the size of the hash."},
	},
	"incr": {
		Arity: 2, Flags: words("write denyoom fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@write @string @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RW access update"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Increment the integer value of a key by one", Since: "1.0.0", Group: "string", Complexity: "O(1)"},
	},
	"incrby": {
		Arity: 3, Flags: words("write denyoom fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@write @string @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RW access update"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Increment the integer value of a key by the given amount", Since: "1.0.0", Group: "string", Complexity: "O(1)"},
	},
	"keys": {
		Arity: 2, Flags: words("readonly"),
		Categories: words("@keyspace @read @slow @dangerous"),
		Tips:       []string{"request_policy:all_shards", "nondeterministic_output_order"},
		Doc:        Doc{Summary: "Find all keys matching the given pattern", Since: "1.0.0", Group: "generic", Complexity: "O(N) with N being the number of keys in the database, under the assumption that the key names in the database and the given pattern have limited length."},
	},
	"mget": {
		Arity: -2, Flags: words("readonly fast"), FirstKey: 1, LastKey: -1, Step: 1,
		Categories: words("@read @string @fast"),
		Tips:       []string{"request_policy:multi_shard"},
		KeySpecs:   []KeySpec{{Flags: words("RO access"), Begin: atIndex(1), Find: keysRange(-1, 1, 0)}},
		Doc:        Doc{Summary: "Get the values of all the given keys", Since: "1.0.0", Group: "string", Complexity: "O(N) where N is the number of keys to retrieve."},
	},
	"mset": {
		Arity: -3, Flags: words("write denyoom"), FirstKey: 1, LastKey: -1, Step: 2,
		Categories: words("@write @string @slow"),
		Tips:       []string{"request_policy:multi_shard", "response_policy:all_succeeded"},
		KeySpecs:   []KeySpec{{Flags: words("OW update"), Begin: atIndex(1), Find: keysRange(-1, 2, 0)}},
		Doc:        Doc{Summary: "Set multiple keys to multiple values", Since: "1.0.1", Group: "string", Complexity: "O(N) where N is the number of keys to set."},
	},
	"msetnx": {
		Arity: -3, Flags: words("write denyoom"), FirstKey: 1, LastKey: -1, Step: 2,
		Categories: words("@write @string @slow"),
		Tips:       []string{"request_policy:multi_shard", "response_policy:agg_min"},
		KeySpecs:   []KeySpec{{Flags: words("OW insert"), Begin: atIndex(1), Find: keysRange(-1, 2, 0)}},
		Doc:        Doc{Summary: "Set multiple keys to multiple values, only if none of the keys exist", Since: "1.0.1", Group: "string", Complexity: "O(N) where N is the number of keys to set."},
	},
	"persist": {
		Arity: 2, Flags: words("write fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@keyspace @write @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RW update"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Remove the expiration from a key", Since: "2.2.0", Group: "generic", Complexity: "O(1)"},
	},
	"pexpire": {
		Arity: -3, Flags: words("write fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@keyspace @write @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RW update"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Set a key's time to live in milliseconds", Since: "2.6.0", Group: "generic", Complexity: "O(1)"},
	},
	"pexpireat": {
		Arity: -3, Flags: words("write fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@keyspace @write @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RW update"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Set the expiration for a key as a UNIX timestamp specified in milliseconds", Since: "2.6.0", Group: "generic", Complexity: "O(1)"},
	},
	"pexpiretime": {
		Arity: 2, Flags: words("readonly fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@keyspace @read @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RO access"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Get the expiration Unix timestamp for a key in milliseconds", Since: "7.0.0", Group: "generic", Complexity: "O(1)"},
	},
	"psetex": {
		Arity: 4, Flags: words("write denyoom"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@write @string @slow"),
		KeySpecs:   []KeySpec{{Flags: words("OW update"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Set the value and expiration in milliseconds of a key", Since: "2.6.0", Group: "string", Complexity: "O(1)"},
	},
	"pttl": {
		Arity: 2, Flags: words("readonly fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@keyspace @read @fast"),
		Tips:       []string{"nondeterministic_output"},
		KeySpecs:   []KeySpec{{Flags: words("RO access"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Get the time to live for a key in milliseconds", Since: "2.6.0", Group: "generic", Complexity: "O(1)"},
	},
	"publish": {
		Arity: 3, Flags: words("pubsub loading stale fast"),
		Categories: words("@pubsub @fast"),
		Doc:        Doc{Summary: "Post a message to a channel", Since: "2.0.0", Group: "pubsub", Complexity: "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client)."},
	},
	"scan": {
		Arity: -2, Flags: words("readonly"),
		Categories: words("@keyspace @read @slow"),
		Tips:       []string{"nondeterministic_output", "request_policy:special"},
		Doc:        Doc{Summary: "Incrementally iterate the keys space", Since: "2.8.0", Group: "generic", Complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection."},
	},
	"set": {
		Arity: -3, Flags: words("write denyoom"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@write @string @slow"),
		KeySpecs:   []KeySpec{{Notes: "RW and ACCESS due to the optional `GET` argument", Flags: words("RW access update variable_flags"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Set the string value of a key", Since: "1.0.0", Group: "string", Complexity: "O(1)"},
	},
	"setex": {
		Arity: 4, Flags: words("write denyoom"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@write @string @slow"),
		KeySpecs:   []KeySpec{{Flags: words("OW update"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Set the value and expiration of a key", Since: "2.0.0", Group: "string", Complexity: "O(1)"},
	},
	"setnx": {
		Arity: 3, Flags: words("write denyoom fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@write @string @fast"),
		KeySpecs:   []KeySpec{{Flags: words("OW insert"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Set the value of a key, only if the key does not exist", Since: "1.0.0", Group: "string", Complexity: "O(1)"},
	},
	"ttl": {
		Arity: 2, Flags: words("readonly fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@keyspace @read @fast"),
		Tips:       []string{"nondeterministic_output"},
		KeySpecs:   []KeySpec{{Flags: words("RO access"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Get the time to live for a key in seconds", Since: "1.0.0", Group: "generic", Complexity: "O(1)"},
	},
	"type": {
		Arity: 2, Flags: words("readonly fast"), FirstKey: 1, LastKey: 1, Step: 1,
		Categories: words("@keyspace @read @fast"),
		KeySpecs:   []KeySpec{{Flags: words("RO"), Begin: atIndex(1), Find: keysRange(0, 1, 0)}},
		Doc:        Doc{Summary: "Determine the type stored at key", Since: "1.0.0", Group: "generic", Complexity: "O(1)"},
	},
	"unlink": {
		Arity: -2, Flags: words("write fast"), FirstKey: 1, LastKey: -1, Step: 1,
		Categories: words("@keyspace @write @fast"),
		Tips:       []string{"request_policy:multi_shard", "response_policy:agg_sum"},
		KeySpecs:   []KeySpec{{Flags: words("RM delete"), Begin: atIndex(1), Find: keysRange(-1, 1, 0)}},
		Doc:        Doc{Summary: "Delete a key asynchronously in another thread. Otherwise it is just as DEL, but non blocking.", Since: "4.0.0", Group: "generic", Complexity: "O(1) for each key removed regardless of its size. Then the command does O(N) work in a different thread in order to reclaim memory, where N is the number of allocations the deleted objects where composed of."},
	},

	// ---- commands the front door answers (redisproto's locals and their subcommands)
	"cluster": {
		Arity:      -2,
		Categories: words("@slow"),
		Doc:        Doc{Summary: "A container for cluster commands", Since: "3.0.0", Group: "cluster", Complexity: "Depends on subcommand."},
	},
	"cluster|keyslot": {
		Arity: 3, Flags: words("stale"),
		Categories: words("@slow"),
		Doc:        Doc{Summary: "Returns the hash slot of the specified key", Since: "3.0.0", Group: "cluster", Complexity: "O(N) where N is the number of bytes in the key"},
	},
	"cluster|info": {
		Arity: 2, Flags: words("stale"),
		Categories: words("@slow"),
		Tips:       []string{"nondeterministic_output"},
		Doc:        Doc{Summary: "Provides info about Redis Cluster node state", Since: "3.0.0", Group: "cluster", Complexity: "O(1)"},
	},
	"cluster|myid": {
		Arity: 2, Flags: words("stale"),
		Categories: words("@slow"),
		Doc:        Doc{Summary: "Return the node id", Since: "3.0.0", Group: "cluster", Complexity: "O(1)"},
	},
	"cluster|slots": {
		Arity: 2, Flags: words("stale"),
		Categories: words("@slow"),
		Tips:       []string{"nondeterministic_output"},
		Doc: Doc{Summary: "Get array of Cluster slot to node mappings", Since: "3.0.0", Group: "cluster", Complexity: "O(N) where N is the total number of Cluster nodes",
			DocFlags: []string{"deprecated"}, DeprecatedSince: "7.0.0", ReplacedBy: "`CLUSTER SHARDS`"},
	},
	"cluster|shards": {
		Arity: 2, Flags: words("stale"),
		Categories: words("@slow"),
		Tips:       []string{"nondeterministic_output"},
		Doc:        Doc{Summary: "Get array of cluster slots to node mappings", Since: "7.0.0", Group: "cluster", Complexity: "O(N) where N is the total number of cluster nodes"},
	},
	"cluster|nodes": {
		Arity: 2, Flags: words("stale"),
		Categories: words("@slow"),
		Tips:       []string{"nondeterministic_output"},
		Doc:        Doc{Summary: "Get Cluster config for the node", Since: "3.0.0", Group: "cluster", Complexity: "O(N) where N is the total number of Cluster nodes"},
	},
	"cluster|help": {
		Arity: 2, Flags: words("loading stale"),
		Categories: words("@slow"),
		Doc:        Doc{Summary: "Show helpful text about the different subcommands", Since: "5.0.0", Group: "cluster", Complexity: "O(1)"},
	},
	"slowlog": {
		Arity:      -2,
		Categories: words("@slow"),
		Doc:        Doc{Summary: "A container for slow log commands", Since: "2.2.12", Group: "server", Complexity: "Depends on subcommand."},
	},
	"slowlog|get": {
		Arity: -2, Flags: words("admin loading stale"),
		Categories: words("@admin @slow @dangerous"),
		Tips:       []string{"request_policy:all_nodes", "nondeterministic_output"},
		Doc:        Doc{Summary: "Get the slow log's entries", Since: "2.2.12", Group: "server", Complexity: "O(N) where N is the number of entries returned"},
	},
	"slowlog|len": {
		Arity: 2, Flags: words("admin loading stale"),
		Categories: words("@admin @slow @dangerous"),
		Tips:       []string{"request_policy:all_nodes", "response_policy:agg_sum", "nondeterministic_output"},
		Doc:        Doc{Summary: "Get the slow log's length", Since: "2.2.12", Group: "server", Complexity: "O(1)"},
	},
	"slowlog|reset": {
		Arity: 2, Flags: words("admin loading stale"),
		Categories: words("@admin @slow @dangerous"),
		Tips:       []string{"request_policy:all_nodes", "response_policy:all_succeeded"},
		Doc:        Doc{Summary: "Clear all entries from the slow log", Since: "2.2.12", Group: "server", Complexity: "O(N) where N is the number of entries in the slowlog"},
	},
	"slowlog|help": {
		Arity: 2, Flags: words("loading stale"),
		Categories: words("@slow"),
		Doc:        Doc{Summary: "Show helpful text about the different subcommands", Since: "6.2.0", Group: "server", Complexity: "O(1)"},
	},
	"monitor": {
		Arity: 1, Flags: words("admin noscript loading stale"),
		Categories: words("@admin @slow @dangerous"),
		Doc:        Doc{Summary: "Listen for all requests received by the server in real time", Since: "1.0.0", Group: "server"},
	},
	"client|kill": {
		Arity: -3, Flags: words("admin noscript loading stale"),
		Categories: words("@admin @slow @dangerous @connection"),
		Doc:        Doc{Summary: "Kill the connection of a client", Since: "2.4.0", Group: "connection", Complexity: "O(N) where N is the number of client connections"},
	},
	"readonly": {
		Arity: 1, Flags: words("loading stale fast"),
		Categories: words("@fast @connection"),
		Doc:        Doc{Summary: "Enables read queries for a connection to a cluster replica node", Since: "3.0.0", Group: "cluster", Complexity: "O(1)"},
	},
	"readwrite": {
		Arity: 1, Flags: words("loading stale fast"),
		Categories: words("@fast @connection"),
		Doc:        Doc{Summary: "Disables read queries for a connection to a cluster replica node", Since: "3.0.0", Group: "cluster", Complexity: "O(1)"},
	},
	"asking": {
		Arity: 1, Flags: words("fast"),
		Categories: words("@fast @connection"),
		Doc:        Doc{Summary: "Sent by cluster clients after an -ASK redirect", Since: "3.0.0", Group: "cluster", Complexity: "O(1)"},
	},
	"auth": {
		Arity: -2, Flags: words("noscript loading stale fast no_auth allow_busy"),
		Categories: words("@fast @connection"),
		Doc:        Doc{Summary: "Authenticate to the server", Since: "1.0.0", Group: "connection", Complexity: "O(N) where N is the number of passwords defined for the user"},
	},
	"client": {
		Arity:      -2,
		Categories: words("@slow"),
		Doc:        Doc{Summary: "A container for client connection commands", Since: "2.4.0", Group: "connection", Complexity: "Depends on subcommand."},
	},
	"client|getname": {
		Arity: 2, Flags: words("noscript loading stale"),
		Categories: words("@slow @connection"),
		Doc:        Doc{Summary: "Get the current connection name", Since: "2.6.9", Group: "connection", Complexity: "O(1)"},
	},
	"client|help": {
		Arity: 2, Flags: words("loading stale"),
		Categories: words("@slow @connection"),
		Doc:        Doc{Summary: "Show helpful text about the different subcommands", Since: "5.0.0", Group: "connection", Complexity: "O(1)"},
	},
	"client|id": {
		Arity: 2, Flags: words("noscript loading stale"),
		Categories: words("@slow @connection"),
		Doc:        Doc{Summary: "Returns the client ID for the current connection", Since: "5.0.0", Group: "connection", Complexity: "O(1)"},
	},
	"client|info": {
		Arity: 2, Flags: words("noscript loading stale"),
		Categories: words("@slow @connection"),
		Tips:       []string{"nondeterministic_output"},
		Doc:        Doc{Summary: "Returns information about the current client connection.", Since: "6.2.0", Group: "connection", Complexity: "O(1)"},
	},
	"client|list": {
		Arity: -2, Flags: words("admin noscript loading stale"),
		Categories: words("@admin @slow @dangerous @connection"),
		Tips:       []string{"nondeterministic_output"},
		Doc:        Doc{Summary: "Get the list of client connections", Since: "2.4.0", Group: "connection", Complexity: "O(N) where N is the number of client connections"},
	},
	"client|no-evict": {
		Arity: 3, Flags: words("admin noscript loading stale"),
		Categories: words("@admin @slow @dangerous @connection"),
		Doc:        Doc{Summary: "Set client eviction mode for the current connection", Since: "7.0.0", Group: "connection", Complexity: "O(1)"},
	},
	"client|setname": {
		Arity: 3, Flags: words("noscript loading stale"),
		Categories: words("@slow @connection"),
		Doc:        Doc{Summary: "Set the current connection name", Since: "2.6.9", Group: "connection", Complexity: "O(1)"},
	},
	"command": {
		Arity: -1, Flags: words("loading stale"),
		Categories: words("@slow @connection"),
		Tips:       []string{"nondeterministic_output_order"},
		Doc:        Doc{Summary: "Get array of Redis command details", Since: "2.8.13", Group: "server", Complexity: "O(N) where N is the total number of Redis commands"},
	},
	"command|count": {
		Arity: 2, Flags: words("loading stale"),
		Categories: words("@slow @connection"),
		Doc:        Doc{Summary: "Get total number of Redis commands", Since: "2.8.13", Group: "server", Complexity: "O(1)"},
	},
	"command|docs": {
		Arity: -2, Flags: words("loading stale"),
		Categories: words("@slow @connection"),
		Tips:       []string{"nondeterministic_output_order"},
		Doc:        Doc{Summary: "Get array of specific Redis command documentation", Since: "7.0.0", Group: "server", Complexity: "O(N) where N is the number of commands to look up"},
	},
	"command|help": {
		Arity: 2, Flags: words("loading stale"),
		Categories: words("@slow @connection"),
		Doc:        Doc{Summary: "Show helpful text about the different subcommands", Since: "5.0.0", Group: "server", Complexity: "O(1)"},
	},
	"command|info": {
		Arity: -2, Flags: words("loading stale"),
		Categories: words("@slow @connection"),
		Tips:       []string{"nondeterministic_output_order"},
		Doc:        Doc{Summary: "Get array of specific Redis command details, or all when no argument is given.", Since: "2.8.13", Group: "server", Complexity: "O(N) where N is the number of commands to look up"},
	},
	"command|list": {
		Arity: -2, Flags: words("loading stale"),
		Categories: words("@slow @connection"),
		Tips:       []string{"nondeterministic_output_order"},
		Doc:        Doc{Summary: "Get an array of Redis command names", Since: "7.0.0", Group: "server", Complexity: "O(N) where N is the total number of Redis commands"},
	},
	"config": {
		Arity:      -2,
		Categories: words("@slow"),
		Doc:        Doc{Summary: "A container for server configuration commands", Since: "2.0.0", Group: "server", Complexity: "Depends on subcommand."},
	},
	"config|get": {
		Arity: -3, Flags: words("admin noscript loading stale"),
		Categories: words("@admin @slow @dangerous"),
		Doc:        Doc{Summary: "Get the values of configuration parameters", Since: "2.0.0", Group: "server", Complexity: "O(N) when N is the number of configuration parameters provided"},
	},
	"config|help": {
		Arity: 2, Flags: words("loading stale"),
		Categories: words("@slow"),
		Doc:        Doc{Summary: "Show helpful text about the different subcommands", Since: "5.0.0", Group: "server", Complexity: "O(1)"},
	},
	"config|resetstat": {
		Arity: 2, Flags: words("admin noscript loading stale"),
		Categories: words("@admin @slow @dangerous"),
		Doc:        Doc{Summary: "Reset the stats returned by INFO", Since: "2.0.0", Group: "server", Complexity: "O(1)"},
	},
	"config|set": {
		Arity: -4, Flags: words("admin noscript loading stale"),
		Categories: words("@admin @slow @dangerous"),
		Tips:       []string{"request_policy:all_nodes", "response_policy:all_succeeded"},
		Doc:        Doc{Summary: "Set configuration parameters to the given values", Since: "2.0.0", Group: "server", Complexity: "O(N) when N is the number of configuration parameters provided"},
	},
	"discard": {
		Arity: 1, Flags: words("noscript loading stale fast allow_busy"),
		Categories: words("@fast @transaction"),
		Doc:        Doc{Summary: "Discard all commands issued after MULTI", Since: "2.0.0", Group: "transactions", Complexity: "O(N), when N is the number of queued commands"},
	},
	"echo": {
		Arity: 2, Flags: words("loading stale fast"),
		Categories: words("@fast @connection"),
		Doc:        Doc{Summary: "Echo the given string", Since: "1.0.0", Group: "connection", Complexity: "O(1)"},
	},
	"exec": {
		Arity: 1, Flags: words("noscript loading stale skip_slowlog"),
		Categories: words("@slow @transaction"),
		Doc:        Doc{Summary: "Execute all commands issued after MULTI", Since: "1.2.0", Group: "transactions", Complexity: "Depends on commands in the transaction"},
	},
	"hello": {
		Arity: -1, Flags: words("noscript loading stale fast no_auth allow_busy"),
		Categories: words("@fast @connection"),
		Doc:        Doc{Summary: "Handshake with Redis", Since: "6.0.0", Group: "connection", Complexity: "O(1)"},
	},
	"info": {
		Arity: -1, Flags: words("loading stale"),
		Categories: words("@slow @dangerous"),
		Tips:       []string{"nondeterministic_output", "request_policy:all_shards", "response_policy:special"},
		Doc:        Doc{Summary: "Get information and statistics about the server", Since: "1.0.0", Group: "server", Complexity: "O(1)"},
	},
	"multi": {
		Arity: 1, Flags: words("noscript loading stale fast allow_busy"),
		Categories: words("@fast @transaction"),
		Doc:        Doc{Summary: "Mark the start of a transaction block", Since: "1.2.0", Group: "transactions", Complexity: "O(1)"},
	},
	"ping": {
		Arity: -1, Flags: words("fast"),
		Categories: words("@fast @connection"),
		Tips:       []string{"request_policy:all_shards", "response_policy:all_succeeded"},
		Doc:        Doc{Summary: "Ping the server", Since: "1.0.0", Group: "connection", Complexity: "O(1)"},
	},
	"psubscribe": {
		Arity: -2, Flags: words("pubsub noscript loading stale"),
		Categories: words("@pubsub @slow"),
		Doc:        Doc{Summary: "Listen for messages published to channels matching the given patterns", Since: "2.0.0", Group: "pubsub", Complexity: "O(N) where N is the number of patterns the client is already subscribed to."},
	},
	"pubsub": {
		Arity:      -2,
		Categories: words("@slow"),
		Doc:        Doc{Summary: "A container for Pub/Sub commands", Since: "2.8.0", Group: "pubsub", Complexity: "Depends on subcommand."},
	},
	"pubsub|channels": {
		Arity: -2, Flags: words("pubsub loading stale"),
		Categories: words("@pubsub @slow"),
		Doc:        Doc{Summary: "List active channels", Since: "2.8.0", Group: "pubsub", Complexity: "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)"},
	},
	"pubsub|help": {
		Arity: 2, Flags: words("loading stale"),
		Categories: words("@slow"),
		Doc:        Doc{Summary: "Show helpful text about the different subcommands", Since: "6.2.0", Group: "pubsub", Complexity: "O(1)"},
	},
	"pubsub|numpat": {
		Arity: 2, Flags: words("pubsub loading stale"),
		Categories: words("@pubsub @slow"),
		Doc:        Doc{Summary: "Get the count of unique patterns pattern subscriptions", Since: "2.8.0", Group: "pubsub", Complexity: "O(1)"},
	},
	"pubsub|numsub": {
		Arity: -2, Flags: words("pubsub loading stale"),
		Categories: words("@pubsub @slow"),
		Doc:        Doc{Summary: "Get the count of subscribers for channels", Since: "2.8.0", Group: "pubsub", Complexity: "O(N) for the NUMSUB subcommand, where N is the number of requested channels"},
	},
	"punsubscribe": {
		Arity: -1, Flags: words("pubsub noscript loading stale"),
		Categories: words("@pubsub @slow"),
		Doc:        Doc{Summary: "Stop listening for messages posted to channels matching the given patterns", Since: "2.0.0", Group: "pubsub", Complexity: "O(N+M) where N is the number of patterns the client is already subscribed and M is the number of total patterns subscribed in the system (by any client)."},
	},
	"quit": {
		Arity: -1, Flags: words("noscript loading stale fast no_auth allow_busy"),
		Categories: words("@fast @connection"),
		Doc:        Doc{Summary: "Close the connection", Since: "1.0.0", Group: "connection", Complexity: "O(1)"},
	},
	"select": {
		Arity: 2, Flags: words("loading stale fast"),
		Categories: words("@fast @connection"),
		Doc:        Doc{Summary: "Change the selected database for the current connection", Since: "1.0.0", Group: "connection", Complexity: "O(1)"},
	},
	"subscribe": {
		Arity: -2, Flags: words("pubsub noscript loading stale"),
		Categories: words("@pubsub @slow"),
		Doc:        Doc{Summary: "Listen for messages published to the given channels", Since: "2.0.0", Group: "pubsub", Complexity: "O(N) where N is the number of channels to subscribe to."},
	},
	"time": {
		Arity: 1, Flags: words("loading stale fast"),
		Categories: words("@fast"),
		Tips:       []string{"nondeterministic_output"},
		Doc:        Doc{Summary: "Return the current server time", Since: "2.6.0", Group: "server", Complexity: "O(1)"},
	},
	"unsubscribe": {
		Arity: -1, Flags: words("pubsub noscript loading stale"),
		Categories: words("@pubsub @slow"),
		Doc:        Doc{Summary: "Stop listening for messages posted to the given channels", Since: "2.0.0", Group: "pubsub", Complexity: "O(N) where N is the number of clients already subscribed to a channel."},
	},
	"unwatch": {
		Arity: 1, Flags: words("noscript loading stale fast allow_busy"),
		Categories: words("@fast @transaction"),
		Doc:        Doc{Summary: "Forget about all watched keys", Since: "2.2.0", Group: "transactions", Complexity: "O(1)"},
	},
	"wait": {
		Arity: 3, Flags: words("noscript"),
		Categories: words("@slow @connection"),
		Tips:       []string{"request_policy:all_shards", "response_policy:agg_min"},
		Doc:        Doc{Summary: "Wait for the synchronous replication of all the write commands sent in the context of the current connection", Since: "3.0.0", Group: "generic", Complexity: "O(1)"},
	},
	"watch": {
		Arity: -2, Flags: words("noscript loading stale fast allow_busy"), FirstKey: 1, LastKey: -1, Step: 1,
		Categories: words("@fast @transaction"),
		KeySpecs:   []KeySpec{{Flags: words("RO"), Begin: atIndex(1), Find: keysRange(-1, 1, 0)}},
		Doc:        Doc{Summary: "Watch the given keys to determine execution of the MULTI/EXEC block", Since: "2.2.0", Group: "transactions", Complexity: "O(1) for every key."},
	},

	// ---- lockd-only commands, which Redis 7.0.15 lacks. DELEX, DIGEST and
	// CLIENT SETINFO / NO-TOUCH are described as the later Redis versions that
	// added them describe them; FENCE is lockd's own.
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

	// ---- ACL (redisproto/acl.go), as Redis 7.0.15 describes it; lockd
	// implements the subcommands below (not LOG, SAVE, LOAD, DRYRUN).
	"acl": {
		Arity:      -2,
		Categories: words("@slow"),
		Doc:        Doc{Summary: "A container for Access List Control commands ", Since: "6.0.0", Group: "server", Complexity: "Depends on subcommand."},
	},
	"acl|cat": {
		Arity: -2, Flags: words("noscript loading stale"),
		Categories: words("@slow"),
		Doc:        Doc{Summary: "List the ACL categories or the commands inside a category", Since: "6.0.0", Group: "server", Complexity: "O(1) since the categories and commands are a fixed set."},
	},
	"acl|deluser": {
		Arity: -3, Flags: words("admin noscript loading stale"),
		Categories: words("@admin @slow @dangerous"),
		Doc:        Doc{Summary: "Remove the specified ACL users and the associated rules", Since: "6.0.0", Group: "server", Complexity: "O(1) amortized time considering the typical user."},
	},
	"acl|genpass": {
		Arity: -2, Flags: words("noscript loading stale"),
		Categories: words("@slow"),
		Doc:        Doc{Summary: "Generate a pseudorandom secure password to use for ACL users", Since: "6.0.0", Group: "server", Complexity: "O(1)"},
	},
	"acl|getuser": {
		Arity: 3, Flags: words("admin noscript loading stale"),
		Categories: words("@admin @slow @dangerous"),
		Doc:        Doc{Summary: "Get the rules for a specific ACL user", Since: "6.0.0", Group: "server", Complexity: "O(N). Where N is the number of password, command and pattern rules that the user has."},
	},
	"acl|help": {
		Arity: 2, Flags: words("loading stale"),
		Categories: words("@slow"),
		Doc:        Doc{Summary: "Show helpful text about the different subcommands", Since: "6.0.0", Group: "server", Complexity: "O(1)"},
	},
	"acl|list": {
		Arity: 2, Flags: words("admin noscript loading stale"),
		Categories: words("@admin @slow @dangerous"),
		Doc:        Doc{Summary: "List the current ACL rules in ACL config file format", Since: "6.0.0", Group: "server", Complexity: "O(N). Where N is the number of configured users."},
	},
	"acl|setuser": {
		Arity: -3, Flags: words("admin noscript loading stale"),
		Categories: words("@admin @slow @dangerous"),
		Doc:        Doc{Summary: "Modify or create the rules for a specific ACL user", Since: "6.0.0", Group: "server", Complexity: "O(N). Where N is the number of rules provided."},
	},
	"acl|users": {
		Arity: 2, Flags: words("admin noscript loading stale"),
		Categories: words("@admin @slow @dangerous"),
		Doc:        Doc{Summary: "List the username of all the configured ACL rules", Since: "6.0.0", Group: "server", Complexity: "O(N). Where N is the number of configured users."},
	},
	"acl|whoami": {
		Arity: 2, Flags: words("noscript loading stale"),
		Categories: words("@slow"),
		Doc:        Doc{Summary: "Return the name of the user associated to the current connection", Since: "6.0.0", Group: "server", Complexity: "O(1)"},
	},
}
