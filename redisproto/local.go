package redisproto

import (
	"strconv"
	"strings"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// localSpec is a command the front door answers itself: its row of the
// command table (HandlerDoor) and the handler registered for it.
type localSpec struct {
	*command.Spec
	run func(c *conn, args [][]byte) resp.Value
	sub map[string]*localSpec // subcommands (CLIENT, CONFIG, COMMAND)
}

// locals are the front door's commands, by name: every HandlerDoor row of the
// command table, with its subcommands' rows. The handlers are registered by
// name (handle); TestDoorHandlers checks that every row has one.
var locals = doorTable()

func doorTable() map[string]*localSpec {
	out := map[string]*localSpec{}
	for _, s := range command.Commands() {
		if s.Handler != command.HandlerDoor {
			continue
		}
		l := &localSpec{Spec: s}
		for _, sub := range command.Subcommands(s.Name) {
			if l.sub == nil {
				l.sub = map[string]*localSpec{}
			}
			_, name, _ := strings.Cut(sub.Name, "|")
			l.sub[name] = &localSpec{Spec: sub}
		}
		out[s.Name] = l
	}
	return out
}

// handle registers run as the handler of the front door's row fullName
// ("ping", or "client|id" for a subcommand). It panics, when the package is
// initialised, for a name that is no HandlerDoor row and for a second handler
// of one row: every handler has exactly one row and every row at most one
// handler.
func handle(fullName string, run func(*conn, [][]byte) resp.Value) *localSpec {
	parent, sub, isSub := strings.Cut(fullName, "|")
	s := locals[parent]
	if s != nil && isSub {
		s = s.sub[sub]
	}
	switch {
	case s == nil:
		panic("redisproto: a handler for " + fullName + ", which is no front-door row of the command table")
	case s.run != nil:
		panic("redisproto: two handlers for " + fullName)
	}
	s.run = run
	return s
}

func init() {
	handle("ping", cmdPing)
	handle("echo", func(_ *conn, a [][]byte) resp.Value { return resp.Bulk(a[1]) })
	handle("quit", func(c *conn, _ [][]byte) resp.Value {
		c.quit = true
		return resp.OK
	})
	handle("select", cmdSelect)
	handle("auth", cmdAuth)
	handle("hello", cmdHello)
	handle("time", cmdTime)
	handle("wait", cmdWait)
	handle("info", cmdInfo)

	handle("client|id", func(c *conn, _ [][]byte) resp.Value { return resp.Int(c.id) })
	handle("client|getname", func(c *conn, _ [][]byte) resp.Value {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.name == "" {
			return resp.Nil
		}
		return resp.BulkString(c.name)
	})
	handle("client|setname", func(c *conn, a [][]byte) resp.Value {
		if !validName(a[2]) {
			return resp.Error("ERR Client names cannot contain spaces, newlines or special characters.")
		}
		c.mu.Lock()
		c.name = string(a[2])
		c.mu.Unlock()
		return resp.OK
	})
	handle("client|setinfo", cmdClientSetInfo)
	handle("client|info", func(c *conn, _ [][]byte) resp.Value {
		return resp.Verbatim(c.infoLine())
	})
	handle("client|list", cmdClientList)
	handle("client|kill", cmdClientKill)
	for _, n := range []string{"no-evict", "no-touch"} {
		handle("client|"+n, func(_ *conn, a [][]byte) resp.Value {
			if !command.EqualFold(a[2], "on") && !command.EqualFold(a[2], "off") {
				return resp.Error(string(command.ErrSyntax))
			}
			return resp.OK
		})
	}
	handle("client|help", func(*conn, [][]byte) resp.Value {
		return help("CLIENT", "GETNAME", "    Return the name of the current connection.", "ID",
			"    Return the ID of the current connection.", "INFO", "    Return information about the current client connection.",
			"LIST [options ...]", "    Return information about client connections.", "SETNAME <name>",
			"    Assign the name <name> to the current connection.", "SETINFO <option> <value>",
			"    Set client meta attr. Options are:", "    * LIB-NAME: the client lib name.", "    * LIB-VER: the client lib version.",
			"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]", "         [OPTIN] [OPTOUT] [NOLOOP]",
			"    Control server assisted client side caching.", "TRACKINGINFO", "    Report tracking status for the current connection.",
			"CACHING (YES|NO)", "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
			"GETREDIR", "    Return the client ID we are redirecting to when tracking is enabled.",
			"NO-EVICT (ON|OFF)", "    Accepted for compatibility; lockd never evicts.", "NO-TOUCH (ON|OFF)", "    Accepted for compatibility.")
	})

	handle("config|get", cmdConfigGet)
	handle("config|set", cmdConfigSet)
	handle("config|resetstat", func(*conn, [][]byte) resp.Value { return resp.OK })
	handle("config|help", func(*conn, [][]byte) resp.Value {
		return help("CONFIG", "GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
			"RESETSTAT", "    Reset statistics reported by the INFO command.")
	})

	handle("command", cmdCommand)
	handle("command|count", func(*conn, [][]byte) resp.Value { return resp.Int(int64(len(allSpecs()))) })
	handle("command|info", cmdCommandInfo)
	handle("command|docs", cmdCommandDocs)
	handle("command|list", func(*conn, [][]byte) resp.Value {
		var out []resp.Value
		for _, s := range allSpecs() {
			out = append(out, resp.BulkString(s.Name))
		}
		return resp.Array(out...)
	})
	handle("command|help", func(*conn, [][]byte) resp.Value {
		return help("COMMAND", "(no subcommand)", "    Return details about all Redis commands.", "COUNT",
			"    Return the total number of commands in this Redis server.", "LIST", "    Return a list of all commands in this Redis server.",
			"INFO [<command-name> ...]", "    Return details about multiple Redis commands.", "DOCS [<command-name> ...]",
			"    Return documentation details about multiple Redis commands.")
	})
}

// local runs a command the front door answers itself, or the unknown-command and
// arity errors.
func (c *conn) local(args [][]byte) resp.Value {
	name := strings.ToLower(string(args[0]))
	s, ok := locals[name]
	if !ok {
		return errUnknownCommand(args)
	}
	if s.sub != nil && len(args) >= 2 {
		sub, ok := s.sub[strings.ToLower(string(args[1]))]
		if !ok {
			return errUnknownSubcommand(args[0], args[1])
		}
		s = sub
	}
	c.touch(s.Name)
	if !s.CheckArity(len(args)) || s.run == nil {
		return c.rejectArity(s.Name)
	}
	return s.run(c, args)
}

// rejectArity answers a front-door command of the wrong arity as Redis 7
// rejects one: a rejected EXEC discards the transaction, if any, and the
// watches, answering EXECABORT with why (Redis's execCommandAbort, inside
// MULTI or not); any other rejection inside MULTI flags the transaction, so
// that EXEC answers EXECABORT.
func (c *conn) rejectArity(name string) resp.Value {
	msg := string(command.ErrArity(name))
	if name == "exec" {
		c.tx, c.watches = nil, nil
		return resp.Error("EXECABORT Transaction discarded because of: " + strings.TrimPrefix(msg, "ERR "))
	}
	if c.tx != nil {
		c.tx.dirty = true
	}
	return resp.Error(msg)
}

// errUnknownSubcommand words the reply to an unknown subcommand of a
// container, as Redis 7 does (the subcommand cut at a NUL and at 128 bytes),
// outside MULTI or inside, where it also flags the transaction.
func errUnknownSubcommand(container, sub []byte) resp.Value {
	return resp.Error("ERR unknown subcommand '" + trunc(cstr(sub), 128) + "'. Try " + strings.ToUpper(string(container)) + " HELP.")
}

func trunc(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func help(name string, lines ...string) resp.Value {
	out := []resp.Value{resp.Simple(name + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")}
	for _, l := range lines {
		out = append(out, resp.Simple(l))
	}
	out = append(out, resp.Simple("HELP"), resp.Simple("    Print this help."))
	return resp.Array(out...)
}

// PING [message] — in RESP2 subscribed mode the reply is ["pong", message].
func cmdPing(c *conn, a [][]byte) resp.Value {
	if len(a) <= 2 && c.protocol() == 2 && c.subCount() > 0 {
		msg := resp.BulkString("")
		if len(a) == 2 {
			msg = resp.Bulk(a[1])
		}
		return resp.Array(resp.BulkString("pong"), msg)
	}
	switch len(a) {
	case 1:
		return resp.Simple("PONG")
	case 2:
		return resp.Bulk(a[1])
	}
	return resp.Error(string(command.ErrArity("ping")))
}

// SELECT index — lockd has one database, 0.
func cmdSelect(_ *conn, a [][]byte) resp.Value {
	n, ok := command.ParseInt(a[1])
	if !ok || n > 1<<31-1 || n < -(1<<31) {
		return resp.Error(string(command.ErrNotInt))
	}
	if n != 0 {
		return resp.Error("ERR DB index is out of range")
	}
	return resp.OK
}

// HELLO [protover [AUTH username password] [SETNAME clientname]]
func cmdHello(c *conn, a [][]byte) resp.Value {
	proto := 0
	if len(a) >= 2 {
		v, ok := command.ParseInt(a[1])
		if !ok {
			return resp.Error("ERR Protocol version is not an integer or out of range")
		}
		if v < 2 || v > 3 {
			return resp.Error("NOPROTO unsupported protocol version")
		}
		proto = int(v)
	}
	var setName, authUser, authPass []byte
	for i := 2; i < len(a); i++ {
		more := len(a) - i - 1
		switch {
		case command.EqualFold(a[i], "auth") && more >= 2:
			authUser, authPass = a[i+1], a[i+2]
			i += 2
		case command.EqualFold(a[i], "setname") && more >= 1:
			setName = a[i+1]
			if !validName(setName) {
				return resp.Error("ERR Client names cannot contain spaces, newlines or special characters.")
			}
			i++
		default:
			return command.Echo("ERR Syntax error in HELLO option '", a[i], "'").Reply()
		}
	}
	if v, failed := c.helloAuth(authUser, authPass); failed { // auth.go
		return v
	}
	c.mu.Lock()
	if setName != nil {
		c.name = string(setName)
	}
	if proto != 0 {
		c.proto.Store(int32(proto))
	}
	proto = c.protocol()
	c.mu.Unlock()
	return resp.Map(
		resp.BulkString("server"), resp.BulkString("redis"),
		resp.BulkString("version"), resp.BulkString(RedisVersion),
		resp.BulkString("proto"), resp.Int(int64(proto)),
		resp.BulkString("id"), resp.Int(c.id),
		resp.BulkString("mode"), resp.BulkString(c.srv.mode()), // cluster.go
		resp.BulkString("role"), resp.BulkString("master"),
		resp.BulkString("modules"), resp.EmptyList,
	)
}

// RedisVersion is the Redis version lockd reports to clients (HELLO, INFO): the
// Redis whose replies it reproduces.
const RedisVersion = "7.0.15"

func validName(b []byte) bool {
	for _, c := range b {
		if c < '!' || c > '~' {
			return false
		}
	}
	return true
}

// CLIENT SETINFO LIB-NAME|LIB-VER value
func cmdClientSetInfo(c *conn, a [][]byte) resp.Value {
	if !validName(a[3]) {
		return command.Echo("ERR ", a[2], " cannot contain spaces, newlines or special characters.").Reply()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case command.EqualFold(a[2], "lib-name"):
		c.libName = string(a[3])
	case command.EqualFold(a[2], "lib-ver"):
		c.libVer = string(a[3])
	default:
		return command.Echo("ERR Unrecognized option '", a[2], "'").Reply()
	}
	return resp.OK
}

// CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id ...]
func cmdClientList(c *conn, a [][]byte) resp.Value {
	var ids map[int64]bool
	typeFilter := ""
	for i := 2; i < len(a); i++ {
		switch {
		case command.EqualFold(a[i], "type") && i+1 < len(a):
			typeFilter = strings.ToLower(string(a[i+1]))
			switch typeFilter {
			case "normal", "master", "replica", "slave", "pubsub":
			default:
				return command.Echo("ERR Unknown client type '", a[i+1], "'").Reply()
			}
			i++
		case command.EqualFold(a[i], "id") && i+1 < len(a):
			ids = map[int64]bool{}
			for i++; i < len(a); i++ {
				n, ok := command.ParseInt(a[i])
				if !ok || n <= 0 {
					return resp.Error("ERR Invalid client ID")
				}
				ids[n] = true
			}
		default:
			return resp.Error(string(command.ErrSyntax))
		}
	}
	var b strings.Builder
	for _, o := range c.srv.clients() {
		if ids != nil && !ids[o.id] {
			continue
		}
		if typeFilter != "" && typeFilter != "normal" {
			continue
		}
		b.WriteString(o.infoLine())
	}
	return resp.BulkString(b.String())
}

// infoLine is this connection's line in CLIENT LIST / CLIENT INFO.
func (c *conn) infoLine() string {
	tflags, redir := c.trackFlags() // tracking.go
	flags := "N"
	if tflags != "" {
		flags = tflags
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	return "id=" + strconv.FormatInt(c.id, 10) + " addr=" + c.addr + " laddr=" + c.laddr + " fd=0 name=" + c.name +
		" age=" + strconv.FormatInt(int64(now.Sub(c.created)/time.Second), 10) +
		" idle=" + strconv.FormatInt(int64(now.Sub(c.lastAt)/time.Second), 10) +
		" flags=" + flags + " db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=" +
		c.lastCmd + " user=" + c.userName() + " redir=" + strconv.FormatInt(redir, 10) + " resp=" + strconv.Itoa(c.protocol()) + "\n"
}

// TIME — the server's wall clock (not log time).
func cmdTime(*conn, [][]byte) resp.Value {
	now := time.Now()
	return resp.Array(resp.BulkString(strconv.FormatInt(now.Unix(), 10)),
		resp.BulkString(strconv.FormatInt(int64(now.Nanosecond()/1000), 10)))
}

// WAIT numreplicas timeout — every acknowledged write is already on a majority,
// so WAIT answers at once with the number of replicas guaranteed to hold it.
func cmdWait(c *conn, a [][]byte) resp.Value {
	if _, ok := command.ParseInt(a[1]); !ok {
		return resp.Error(string(command.ErrNotInt))
	}
	t, ok := command.ParseInt(a[2])
	if !ok {
		return resp.Error("ERR timeout is not an integer or out of range")
	}
	if t < 0 {
		return resp.Error("ERR timeout is negative")
	}
	return resp.Int(int64(c.srv.store.Replicas()))
}

// configValues are the parameters CONFIG GET reports, for tools and clients
// (redis-benchmark asks for "save" and "appendonly").
var configValues = [][2]string{
	{"appendonly", "yes"},
	{"appendfsync", "always"},
	{"databases", "1"},
	{"maxclients", "10000"},
	{"maxmemory", "0"},
	{"maxmemory-policy", "noeviction"},
	{"proto-max-bulk-len", "536870912"},
	{"save", ""},
	{"timeout", "0"},
	{"cluster-enabled", "no"},
}

// CONFIG GET parameter [parameter ...]
func cmdConfigGet(c *conn, a [][]byte) resp.Value {
	var out []resp.Value
	seen := map[string]bool{}
	values := append(configValues[:len(configValues):len(configValues)], [2]string{"notify-keyspace-events", c.srv.notifyConfig()})
	for i, kv := range values { // the configured limits (timeout.go, limits.go)
		switch kv[0] {
		case "timeout":
			values[i][1] = strconv.FormatInt(int64(c.srv.cfg.IdleTimeout/time.Second), 10)
		case "maxclients":
			values[i][1] = strconv.Itoa(c.srv.maxClients())
		}
	}
	values = append(values, c.srv.slowlogConfig()...)
	values = append(values, [2]string{"tracking-table-max-keys", c.srv.trackingMaxKeys()}) // tracking.go
	if r, ok := c.srv.store.(Replicator); ok {
		user, pass := r.MasterAuth()
		mode := "count"
		if r.StopOnUnsupported() {
			mode = "stop"
		}
		values = append(values, [2]string{"masteruser", user}, [2]string{"masterauth", pass}, [2]string{"lockd-replica-unsupported", mode})
	}
	for _, pat := range a[2:] {
		lp := []byte(strings.ToLower(string(pat)))
		for _, kv := range values {
			if !seen[kv[0]] && command.Match(lp, []byte(kv[0])) {
				seen[kv[0]] = true
				out = append(out, resp.BulkString(kv[0]), resp.BulkString(kv[1]))
			}
		}
	}
	return resp.Map(out...)
}

// CONFIG SET parameter value [parameter value ...]: only
// notify-keyspace-events can be changed at run time; the rest are flags.
func cmdConfigSet(c *conn, a [][]byte) resp.Value {
	if len(a)%2 != 0 {
		return resp.Error("ERR wrong number of arguments for 'config|set' command")
	}
	// Validate everything first: a failed CONFIG SET changes nothing.
	var notify *string
	maxKeys := int64(-1)
	for i := 2; i < len(a); i += 2 {
		name := strings.ToLower(string(a[i]))
		switch name {
		case "tracking-table-max-keys":
			n, v, ok := parseTrackingMaxKeys(a[i+1]) // tracking.go
			if !ok {
				return v
			}
			maxKeys = n
		case "notify-keyspace-events":
			v, ok := parseNotify(string(a[i+1]))
			if !ok {
				return resp.Error("ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
			}
			notify = &v
		case "slowlog-log-slower-than", "slowlog-max-len":
			if n, err := strconv.ParseInt(string(a[i+1]), 10, 64); err != nil || (name == "slowlog-max-len" && n < 0) {
				return resp.Error("ERR CONFIG SET failed (possibly related to argument '" + name + "') - argument couldn't be parsed into an integer")
			}
		case "masteruser", "masterauth", "lockd-replica-unsupported": // replicaof.go
			if _, ok := c.srv.store.(Replicator); !ok {
				return command.Echo("ERR CONFIG SET ", []byte(name), " is not supported by lockd; use its flags").Reply()
			}
			if v := strings.ToLower(string(a[i+1])); name == "lockd-replica-unsupported" && v != "stop" && v != "count" {
				return resp.Error("ERR CONFIG SET failed (possibly related to argument 'lockd-replica-unsupported') - argument(s) must be one of the following: count, stop")
			}
		default:
			return command.Echo("ERR CONFIG SET ", []byte(name), " is not supported by lockd; use its flags").Reply()
		}
	}
	for i := 2; i < len(a); i += 2 {
		switch name := strings.ToLower(string(a[i])); {
		case strings.HasPrefix(name, "slowlog-"):
			c.srv.setSlowlog(name, string(a[i+1]))
		case name == "lockd-replica-unsupported":
			c.srv.store.(Replicator).SetStopOnUnsupported(strings.EqualFold(string(a[i+1]), "stop"))
		case name == "masteruser" || name == "masterauth":
			r := c.srv.store.(Replicator)
			user, pass := r.MasterAuth()
			if name == "masteruser" {
				user = string(a[i+1])
			} else {
				pass = string(a[i+1])
			}
			r.SetMasterAuth(user, pass)
		}
	}
	if notify != nil {
		c.srv.notify.Store(notify)
	}
	if maxKeys >= 0 {
		c.srv.trk().maxKeys.Store(maxKeys)
	}
	return resp.OK
}
