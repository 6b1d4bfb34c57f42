package command

// IsInternal reports whether kind is an entry only a node proposes (a
// session attach, a slot move step, a shard map, what a Redis master sent),
// never built from a client's command.
func IsInternal(kind Kind) bool {
	switch kind {
	case KindSessionAttach, KindMigrate, KindImport, KindShardMap, KindReplicated, KindReplication:
		return true
	}
	return false
}
