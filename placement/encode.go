package placement

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrBadEncoding is returned by Decode for bytes Encode did not write.
var ErrBadEncoding = errors.New("placement: bad encoding")

// encodingVersion is the first byte of Encode's output.
const encodingVersion = 1

// Encode writes p compactly, for group 0 to replicate:
//
//	version byte (1)
//	uvarint number of groups
//	per group: uvarint number of voters, then per voter uvarint length and the ID's bytes
//
// Decode(p.Encode()) gives p back, voter order included (a group without
// voters comes back with nil Voters).
func (p Placement) Encode() []byte {
	out := []byte{encodingVersion}
	out = binary.AppendUvarint(out, uint64(len(p.Groups)))
	for _, g := range p.Groups {
		out = binary.AppendUvarint(out, uint64(len(g.Voters)))
		for _, id := range g.Voters {
			out = binary.AppendUvarint(out, uint64(len(id)))
			out = append(out, id...)
		}
	}
	return out
}

// Decode reads what Encode wrote. Any other input (another version, a count
// or length past the end, bytes left over) is an error wrapping
// ErrBadEncoding; it never panics, and what it allocates is bounded by
// len(b) (every group and every voter takes at least one byte).
func Decode(b []byte) (Placement, error) {
	if len(b) == 0 || b[0] != encodingVersion {
		return Placement{}, fmt.Errorf("%w: unknown version", ErrBadEncoding)
	}
	rest := b[1:]
	next := func(what string) (int, error) {
		v, n := binary.Uvarint(rest)
		if n <= 0 {
			return 0, fmt.Errorf("%w: truncated %s", ErrBadEncoding, what)
		}
		if n != len(binary.AppendUvarint(nil, v)) {
			return 0, fmt.Errorf("%w: %s not in its shortest form", ErrBadEncoding, what)
		}
		rest = rest[n:]
		if v > uint64(len(rest)) {
			return 0, fmt.Errorf("%w: %s %d past the end", ErrBadEncoding, what, v)
		}
		return int(v), nil
	}
	ng, err := next("group count")
	if err != nil {
		return Placement{}, err
	}
	p := Placement{Groups: make([]Group, ng)}
	for g := range p.Groups {
		nv, err := next("voter count")
		if err != nil {
			return Placement{}, err
		}
		if nv > 0 {
			p.Groups[g].Voters = make([]string, nv)
		}
		for j := range nv {
			l, err := next("ID length")
			if err != nil {
				return Placement{}, err
			}
			p.Groups[g].Voters[j] = string(rest[:l])
			rest = rest[l:]
		}
	}
	if len(rest) != 0 {
		return Placement{}, fmt.Errorf("%w: %d bytes left over", ErrBadEncoding, len(rest))
	}
	return p, nil
}
