package command

// IsInternal reports whether kind is an entry only a node proposes (a
// session attach, a slot move step, a shard map), never built from a client's
// command.
func IsInternal(kind Kind) bool {
	switch kind {
	case KindSessionAttach, KindMigrate, KindImport, KindShardMap:
		return true
	}
	return false
}
