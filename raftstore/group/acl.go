package group

import "github.com/lockd/lockd/command"

// ACL returns this replica's view of the replicated ACL users (nil: none was
// defined). The front doors authenticate and authorise against it; it reflects
// every ACL SETUSER/DELUSER this node has applied. The table is immutable.
func (s *Store) ACL() *command.ACLTable {
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	return s.m.ks.ACL()
}
