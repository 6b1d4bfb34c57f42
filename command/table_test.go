package command

import (
	"strings"
	"testing"
)

// TestRowsMatchMetadata: every row has its metadata and every metadata entry
// its row, so COMMAND describes exactly the commands lockd answers; a
// subcommand's container is a row of the same handler.
func TestRowsMatchMetadata(t *testing.T) {
	for name, s := range rows {
		if s.Name != name {
			t.Errorf("rows[%q] is named %q", name, s.Name)
		}
		if _, ok := metaTable[name]; !ok {
			t.Errorf("%s: a row without metadata (meta.go or redisjson/)", name)
		}
		if container, _, isSub := strings.Cut(name, "|"); isSub {
			c, ok := rows[container]
			if !ok || c.Handler != s.Handler {
				t.Errorf("%s: its container %q is no row of the same handler", name, container)
			}
		}
		if s.Handler != HandlerFSM && s.Handler != HandlerDoor {
			t.Errorf("%s: handler %d", name, s.Handler)
		}
		if s.Handler == HandlerFSM && (s.parse == nil || s.Route == RouteLocal) {
			t.Errorf("%s: a keyspace row needs a parser and a route to a group (route %v)", name, s.Route)
		}
	}
	for name := range metaTable {
		if _, ok := rows[name]; !ok {
			t.Errorf("%s: metadata without a row", name)
		}
	}
}

// lockdWrites are the commands whose FlagWrite (through the log) differs from
// Redis's "write" flag, and why.
var lockdWrites = map[string]string{
	"publish":        "a message is a log entry, delivered on every node once it commits",
	"eval":           "a script may write, and its source fills the replicated cache",
	"evalsha":        "a script may write",
	"eval_ro":        "its source fills the replicated script cache",
	"exec":           "the transaction is one log entry",
	"raft":           "cluster operations change the configuration",
	"raft|add":       "a membership change",
	"raft|remove":    "a membership change",
	"raft|transfer":  "a leadership change",
	"raft|moveslots": "moves slots between groups",
	"raft|addgroups": "adds groups and moves slots to them",
	"script|load":    "the replicated script cache",
	"script|flush":   "the replicated script cache",
	"acl|setuser":    "users are replicated",
	"acl|deluser":    "users are replicated",
}

// TestFlagsAgreeWithRedis: the flags whose meaning is Redis's are exactly the
// metadata's; lockd's FlagWrite agrees with Redis's "write" except where
// lockdWrites says why not, and no read-only command of Redis's is a write of
// lockd's unless listed there.
func TestFlagsAgreeWithRedis(t *testing.T) {
	for name, s := range rows {
		has := map[string]bool{}
		for _, f := range s.Meta.Flags {
			has[f] = true
		}
		for rf, bit := range redisFlags {
			if s.Flags.Has(bit) != has[rf] {
				t.Errorf("%s: flag %q is %v in the row, %v in the metadata", name, rf, s.Flags.Has(bit), has[rf])
			}
		}
		_, listed := lockdWrites[name]
		if s.Flags.Has(FlagWrite) != has["write"] && !listed {
			t.Errorf("%s: FlagWrite %v but Redis's write flag %v (list it in lockdWrites with why)", name, s.Flags.Has(FlagWrite), has["write"])
		}
		if s.Flags.Has(FlagWrite|FlagReadOnly) && !listed {
			t.Errorf("%s: a write of lockd's that Redis calls readonly", name)
		}
	}
	for name := range lockdWrites {
		s, ok := rows[name]
		if !ok || !s.Flags.Has(FlagWrite) {
			t.Errorf("lockdWrites lists %s, which is no write row", name)
			continue
		}
		redisWrite := false
		for _, f := range s.Meta.Flags {
			redisWrite = redisWrite || f == "write"
		}
		if redisWrite && !s.Flags.Has(FlagReadOnly) {
			t.Errorf("lockdWrites lists %s, whose flags agree with Redis's", name)
		}
	}
}

// TestRoutesAndFlags pins the routes and lockd's own flags that raftstore and
// the doors rely on.
func TestRoutesAndFlags(t *testing.T) {
	routes := map[string]Route{
		"get": RouteKeys, "strlen": RouteKeys, "eval": RouteKeys, "lock.acquire": RouteKeys, "exec": RouteKeys, "watch": RouteKeys,
		"del": RouteSplit, "unlink": RouteSplit, "exists": RouteSplit, "mget": RouteSplit,
		"flushall": RouteEveryGroup, "namespace.set": RouteEveryGroup, "namespace.del": RouteEveryGroup,
		"acl|setuser": RouteEveryGroup, "acl|deluser": RouteEveryGroup, "script|load": RouteEveryGroup, "script|flush": RouteEveryGroup,
		"dbsize": RouteCombine, "keys": RouteCombine, "scan": RouteCombine,
		"namespace.get": RouteGroupZero, "namespace.list": RouteGroupZero, "publish": RouteGroupZero,
		"session.open": RouteGroupZero, "script|exists": RouteGroupZero,
		"session.keepalive": RouteSessions, "session.close": RouteSessions,
		"raft": RouteAdmin, "raft|add": RouteAdmin, "raft|remove": RouteAdmin, "raft|transfer": RouteAdmin,
		"ping": RouteLocal, "client|id": RouteLocal, "multi": RouteLocal,
	}
	for name, want := range routes {
		if got := mustRow(name).Route; got != want {
			t.Errorf("%s: route %v, want %v", name, got, want)
		}
	}
	for _, s := range Specs() {
		if s.Handler != HandlerFSM {
			t.Errorf("Specs() lists %s, handler %d", s.Name, s.Handler)
		}
	}
	blocking := map[string]bool{"lock.acquire": true, "blpop": true, "brpop": true, "blmpop": true, "blmove": true,
		"brpoplpush": true, "bzpopmin": true, "bzpopmax": true, "pop.wait": true}
	for name, s := range rows {
		want := blocking[name]
		if s.Flags.Has(FlagBlocking) != want {
			t.Errorf("%s: FlagBlocking %v", name, !want)
		}
		if s.RunsScript() != strings.HasPrefix(name, "eval") {
			t.Errorf("%s: RunsScript %v", name, s.RunsScript())
		}
		if s.Flags.Has(FlagPrefixKey) != (name == "namespace.set" || name == "namespace.get" || name == "namespace.del") {
			t.Errorf("%s: FlagPrefixKey %v", name, s.Flags.Has(FlagPrefixKey))
		}
	}
	for _, sp := range []*Spec{TxSpec, VersionsSpec, AdminSpec, ScriptLoadSpec, ScriptExistsSpec, ScriptFlushSpec, ACLSetUserSpec, ACLDelUserSpec} {
		if rows[sp.Name] != sp || sp.Handler != HandlerDoor || sp.Route == RouteLocal {
			t.Errorf("%s: not a door row routed to the store", sp.Name)
		}
	}
}

// TestLookupFindsKeyspaceRowsOnly: Lookup and Parse see the keyspace rows
// (and the ACL writes' log entries); Row sees every row.
func TestLookupFindsKeyspaceRowsOnly(t *testing.T) {
	for _, name := range []string{"GET", "strlen", "Lock.Acquire"} {
		if s, ok := Lookup([]byte(name)); !ok || s.Handler != HandlerFSM {
			t.Errorf("Lookup(%q) = %v, %v", name, s, ok)
		}
	}
	for _, name := range []string{"ping", "exec", "acl|setuser", "client|id", "client", "nosuch", strings.Repeat("x", 40)} {
		if s, ok := Lookup([]byte(name)); ok {
			t.Errorf("Lookup(%q) = %s", name, s.Name)
		}
	}
	for _, name := range []string{"PING", "client|ID", "get"} {
		if _, ok := Row(name); !ok {
			t.Errorf("Row(%q) not found", name)
		}
	}
	if op, spec, err := Parse(argv("ping")); op != nil || spec != nil || err != nil {
		t.Errorf("Parse(ping) = %v, %v, %v", op, spec, err)
	}
	if op, spec, err := Parse(argv("client id")); op != nil || spec != nil || err != nil {
		t.Errorf("Parse(client id) = %v, %v, %v", op, spec, err)
	}
	if _, spec, err := Parse(argv("ACL SETUSER u on")); err != nil || spec != ACLSetUserSpec {
		t.Errorf("Parse(ACL SETUSER) = %v, %v", spec, err)
	}
	if _, spec, err := Parse(argv("acl deluser")); err == nil || spec != nil || err.Error() != "ERR wrong number of arguments for 'acl|deluser' command" {
		t.Errorf("Parse(acl deluser) = %v, %v", spec, err)
	}
	if op, spec, err := Parse(argv("STRLEN k")); err != nil || spec.Name != "strlen" || string(op.(Strlen).Key) != "k" {
		t.Errorf("Parse(STRLEN k) = %v, %v, %v", op, spec, err)
	}
}

// TestCommandKeysFromRows: keys come from the row (the metadata's key specs,
// lockd's prefix key for namespaces); SlotKeys drops prefix keys.
func TestCommandKeysFromRows(t *testing.T) {
	tests := []struct{ args, keys, slot string }{
		{"GET k", "k", "k"},
		{"STRLEN k", "k", "k"},
		{"MSET a 1 b 2", "a b", "a b"},
		{"DEL a b c", "a b c", "a b c"},
		{"EVAL s 2 a b x", "a b", "a b"},
		{"EVAL s 0 x", "", ""},
		{"LOCK.ACQUIRE l o PX 10", "l", "l"},
		{"NAMESPACE.SET ns: MAXTTL 1", "ns:", ""},
		{"namespace.get ns:", "ns:", ""},
		{"NAMESPACE.DEL", "", ""},
		{"NAMESPACE.LIST", "", ""},
		{"PING", "", ""},
		{"NOSUCH k", "", ""},
		{"FLUSHALL", "", ""},
	}
	join := func(ks [][]byte) string {
		var out []string
		for _, k := range ks {
			out = append(out, string(k))
		}
		return strings.Join(out, " ")
	}
	for _, tc := range tests {
		a := argv(tc.args)
		if got := join(CommandKeys(a)); got != tc.keys {
			t.Errorf("CommandKeys(%s) = %q, want %q", tc.args, got, tc.keys)
		}
		if got := join(SlotKeys(a)); got != tc.slot {
			t.Errorf("SlotKeys(%s) = %q, want %q", tc.args, got, tc.slot)
		}
	}
}

// TestBlocksReadsRow: a request blocks when its row may block and its Op
// waits; a request without a row is judged by its Op.
func TestBlocksReadsRow(t *testing.T) {
	acq := mustRow("lock.acquire")
	wait := LockAcquire{Name: []byte("l"), Wait: 100}
	for _, tc := range []struct {
		r    Request
		want bool
	}{
		{Request{Op: wait, Spec: acq}, true},
		{Request{Op: LockAcquire{Name: []byte("l")}, Spec: acq}, false},
		{Request{Op: wait, Spec: mustRow("lock.release")}, false},
		{Request{Op: wait}, true},
		{Request{Op: Get{Key: []byte("k")}, Spec: mustRow("get")}, false},
	} {
		if got := tc.r.Blocks(); got != tc.want {
			t.Errorf("Blocks(%T, %v) = %v, want %v", tc.r.Op, tc.r.Spec, got, tc.want)
		}
	}
}

// TestIndexRejectsDuplicates: a name written twice panics.
func TestIndexRejectsDuplicates(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("index accepted two rows for get")
		}
	}()
	index([]*Spec{fsmRow("get", 0, RouteKeys, nil)}, []*Spec{fsmRow("get", 0, RouteKeys, nil)})
}

// TestNoScript: a script may not call a noscript row; a container (SCRIPT,
// CLIENT, ACL), which has no flags of its own, is noscript when every one of
// its subcommands is, and a named subcommand is judged by its own row. Checked
// for every row, lower and upper case.
func TestNoScript(t *testing.T) {
	containers := 0
	for _, s := range Commands() {
		subs := Subcommands(s.Name)
		want := s.Flags.Has(FlagNoScript)
		if len(subs) > 0 {
			containers++
			want = true
			for _, sub := range subs {
				want = want && sub.Flags.Has(FlagNoScript)
				_, name, _ := strings.Cut(sub.Name, "|")
				args := [][]byte{[]byte(strings.ToUpper(s.Name)), []byte(name)}
				if got := NoScript(args); got != sub.Flags.Has(FlagNoScript) {
					t.Errorf("NoScript(%s %s) = %v, want the subcommand's flag %v", args[0], args[1], got, !got)
				}
			}
		}
		for _, name := range []string{s.Name, strings.ToUpper(s.Name)} {
			if got := NoScript([][]byte{[]byte(name)}); got != want {
				t.Errorf("NoScript(%s) = %v, want %v", name, got, want)
			}
		}
	}
	if containers == 0 {
		t.Fatal("no command with subcommands: the container rule went unchecked")
	}
	if NoScript([][]byte{[]byte("no-such-command")}) {
		t.Error("an unknown command is noscript")
	}
}
