package redisproto

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/resp"
)

// monitors are the connections in MONITOR mode: every command any client sends
// is pushed to them as "+<unix time> [0 <client addr>] "cmd" "arg" ...". MONITOR
// shows every key and value that passes through the node, so it needs
// lockd -enable-monitor; AUTH, HELLO, ACL and CONFIG SET arguments are
// redacted.
type monitors struct {
	n     atomic.Int32
	mu    sync.Mutex
	conns map[*conn]struct{}
}

func (m *monitors) add(c *conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conns == nil {
		m.conns = map[*conn]struct{}{}
	}
	if _, ok := m.conns[c]; !ok {
		m.conns[c] = struct{}{}
		m.n.Add(1)
	}
}

func (m *monitors) remove(c *conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.conns[c]; ok {
		delete(m.conns, c)
		m.n.Add(-1)
	}
}

// has reports whether c is in MONITOR mode.
func (m *monitors) has(c *conn) bool {
	if m.n.Load() == 0 {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.conns[c]
	return ok
}

// feed shows a command read from c to every monitor (not to c itself). Cheap
// when nobody monitors.
func (m *monitors) feed(c *conn, args [][]byte) {
	if m.n.Load() == 0 {
		return
	}
	now := time.Now()
	var b strings.Builder
	b.WriteString(strconv.FormatInt(now.Unix(), 10) + "." + strconv.FormatInt(int64(now.Nanosecond()/1000)+1000000, 10)[1:])
	b.WriteString(" [0 " + c.addr + "]")
	name := strings.ToLower(string(args[0]))
	if len(args) > 1 && name == "config" {
		name += "|" + strings.ToLower(string(args[1]))
	}
	for i, a := range args {
		if i > 0 && redacted(name) {
			b.WriteString(` "(redacted)"`)
			continue
		}
		b.WriteString(" " + strconv.Quote(string(a)))
	}
	line := resp.Simple(b.String())
	m.mu.Lock()
	defer m.mu.Unlock()
	for mc := range m.conns {
		if mc != c {
			mc.push(line)
		}
	}
}

func init() {
	handle("monitor", func(c *conn, _ [][]byte) resp.Value {
		if !c.srv.cfg.EnableMonitor {
			return resp.Error("ERR MONITOR is disabled on this node: start lockd with -enable-monitor")
		}
		c.srv.monitors.add(c)
		return resp.OK
	})
}
