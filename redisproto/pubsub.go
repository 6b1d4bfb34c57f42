package redisproto

import (
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// broker holds this node's subscriptions. Messages reach it from the apply
// goroutine (Publish) once the PUBLISH entry commits, so every node delivers each
// message to its own subscribers exactly once.
type broker struct {
	mu       sync.RWMutex
	channels map[string]map[*conn]struct{}
	patterns map[string]map[*conn]struct{}

	// What WantsEvents answers, recomputed after a subscription change
	// (dirty is set under mu's write lock by every change).
	dirty      atomic.Bool
	lockEvents atomic.Bool // a subscriber to lockd:events* or any pattern
	keyEvents  atomic.Bool // a subscriber to __key*@ channels or any pattern
}

func newBroker() *broker {
	b := &broker{channels: map[string]map[*conn]struct{}{}, patterns: map[string]map[*conn]struct{}{}}
	b.dirty.Store(true)
	return b
}

// Publish delivers a message to the subscribers of channel and of the patterns
// that match it, and returns how many deliveries it made. It never blocks on a
// client: messages are queued on each connection.
func (s *Server) Publish(channel, message []byte) int {
	if string(channel) == command.TrackingChannel {
		if t := s.tracking.Load(); t != nil {
			t.invalidate(message) // keys an applied command changed (tracking.go)
		}
		return 0
	}
	if len(channel) > 2 && channel[0] == '_' && !notifyAllows(s.notifyConfig(), string(channel)) {
		return 0
	}
	b := s.pubsub
	b.mu.RLock()
	defer b.mu.RUnlock()
	n := 0
	for c := range b.channels[string(channel)] {
		c.push(resp.Value{Kind: resp.KindPush, Elems: []resp.Value{resp.BulkString("message"), resp.Bulk(channel), resp.Bulk(message)}})
		n++
	}
	for p, conns := range b.patterns {
		if !command.Match([]byte(p), channel) {
			continue
		}
		for c := range conns {
			c.push(resp.Value{Kind: resp.KindPush, Elems: []resp.Value{resp.BulkString("pmessage"), resp.BulkString(p), resp.Bulk(channel), resp.Bulk(message)}})
			n++
		}
	}
	return n
}

// push queues a message for the client in its current protocol.
func (c *conn) push(v resp.Value) {
	c.send(resp.Append(nil, v, c.protocol()), false)
}

// subState is a connection's subscriptions, in the order they were made.
type subState struct {
	channels []string
	patterns []string
}

func (c *conn) subCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.subs.channels) + len(c.subs.patterns)
}

func init() {
	handle("subscribe", func(c *conn, a [][]byte) resp.Value { return c.subscribe(a[1:], false) })
	handle("psubscribe", func(c *conn, a [][]byte) resp.Value { return c.subscribe(a[1:], true) })
	handle("unsubscribe", func(c *conn, a [][]byte) resp.Value { return c.unsubscribe(a[1:], false) })
	handle("punsubscribe", func(c *conn, a [][]byte) resp.Value { return c.unsubscribe(a[1:], true) })
	handle("pubsub|channels", func(c *conn, a [][]byte) resp.Value {
		b := c.srv.pubsub
		b.mu.RLock()
		var names []string
		for ch, conns := range b.channels {
			if len(conns) > 0 && (len(a) < 3 || command.Match(a[2], []byte(ch))) {
				names = append(names, ch)
			}
		}
		b.mu.RUnlock()
		sort.Strings(names)
		out := make([]resp.Value, len(names))
		for i, n := range names {
			out[i] = resp.BulkString(n)
		}
		return resp.Array(out...)
	})
	handle("pubsub|numsub", func(c *conn, a [][]byte) resp.Value {
		b := c.srv.pubsub
		b.mu.RLock()
		defer b.mu.RUnlock()
		var out []resp.Value
		for _, ch := range a[2:] {
			out = append(out, resp.Bulk(ch), resp.Int(int64(len(b.channels[string(ch)]))))
		}
		return resp.Array(out...)
	})
	handle("pubsub|numpat", func(c *conn, _ [][]byte) resp.Value {
		b := c.srv.pubsub
		b.mu.RLock()
		defer b.mu.RUnlock()
		return resp.Int(int64(len(b.patterns)))
	})
	handle("pubsub|help", func(*conn, [][]byte) resp.Value {
		return help("PUBSUB", "CHANNELS [<pattern>]", "    Return the currently active channels matching a <pattern> (default: '*').",
			"NUMPAT", "    Return number of subscriptions to patterns.", "NUMSUB [<channel> ...]",
			"    Return the number of subscribers for the specified channels, excluding", "    pattern subscriptions(default: no channels).")
	})
}

// pubsubCommand names the commands whose confirmations are queued together with
// the subscription change (see noReply).
func pubsubCommand(name []byte) bool {
	switch strings.ToLower(string(name)) {
	case "subscribe", "psubscribe", "unsubscribe", "punsubscribe":
		return true
	}
	return false
}

// allowedSubscribed names what a RESP2 connection in subscribed mode may send:
// Redis's own list in processCommand (server.c), which no flag expresses (the
// "pubsub" flag is PUBLISH's and PUBSUB's too).
func allowedSubscribed(name []byte) bool {
	switch strings.ToLower(string(name)) {
	case "subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe", "ping", "quit", "reset":
		return true
	}
	return false
}

// confirm queues one (un)subscribe confirmation while the broker lock is held,
// so that no message published after the change can overtake it. It never
// writes to the socket itself: a slow client must not hold the broker.
func (c *conn) confirm(kind string, name resp.Value, count int) {
	v := resp.Value{Kind: resp.KindPush, Elems: []resp.Value{resp.BulkString(kind), name, resp.Int(int64(count))}}
	c.send(resp.Append(nil, v, c.protocol()), false)
}

// SUBSCRIBE channel [channel ...] / PSUBSCRIBE pattern [pattern ...]
func (c *conn) subscribe(names [][]byte, pattern bool) resp.Value {
	b := c.srv.pubsub
	b.mu.Lock()
	b.dirty.Store(true)
	defer b.mu.Unlock()
	table, kind := b.channels, "subscribe"
	if pattern {
		table, kind = b.patterns, "psubscribe"
	}
	for _, n := range names {
		name := string(n)
		if table[name] == nil {
			table[name] = map[*conn]struct{}{}
		}
		if _, ok := table[name][c]; !ok {
			table[name][c] = struct{}{}
			c.mu.Lock()
			if pattern {
				c.subs.patterns = append(c.subs.patterns, name)
			} else {
				c.subs.channels = append(c.subs.channels, name)
			}
			c.mu.Unlock()
		}
		c.confirm(kind, resp.BulkString(name), c.subCount())
	}
	return resp.Value{Kind: noReply}
}

// UNSUBSCRIBE [channel ...] / PUNSUBSCRIBE [pattern ...]; with no names, all of
// them (the most recent first).
func (c *conn) unsubscribe(names [][]byte, pattern bool) resp.Value {
	b := c.srv.pubsub
	b.mu.Lock()
	b.dirty.Store(true)
	defer b.mu.Unlock()
	table, kind := b.channels, "unsubscribe"
	if pattern {
		table, kind = b.patterns, "punsubscribe"
	}
	c.mu.Lock()
	mine := &c.subs.channels
	if pattern {
		mine = &c.subs.patterns
	}
	var list []string
	if len(names) == 0 {
		for i := len(*mine) - 1; i >= 0; i-- {
			list = append(list, (*mine)[i])
		}
	} else {
		for _, n := range names {
			list = append(list, string(n))
		}
	}
	c.mu.Unlock()
	if len(list) == 0 {
		c.confirm(kind, resp.Nil, c.subCount())
		return resp.Value{Kind: noReply}
	}
	for _, name := range list {
		if conns := table[name]; conns != nil {
			delete(conns, c)
			if len(conns) == 0 {
				delete(table, name)
			}
		}
		c.mu.Lock()
		for i, s := range *mine {
			if s == name {
				*mine = append((*mine)[:i], (*mine)[i+1:]...)
				break
			}
		}
		c.mu.Unlock()
		c.confirm(kind, resp.BulkString(name), c.subCount())
	}
	return resp.Value{Kind: noReply}
}

// dropSubscriptions removes a closing connection from the broker.
func (c *conn) dropSubscriptions() {
	b := c.srv.pubsub
	b.mu.Lock()
	b.dirty.Store(true)
	defer b.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range c.subs.channels {
		if conns := b.channels[name]; conns != nil {
			delete(conns, c)
			if len(conns) == 0 {
				delete(b.channels, name)
			}
		}
	}
	for _, name := range c.subs.patterns {
		if conns := b.patterns[name]; conns != nil {
			delete(conns, c)
			if len(conns) == 0 {
				delete(b.patterns, name)
			}
		}
	}
	c.subs = subState{}
}

// WantsEvents reports whether publishing on channel can reach anyone on this
// node: the state machine builds lock events (lockd:events…) and keyspace
// notifications (__keyevent@…, __keyspace@…) only then, and the keys a
// command changed (command.TrackingChannel) only while some connection here
// tracks keys. Cheap: recomputed only after subscriptions change; for the
// tracking channel, which the state machine asks about on every write, two
// atomic loads. Safe for concurrent use.
func (s *Server) WantsEvents(channel string) bool {
	if channel == command.TrackingChannel {
		t := s.tracking.Load()
		return t != nil && t.active.Load()
	}
	b := s.pubsub
	if b.dirty.Load() {
		b.mu.RLock()
		b.dirty.Store(false)
		lock, key := len(b.patterns) > 0, len(b.patterns) > 0
		for name := range b.channels {
			lock = lock || strings.HasPrefix(name, "lockd:events")
			key = key || strings.HasPrefix(name, "__key")
		}
		b.lockEvents.Store(lock)
		b.keyEvents.Store(key)
		b.mu.RUnlock()
	}
	if strings.HasPrefix(channel, "__key") {
		return b.keyEvents.Load() && s.notifyConfig() != ""
	}
	return b.lockEvents.Load()
}
