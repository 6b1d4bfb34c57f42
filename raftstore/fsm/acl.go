package fsm

import (
	"bufio"
	"encoding/binary"
	"errors"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// ACL returns the replicated ACL users (nil when none was ever defined). The
// table is immutable, so the caller may keep it after releasing the state lock.
// A "default" user appears only once ACL SETUSER default changed it; until then
// each node's front door uses its configured default (-requirepass).
func (k *Keyspace) ACL() *command.ACLTable { return k.acl }

// aclWrite applies ACL SETUSER (reply OK) and ACL DELUSER (reply: the number of
// users removed). Only a command entry of its own may change users: never a
// script or a transaction, which the front door does not send them in.
func (k *Keyspace) aclWrite(op command.Op, c Ctx) resp.Value {
	if !c.Top {
		return resp.Error("ERR ACL commands run only as commands of their own")
	}
	switch op := op.(type) {
	case command.ACLSetUser:
		name := string(op.Name)
		u, ok := k.acl.User(name)
		base := command.NewUser(name)
		if ok {
			base = *u
		} else if name == command.DefaultUserName {
			base = command.DefaultUser("")
		}
		next, err := command.SetUser(base, op.Rules, false)
		if err != nil {
			return errReply(err)
		}
		k.acl = k.acl.With(next)
		return resp.OK
	case command.ACLDelUser:
		names := make([]string, len(op.Names))
		for i, n := range op.Names {
			if string(n) == command.DefaultUserName {
				return resp.Error(string(command.ErrDefaultUser))
			}
			names[i] = string(n)
		}
		var n int
		k.acl, n = k.acl.Without(names)
		return resp.Int(int64(n))
	}
	return resp.Error("ERR internal: not an ACL operation")
}

// appendUsers writes the users section of a snapshot (version 3): the count,
// then per user its name, a flag byte and its lists.
func appendUsers(buf []byte, t *command.ACLTable) []byte {
	users := t.Users()
	buf = binary.AppendUvarint(buf, uint64(len(users)))
	str := func(s string) {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	list := func(l []string) {
		buf = binary.AppendUvarint(buf, uint64(len(l)))
		for _, s := range l {
			str(s)
		}
	}
	for _, u := range users {
		str(u.Name)
		var flags byte
		for i, f := range []bool{u.On, u.NoPass, u.Sanitize, u.SkipSanit, u.AllKeys, u.AllChannels, u.AllCommands} {
			if f {
				flags |= 1 << i
			}
		}
		buf = append(buf, flags)
		list(u.Passwords)
		list(u.Keys)
		list(u.Channels)
		list(u.Rules)
	}
	return buf
}

// readUsers reads the section appendUsers wrote.
func readUsers(br *bufio.Reader) (*command.ACLTable, error) {
	n, err := binary.ReadUvarint(br)
	if err != nil || n > 1<<24 {
		return nil, errors.New("bad user count")
	}
	readList := func() ([]string, error) {
		m, err := binary.ReadUvarint(br)
		if err != nil || m > 1<<24 {
			return nil, errors.New("bad list length")
		}
		var out []string
		for ; m > 0; m-- {
			b, err := readBytes(br)
			if err != nil {
				return nil, err
			}
			out = append(out, string(b))
		}
		return out, nil
	}
	var users []command.User
	for ; n > 0; n-- {
		name, err := readBytes(br)
		if err != nil {
			return nil, err
		}
		flags, err := br.ReadByte()
		if err != nil {
			return nil, err
		}
		u := command.User{Name: string(name)}
		for i, f := range []*bool{&u.On, &u.NoPass, &u.Sanitize, &u.SkipSanit, &u.AllKeys, &u.AllChannels, &u.AllCommands} {
			*f = flags&(1<<i) != 0
		}
		for _, dst := range []*[]string{&u.Passwords, &u.Keys, &u.Channels, &u.Rules} {
			if *dst, err = readList(); err != nil {
				return nil, err
			}
		}
		for _, r := range u.Rules {
			if len(r) < 2 || (r[0] != '+' && r[0] != '-') {
				return nil, errors.New("bad command rule")
			}
		}
		users = append(users, u)
	}
	if len(users) == 0 {
		return nil, nil
	}
	return command.NewACLTable(users), nil
}
