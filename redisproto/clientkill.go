package redisproto

import (
	"strconv"
	"strings"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// CLIENT KILL addr:port (the old form: OK or an error), or CLIENT KILL with
// filters ID id | ADDR ip:port | LADDR ip:port | USER username | SKIPME yes|no (the number of
// clients closed). Closing a client blocked in LOCK.ACQUIRE … WAIT takes it out
// of the queue, as a disconnect does.
func cmdClientKill(c *conn, a [][]byte) resp.Value {
	if len(a) == 3 {
		n := c.srv.killClients(func(x *conn) bool { return x.addr == string(a[2]) })
		if n == 0 {
			return resp.Error("ERR No such client")
		}
		return resp.OK
	}
	if len(a)%2 != 0 {
		return resp.Error(string(command.ErrSyntax))
	}
	var filters []func(*conn) bool
	skipMe := true
	for i := 2; i < len(a); i += 2 {
		v := string(a[i+1])
		switch strings.ToLower(string(a[i])) {
		case "id":
			id, err := strconv.ParseInt(v, 10, 64)
			if err != nil || id <= 0 {
				return resp.Error("ERR client-id should be greater than 0")
			}
			filters = append(filters, func(x *conn) bool { return x.id == id })
		case "addr":
			filters = append(filters, func(x *conn) bool { return x.addr == v })
		case "laddr":
			filters = append(filters, func(x *conn) bool { return x.laddr == v })
		case "user":
			if _, ok := c.srv.lookupUser(c.srv.aclTable(), v); !ok {
				return command.Echo("ERR No such user '", a[i+1], "'").Reply()
			}
			filters = append(filters, func(x *conn) bool {
				x.mu.Lock()
				defer x.mu.Unlock()
				return x.userName() == v
			})
		case "skipme":
			switch strings.ToLower(v) {
			case "yes":
				skipMe = true
			case "no":
				skipMe = false
			default:
				return resp.Error(string(command.ErrSyntax))
			}
		default:
			return resp.Error(string(command.ErrSyntax))
		}
	}
	n := c.srv.killClients(func(x *conn) bool {
		if skipMe && x == c {
			return false
		}
		for _, f := range filters {
			if !f(x) {
				return false
			}
		}
		return true
	})
	return resp.Int(int64(n))
}

// killClients closes the connections match selects and returns how many.
func (s *Server) killClients(match func(*conn) bool) int {
	n := 0
	for _, x := range s.clients() {
		// A client killed before stays listed until its owner ends it: it
		// is gone for CLIENT KILL at once, as in Redis.
		if match(x) && !x.killedByClient.Swap(true) {
			x.kill()
			n++
		}
	}
	return n
}
