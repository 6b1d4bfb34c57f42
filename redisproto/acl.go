package redisproto

import (
	"crypto/rand"
	"encoding/hex"
	"strings"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// ACL SETUSER|GETUSER|DELUSER|LIST|USERS|WHOAMI|CAT|GENPASS|HELP. SETUSER and
// DELUSER change the replicated users, so they go through the log (their
// passwords hashed before they are proposed); the others answer from this
// node's replica of the users (like a Redis replica, a node knows a change once
// it applied it).
func init() {
	handle("acl|setuser", cmdACLSetUser)
	handle("acl|deluser", cmdACLDelUser)
	handle("acl|getuser", cmdACLGetUser)
	handle("acl|list", func(c *conn, _ [][]byte) resp.Value {
		var out []resp.Value
		for _, u := range c.srv.users(c.srv.aclTable()) {
			out = append(out, resp.BulkString(u.Describe()))
		}
		return resp.Array(out...)
	})
	handle("acl|users", func(c *conn, _ [][]byte) resp.Value {
		var out []resp.Value
		for _, u := range c.srv.users(c.srv.aclTable()) {
			out = append(out, resp.BulkString(u.Name))
		}
		return resp.Array(out...)
	})
	handle("acl|whoami", func(c *conn, _ [][]byte) resp.Value { return resp.BulkString(c.userName()) })
	handle("acl|cat", cmdACLCat)
	handle("acl|genpass", cmdACLGenPass)
	handle("acl|help", func(*conn, [][]byte) resp.Value {
		return help("ACL", "CAT [<category>]", "    List all commands that belong to <category>, or all command categories",
			"    when no category is specified.", "DELUSER <username> [<username> ...]", "    Delete a list of users.",
			"GETUSER <username>", "    Get the user's details.", "GENPASS [<bits>]",
			"    Generate a secure 256-bit user password. The optional `bits` argument can",
			"    be used to specify a different size.", "LIST", "    Show users details in config file format.",
			"SETUSER <username> <attribute> [<attribute> ...]", "    Create or modify a user with the specified attributes.",
			"USERS", "    List all the registered usernames.", "WHOAMI", "    Return the current connection username.")
	})
}

// ACL SETUSER username [rule ...]
func cmdACLSetUser(c *conn, a [][]byte) resp.Value {
	name := string(a[2])
	if strings.ContainsAny(name, " \x00") {
		return resp.Error("ERR Usernames can't contain spaces or null characters")
	}
	t := c.srv.aclTable()
	base, exists := c.srv.lookupUser(t, name)
	if !exists {
		nu := command.NewUser(name)
		base = &nu
	}
	// Checked here, against the users as this node knows them, so that errors
	// quote the rules as the client wrote them; the FSM applies them again.
	if _, err := command.SetUser(*base, a[3:], true); err != nil {
		return resp.Error(err.Error())
	}
	args := a
	if _, replicated := t.User(name); !replicated && name == command.DefaultUserName && c.srv.cfg.RequirePass != "" {
		// The replicated default starts from Redis's (nopass); keep this
		// node's -requirepass password under the new rules.
		args = append([][]byte{a[0], a[1], a[2], []byte("resetpass"),
			[]byte("#" + command.HashPassword([]byte(c.srv.cfg.RequirePass)))}, a[3:]...)
	}
	args = command.HashACLPasswords(args)
	v := c.srv.store.Do(c.srv.ctx, []command.Request{{Args: args,
		Op: command.ACLSetUser{Name: args[2], Rules: args[3:]}, Spec: command.ACLSetUserSpec, User: c.userName()}})[0]
	c.refreshACL()
	return v
}

// ACL DELUSER username [username ...] — the connections of deleted users are
// closed (this one after its reply).
func cmdACLDelUser(c *conn, a [][]byte) resp.Value {
	for _, n := range a[2:] {
		if string(n) == command.DefaultUserName {
			return resp.Error(string(command.ErrDefaultUser))
		}
	}
	v := c.srv.store.Do(c.srv.ctx, []command.Request{{Args: a,
		Op: command.ACLDelUser{Names: a[2:]}, Spec: command.ACLDelUserSpec, User: c.userName()}})[0]
	c.refreshACL()
	if v.Kind != resp.KindInt || v.Int == 0 {
		return v
	}
	deleted := map[string]bool{}
	for _, n := range a[2:] {
		deleted[string(n)] = true
	}
	for _, o := range c.srv.clients() {
		o.mu.Lock()
		gone := deleted[o.auth.user]
		o.mu.Unlock()
		switch {
		case !gone:
		case o == c:
			c.quit = true
		default:
			o.kill()
		}
	}
	return v
}

// ACL GETUSER username
func cmdACLGetUser(c *conn, a [][]byte) resp.Value {
	u, ok := c.srv.lookupUser(c.srv.aclTable(), string(a[2]))
	if !ok {
		return resp.Nil
	}
	var flags, pws []resp.Value
	for _, f := range u.Flags() {
		flags = append(flags, resp.BulkString(f))
	}
	for _, p := range u.Passwords {
		pws = append(pws, resp.BulkString(p))
	}
	return resp.Map(
		resp.BulkString("flags"), resp.Value{Kind: resp.KindSet, Elems: flags},
		resp.BulkString("passwords"), resp.Array(pws...),
		resp.BulkString("commands"), resp.BulkString(u.CommandRules()),
		resp.BulkString("keys"), resp.BulkString(u.KeyRules()),
		resp.BulkString("channels"), resp.BulkString(u.ChannelRules()),
		resp.BulkString("selectors"), resp.EmptyList,
	)
}

// ACL CAT [category]
func cmdACLCat(_ *conn, a [][]byte) resp.Value {
	var out []resp.Value
	if len(a) == 2 {
		for _, c := range command.ACLCategories {
			out = append(out, resp.BulkString(c))
		}
		return resp.Array(out...)
	}
	if len(a) > 3 {
		return resp.Error(string(command.ErrArity("acl|cat")))
	}
	cat := strings.ToLower(string(a[2]))
	if !command.IsACLCategory(cat) {
		return command.Echo("ERR Unknown category '", a[2][:min(len(a[2]), 128)], "'").Reply() // "%.128s"
	}
	for _, n := range command.CommandsInCategory(cat) {
		out = append(out, resp.BulkString(n))
	}
	return resp.Array(out...)
}

// ACL GENPASS [bits] — a random password of bits (default 256) in hex.
func cmdACLGenPass(_ *conn, a [][]byte) resp.Value {
	bits := int64(256)
	if len(a) > 3 {
		return resp.Error(string(command.ErrArity("acl|genpass")))
	}
	if len(a) == 3 {
		n, ok := command.ParseInt(a[2])
		if !ok {
			return resp.Error(string(command.ErrNotInt))
		}
		if n <= 0 || n > 4096 {
			return resp.Error("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")
		}
		bits = n
	}
	chars := (bits + 3) / 4
	b := make([]byte, (chars+1)/2)
	rand.Read(b)
	return resp.BulkString(hex.EncodeToString(b)[:chars])
}
