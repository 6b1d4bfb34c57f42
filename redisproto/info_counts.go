package redisproto

import "strconv"

// BlockedCounter is implemented by a Store that counts the clients of this
// node blocked in a command (raftstore.Node): blocked is every one blocked
// now (BLPOP … BZPOPMAX, LOCK.ACQUIRE … WAIT), timed those among them that
// wait with a timeout. INFO reports them as Redis's blocked_clients and
// clients_in_timeout_table; a Store without it reports the blocked clients
// of its "# Locks" section and 0.
type BlockedCounter interface {
	BlockedClients() (blocked, timed int)
}

// blockedInfo is INFO's blocked_clients and clients_in_timeout_table.
func (s *Server) blockedInfo() (blocked, timed string) {
	if bc, ok := s.store.(BlockedCounter); ok {
		b, t := bc.BlockedClients()
		return strconv.Itoa(b), strconv.Itoa(t)
	}
	return pairValue(s.store.LockInfo(), "blocked_clients", "0"), "0"
}

// trackingInfo is this node's CLIENT TRACKING table as INFO reports it, as
// Redis counts it: the connections with tracking on (tracking_clients), the
// keys remembered (tracking_total_keys), the connections remembered for them,
// one per key and connection (tracking_total_items: a connection that turned
// tracking off or closed stays counted until the key is invalidated, Redis's
// lazy cleanup), and the BCAST prefixes in use (tracking_total_prefixes).
func (s *Server) trackingInfo() (clients, keys, items, prefixes int) {
	t := s.tracking.Load()
	if t == nil {
		return 0, 0, 0, 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.clients), len(t.keys), t.items, len(t.prefixes)
}
