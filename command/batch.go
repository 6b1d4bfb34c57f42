package command

import "strconv"

// KindBatch carries several client commands, each applied as if it were an
// entry of its own (its own logical index), in order.
const KindBatch Kind = 12

// smallCounts holds the decimal forms of small argument counts, shared so that
// BatchArgs allocates none for them.
var smallCounts = func() [][]byte {
	out := make([][]byte, 16)
	for i := range out {
		out[i] = []byte(strconv.Itoa(i))
	}
	return out
}()

// BatchArgs flattens cmds for a KindBatch entry: each command as its argument
// count followed by its arguments (the layout of a transaction's commands,
// TxArgs).
func BatchArgs(cmds [][][]byte) [][]byte {
	n := 0
	for _, c := range cmds {
		n += 1 + len(c)
	}
	return appendCommands(make([][]byte, 0, n), cmds)
}

// ParseBatch is the inverse of BatchArgs. A batch holds one command or more.
func ParseBatch(args [][]byte) ([][][]byte, error) {
	cmds, ok := parseCommands(args)
	if !ok || len(cmds) == 0 {
		return nil, ErrCorrupt
	}
	return cmds, nil
}

// appendCommands appends each command of cmds to out as its argument count
// followed by its arguments.
func appendCommands(out [][]byte, cmds [][][]byte) [][]byte {
	for _, c := range cmds {
		if len(c) < len(smallCounts) {
			out = append(out, smallCounts[len(c)])
		} else {
			out = append(out, strconv.AppendInt(nil, int64(len(c)), 10))
		}
		out = append(out, c...)
	}
	return out
}

// parseCommands is the inverse of appendCommands; false when a count is not
// a positive number or runs past the end. The commands alias args.
func parseCommands(args [][]byte) ([][][]byte, bool) {
	var cmds [][][]byte
	for i := 0; i < len(args); {
		c, ok := ParseInt(args[i])
		if !ok || c < 1 || int64(len(args)-i-1) < c {
			return nil, false
		}
		cmds = append(cmds, args[i+1:i+1+int(c)])
		i += 1 + int(c)
	}
	return cmds, true
}
