package command

import "strconv"

// KindTx carries one MULTI/EXEC transaction: every queued command in one entry,
// applied atomically (Redis semantics: no rollback of commands that fail).
const KindTx Kind = 4

// Watched is a key a client WATCHed, with the version it had then (0: absent).
type Watched struct {
	Key     []byte
	Version uint64
}

// Tx is EXEC of a MULTI transaction: the watched keys and the queued commands.
// Its log entry is a KindTx entry whose Args are TxArgs(tx).
type Tx struct {
	Watch []Watched
	Cmds  [][][]byte
}

// Versions asks for the current version of keys (what WATCH records).
type Versions struct{ Keys [][]byte }

func (Tx) isOp()       {}
func (Versions) isOp() {}

// TxSpec and VersionsSpec (door.go) are the rows of EXEC and WATCH, whose
// requests carry these two internal operations.

// TxArgs flattens tx for a log entry: the watch count, each key and version, then
// each command as its argument count followed by its arguments.
func TxArgs(tx Tx) [][]byte {
	out := [][]byte{strconv.AppendInt(nil, int64(len(tx.Watch)), 10)}
	for _, w := range tx.Watch {
		out = append(out, w.Key, strconv.AppendUint(nil, w.Version, 10))
	}
	return appendCommands(out, tx.Cmds)
}

// ParseTx is the inverse of TxArgs.
func ParseTx(args [][]byte) (Tx, error) {
	var tx Tx
	num := func(i int) (int64, bool) {
		if i >= len(args) {
			return 0, false
		}
		return ParseInt(args[i])
	}
	n, ok := num(0)
	if !ok || n < 0 || 1+2*int(n) > len(args) {
		return tx, ErrCorrupt
	}
	i := 1
	for ; n > 0; n-- {
		v, err := strconv.ParseUint(string(args[i+1]), 10, 64)
		if err != nil {
			return tx, ErrCorrupt
		}
		tx.Watch = append(tx.Watch, Watched{Key: args[i], Version: v})
		i += 2
	}
	cmds, ok := parseCommands(args[i:])
	if !ok {
		return tx, ErrCorrupt
	}
	tx.Cmds = cmds
	return tx, nil
}

// WritesData reports whether one of tx's commands has Redis's "write" flag
// (FlagDataWrite): what a replica of a Redis master refuses.
func (tx Tx) WritesData() bool {
	for _, args := range tx.Cmds {
		if spec, ok := Lookup(args[0]); ok && spec.Flags.Has(FlagDataWrite) {
			return true
		}
	}
	return false
}
