package redisproto

import (
	"errors"
	"strings"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// Authentication and authorisation, as Redis 7.0 does them:
//
//   - Every connection starts as the user "default". While "default" is on and
//     nopass (lockd without -requirepass, and no ACL SETUSER default changed
//     it), nobody needs to authenticate. Otherwise every command but AUTH,
//     HELLO and QUIT is answered NOAUTH until AUTH (or HELLO … AUTH) succeeds.
//   - Users come from the replicated ACL table (ACL SETUSER, through the log);
//     the "default" user comes from Config.RequirePass until ACL SETUSER default
//     replicates a definition of it.
//   - Every command is checked against the connection's user as the table is
//     now: its command rules and categories, its key patterns (the keys found
//     through the command's key specifications) and its channel patterns
//     (PUBLISH, SUBSCRIBE, PSUBSCRIBE): NOPERM otherwise. A connection whose
//     user was deleted is closed, as Redis closes it.
//
// Unknown commands and wrong arities are answered before NOAUTH and NOPERM, as
// in Redis. Scripts are checked on their declared keys (EVAL's KEYS); the keys a
// script's redis.call reaches are not checked (see SECURITY.md).

// ACLSource is implemented by a Store that replicates ACL users
// (raftstore/group.Store). Without it, the only user is the configured default.
type ACLSource interface {
	// ACL returns the replicated users; nil when none was defined.
	ACL() *command.ACLTable
}

// aclTable is the store's current user table, or nil.
func (s *Server) aclTable() *command.ACLTable {
	if src, ok := s.store.(ACLSource); ok {
		return src.ACL()
	}
	return nil
}

// lookupUser finds a user in t, falling back to the configured default user
// for "default". The user is shared: callers read it and change only copies
// (command.SetUser clones).
func (s *Server) lookupUser(t *command.ACLTable, name string) (*command.User, bool) {
	if u, ok := t.User(name); ok {
		return u, true
	}
	if name == command.DefaultUserName {
		return &s.defaultUser, true
	}
	return nil, false
}

// users is every user as ACL LIST shows them: the replicated ones and the
// configured default, sorted by name.
func (s *Server) users(t *command.ACLTable) []command.User {
	out := append([]command.User(nil), t.Users()...)
	if _, ok := t.User(command.DefaultUserName); !ok {
		i := 0
		for i < len(out) && out[i].Name < command.DefaultUserName {
			i++
		}
		out = append(out[:i], append([]command.User{s.defaultUser}, out[i:]...)...)
	}
	return out
}

// AuthRequired reports whether clients must authenticate: the default user is
// off or has a password.
func (s *Server) AuthRequired() bool {
	u, _ := s.lookupUser(s.aclTable(), command.DefaultUserName)
	return !(u.On && u.NoPass)
}

// Authenticate checks a user name and password (as AUTH does) and returns the
// user. The HTTP door uses it too.
func (s *Server) Authenticate(user, pass string) (*command.User, bool) {
	u, ok := s.lookupUser(s.aclTable(), user)
	if !ok || !u.CheckPassword([]byte(pass)) {
		s.stats.authFailures.Add(1)
		return nil, false
	}
	return u, true
}

// authState is a connection's authentication: its user's name and whether it
// authenticated (AUTH or HELLO … AUTH succeeded).
type authState struct {
	user   string
	authed bool
	acl    *command.ACLTable // the table as of this batch of requests
	stale  bool              // acl must be read again before the next check
}

func (c *conn) userName() string {
	if c.auth.user == "" {
		return command.DefaultUserName
	}
	return c.auth.user
}

// initAuth starts the connection as "default", authenticated when that user
// is on and nopass (as Redis decides when it accepts a client).
func (c *conn) initAuth() {
	c.refreshACL()
	c.auth.authed = c.mayPass()
}

// refreshACL reads the current user table; the connection checks a batch of
// requests against it.
func (c *conn) refreshACL() { c.auth.acl, c.auth.stale = c.srv.aclTable(), false }

// mustAuthenticate reports whether c must still authenticate before its
// commands run (Redis's authRequired): the reader's unauthed, asked only for
// a request past the pre-authentication limits. It runs on c's owner.
func (c *conn) mustAuthenticate() bool {
	if c.auth.authed {
		return false
	}
	if c.auth.stale || c.auth.acl == nil {
		c.refreshACL()
	}
	return !c.mayPass()
}

// mayPass reports whether the connection needs no (further) authentication.
func (c *conn) mayPass() bool {
	if c.auth.authed {
		return true
	}
	d, _ := c.srv.lookupUser(c.auth.acl, command.DefaultUserName)
	return d.On && d.NoPass
}

// resolve finds the command args name: its full name ("container|sub" for a
// subcommand, a keyspace container's included: "object|encoding"), whose row
// the ACL rules and categories are checked on. ok is false for an unknown command or subcommand and for a
// wrong number of arguments, which the command's own path answers (before
// NOAUTH, as in Redis).
func resolve(q *request) (full string, ok bool) {
	args := q.args
	if spec := q.lookup(); spec != nil {
		spec, found := command.Subcommand(spec, args)
		if !found {
			return "", false // the container's parser answers "unknown subcommand"
		}
		return spec.Name, spec.CheckArity(len(args))
	}
	s, found := locals[strings.ToLower(string(args[0]))]
	if !found {
		return "", false
	}
	if s.sub != nil {
		if len(args) < 2 {
			return "", false
		}
		if s = s.sub[strings.ToLower(string(args[1]))]; s == nil {
			return "", false
		}
	}
	return s.Name, s.CheckArity(len(args))
}

// noAuth reports whether a command runs before authentication (AUTH, HELLO,
// QUIT: its row's FlagNoAuth, Redis's no_auth).
func noAuth(full string) bool {
	r, ok := command.Row(full)
	return ok && r.Flags.Has(command.FlagNoAuth)
}

// authorize checks one request before it is run or queued: NOAUTH, NOPERM, or
// (denied false) nothing to say. A request that fails inside MULTI makes EXEC
// abort, as in Redis. When the connection's user no longer exists the
// connection is closed without a reply.
func (c *conn) authorize(q *request) (resp.Value, bool) {
	args := q.args
	full, ok := resolve(q)
	if !ok {
		return resp.Value{}, false
	}
	if c.auth.stale {
		c.refreshACL()
	}
	var err error
	u, found := c.srv.lookupUser(c.auth.acl, c.userName())
	switch {
	case !found:
		c.quit = true
		return resp.Value{Kind: noReply}, true
	case !c.mayPass():
		if noAuth(full) {
			return resp.Value{}, false
		}
		err = command.ErrNoAuth
		c.srv.stats.noAuth.Add(1)
	default:
		if err = u.Authorize(full, args); err != nil {
			c.srv.stats.noPerm.Add(1)
		}
	}
	if err == nil {
		return resp.Value{}, false
	}
	if c.tx != nil {
		c.tx.dirty = true
	}
	return resp.Error(err.Error()), true
}

// login makes the connection user name's, if pass opens it; otherwise the
// error reply: WRONGPASS, or ErrAuthThrottled for an attempt its address may
// not make yet (authlimit.go).
func (c *conn) login(name, pass []byte) (resp.Value, bool) {
	t := c.srv.aclTable()
	u, err := c.srv.authenticate(c.srv.ctx, c.addr, t, string(name), pass)
	if err != nil {
		var th AuthThrottledError
		if errors.As(err, &th) {
			return resp.Error(string(ErrAuthThrottled)), false
		}
		return resp.Error(string(command.ErrWrongPass)), false
	}
	c.mu.Lock() // CLIENT LIST reads the user name
	c.auth.user, c.auth.authed, c.auth.acl = u.Name, true, c.srv.aclTable()
	c.mu.Unlock()
	return resp.OK, true
}

// AUTH [username] password
func cmdAuth(c *conn, a [][]byte) resp.Value {
	var name, pass []byte
	switch len(a) {
	case 2:
		if d, _ := c.srv.lookupUser(c.srv.aclTable(), command.DefaultUserName); d.NoPass {
			return resp.Error(string(command.ErrAuthNoPasswd))
		}
		name, pass = []byte(command.DefaultUserName), a[1]
	case 3:
		name, pass = a[1], a[2]
	default:
		return resp.Error(string(command.ErrSyntax))
	}
	v, _ := c.login(name, pass)
	return v
}

// helloAuth runs HELLO's AUTH option (name is nil without one) and then
// requires the connection to be authenticated; failed reports the error reply.
func (c *conn) helloAuth(name, pass []byte) (v resp.Value, failed bool) {
	if name != nil {
		if v, ok := c.login(name, pass); !ok {
			return v, true
		}
	}
	c.refreshACL()
	if !c.mayPass() {
		return resp.Error(string(command.ErrHelloNoAuth)), true
	}
	return resp.Value{}, false
}

// scriptUser is the user whose ACL the commands of an EVAL/EVALSHA of this
// connection would be checked against where the script runs (the store
// decides that again from the request's user); "" for other ops and for
// users without restrictions.
func (c *conn) scriptUser(spec *command.Spec) string {
	if !spec.RunsScript() {
		return ""
	}
	if c.auth.stale {
		c.refreshACL()
	}
	u, found := c.srv.lookupUser(c.auth.acl, c.userName())
	if !found || u.Unrestricted() {
		return ""
	}
	return u.Name
}
