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
// count followed by its arguments.
func BatchArgs(cmds [][][]byte) [][]byte {
	n := 0
	for _, c := range cmds {
		n += 1 + len(c)
	}
	out := make([][]byte, 0, n)
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

// ParseBatch is the inverse of BatchArgs.
func ParseBatch(args [][]byte) ([][][]byte, error) {
	var cmds [][][]byte
	for i := 0; i < len(args); {
		c, ok := ParseInt(args[i])
		if !ok || c < 1 || int64(len(args)-i-1) < c {
			return nil, ErrCorrupt
		}
		cmds = append(cmds, args[i+1:i+1+int(c)])
		i += 1 + int(c)
	}
	if len(cmds) == 0 {
		return nil, ErrCorrupt
	}
	return cmds, nil
}
