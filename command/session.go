package command

import (
	"strconv"
	"strings"
)

// Session TTL bounds (the seed's default 15 s, 5–60 s allowed). The server
// clamps what a client asks for into them.
const (
	DefaultSessionTTL = 15000
	MinSessionTTL     = 5000
	MaxSessionTTL     = 60000
)

// SessionOpen is SESSION.OPEN [TTL ms] [NAME client] [NAMESPACE prefix]. The
// session's id is the index of the entry that opened it. With NAMESPACE the
// namespace's MAXTTL and DEFAULTTTL bound the TTL too (never below
// MinSessionTTL).
type SessionOpen struct {
	TTL       int64
	TTLSet    bool
	Name      []byte
	Namespace []byte
}

// SessionKeepalive is SESSION.KEEPALIVE id. It is no log entry: the leader
// renews the session in its memory.
type SessionKeepalive struct{ ID uint64 }

// SessionClose is SESSION.CLOSE id: the session ends and its locks are released.
type SessionClose struct{ ID uint64 }

func (SessionOpen) isOp()      {}
func (SessionKeepalive) isOp() {}
func (SessionClose) isOp()     {}

// KindSessionExpire ends a session whose keepalives lapsed (proposed by the
// leader); its Args are SessionExpireArgs(id).
const KindSessionExpire Kind = 6

// KindScriptAs is a command run on behalf of a user: Args are
// ScriptAsArgs(user, the command's args). For an EVAL/EVALSHA of a user with
// ACL restrictions every command the script calls is checked against that
// user's replicated ACL. Once the group's settings turn owners on
// (FeatureOwners), a user's SESSION.OPEN is such an entry too: the user owns
// the session, and the per-user cap applies.
const KindScriptAs Kind = 7

// ScriptAsArgs is the argument vector of a KindScriptAs entry.
func ScriptAsArgs(user string, args [][]byte) [][]byte {
	return append([][]byte{[]byte(user)}, args...)
}

// ParseScriptAsArgs is the inverse of ScriptAsArgs.
func ParseScriptAsArgs(a [][]byte) (string, [][]byte, error) {
	if len(a) < 2 {
		return "", nil, ErrCorrupt
	}
	return string(a[0]), a[1:], nil
}

// SessionExpireArgs is the argument vector of a KindSessionExpire entry.
func SessionExpireArgs(id uint64) [][]byte { return [][]byte{strconv.AppendUint(nil, id, 10)} }

// ParseSessionExpireArgs is the inverse of SessionExpireArgs.
func ParseSessionExpireArgs(a [][]byte) (uint64, error) {
	if len(a) != 1 {
		return 0, ErrCorrupt
	}
	id, err := strconv.ParseUint(string(a[0]), 10, 64)
	if err != nil {
		return 0, ErrCorrupt
	}
	return id, nil
}

// A session is opened in group 0 (its id is the index of that group's entry)
// and lives in every group that holds one of its locks.
var sessionRows = []*Spec{
	fsmRow("session.open", FlagWrite|FlagSession, RouteGroupZero, parseSessionOpen),
	fsmRow("session.keepalive", FlagSession, RouteSessions, func(_ string, a [][]byte) (Op, error) {
		id, err := parseSessionID(a[1])
		return SessionKeepalive{ID: id}, err
	}),
	fsmRow("session.close", FlagWrite|FlagSession, RouteSessions, func(_ string, a [][]byte) (Op, error) {
		id, err := parseSessionID(a[1])
		return SessionClose{ID: id}, err
	}),
}

// ErrNoSession is the reply for an unknown or expired session.
const ErrNoSession Error = "NOSESSION no such session (it expired or was closed)"

func parseSessionID(b []byte) (uint64, error) {
	id, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil || id == 0 {
		return 0, ErrNoSession
	}
	return id, nil
}

// SESSION.OPEN [TTL ms] [NAME client] [NAMESPACE prefix]
func parseSessionOpen(_ string, a [][]byte) (Op, error) {
	op := SessionOpen{TTL: DefaultSessionTTL}
	for i := 1; i < len(a); i++ {
		if i+1 >= len(a) {
			return nil, ErrSyntax
		}
		switch strings.ToLower(string(a[i])) {
		case "ttl":
			ms, ok := ParseInt(a[i+1])
			if !ok {
				return nil, ErrNotInt
			}
			op.TTL, op.TTLSet = min(max(ms, MinSessionTTL), MaxSessionTTL), true
		case "name":
			op.Name = a[i+1]
		case "namespace":
			op.Namespace = a[i+1]
		default:
			return nil, ErrSyntax
		}
		i++
	}
	return op, nil
}
