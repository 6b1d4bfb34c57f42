package redisproto

import (
	"bytes"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// Client-side caching (Redis's CLIENT TRACKING, tracking.c), per node.
//
// A connection that turns tracking on has the keys of its read-only
// commands remembered in this node's tracking table (key → connections);
// in BCAST mode it subscribes to key prefixes instead. When this node
// applies a log entry — any node's write, a lock grant or release, an
// expiry, FLUSHALL — the state machine names the keys it changed on its
// tracking channel (command.TrackingChannel; built only while some client
// here tracks: WantsEvents), and the publish hook (Publish) hands them to
// invalidate, which sends each connection that may hold one of them an
// invalidation: a RESP3 push
// `>2 invalidate [keys]` on its own connection, or, with REDIRECT, the same
// push or (to a RESP2 connection in pub/sub mode) a `message` on
// `__redis__:invalidate` to the connection it redirects to. FLUSHALL sends
// every tracking connection a null in place of the keys and empties the
// table. An invalidated key leaves the table: a client is told once per
// read.
//
// # Never a stale read after an invalidation
//
// The order between the apply goroutine's invalidations and a connection's
// replies is what a caching client relies on: once it is told that a key
// changed, no later reply may give it the old value, and a reply that gives
// it the old value must be followed by an invalidation. lockd keeps it so:
//
//   - A read's keys are remembered before the read is sent to the store
//     (conn.step, cmdExec), not after its reply as Redis does (Redis runs
//     one command at a time; here the apply goroutine runs beside the
//     connection). A write applied on this node after that moment
//     invalidates the key; one applied before it was committed before the
//     read began, and reads are linearizable, so the read sees it.
//   - While a connection's goroutine answers a batch (from its first request
//     read to its replies queued: hold, release) the invalidations meant for
//     it are held back and queued after the batch's replies, as Redis queues
//     those for the client that is running a command after its reply. So an
//     invalidation that overtakes a reply never announces a write the reply
//     does not reflect: a reply computed before a write applied is always
//     followed by that write's invalidation, and every read after an
//     invalidation is answered by a store that applied the write (the
//     invalidation is sent when this node applies it, and a read is served
//     only once the commit index it starts at is applied).
//   - Replies and pushes share the connection's one ordered output queue
//     (conn.send), so they reach the socket in the order they were queued.
//
// A tracking connection never goes back to the event loop (loopReady), so
// these hooks are on its goroutine's path only.
//
// What is tracked: the keys of every command Redis flags "readonly" (not
// pub/sub commands), and the declared KEYS of every script (EVAL, EVALSHA
// and their _RO forms). Redis remembers a script's KEYS when the script ran
// a read-only command; lockd does not learn what a script ran, so it
// remembers them after every script: at worst an invalidation more. Keys a
// script reads without declaring them are not tracked, as in Redis.
//
// NOLOOP: an invalidation for a key this connection itself wrote is left
// out when this node applies that write while the connection's batch is
// being answered (always on the node that leads the key's group; on a
// follower, the leader may answer first, and the invalidation then comes
// after the reply): at worst an invalidation more, never one less for
// another client's write, which is counted apart (one per write request).

// defaultTrackingMaxKeys is Redis's tracking-table-max-keys default.
const defaultTrackingMaxKeys = 1000000

// maxDeferred bounds the invalidations held back for one connection while
// it answers a batch (a blocking command may hold it long): past it they
// are replaced by one "every key" invalidation.
const maxDeferred = 1024

// tracker is the node's tracking table. Its mutex also guards every
// connection's trackState. A connection's goroutine reads without it the
// fields that only it changes (under mu): on, the modes, caching, prefixes
// and held; the apply goroutine changes broken, deferred and own, always
// under mu.
type tracker struct {
	mu       sync.Mutex
	active   atomic.Bool // some connection tracks: the state machine builds key events
	maxKeys  atomic.Int64
	clients  map[*conn]struct{}            // connections with tracking on
	keys     map[string]map[*conn]struct{} // key → connections that may cache it
	items    int                           // the connections of every key: INFO's tracking_total_items
	prefixes map[string]map[*conn]struct{} // BCAST prefix → its connections
}

// trackState is one connection's CLIENT TRACKING state (Redis's
// CLIENT_TRACKING_* flags and its redirection and prefixes).
type trackState struct {
	on, bcast, optin, optout, noloop bool
	caching                          bool  // CLIENT CACHING given for the next command
	broken                           bool  // the redirect target went away
	redirect                         int64 // REDIRECT id, 0 none
	redirTo                          *conn
	prefixes                         []string       // BCAST prefixes, sorted
	ended                            bool           // the connection closed
	held                             bool           // answering a batch (hold)
	deferred                         [][]byte       // payloads held back meanwhile
	own                              map[string]int // NOLOOP: the batch's own writes per key, not yet seen applied
}

func newTracker() *tracker {
	t := &tracker{clients: map[*conn]struct{}{}, keys: map[string]map[*conn]struct{}{}, prefixes: map[string]map[*conn]struct{}{}}
	t.maxKeys.Store(defaultTrackingMaxKeys)
	return t
}

// trk returns the server's tracking table, made on first use.
func (s *Server) trk() *tracker {
	if t := s.tracking.Load(); t != nil {
		return t
	}
	s.tracking.CompareAndSwap(nil, newTracker())
	return s.tracking.Load()
}

func init() {
	handle("client|tracking", cmdClientTracking)
	handle("client|caching", cmdClientCaching)
	handle("client|getredir", func(c *conn, _ [][]byte) resp.Value {
		if !c.trk.on {
			return resp.Int(-1)
		}
		return resp.Int(c.trk.redirect)
	})
	handle("client|trackinginfo", cmdClientTrackingInfo)
}

// findConn returns the connection of this server with id, or nil.
func (s *Server) findConn(id int64) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.id == id {
			return c
		}
	}
	return nil
}

// CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX p ...] [OPTIN] [OPTOUT] [NOLOOP]
func cmdClientTracking(c *conn, a [][]byte) resp.Value {
	var redir int64
	var redirTo *conn
	var bcast, optin, optout, noloop bool
	var prefixes []string
	for j := 3; j < len(a); j++ {
		more := len(a) - 1 - j
		switch {
		case command.EqualFold(a[j], "redirect") && more > 0:
			j++
			if redir != 0 {
				return resp.Error("ERR A client can only redirect to a single other client")
			}
			n, ok := command.ParseInt(a[j])
			if !ok {
				return resp.Error(string(command.ErrNotInt))
			}
			redir = n
			if redirTo = c.srv.findConn(n); redirTo == nil {
				return resp.Error("ERR The client ID you want redirect to does not exist")
			}
		case command.EqualFold(a[j], "bcast"):
			bcast = true
		case command.EqualFold(a[j], "optin"):
			optin = true
		case command.EqualFold(a[j], "optout"):
			optout = true
		case command.EqualFold(a[j], "noloop"):
			noloop = true
		case command.EqualFold(a[j], "prefix") && more > 0:
			j++
			prefixes = append(prefixes, string(a[j]))
		default:
			return resp.Error(string(command.ErrSyntax))
		}
	}
	switch {
	case command.EqualFold(a[2], "on"):
		st := &c.trk
		switch {
		case !bcast && len(prefixes) > 0:
			return resp.Error("ERR PREFIX option requires BCAST mode to be enabled")
		case st.on && st.bcast != bcast:
			return resp.Error("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
		case bcast && (optin || optout):
			return resp.Error("ERR OPTIN and OPTOUT are not compatible with BCAST")
		case optin && optout:
			return resp.Error("ERR You can't specify both OPTIN mode and OPTOUT mode")
		case (optin && st.optout) || (optout && st.optin):
			return resp.Error("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
		}
		if bcast {
			if v, bad := prefixCollision(st.prefixes, prefixes); bad {
				return v
			}
		}
		c.srv.trk().enable(c, redir, redirTo, bcast, optin, optout, noloop, prefixes)
	case command.EqualFold(a[2], "off"):
		if c.trk.on {
			c.srv.trk().disable(c)
		}
	default:
		return resp.Error(string(command.ErrSyntax))
	}
	return resp.OK
}

// prefixCollision answers Redis's error when one of the new prefixes
// overlaps (one is a prefix of the other) an existing one or a later new one.
func prefixCollision(existing, fresh []string) (resp.Value, bool) {
	overlap := func(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }
	for i, p := range fresh {
		for _, e := range existing {
			if overlap(e, p) {
				return resp.Error("ERR Prefix '" + cstr([]byte(p)) + "' overlaps with an existing prefix '" + cstr([]byte(e)) +
					"'. Prefixes for a single client must not overlap."), true
			}
		}
		for _, q := range fresh[i+1:] {
			if overlap(p, q) {
				return resp.Error("ERR Prefix '" + cstr([]byte(p)) + "' overlaps with another provided prefix '" + cstr([]byte(q)) +
					"'. Prefixes for a single client must not overlap."), true
			}
		}
	}
	return resp.Value{}, false
}

// enable turns tracking on for c (again: the modes are replaced, BCAST
// prefixes added), as Redis's enableTracking.
func (t *tracker) enable(c *conn, redir int64, redirTo *conn, bcast, optin, optout, noloop bool, prefixes []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := &c.trk
	if !st.on {
		t.clients[c] = struct{}{}
		t.active.Store(true)
	}
	st.on, st.broken = true, false
	st.redirect, st.redirTo = redir, redirTo
	st.bcast, st.optin, st.optout, st.noloop = bcast, optin, optout, noloop
	st.held = true // CLIENT TRACKING runs inside a batch: released with it
	if bcast {
		if len(prefixes) == 0 {
			prefixes = []string{""}
		}
		for _, p := range prefixes {
			conns := t.prefixes[p]
			if conns == nil {
				conns = map[*conn]struct{}{}
				t.prefixes[p] = conns
			}
			if _, ok := conns[c]; !ok {
				conns[c] = struct{}{}
				st.prefixes = append(st.prefixes, p)
			}
		}
		sort.Strings(st.prefixes)
	}
}

// disable turns tracking off for c: its BCAST prefixes go; the keys it read
// stay in the table until they are invalidated (Redis's lazy cleanup).
func (t *tracker) disable(c *conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.disableLocked(c)
}

func (t *tracker) disableLocked(c *conn) {
	st := &c.trk
	for _, p := range st.prefixes {
		if conns := t.prefixes[p]; conns != nil {
			delete(conns, c)
			if len(conns) == 0 {
				delete(t.prefixes, p)
			}
		}
	}
	delete(t.clients, c)
	t.active.Store(len(t.clients) > 0)
	held, deferred := st.held, st.deferred
	*st = trackState{held: held, deferred: deferred, ended: st.ended}
}

// dropTracking forgets a closing connection (endConn): its tracking goes,
// and clients that redirect to it find their redirection broken.
func (s *Server) dropTracking(c *conn) {
	t := s.tracking.Load()
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c.trk.on {
		t.disableLocked(c)
	}
	c.trk.ended, c.trk.deferred = true, nil
}

// CLIENT CACHING YES|NO
func cmdClientCaching(c *conn, a [][]byte) resp.Value {
	st := &c.trk
	if !st.on {
		return resp.Error("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
	}
	switch {
	case command.EqualFold(a[2], "yes"):
		if !st.optin {
			return resp.Error("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
		}
	case command.EqualFold(a[2], "no"):
		if !st.optout {
			return resp.Error("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
		}
	default:
		return resp.Error(string(command.ErrSyntax))
	}
	t := c.srv.trk()
	t.mu.Lock()
	st.caching = true
	t.mu.Unlock()
	return resp.OK
}

// CLIENT TRACKINGINFO
func cmdClientTrackingInfo(c *conn, _ [][]byte) resp.Value {
	t := c.srv.trk()
	t.mu.Lock()
	defer t.mu.Unlock()
	st := &c.trk
	var flags []resp.Value
	for _, f := range []struct {
		set  bool
		name string
	}{ // in Redis's order
		{st.on, "on"}, {!st.on, "off"}, {st.bcast, "bcast"},
		{st.optin, "optin"}, {st.optin && st.caching, "caching-yes"},
		{st.optout, "optout"}, {st.optout && st.caching, "caching-no"},
		{st.noloop, "noloop"}, {st.broken, "broken_redirect"},
	} {
		if f.set {
			flags = append(flags, resp.BulkString(f.name))
		}
	}
	redir := int64(-1)
	if st.on {
		redir = st.redirect
	}
	pre := make([]resp.Value, len(st.prefixes))
	for i, p := range st.prefixes {
		pre[i] = resp.BulkString(p)
	}
	return resp.Map(resp.BulkString("flags"), resp.Value{Kind: resp.KindSet, Elems: flags},
		resp.BulkString("redirect"), resp.Int(redir),
		resp.BulkString("prefixes"), resp.Array(pre...))
}

// trackFlags is c's tracking part of CLIENT LIST's flags (t, R, B) and its
// redir field. Any goroutine.
func (c *conn) trackFlags() (string, int64) {
	t := c.srv.tracking.Load()
	if t == nil {
		return "", -1
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	st := &c.trk
	if !st.on {
		return "", -1
	}
	f := "t"
	if st.broken {
		f += "R"
	}
	if st.bcast {
		f += "B"
	}
	return f, st.redirect
}

// trackRequest is called by c's goroutine for each request it sends to the
// store, before sending it (see the ordering above): a read's keys are
// remembered, a write's are noted for NOLOOP. A keyspace container's request
// (OBJECT ENCODING, MEMORY USAGE) is judged by its subcommand's row, whose
// flags and key specifications are Redis's.
func (c *conn) trackRequest(spec *command.Spec, args [][]byte) {
	st := &c.trk
	if !st.on {
		return
	}
	spec, _ = command.Subcommand(spec, args)
	if tracksRead(spec) {
		if !st.bcast && !(st.optin && !st.caching) && !(st.optout && st.caching) {
			c.srv.trk().remember(c, spec.Keys(args))
		}
		return
	}
	if st.noloop && spec.Flags.Has(command.FlagWrite) {
		c.srv.trk().noteOwn(c, spec.Keys(args))
	}
}

// trackTx is trackRequest for the keyspace commands of a transaction, which
// applies as one command: its writes count once per key for NOLOOP.
func (c *conn) trackTx(cmds [][][]byte) {
	st := &c.trk
	if !st.on {
		return
	}
	var written [][]byte
	for _, args := range cmds {
		spec, ok := command.Lookup(args[0])
		if !ok {
			continue
		}
		spec, _ = command.Subcommand(spec, args)
		if tracksRead(spec) {
			c.trackRequest(spec, args)
		} else if st.noloop && spec.Flags.Has(command.FlagWrite) {
			written = append(written, spec.Keys(args)...)
		}
	}
	if len(written) > 0 {
		c.srv.trk().noteOwn(c, written)
	}
}

// tracksRead reports whether the keys of spec's command are remembered for a
// tracking client: Redis's read-only commands (not pub/sub ones) and scripts.
func tracksRead(spec *command.Spec) bool {
	if spec.RunsScript() {
		return true
	}
	return spec.Flags.Has(command.FlagReadOnly) && !spec.Flags.Has(command.FlagPubSub)
}

// trackAfter is called by c's goroutine after each request: CLIENT CACHING
// applies to the next command only (or to the whole MULTI it precedes), as
// Redis clears it after any other command outside a transaction.
func (c *conn) trackAfter(name []byte) {
	if !c.trk.caching || c.tx != nil || command.EqualFold(name, "client") {
		return
	}
	t := c.srv.trk()
	t.mu.Lock()
	c.trk.caching = false
	t.mu.Unlock()
}

// remember records keys as possibly cached by c, then keeps the table within
// tracking-table-max-keys by invalidating other keys, as Redis does.
func (t *tracker) remember(c *conn, keys [][]byte) {
	if len(keys) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		conns := t.keys[string(k)]
		if conns == nil {
			conns = map[*conn]struct{}{}
			t.keys[string(k)] = conns
		}
		if _, ok := conns[c]; !ok {
			conns[c] = struct{}{}
			t.items++
		}
	}
	limit := int(t.maxKeys.Load())
	if limit <= 0 || len(t.keys) <= limit {
		return
	}
	// Over the limit: evict keys the request did not name, while there are
	// such; Redis picks them at random too.
	fresh := make(map[string]bool, len(keys))
	for _, k := range keys {
		fresh[string(k)] = true
	}
	for k := range t.keys {
		if len(t.keys) <= limit {
			return
		}
		if !fresh[k] {
			t.invalidateKeyLocked(k, false)
		}
	}
	for k := range t.keys {
		if len(t.keys) <= limit {
			return
		}
		t.invalidateKeyLocked(k, false)
	}
}

// noteOwn counts keys c is writing in the batch it answers, for NOLOOP.
func (t *tracker) noteOwn(c *conn, keys [][]byte) {
	if len(keys) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	st := &c.trk
	if !st.held {
		return
	}
	if st.own == nil {
		st.own = map[string]int{}
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if !seen[string(k)] {
			seen[string(k)] = true
			st.own[string(k)]++
		}
	}
}

// ownWrite reports (and uses up) one of c's own writes of key, for NOLOOP.
func (st *trackState) ownWrite(key string) bool {
	if !st.noloop || !st.held || st.own[key] == 0 {
		return false
	}
	st.own[key]--
	return true
}

// hold starts a batch of c's: invalidations for c wait for its replies.
// c's goroutine, after it read the batch's first request.
func (c *conn) trackHold() {
	if !c.trk.on {
		return
	}
	t := c.srv.trk()
	t.mu.Lock()
	c.trk.held = true
	t.mu.Unlock()
}

// trackRelease ends the batch hold began, after its replies were queued:
// what was held back is sent now.
func (c *conn) trackRelease() {
	if !c.trk.held {
		return
	}
	t := c.srv.trk()
	t.mu.Lock()
	defer t.mu.Unlock()
	st := &c.trk
	st.held, st.own = false, nil
	deferred := st.deferred
	st.deferred = nil
	if !st.on {
		return
	}
	for _, p := range deferred {
		t.sendLocked(c, p)
	}
}

// invalidate takes one command.TrackingChannel message: the keys an applied
// command changed (none: every key). The apply goroutine.
func (t *tracker) invalidate(msg []byte) {
	keys, ok := command.TrackedKeys(msg)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(keys) == 0 {
		t.flushLocked()
		return
	}
	if len(keys) > 1 { // in order, once each
		seen := make(map[string]bool, len(keys))
		out := keys[:0]
		for _, k := range keys {
			if !seen[string(k)] {
				seen[string(k)] = true
				out = append(out, k)
			}
		}
		keys = out
	}
	if len(t.prefixes) > 0 {
		t.broadcastLocked(keys)
	}
	for _, k := range keys {
		t.invalidateKeyLocked(string(k), true)
	}
}

// invalidateKeyLocked tells the connections that may cache key that it
// changed (changed: false for an eviction from a full table, which NOLOOP
// does not filter) and forgets them.
func (t *tracker) invalidateKeyLocked(key string, changed bool) {
	conns, ok := t.keys[key]
	if !ok {
		return
	}
	delete(t.keys, key)
	t.items -= len(conns)
	var payload []byte
	for c := range conns {
		st := &c.trk
		if !st.on || st.bcast || st.ended {
			continue
		}
		if changed && st.ownWrite(key) {
			continue
		}
		if payload == nil {
			payload = keysPayload([]string{key})
		}
		t.deliverLocked(c, payload)
	}
}

// broadcastLocked sends BCAST connections the changed keys under their
// prefixes: one message per prefix with its keys in byte order, as Redis
// builds it (per applied command here, per event-loop cycle in Redis).
func (t *tracker) broadcastLocked(keys [][]byte) {
	names := make([]string, 0, len(t.prefixes))
	for p := range t.prefixes {
		names = append(names, p)
	}
	sort.Strings(names)
	used := map[*conn]map[string]bool{} // NOLOOP: own writes left out
	for _, p := range names {
		var matched []string
		for _, k := range keys {
			if bytes.HasPrefix(k, []byte(p)) {
				matched = append(matched, string(k))
			}
		}
		if len(matched) == 0 {
			continue
		}
		sort.Strings(matched)
		all := keysPayload(matched)
		for c := range t.prefixes[p] {
			st := &c.trk
			if !st.noloop || !st.held || len(st.own) == 0 {
				t.deliverLocked(c, all)
				continue
			}
			var others []string
			for _, k := range matched {
				if st.own[k] > 0 {
					if used[c] == nil {
						used[c] = map[string]bool{}
					}
					used[c][k] = true
				} else {
					others = append(others, k)
				}
			}
			if len(others) > 0 {
				t.deliverLocked(c, keysPayload(others))
			}
		}
	}
	// One own write is used up per key, however many of the connection's
	// prefixes matched it (BCAST with no prefix adds "", which overlaps).
	for c, keys := range used {
		for k := range keys {
			c.trk.own[k]--
		}
	}
}

// flushLocked tells every tracking connection that every key changed (a
// null in place of the keys) and empties the table, as Redis does on FLUSHALL.
func (t *tracker) flushLocked() {
	for c := range t.clients {
		t.deliverLocked(c, nil)
	}
	t.keys = map[string]map[*conn]struct{}{}
	t.items = 0
}

// keysPayload is the keys part of an invalidation: an array of bulks.
func keysPayload(keys []string) []byte {
	b := []byte("*" + strconv.Itoa(len(keys)) + "\r\n")
	for _, k := range keys {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(k)), 10)
		b = append(b, "\r\n"...)
		b = append(b, k...)
		b = append(b, "\r\n"...)
	}
	return b
}

// deliverLocked sends c an invalidation with payload (nil: every key), or
// holds it back while c answers a batch.
func (t *tracker) deliverLocked(c *conn, payload []byte) {
	st := &c.trk
	if st.ended {
		return
	}
	if st.held {
		if len(st.deferred) >= maxDeferred {
			st.deferred = append(st.deferred[:0], nil)
		}
		st.deferred = append(st.deferred, payload)
		return
	}
	t.sendLocked(c, payload)
}

// sendLocked writes one invalidation for c's cache where c's tracking sends
// it, as Redis's sendTrackingMessage: on c as a RESP3 push; with REDIRECT on
// the target, as a push if it speaks RESP3, as a __redis__:invalidate
// message if it is a RESP2 connection in pub/sub mode, else not at all (a
// RESP2 connection without redirection gets nothing either). A target that
// went away marks the redirection broken and tells c (RESP3).
func (t *tracker) sendLocked(c *conn, payload []byte) {
	proto := c.protocol()
	if payload == nil { // every key: a null in the tracking client's protocol
		payload = []byte("$-1\r\n")
		if proto == 3 {
			payload = []byte("_\r\n")
		}
	}
	target, redirected := c, false
	if st := &c.trk; st.redirect != 0 {
		if st.redirTo == nil || st.redirTo.trk.ended {
			st.broken = true
			if proto == 3 {
				c.send([]byte(">2\r\n$21\r\ntracking-redir-broken\r\n:"+strconv.FormatInt(st.redirect, 10)+"\r\n"), false)
			}
			return
		}
		target, redirected = st.redirTo, true
	}
	var b []byte
	switch {
	case target.protocol() == 3:
		b = append([]byte(">2\r\n$10\r\ninvalidate\r\n"), payload...)
	case redirected && target.subCount() > 0:
		b = append([]byte("*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"), payload...)
	default:
		return
	}
	target.send(b, false)
}

// trackingMaxKeys is CONFIG GET tracking-table-max-keys.
func (s *Server) trackingMaxKeys() string {
	if t := s.tracking.Load(); t != nil {
		return strconv.FormatInt(t.maxKeys.Load(), 10)
	}
	return strconv.Itoa(defaultTrackingMaxKeys)
}

// parseTrackingMaxKeys validates CONFIG SET tracking-table-max-keys: Redis's
// error, or the value.
func parseTrackingMaxKeys(v []byte) (int64, resp.Value, bool) {
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, resp.Error("ERR CONFIG SET failed (possibly related to argument 'tracking-table-max-keys') - argument couldn't be parsed into an integer"), false
	}
	if n < 0 {
		return 0, resp.Error("ERR CONFIG SET failed (possibly related to argument 'tracking-table-max-keys') - argument must be between 0 and 9223372036854775807 inclusive"), false
	}
	return n, resp.Value{}, true
}
