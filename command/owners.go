package command

import (
	"errors"
	"strconv"
)

// Session owners (issue 44). A session belongs to the user who opened it:
// only that user, or a user who manages every session (ManagesSessions), may
// keep it alive, close it or hold locks with it. The owner is replicated (the
// session table, snapshots, slot moves, attaches in other groups). Sessions
// opened before every member of a group understood owners have none
// (Settings): anyone who may run the session commands may use those, as
// before owners existed.

// ErrSessionNoPerm is the reply to a session command on a session that
// belongs to another user, worded as Redis words its NOPERM errors.
const ErrSessionNoPerm Denied = "NOPERM this user has no permissions to use this session (it belongs to another user)"

// ErrMaxSessions is the reply to a SESSION.OPEN past the per-user cap.
func ErrMaxSessions(limit int64) Error {
	return Error("ERR max sessions per user reached (" + strconv.FormatInt(limit, 10) +
		"): close one of this user's sessions first (the cap is lockd's -max-sessions-per-user)")
}

// defaultUser is Redis's default user, every key, channel and command.
var defaultUser = DefaultUser("")

// LookupUser finds name in t. "default", until ACL SETUSER default
// replicates a definition of it, is Redis's default user (every key, channel
// and command): whatever password a node's -requirepass gives it, its rights
// are the same on every node, so every replica resolves it alike. The user is
// shared: callers must not change it.
func LookupUser(t *ACLTable, name string) (*User, bool) {
	if u, ok := t.User(name); ok {
		return u, true
	}
	if name == DefaultUserName {
		return &defaultUser, true
	}
	return nil, false
}

// ManagesSessions reports whether u may use every session, whoever opened it:
// u is allowed every key and every command of the @admin category (such a
// user may change any user's rights with ACL SETUSER anyway). Such users are
// not held to the per-user session cap either.
func (u *User) ManagesSessions() bool {
	if !u.AllKeys {
		return false
	}
	if u.AllCommands && len(u.Rules) == 0 {
		return true
	}
	for _, name := range CommandsInCategory("admin") {
		if !u.CanRun(name, metaTable[name].Categories) {
			return false
		}
	}
	return true
}

// MayUseSession reports whether user may use a session that belongs to owner:
// the session has no owner, user owns it, or user manages every session. An
// empty user is the store itself (or a request from a node that does not
// send users): it may. users is the replicated ACL table.
func MayUseSession(users *ACLTable, user, owner string) bool {
	if owner == "" || user == "" || user == owner {
		return true
	}
	u, ok := LookupUser(users, user)
	return ok && u.ManagesSessions()
}

// KindSettings records cluster settings that the leader replicates (its Args
// are SettingsArgs). It is proposed only when every member of the group
// understands it, and from then on the group's leaders may use the features it
// turns on (a ratchet: once on, a feature stays on).
const KindSettings Kind = 13

// Feature bits of Settings.Features.
const (
	// FeatureOwners: sessions record their owner. SESSION.OPEN entries of a
	// user are KindScriptAs entries (the user is the owner), attaches carry
	// the owner, slot exports carry owners (version 2), scripts' session
	// commands are checked against owners, and forwarded requests carry their
	// user whatever their kind (wire tag 'W').
	FeatureOwners uint64 = 1 << iota
	// FeatureWatchDeletes: the group keeps tombstones of deleted keys, and an
	// absent key's WATCH version changes when it was created and deleted
	// again (raftstore/fsm/watch.go; snapshot version 6).
	FeatureWatchDeletes
	// FeatureCollections: sorted sets and lists (new value kinds in entries,
	// snapshots and slot moves); their commands are refused until it is on.
	FeatureCollections
	// FeatureSameValueNX: SET … NX (and SETNX) on a key that holds exactly
	// the value being set is a grant to that owner, not a refusal: the write
	// happens (new expiry), the fencing token stays the grant's. It makes a
	// Redlock client over several nodes of one cluster reach its quorum, and a
	// blind retry of a SET … NX whose reply was lost answer as the first
	// try did. A mode: the leader's -strict-nx turns it off again (ModeFeatures).
	FeatureSameValueNX
	// FeatureMigration: what moving keys over from Redis adds to entries
	// and snapshots (issue 48): RESTORE entries, the replication offsets a
	// group records with the writes it takes from a Redis master, and the
	// released value kept with a deleted key's tombstone. Commands that need
	// it (FlagMigration) are refused until it is on.
	FeatureMigration
)

// ModeFeatures are the features a leader's configuration may turn off again
// (the others, once on, stay on: they change what the log can hold).
const ModeFeatures = FeatureSameValueNX

// Settings is what a KindSettings entry sets.
type Settings struct {
	Features uint64
	// MaxSessionsPerUser caps the sessions a user (other than one who
	// manages every session) may have open in the group; 0 = no cap.
	MaxSessionsPerUser int64
}

// Owners reports whether sessions record owners.
func (s Settings) Owners() bool { return s.Features&FeatureOwners != 0 }

// SettingsArgs is the argument vector of a KindSettings entry.
func SettingsArgs(s Settings) [][]byte {
	return [][]byte{strconv.AppendUint(nil, s.Features, 10), strconv.AppendInt(nil, s.MaxSessionsPerUser, 10)}
}

// errBadSettings reports a KindSettings entry that does not parse.
var errBadSettings = errors.New("command: bad settings entry")

// ParseSettingsArgs is the inverse of SettingsArgs.
func ParseSettingsArgs(a [][]byte) (Settings, error) {
	if len(a) != 2 {
		return Settings{}, errBadSettings
	}
	f, err := strconv.ParseUint(string(a[0]), 10, 64)
	if err != nil {
		return Settings{}, errBadSettings
	}
	n, ok := ParseInt(a[1])
	if !ok || n < 0 {
		return Settings{}, errBadSettings
	}
	return Settings{Features: f, MaxSessionsPerUser: n}, nil
}

// SessionIDs lists the sessions a command uses (that an owner check
// concerns): SESSION.KEEPALIVE's and SESSION.CLOSE's id, LOCK.ACQUIRE's
// SESSION. Other ops use none.
func SessionIDs(op Op) []uint64 {
	switch op := op.(type) {
	case SessionKeepalive:
		return []uint64{op.ID}
	case SessionClose:
		return []uint64{op.ID}
	case LockAcquire:
		if op.Session != 0 {
			return []uint64{op.Session}
		}
	}
	return nil
}

// AuthorizeRequest checks a request that reached the store with its user (a
// forwarded one) against u, as the front door checks what builds it: the
// command with its keys and channels; a transaction's EXEC, WATCH keys and
// every queued command; SCRIPT LOAD, EXISTS and FLUSH; WATCH; the RAFT
// subcommands. It returns nil or the NOPERM error. An operation between nodes
// (Admin "status", "await", "propose"), which no client sends, is refused: a
// node sends those without a user.
func (u *User) AuthorizeRequest(r Request) error {
	if u.Unrestricted() {
		return nil
	}
	bs := func(ss ...string) [][]byte {
		out := make([][]byte, len(ss))
		for i, s := range ss {
			out[i] = []byte(s)
		}
		return out
	}
	switch op := r.Op.(type) {
	case Tx:
		if err := u.Authorize("exec", bs("EXEC")); err != nil {
			return err
		}
		for _, w := range op.Watch {
			if err := u.Authorize("watch", [][]byte{[]byte("WATCH"), w.Key}); err != nil {
				return err
			}
		}
		for _, c := range op.Cmds {
			if len(c) == 0 {
				return ErrNoPermCommand("exec")
			}
			if err := u.Authorize(FullName(c), c); err != nil {
				return err
			}
		}
		return nil
	case ScriptLoad:
		return u.Authorize("script|load", [][]byte{[]byte("SCRIPT"), []byte("LOAD"), op.Source})
	case ScriptFlush:
		return u.Authorize("script|flush", bs("SCRIPT", "FLUSH"))
	case ScriptExists:
		return u.Authorize("script|exists", append(bs("SCRIPT", "EXISTS"), op.SHAs...))
	case Versions:
		return u.Authorize("watch", append(bs("WATCH"), op.Keys...))
	case Admin:
		switch op.Action {
		case "add", "remove", "transfer", "members", "groups", "moveslots", "addgroups":
			return u.Authorize("raft|"+op.Action, bs("RAFT", op.Action))
		}
		return ErrNoPermCommand("raft")
	}
	if len(r.Args) == 0 {
		name := "unknown"
		if r.Spec != nil {
			name = r.Spec.Name
		}
		return ErrNoPermCommand(name)
	}
	return u.Authorize(FullName(r.Args), r.Args)
}
