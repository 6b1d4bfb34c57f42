package placement

import (
	"fmt"
	"slices"
	"strings"
)

// topo is the cluster's shape for one decision: the nodes sorted by ID, their
// zones as indices, the replication factor in effect and the bounds a balanced
// placement keeps. It depends only on the set of nodes (not on their order),
// the number of groups and the replication factor.
type topo struct {
	ids       []string       // node index -> ID, sorted
	index     map[string]int // ID -> node index (lookups only, never iterated)
	zone      []int          // node index -> zone index
	zoneNodes [][]int        // zone index -> node indices, ascending
	zoneName  []string       // zone index -> name ("" for a node without a zone)
	groups    int            // G
	r         int            // voters per group: min(replicas, len(nodes))
	cap       []int          // zone index -> most voters of one group in the zone
	lo, hi    []int          // node index -> fewest, most voters a balanced node holds
}

// newTopo checks nodes and computes the bounds for groups groups of replicas
// voters. Named zones get indices in name order; each node without a zone is
// a zone of its own, after them, in ID order.
func newTopo(nodes []Node, groups, replicas int) (*topo, error) {
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%w: no nodes", ErrInput)
	}
	if groups < 0 || groups > MaxGroups {
		return nil, fmt.Errorf("%w: %d groups (0 to %d)", ErrInput, groups, MaxGroups)
	}
	if replicas < 1 {
		return nil, fmt.Errorf("%w: replicas %d (at least 1)", ErrInput, replicas)
	}
	sorted := slices.Clone(nodes)
	slices.SortFunc(sorted, func(a, b Node) int { return strings.Compare(a.ID, b.ID) })
	t := &topo{index: make(map[string]int, len(sorted)), groups: groups}
	for i, n := range sorted {
		if n.ID == "" {
			return nil, fmt.Errorf("%w: a node without an ID", ErrInput)
		}
		if i > 0 && sorted[i-1].ID == n.ID {
			return nil, fmt.Errorf("%w: node %q listed twice", ErrInput, n.ID)
		}
		t.ids = append(t.ids, n.ID)
		t.index[n.ID] = i
	}
	var names []string
	for _, n := range sorted {
		if n.Zone != "" {
			names = append(names, n.Zone)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	t.zoneName = names
	t.zoneNodes = make([][]int, len(names))
	t.zone = make([]int, len(sorted))
	for i, n := range sorted {
		if n.Zone == "" {
			t.zone[i] = len(t.zoneName)
			t.zoneName = append(t.zoneName, "")
			t.zoneNodes = append(t.zoneNodes, []int{i})
			continue
		}
		z, _ := slices.BinarySearch(names, n.Zone)
		t.zone[i] = z
		t.zoneNodes[z] = append(t.zoneNodes[z], i)
	}
	t.r = min(replicas, len(sorted))
	t.computeCaps()
	t.computeBounds()
	return t, nil
}

// computeCaps sets the per-group zone caps: the smallest k such that zones
// holding at most k voters each (and at most their node count) can hold r. With
// at least r zones k is 1: no two voters of a group share a zone.
func (t *topo) computeCaps() {
	t.cap = make([]int, len(t.zoneNodes))
	for k := 1; ; k++ {
		sum := 0
		for z, ns := range t.zoneNodes {
			t.cap[z] = min(k, len(ns))
			sum += t.cap[z]
		}
		if sum >= t.r {
			return
		}
	}
}

// zoneMin is the fewest voters of one group that zone z must hold when every
// other zone holds its cap.
func (t *topo) zoneMin(z int) int {
	others := 0
	for y, c := range t.cap {
		if y != z {
			others += c
		}
	}
	return max(0, t.r-others)
}

// computeBounds sets each node's balanced range of voters by water filling:
// zone z holds between G·zoneMin(z) and G·cap(z) voters in all; the level λ
// solves Σ clamp(λ·n_z, G·min_z, G·cap_z) = G·r. A node in a zone the level
// leaves unclamped holds ⌊λ⌋ or ⌈λ⌉; a node in a clamped zone holds ⌊L/n⌋ or
// ⌈L/n⌉ of its zone's clamped total L. Without zones that is ⌊G·r/N⌋ or
// ⌈G·r/N⌉ for every node.
func (t *topo) computeBounds() {
	g, total := int64(t.groups), int64(t.groups*t.r)
	nz := len(t.zoneNodes)
	a, b, n := make([]int64, nz), make([]int64, nz), make([]int64, nz)
	type frac struct{ p, q int64 } // p/q, q > 0
	var points []frac
	for z, ns := range t.zoneNodes {
		a[z], b[z], n[z] = g*int64(t.zoneMin(z)), g*int64(t.cap[z]), int64(len(ns))
		points = append(points, frac{a[z], n[z]}, frac{b[z], n[z]})
	}
	less := func(x, y frac) int {
		l, r := x.p*y.q, y.p*x.q
		switch {
		case l < r:
			return -1
		case l > r:
			return 1
		}
		return 0
	}
	slices.SortFunc(points, less)
	// f(x) = Σ clamp(x·n_z, a_z, b_z); f(∞) = Σ b_z ≥ total, so some point reaches it.
	reaches := func(x frac) bool {
		var s int64 // Σ clamp(...) · x.q
		for z := range n {
			s += min(max(x.p*n[z], a[z]*x.q), b[z]*x.q)
		}
		return s >= total*x.q
	}
	lower := frac{0, 1}
	upper := points[len(points)-1]
	for _, p := range points {
		if reaches(p) {
			upper = p
			break
		}
		lower = p
	}
	// On [lower, upper] f is linear: saturated zones give b, zones still at their
	// floor give a, the rest (active) give λ·n_z.
	state := make([]int, nz) // 1 saturated, -1 at floor, 0 active
	var fixed, active int64
	for z := range n {
		switch {
		case less(frac{b[z], n[z]}, lower) <= 0:
			state[z], fixed = 1, fixed+b[z]
		case less(frac{a[z], n[z]}, upper) >= 0:
			state[z], fixed = -1, fixed+a[z]
		default:
			active += n[z]
		}
	}
	t.lo, t.hi = make([]int, len(t.ids)), make([]int, len(t.ids))
	for z, ns := range t.zoneNodes {
		var p, q int64
		switch {
		case state[z] == 1:
			p, q = b[z], n[z]
		case state[z] == -1:
			p, q = a[z], n[z]
		default:
			p, q = total-fixed, active
		}
		lo, hi := int(p/q), int((p+q-1)/q)
		for _, i := range ns {
			t.lo[i], t.hi[i] = lo, hi
		}
	}
}

// leaderBounds is the balanced range of groups one node leads: ⌊G/N⌋ to ⌈G/N⌉.
func (t *topo) leaderBounds() (lo, hi int) {
	n := len(t.ids)
	return t.groups / n, (t.groups + n - 1) / n
}
