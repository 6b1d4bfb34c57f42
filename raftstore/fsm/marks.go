package fsm

// SlotsMarked reports whether any slot is frozen (leaving) or gone: only then
// does a read need CheckKeys. It is the read path's fast check.
func (k *Keyspace) SlotsMarked() bool { return k.moving() }
