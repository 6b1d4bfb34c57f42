package command

import (
	"sort"
	"strings"
)

// The command table: one row (a *Spec) per command and per subcommand
// ("container|sub") that lockd answers, carrying everything lockd knows about
// it. The rows are written in the files of their family (spec.go, lock.go,
// session.go, namespace.go, script.go, acl.go, admin.go, tx.go, door.go) and
// indexed once, when the package is initialised; every consumer reads the row.
// See DESIGN.md, "The command table".

// Flags is what lockd knows about how a command behaves, as a bitset. The
// flags Redis also has are derived from the row's CommandMeta (redisFlags);
// the others are lockd's and written in the row.
type Flags uint32

// The command flags.
const (
	// FlagWrite: the command may change replicated state, so it goes through
	// the log; a read is served by a leader after a quorum check. This is
	// lockd's meaning, not Redis's "write": PUBLISH, EVAL and EVAL_RO (which
	// fills the replicated script cache) are writes here.
	FlagWrite Flags = 1 << iota
	// FlagReadOnly is Redis's "readonly".
	FlagReadOnly
	// FlagAdmin is Redis's "admin".
	FlagAdmin
	// FlagNoScript is Redis's "noscript": a script may not call it.
	FlagNoScript
	// FlagFast is Redis's "fast".
	FlagFast
	// FlagNoAuth is Redis's "no_auth": it runs before authentication.
	FlagNoAuth
	// FlagPubSub is Redis's "pubsub".
	FlagPubSub
	// FlagDataWrite is Redis's "write": the command may modify the keyspace,
	// so a replica of a Redis master refuses it to clients (READONLY).
	// PUBLISH and the EVAL family do not have it (unlike FlagWrite).
	FlagDataWrite
	// FlagBlocking (lockd's): the command may block its connection until
	// something else happens; whether one request does is its Op's to say
	// (Request.Blocks).
	FlagBlocking
	// FlagScript (lockd's): the command runs a Lua script.
	FlagScript
	// FlagPrefixKey (lockd's): the command's key is a namespace prefix. ACL
	// rules check it as a key, but it is configuration of every group, not a
	// key of one slot (SlotKeys leaves it out).
	FlagPrefixKey
	// FlagSession (lockd's): the command may name a session (SessionIDs), so
	// the leader checks, before it proposes, that the caller may use it.
	FlagSession
	// FlagCollection (lockd's): the command writes a sorted set or a list,
	// kinds that a group holds only once its settings turn
	// FeatureCollections on (the state machine refuses it before); a leader
	// that has not turned it on yet tries to first.
	FlagCollection
	// FlagMigration (lockd's): the command's entry needs FeatureMigration
	// (RESTORE, the writes a Redis master sends a replica), as FlagCollection
	// needs FeatureCollections.
	FlagMigration
)

// redisFlags are the flags whose meaning is Redis's: a row has one exactly
// when its CommandMeta lists the Redis flag.
var redisFlags = map[string]Flags{
	"readonly": FlagReadOnly,
	"admin":    FlagAdmin,
	"noscript": FlagNoScript,
	"fast":     FlagFast,
	"no_auth":  FlagNoAuth,
	"pubsub":   FlagPubSub,
	"write":    FlagDataWrite,
}

// Has reports whether every flag of want is set in f.
func (f Flags) Has(want Flags) bool { return f&want == want }

// Route says how raftstore sends a command's request to the Raft groups.
type Route uint8

// The routes. Some rows add a rule that depends on the parsed Op; raftstore's
// router (Node.target) applies it, reached through the route.
const (
	// RouteKeys: one group, the one that owns the command's keys (group 0 for
	// a command without keys); keys of several groups are refused
	// (CROSSSLOT). Op-dependent: a transaction's keys are its commands'; a
	// LOCK.ACQUIRE that waits, or holds for a session outside group 0, runs
	// alone (a barrier).
	RouteKeys Route = iota
	// RouteSplit: keys of several groups are split into one command per
	// group and the replies combined (DEL, UNLINK, EXISTS, MGET).
	RouteSplit
	// RouteEveryGroup: a cluster-wide write, applied to every group, the
	// requests around it waiting for it (FLUSHALL, NAMESPACE.SET|DEL, ACL
	// SETUSER|DELUSER, SCRIPT LOAD|FLUSH).
	RouteEveryGroup
	// RouteCombine: a read of every group, the replies combined (DBSIZE,
	// KEYS, SCAN).
	RouteCombine
	// RouteGroupZero: group 0, which holds what is not split by key
	// (NAMESPACE.GET|LIST, PUBLISH, SESSION.OPEN, SCRIPT EXISTS, RAFT
	// MEMBERS|GROUPS|MOVESLOTS).
	RouteGroupZero
	// RouteSessions: every group where the session may exist
	// (SESSION.KEEPALIVE|CLOSE).
	RouteSessions
	// RouteAdmin: a cluster operation. Op-dependent: a membership change
	// (RAFT ADD|REMOVE|TRANSFER) goes to every group; the others to group 0.
	RouteAdmin
	// RouteLocal: the front door answers it on the node the client talks to;
	// it never reaches a group.
	RouteLocal
)

var routeNames = [...]string{"keys", "split", "every-group", "combine", "group-0", "sessions", "admin", "local"}

func (r Route) String() string {
	if int(r) < len(routeNames) {
		return routeNames[r]
	}
	return "route(?)"
}

// Handler says which code runs a command.
type Handler uint8

// The handlers. Each keeps its code where the state it needs lives.
const (
	// HandlerFSM: the arguments parse (Spec.Parse) into an Op that the state
	// machine (raftstore/fsm, Keyspace.Exec) runs on every replica.
	HandlerFSM Handler = iota + 1
	// HandlerDoor: the front door (redisproto) runs the command with the
	// handler it registers under the row's name. Some send an internal Op
	// to the store (MULTI/EXEC, WATCH, RAFT, SCRIPT, ACL SETUSER|DELUSER);
	// the row's Route says where that goes.
	HandlerDoor
)

// Spec is one row of the command table: a command (or a subcommand,
// "container|sub") with everything lockd knows about it. Rows are shared and
// immutable once the package is initialised.
type Spec struct {
	Name string // lower case, as COMMAND reports it; "container|sub" for a subcommand
	// Arity is the metadata's (Redis convention: negative = at least -Arity
	// arguments), set when the table is built.
	Arity   int
	Flags   Flags
	Route   Route
	Handler Handler
	// Meta is what COMMAND INFO and COMMAND DOCS report, and the ACL
	// categories: Redis 7.0.15's own description (meta_redis.go) or lockd's
	// (meta.go). Where it and the row disagree ("write"), Meta is what
	// COMMAND reports and the row is what lockd does.
	Meta CommandMeta
	// keys are lockd's key positions where they differ from Meta's key
	// specifications (nil: Meta's).
	keys  []KeySpec
	parse func(name string, args [][]byte) (Op, error)
}

// CheckArity reports whether n arguments (the name included) fit the spec.
func (s *Spec) CheckArity(n int) bool {
	if s.Arity >= 0 {
		return n == s.Arity
	}
	return n >= -s.Arity
}

// Parse turns args (args[0] is the command name) into an Op, or returns an Error
// worded as Redis words it. It is pure: the same args give the same result.
func (s *Spec) Parse(args [][]byte) (Op, error) {
	if !s.CheckArity(len(args)) {
		return nil, ErrArity(s.Name)
	}
	return s.parse(s.Name, args)
}

// Writes reports whether the command may change replicated state and so goes
// through the log (FlagWrite); a read is served by a leader after a quorum
// check.
func (s *Spec) Writes() bool { return s.Flags.Has(FlagWrite) }

// RunsScript reports whether the command runs a script (EVAL, EVALSHA and
// their _RO forms): FlagScript.
func (s *Spec) RunsScript() bool { return s.Flags.Has(FlagScript) }

// Keys returns the keys args (a request of this row's command) names, found as
// Redis finds them: through the row's key specifications (Meta's unless the
// row says otherwise), or Meta's legacy FirstKey/LastKey/Step when there are
// none.
func (s *Spec) Keys(args [][]byte) [][]byte {
	specs := s.keys
	if specs == nil {
		specs = s.Meta.KeySpecs
	}
	if len(specs) == 0 {
		m := s.Meta
		if m.FirstKey <= 0 {
			return nil
		}
		last := m.LastKey
		if last < 0 {
			last = len(args) + last
		}
		var out [][]byte
		for i := m.FirstKey; i <= last && i < len(args); i += max(m.Step, 1) {
			out = append(out, args[i])
		}
		return out
	}
	var out [][]byte
	for _, ks := range specs {
		out = append(out, specKeys(ks, args)...)
	}
	return out
}

// row is a row as its family's file writes it: what lockd knows beyond the
// metadata. index completes it.
func row(name string, flags Flags, route Route, h Handler, p func(string, [][]byte) (Op, error)) *Spec {
	return &Spec{Name: name, Flags: flags, Route: route, Handler: h, parse: p}
}

// fsmRow is a keyspace command: parsed here, run by the FSM.
func fsmRow(name string, flags Flags, route Route, p func(string, [][]byte) (Op, error)) *Spec {
	return row(name, flags, route, HandlerFSM, p)
}

// withKeys sets lockd's own key positions on s.
func withKeys(s *Spec, keys ...KeySpec) *Spec {
	s.keys = keys
	return s
}

// rows is the command table, by name ("container|sub" for a subcommand).
var rows = index(keyspaceRows, zsetRows, lockRows, sessionRows, namespaceRows, scriptRows, doorRows, listRows, dumpRows, objectRows)

// index builds the table from the families' rows: it attaches each row's
// metadata, and with it the arity and the Redis flags, which are the
// metadata's only. A name written twice, or a row without metadata (every
// command lockd answers is described in meta_redis.go or meta.go), is a
// programming error: it panics, so the package cannot start with it.
func index(families ...[]*Spec) map[string]*Spec {
	out := map[string]*Spec{}
	for _, f := range families {
		for _, s := range f {
			if _, dup := out[s.Name]; dup {
				panic("command: two rows for " + s.Name)
			}
			m, ok := metaTable[s.Name]
			if !ok {
				panic("command: no metadata for " + s.Name)
			}
			s.Meta, s.Arity = m, m.Arity
			for _, f := range m.Flags {
				s.Flags |= redisFlags[f]
			}
			out[s.Name] = s
		}
	}
	return out
}

// mustRow is the row named name; it panics when there is none (a
// programming error found when the package is initialised).
func mustRow(name string) *Spec {
	s, ok := rows[name]
	if !ok {
		panic("command: no row for " + name)
	}
	return s
}

// Lookup finds the keyspace command (a row the FSM runs) named name, in any
// case. The front door's own commands are found with Row.
func Lookup(name []byte) (*Spec, bool) {
	var buf [32]byte
	if len(name) > len(buf) {
		return nil, false
	}
	s, ok := fsmRows[string(appendLower(buf[:0], name))]
	return s, ok
}

// fsmRows holds the rows Lookup finds: the FSM's, by command name
// ("object|encoding" is no command name). Built once: Lookup runs for every
// request a client sends.
var fsmRows = func() map[string]*Spec {
	out := map[string]*Spec{}
	for name, s := range rows {
		if s.Handler == HandlerFSM && !strings.Contains(name, "|") {
			out[name] = s
		}
	}
	return out
}()

// Row finds any row by name, in any case: a command, or a subcommand named
// "container|sub".
func Row(name string) (*Spec, bool) {
	s, ok := rows[strings.ToLower(name)]
	return s, ok
}

// NoScript reports whether a script may not call the command args names
// (Redis's noscript flag, from the row's metadata): the subcommand's flag when
// args name a known subcommand; for a container (SCRIPT, CLIENT, ACL), which
// has no flags of its own, whether every one of its subcommands has it. An
// unknown command is not noscript (it is unknown).
func NoScript(args [][]byte) bool {
	s := rowOf(args)
	if s == nil {
		return false
	}
	if all, container := containerNoScript[s.Name]; container {
		return all
	}
	return s.Flags.Has(FlagNoScript)
}

// containerNoScript holds, for each command with subcommands, whether every
// one of them is noscript: worked out once from the rows, since NoScript runs
// for every command a script calls (scanning the rows for each call was a
// fifth of a single node's CPU under the Redis lock recipe's release).
var containerNoScript = func() map[string]bool {
	out := map[string]bool{}
	for name, s := range rows {
		if strings.Contains(name, "|") {
			continue
		}
		subs := Subcommands(s.Name)
		if len(subs) == 0 {
			continue
		}
		all := true
		for _, sub := range subs {
			all = all && sub.Flags.Has(FlagNoScript)
		}
		out[s.Name] = all
	}
	return out
}()

// rowOf is the row of the request args: its subcommand's row when the
// command has subcommands and args[1] names one, else its command's; nil for
// an unknown command.
// It runs for every command a script calls, so it allocates nothing and
// looks a subcommand up only under a command that has them.
func rowOf(args [][]byte) *Spec {
	var buf [64]byte
	name := appendLower(buf[:0], args[0])
	s, ok := rows[string(name)]
	if !ok {
		return nil
	}
	if _, container := containerNoScript[s.Name]; container && len(args) > 1 {
		full := appendLower(append(name, '|'), args[1])
		if sub, ok := rows[string(full)]; ok {
			return sub
		}
	}
	return s
}

// appendLower appends b to dst in lower case (ASCII letters only, as
// command names are).
func appendLower(dst, b []byte) []byte {
	for _, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// Specs returns every keyspace command (the rows the FSM runs), sorted by
// name.
func Specs() []*Spec {
	return sorted(func(s *Spec) bool { return s.Handler == HandlerFSM && !strings.Contains(s.Name, "|") })
}

// Commands returns every command, keyspace and front door, without the
// subcommands, sorted by name: what COMMAND, COMMAND COUNT and COMMAND LIST
// describe.
func Commands() []*Spec {
	return sorted(func(s *Spec) bool { return !strings.Contains(s.Name, "|") })
}

// Subcommands returns the rows of container's subcommands, sorted by name;
// nil for a command without subcommands.
func Subcommands(container string) []*Spec {
	prefix := container + "|"
	return sorted(func(s *Spec) bool { return strings.HasPrefix(s.Name, prefix) })
}

func sorted(keep func(*Spec) bool) []*Spec {
	var out []*Spec
	for _, s := range rows {
		if keep(s) {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Parse looks up args[0] and parses the rest. spec is nil for a name that is
// not a keyspace command, nor a subcommand whose arguments are a log entry
// (ACL SETUSER|DELUSER: the rows of HandlerDoor with a parser).
func Parse(args [][]byte) (op Op, spec *Spec, err error) {
	if len(args) == 0 {
		return nil, nil, ErrSyntax
	}
	spec, ok := Lookup(args[0])
	if !ok {
		if len(args) < 2 {
			return nil, nil, nil
		}
		sub := rowOf(args)
		if sub == nil || sub.parse == nil || !strings.Contains(sub.Name, "|") {
			return nil, nil, nil
		}
		spec = sub
	}
	op, err = spec.Parse(args)
	if err != nil && spec.Handler != HandlerFSM {
		return nil, nil, err // as ACL SETUSER|DELUSER always answered
	}
	return op, spec, err
}
