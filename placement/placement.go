// Package placement decides where each Raft group's replicas live (issue 49):
// which nodes are a group's voters, which voter is its preferred leader, and
// which membership steps move a placement to a balanced one when nodes join or
// leave.
//
// It is pure decision logic: no I/O, no Raft, no clock, no randomness, no map
// iteration. The same input gives the same output on every node, whatever the
// order the nodes are listed in, so any node (in practice group 0's leader) can
// compute a plan and replicate it.
//
// A balanced placement of G groups with replication factor R on N nodes has:
//   - r = min(R, N) distinct voters in every group, all on listed nodes;
//   - zone spread: no zone holds more voters of one group than it must (no two
//     in one zone while there are at least r zones; a node without a zone is a
//     zone of its own);
//   - load spread: each node holds ⌊G·r/N⌋ or ⌈G·r/N⌉ voters when zones allow
//     it, otherwise the most even spread the zones allow (see Check);
//   - leader spread: Voters[0], the preferred leader, spread so that each node
//     leads ⌊G/N⌋ or ⌈G/N⌉ groups where the voters allow it, and kept in a
//     group's home zone when one of its voters is there.
//
// Plan builds such a placement for a new cluster; Rebalance returns the moves
// (add a voter, remove one, move the preferred leader) that take an existing
// placement to one; Check says what keeps a placement from being balanced.
package placement

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// MaxGroups bounds the number of groups (shard.MaxGroups, the slot map's bound).
const MaxGroups = 256

// ErrInput is wrapped by the errors of Plan and Rebalance for input they
// refuse (no nodes, a node listed twice, a bad count, a home for a group that
// does not exist, a group listing a voter twice).
var ErrInput = errors.New("placement: bad input")

// ErrUnbalanced is wrapped by Check's error.
var ErrUnbalanced = errors.New("placement: not balanced")

// Node is one lockd node that can hold replicas. Zone "" means no zone: the
// node is then a failure domain of its own.
type Node struct {
	ID   string
	Zone string
}

// Group is one Raft group's voters, as node IDs. Voters[0] is the preferred
// leader; the order of the others carries no meaning.
type Group struct {
	Voters []string
}

// Placement is where every group lives; the index in Groups is the group id.
// A Placement is a value: Apply returns a new one and leaves its receiver as
// it was.
type Placement struct {
	Groups []Group
}

// Move is one step of one group: exactly one of Add (make this node a voter),
// Remove (take this voter out) or Lead (make this voter the preferred leader,
// Voters[0]) is set.
type Move struct {
	Group             int
	Add, Remove, Lead string
}

// String is the move as "g3 +n7", "g3 -n2" or "g3 ^n7".
func (m Move) String() string {
	switch {
	case m.Add != "":
		return fmt.Sprintf("g%d +%s", m.Group, m.Add)
	case m.Remove != "":
		return fmt.Sprintf("g%d -%s", m.Group, m.Remove)
	default:
		return fmt.Sprintf("g%d ^%s", m.Group, m.Lead)
	}
}

// DefaultReplicas is the replication factor for a new cluster of n nodes:
// n for 1 or 2 nodes (every node holds every group, as before issue 49: with
// 2 nodes an acknowledged write is on both disks, and one replica more than a
// single node costs no availability it would have had), 3 for 3 or 4 nodes
// (survives one failure; a 4th replica would make every write wait for 3
// flushes instead of 2 and still survive only one), and 5 from 5 nodes
// (survives two failures, the seed's eight groups of five replicas). 0 for
// n < 1.
func DefaultReplicas(n int) int {
	switch {
	case n < 1:
		return 0
	case n <= 2:
		return n
	case n <= 4:
		return 3
	}
	return 5
}

// Plan places groups groups of replicas voters on nodes for a new cluster. Each
// group gets min(replicas, len(nodes)) voters; the result passes Check. Leaders
// spread so that each node leads ⌊G/N⌋ or ⌈G/N⌉ groups where homes allow it.
// homes (may be nil) gives a group a home zone: Plan puts one of the group's
// voters in that zone (when a node is there) and makes it Voters[0]. The
// result depends only on the set of nodes, not on their order. Errors wrap
// ErrInput.
func Plan(nodes []Node, groups, replicas int, homes map[int]string) (Placement, error) {
	if groups < 1 {
		return Placement{}, fmt.Errorf("%w: %d groups (at least 1)", ErrInput, groups)
	}
	t, err := newTopo(nodes, groups, replicas)
	if err != nil {
		return Placement{}, err
	}
	home, err := t.homes(homes)
	if err != nil {
		return Placement{}, err
	}
	s := newState(t, home)
	s.repair()
	s.balance()
	leaders := s.leaders(nil)
	return s.placement(leaders), nil
}

// homes turns the group → zone map into group → zone index, -1 for no home or
// a zone without nodes. It reads the map by group id only.
func (t *topo) homes(homes map[int]string) ([]int, error) {
	bad, found := 0, false
	for g := range homes { // the smallest bad key, whatever the iteration order
		if (g < 0 || g >= t.groups) && (!found || g < bad) {
			bad, found = g, true
		}
	}
	if found {
		return nil, fmt.Errorf("%w: home for group %d of %d", ErrInput, bad, t.groups)
	}
	out := make([]int, t.groups)
	for g := range out {
		out[g] = -1
		name, ok := homes[g]
		if !ok || name == "" {
			continue
		}
		for z, zn := range t.zoneName {
			if zn == name {
				out[g] = z
				break
			}
		}
	}
	return out, nil
}

// Apply returns p with m applied; p is not changed. Add appends the node to the
// group's voters (nothing if it is one), Remove deletes it (the next voter
// becomes Voters[0] if it was the first), Lead moves it to the front (nothing
// if it is not a voter). A move naming a group out of range changes nothing.
func (p Placement) Apply(m Move) Placement {
	if m.Group < 0 || m.Group >= len(p.Groups) {
		return p
	}
	out := Placement{Groups: slices.Clone(p.Groups)}
	v := slices.Clone(p.Groups[m.Group].Voters)
	switch {
	case m.Add != "":
		if !slices.Contains(v, m.Add) {
			v = append(v, m.Add)
		}
	case m.Remove != "":
		if i := slices.Index(v, m.Remove); i >= 0 {
			v = slices.Delete(v, i, i+1)
		}
	case m.Lead != "":
		if i := slices.Index(v, m.Lead); i > 0 {
			copy(v[1:i+1], v[:i])
			v[0] = m.Lead
		}
	}
	out.Groups[m.Group] = Group{Voters: v}
	return out
}

// Check reports what keeps p from being balanced on nodes with replication
// factor replicas, nil when nothing does: a group without exactly
// min(replicas, len(nodes)) distinct voters, a voter on a node not in nodes,
// a zone holding more voters of a group than the zones require (two in one
// zone while at least r zones exist), a node holding more or fewer voters than
// its balanced range. The range is ⌊G·r/N⌋ to ⌈G·r/N⌉ when zones allow it;
// when zone spread forces a zone to hold more (or fewer) than its share — one
// node alone in a zone, with r zones, holds a voter of every group — its nodes'
// range is ⌊L/n⌋ to ⌈L/n⌉ of the total L the zone is forced to, and the other
// nodes share the rest evenly. Leaders and homes are not checked. The error
// wraps ErrUnbalanced (or ErrInput for bad nodes) and names at most 8
// problems.
func (p Placement) Check(nodes []Node, replicas int) error {
	t, err := newTopo(nodes, len(p.Groups), replicas)
	if err != nil {
		return err
	}
	var probs []string
	count := make([]int, len(t.ids))
	for g, grp := range p.Groups {
		zc := make([]int, len(t.zoneNodes))
		seen := make([]bool, len(t.ids))
		for _, id := range grp.Voters {
			i, ok := t.index[id]
			if !ok {
				probs = append(probs, fmt.Sprintf("group %d: voter %q is not a node", g, id))
				continue
			}
			if seen[i] {
				probs = append(probs, fmt.Sprintf("group %d: voter %q listed twice", g, id))
				continue
			}
			seen[i] = true
			count[i]++
			zc[t.zone[i]]++
		}
		if len(grp.Voters) != t.r {
			probs = append(probs, fmt.Sprintf("group %d: %d voters, want %d", g, len(grp.Voters), t.r))
		}
		for z, c := range zc {
			if c > t.cap[z] {
				probs = append(probs, fmt.Sprintf("group %d: %d voters in zone %s, at most %d", g, c, t.zoneLabel(z), t.cap[z]))
			}
		}
	}
	for i, c := range count {
		if c < t.lo[i] || c > t.hi[i] {
			probs = append(probs, fmt.Sprintf("node %q holds %d voters, want %d to %d", t.ids[i], c, t.lo[i], t.hi[i]))
		}
	}
	if len(probs) == 0 {
		return nil
	}
	if len(probs) > 8 {
		probs = append(probs[:8], fmt.Sprintf("and %d more", len(probs)-8))
	}
	return fmt.Errorf("%w: %s", ErrUnbalanced, strings.Join(probs, "; "))
}

// zoneLabel names zone z in messages: its name, or its node for a zone-less node.
func (t *topo) zoneLabel(z int) string {
	if t.zoneName[z] != "" {
		return fmt.Sprintf("%q", t.zoneName[z])
	}
	return fmt.Sprintf("of node %q", t.ids[t.zoneNodes[z][0]])
}
