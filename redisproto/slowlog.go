package redisproto

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/resp"
)

// The slow log, as Redis keeps it: commands that took longer than
// slowlog-log-slower-than microseconds (default 10000; negative: off; 0:
// every command), the newest slowlog-max-len (default 128) kept. For commands
// that go through the log the time includes the commit (a pipeline's commands
// share their batch's time). Node-local; CONFIG SET changes both settings.
type slowlog struct {
	mu      sync.Mutex
	slower  int64 // µs
	maxLen  int
	nextID  int64
	entries []slowEntry // oldest first; at most maxLen
	set     bool        // slower/maxLen were initialised
	// skip is, plus one, the duration in µs under which note records
	// nothing (0: not yet known): every command is noted, from every
	// connection, and taking mu for each made the slow log's lock one that
	// all of a node's clients shared.
	skip atomic.Int64
}

type slowEntry struct {
	id     int64
	at     int64 // Unix seconds
	micros int64
	args   []resp.Value
	addr   string
	name   string
}

const (
	defaultSlowerThan = 10000
	defaultSlowMaxLen = 128
	slowMaxArgs       = 32  // SLOWLOG_ENTRY_MAX_ARGC
	slowMaxArgLen     = 128 // SLOWLOG_ENTRY_MAX_STRING
)

func (l *slowlog) init() {
	if !l.set {
		l.slower, l.maxLen, l.set = defaultSlowerThan, defaultSlowMaxLen, true
		l.publish()
	}
}

// publish sets skip from the settings. Called with mu held, after a change.
func (l *slowlog) publish() {
	t := l.slower
	if t < 0 || l.maxLen == 0 {
		t = math.MaxInt64 - 1
	}
	l.skip.Store(t + 1)
}

// note records a command that took d, if it was slow.
func (l *slowlog) note(c *conn, name string, args [][]byte, d time.Duration) {
	if skip := l.skip.Load(); skip > 0 && d.Microseconds() < skip-1 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	if l.slower < 0 || d.Microseconds() < l.slower || l.maxLen == 0 {
		return
	}
	e := slowEntry{id: l.nextID, at: time.Now().Unix(), micros: d.Microseconds(), addr: c.addr}
	l.nextID++
	c.mu.Lock()
	e.name = c.name
	c.mu.Unlock()
	if redacted(name) {
		args = args[:min(len(args), 1)]
	}
	n := min(len(args), slowMaxArgs)
	for i := 0; i < n; i++ {
		a := args[i]
		switch {
		case i == slowMaxArgs-1 && len(args) > slowMaxArgs:
			e.args = append(e.args, resp.BulkString("... ("+strconv.Itoa(len(args)-slowMaxArgs+1)+" more arguments)"))
		case len(a) > slowMaxArgLen:
			e.args = append(e.args, resp.BulkString(string(a[:slowMaxArgLen])+"... ("+strconv.Itoa(len(a)-slowMaxArgLen)+" more bytes)"))
		default:
			e.args = append(e.args, resp.Bulk(append([]byte(nil), a...)))
		}
	}
	// Appended at the end and trimmed from the front, so that a note costs
	// amortised O(1): a pipeline's slow batch notes every command in it, and
	// building the list anew each time made 1M pipelined LOCK.ACQUIREs
	// allocate ~219 MB (issue 9).
	l.entries = append(l.entries, e)
	l.trim()
}

// trim drops the oldest entries beyond maxLen. Called with mu held.
func (l *slowlog) trim() {
	if over := len(l.entries) - l.maxLen; over > 0 {
		clear(l.entries[:over]) // let the collector have their arguments
		l.entries = l.entries[over:]
	}
}

// redacted reports whether a command's arguments must not be shown (they may
// hold passwords), as Redis hides them.
func redacted(name string) bool {
	return name == "auth" || name == "hello" || strings.HasPrefix(name, "acl") || name == "config|set"
}

func init() {
	handle("slowlog|get", func(c *conn, a [][]byte) resp.Value {
		count := 10
		if len(a) > 3 {
			return resp.Error("ERR wrong number of arguments for 'slowlog|get' command")
		}
		if len(a) == 3 {
			n, err := strconv.ParseInt(string(a[2]), 10, 64)
			if err != nil || n < -1 {
				return resp.Error("ERR count should be greater than or equal to -1")
			}
			count = int(n)
			if n == -1 {
				count = 1 << 30
			}
		}
		l := &c.srv.slowlog
		l.mu.Lock()
		defer l.mu.Unlock()
		var out []resp.Value
		for i := len(l.entries) - 1; i >= 0 && len(out) < count; i-- { // newest first
			e := l.entries[i]
			out = append(out, resp.Array(resp.Int(e.id), resp.Int(e.at), resp.Int(e.micros), resp.Array(e.args...),
				resp.BulkString(e.addr), resp.BulkString(e.name)))
		}
		return resp.Array(out...)
	})
	handle("slowlog|len", func(c *conn, _ [][]byte) resp.Value {
		l := &c.srv.slowlog
		l.mu.Lock()
		defer l.mu.Unlock()
		return resp.Int(int64(len(l.entries)))
	})
	handle("slowlog|reset", func(c *conn, _ [][]byte) resp.Value {
		l := &c.srv.slowlog
		l.mu.Lock()
		defer l.mu.Unlock()
		l.entries = nil
		return resp.OK
	})
	handle("slowlog|help", func(*conn, [][]byte) resp.Value {
		return help("SLOWLOG", "GET [<count>]",
			"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
			"    Entries are made of:",
			"    id, timestamp, time in microseconds, arguments array, client IP and port,",
			"    client name", "LEN", "    Return the length of the slowlog.", "RESET", "    Reset the slowlog.")
	})
}

// setSlowlog applies CONFIG SET slowlog-log-slower-than / slowlog-max-len.
func (s *Server) setSlowlog(name, value string) bool {
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return false
	}
	l := &s.slowlog
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	switch name {
	case "slowlog-log-slower-than":
		l.slower = n
	case "slowlog-max-len":
		if n < 0 {
			return false
		}
		l.maxLen = int(n)
		l.trim()
	default:
		return false
	}
	l.publish()
	return true
}

// slowlogConfig is CONFIG GET's view of the slow log settings.
func (s *Server) slowlogConfig() [][2]string {
	l := &s.slowlog
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	return [][2]string{{"slowlog-log-slower-than", strconv.FormatInt(l.slower, 10)}, {"slowlog-max-len", strconv.Itoa(l.maxLen)}}
}
