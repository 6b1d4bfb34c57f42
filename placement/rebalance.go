package placement

import (
	"fmt"
	"slices"
)

// Rebalance returns the moves that take cur to a balanced placement on nodes
// (one that passes Check for nodes and replicas), in the order they must run,
// or none when cur is balanced and its leaders are where they belong.
//
// A voter on a node not in nodes (a node gone) is replaced. The target is
// found by relocating as few voters as it can from cur: a group short of
// voters or holding a gone node gets its new voters on the least loaded nodes;
// a node that joined gets its share (⌊G·r/N⌋ or more) from the most loaded
// nodes; nothing else moves. Preferred leaders stay where they are unless a
// node would lead two groups more than another, or a group's home zone holds a
// voter that is not its preferred leader.
//
// Order: the groups that hold a gone node first, then the others, by group id;
// each group's moves are contiguous. Within a group an Add comes before each
// Remove, so a group never has fewer voters than min(r, its voters in cur) —
// never fewer than a majority — and never more than max(r+1, its voters in
// cur). A Remove of the group's preferred leader is preceded by a Lead to a
// voter that stays; the group's last move, when needed, is a Lead to its
// target leader. Applying every move to cur (Placement.Apply) gives the
// target.
//
// Errors wrap ErrInput: bad nodes or replicas, a home for a group cur does not
// have, a group of cur listing a voter twice.
func Rebalance(cur Placement, nodes []Node, replicas int, homes map[int]string) ([]Move, error) {
	t, err := newTopo(nodes, len(cur.Groups), replicas)
	if err != nil {
		return nil, err
	}
	home, err := t.homes(homes)
	if err != nil {
		return nil, err
	}
	s := newState(t, home)
	lost := make([]bool, t.groups)
	for g, grp := range cur.Groups {
		sorted := slices.Clone(grp.Voters)
		slices.Sort(sorted)
		for j := 1; j < len(sorted); j++ {
			if sorted[j] == sorted[j-1] {
				return nil, fmt.Errorf("%w: group %d lists %q twice", ErrInput, g, sorted[j])
			}
		}
		for j, id := range grp.Voters {
			i, ok := t.index[id]
			if !ok {
				lost[g] = true
				continue
			}
			s.add(g, i)
			if j == 0 {
				s.pref[g] = i
			}
		}
	}
	s.repair()
	s.balance()
	target := s.placement(s.leaders(s.pref))

	var moves []Move
	for pass := range 2 {
		for g := range cur.Groups {
			if lost[g] == (pass == 0) {
				moves = appendGroupMoves(moves, g, cur.Groups[g].Voters, target.Groups[g].Voters, t)
			}
		}
	}
	return moves, nil
}

// appendGroupMoves appends the moves that take group g from voters cur to
// voters want (want[0] its preferred leader), in the safe order Rebalance
// documents.
func appendGroupMoves(moves []Move, g int, cur, want []string, t *topo) []Move {
	adds := make([]string, 0, len(want))
	for _, id := range want {
		if !slices.Contains(cur, id) {
			adds = append(adds, id)
		}
	}
	var removes, gone []string
	for _, id := range cur {
		if slices.Contains(want, id) {
			continue
		}
		if _, ok := t.index[id]; ok {
			removes = append(removes, id)
		} else {
			gone = append(gone, id)
		}
	}
	removes = append(gone, removes...)
	v := slices.Clone(cur)
	emit := func(m Move) {
		moves = append(moves, m)
		v = Placement{Groups: []Group{{Voters: v}}}.Apply(Move{Add: m.Add, Remove: m.Remove, Lead: m.Lead}).Groups[0].Voters
	}
	for len(adds) > 0 || len(removes) > 0 {
		if len(removes) > 0 && (len(v) > t.r || len(adds) == 0) {
			x := removes[0]
			removes = removes[1:]
			if v[0] == x && len(v) > 1 {
				emit(Move{Group: g, Lead: nextLeader(v, want)})
			}
			emit(Move{Group: g, Remove: x})
			continue
		}
		emit(Move{Group: g, Add: adds[0]})
		adds = adds[1:]
	}
	if len(want) > 0 && len(v) > 0 && v[0] != want[0] {
		emit(Move{Group: g, Lead: want[0]})
	}
	return moves
}

// nextLeader is the voter of v (not v[0]) that takes the lead when v[0] is
// removed: the target leader if it is already a voter, else the first voter
// that stays, else v[1].
func nextLeader(v, want []string) string {
	if slices.Contains(v[1:], want[0]) {
		return want[0]
	}
	for _, id := range v[1:] {
		if slices.Contains(want, id) {
			return id
		}
	}
	return v[1]
}
