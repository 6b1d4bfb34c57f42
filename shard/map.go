package shard

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Map assigns every slot to a Raft group. It is versioned: every change makes
// a new version, so nodes and clients can tell a newer map from an older one.
// A Map is a value; changes return a new one.
type Map struct {
	Version uint64
	Groups  int           // groups 0..Groups-1
	owner   [Slots]uint16 // slot -> group
}

// ErrBadMap is returned by Decode for bytes that are not a map, and by
// Assign for a group or slot range out of bounds.
var ErrBadMap = errors.New("shard: bad slot map")

// MaxGroups bounds the number of groups of a cluster.
const MaxGroups = 256

// NewMap spreads the slots evenly over groups groups in contiguous ranges (the
// first Slots%groups groups get one slot more), as version 1.
func NewMap(groups int) (Map, error) {
	if groups < 1 || groups > MaxGroups {
		return Map{}, fmt.Errorf("%w: %d groups (1 to %d)", ErrBadMap, groups, MaxGroups)
	}
	m := Map{Version: 1, Groups: groups}
	per, extra := Slots/groups, Slots%groups
	s := 0
	for g := range groups {
		n := per
		if g < extra {
			n++
		}
		for range n {
			m.owner[s] = uint16(g)
			s++
		}
	}
	return m, nil
}

// Group returns the group that owns slot.
func (m *Map) Group(slot uint16) int { return int(m.owner[slot%Slots]) }

// GroupOf returns the group that owns key's slot.
func (m *Map) GroupOf(key []byte) int { return m.Group(Slot(key)) }

// Owned returns how many slots each group owns, index = group, for groups
// 0..Groups-1.
func (m *Map) Owned() []int {
	out := make([]int, m.Groups)
	for _, g := range m.owner {
		out[g]++
	}
	return out
}

// Range is a run of consecutive slots [From, To] owned by one group.
type Range struct {
	From, To uint16
	Group    int
}

// Ranges lists the map as maximal runs of slots, in slot order (what CLUSTER
// SLOTS shows).
func (m *Map) Ranges() []Range {
	var out []Range
	for s := 0; s < Slots; s++ {
		g := int(m.owner[s])
		if n := len(out); n > 0 && out[n-1].Group == g && int(out[n-1].To) == s-1 {
			out[n-1].To = uint16(s)
			continue
		}
		out = append(out, Range{From: uint16(s), To: uint16(s), Group: g})
	}
	return out
}

// Assign returns the next version of the map with slots from..to (inclusive)
// owned by group.
func (m Map) Assign(from, to uint16, group int) (Map, error) {
	if from > to || int(to) >= Slots || group < 0 || group >= m.Groups {
		return Map{}, fmt.Errorf("%w: slots %d-%d to group %d of %d", ErrBadMap, from, to, group, m.Groups)
	}
	for s := int(from); s <= int(to); s++ {
		m.owner[s] = uint16(group)
	}
	m.Version++
	return m, nil
}

// Encode is the map's binary form: version, groups, then its ranges.
func (m *Map) Encode() []byte {
	rs := m.Ranges()
	b := binary.AppendUvarint(nil, m.Version)
	b = binary.AppendUvarint(b, uint64(m.Groups))
	b = binary.AppendUvarint(b, uint64(len(rs)))
	for _, r := range rs {
		b = binary.AppendUvarint(b, uint64(r.To))
		b = binary.AppendUvarint(b, uint64(r.Group))
	}
	return b
}

// Decode is the inverse of Encode. The ranges must cover every slot once, in
// order, with groups below the map's group count.
func Decode(b []byte) (Map, error) {
	var m Map
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	v, ok1 := next()
	g, ok2 := next()
	n, ok3 := next()
	if !ok1 || !ok2 || !ok3 || g < 1 || g > MaxGroups || n < 1 || n > Slots {
		return Map{}, ErrBadMap
	}
	m.Version, m.Groups = v, int(g)
	s := 0
	for range n {
		to, ok1 := next()
		grp, ok2 := next()
		if !ok1 || !ok2 || to >= Slots || int(to) < s || grp >= g {
			return Map{}, ErrBadMap
		}
		for ; s <= int(to); s++ {
			m.owner[s] = uint16(grp)
		}
	}
	if s != Slots || len(b) != 0 {
		return Map{}, ErrBadMap
	}
	return m, nil
}

// Grow returns the next version of the map with groups groups: the groups
// added own no slot until slots are assigned to them.
func (m Map) Grow(groups int) (Map, error) {
	if groups <= m.Groups || groups > MaxGroups {
		return Map{}, fmt.Errorf("%w: %d groups cannot grow to %d (at most %d)", ErrBadMap, m.Groups, groups, MaxGroups)
	}
	m.Groups = groups
	m.Version++
	return m, nil
}
