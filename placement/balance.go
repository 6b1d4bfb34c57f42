package placement

import "slices"

// state is a placement being worked on, as node indices, with the counts the
// decisions read. Voter sets are kept ascending, so every scan is in a fixed
// order.
type state struct {
	t      *topo
	home   []int   // group -> home zone index, -1 for none
	pref   []int   // group -> its preferred leader before the change, -1 for none
	voters [][]int // group -> node indices, ascending
	count  []int   // node -> voters it holds
	zc     [][]int // group -> zone -> voters there
	shared [][]int // node -> node -> groups both hold
}

func newState(t *topo, home []int) *state {
	s := &state{t: t, home: home, pref: make([]int, t.groups), voters: make([][]int, t.groups),
		count: make([]int, len(t.ids)), zc: make([][]int, t.groups), shared: make([][]int, len(t.ids))}
	for n := range s.shared {
		s.shared[n] = make([]int, len(t.ids))
	}
	for g := range s.zc {
		s.pref[g] = -1
		s.zc[g] = make([]int, len(t.zoneNodes))
	}
	return s
}

func (s *state) has(g, n int) bool {
	_, ok := slices.BinarySearch(s.voters[g], n)
	return ok
}

func (s *state) add(g, n int) {
	for _, x := range s.voters[g] {
		s.shared[x][n]++
		s.shared[n][x]++
	}
	i, _ := slices.BinarySearch(s.voters[g], n)
	s.voters[g] = slices.Insert(s.voters[g], i, n)
	s.count[n]++
	s.zc[g][s.t.zone[n]]++
}

func (s *state) del(g, n int) {
	i, _ := slices.BinarySearch(s.voters[g], n)
	s.voters[g] = slices.Delete(s.voters[g], i, i+1)
	for _, x := range s.voters[g] {
		s.shared[x][n]--
		s.shared[n][x]--
	}
	s.count[n]--
	s.zc[g][s.t.zone[n]]--
}

// canMove reports whether group g's voter on node from (-1: a new voter) may
// go to node to: to does not hold g, to's zone stays within its cap, and the
// group's last voter in its home zone stays there.
func (s *state) canMove(g, from, to int) bool {
	if s.has(g, to) {
		return false
	}
	zt := s.t.zone[to]
	if (from < 0 || s.t.zone[from] != zt) && s.zc[g][zt] >= s.t.cap[zt] {
		return false
	}
	if h := s.home[g]; from >= 0 && h >= 0 && s.t.zone[from] == h && zt != h && s.zc[g][h] == 1 {
		return false
	}
	return true
}

// better reports whether node a is a better place for one more voter than b:
// a node below its range first, then one below its maximum, then the one
// with fewest voters relative to its range, then the lower index.
func (s *state) better(a, b int) bool {
	if c := slices.Compare(s.roomKey(a), s.roomKey(b)); c != 0 {
		return c < 0
	}
	return a < b
}

func (s *state) roomKey(n int) []int {
	c, lo, hi := s.count[n], s.t.lo[n], s.t.hi[n]
	return []int{boolInt(c >= lo), boolInt(c >= hi), c - lo}
}

// victimBetter reports whether voter a of group g is a better one to take
// away than b: one in a zone over its cap first, then one that is not the
// preferred leader, then the node most above its range, then the higher index.
func (s *state) victimBetter(g, a, b int) bool {
	if c := slices.Compare(s.victimKey(g, a), s.victimKey(g, b)); c != 0 {
		return c < 0
	}
	return a > b
}

func (s *state) victimKey(g, n int) []int {
	z := s.t.zone[n]
	c, lo, hi := s.count[n], s.t.lo[n], s.t.hi[n]
	return []int{boolInt(s.zc[g][z] <= s.t.cap[z]), boolInt(s.pref[g] == n), boolInt(c <= hi) + boolInt(c <= lo), lo - c}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// lastHome reports whether node n holds group g's only voter in its home zone.
func (s *state) lastHome(g, n int) bool {
	h := s.home[g]
	return h >= 0 && s.t.zone[n] == h && s.zc[g][h] == 1
}

// removeOne takes one voter out of group g: the best victim among those
// allowed (in a zone over its cap when overOnly), never the last home voter.
func (s *state) removeOne(g int, overOnly bool) {
	best := -1
	for _, n := range s.voters[g] {
		z := s.t.zone[n]
		if overOnly && s.zc[g][z] <= s.t.cap[z] {
			continue
		}
		if s.lastHome(g, n) && len(s.voters[g]) > 1 {
			continue
		}
		if best < 0 || s.victimBetter(g, n, best) {
			best = n
		}
	}
	s.del(g, best)
}

// addOne gives group g one more voter: the best node allowed (see better),
// in the group's home zone while it has no voter there; among equally loaded
// nodes the one sharing fewest groups with g's voters, so that groups do not
// all land on the same few sets of nodes and a failed node's load spreads.
func (s *state) addOne(g int) {
	h := s.home[g]
	needHome := h >= 0 && s.zc[g][h] == 0
	best, bestShared := -1, 0
	for pass := 0; pass < 2 && best < 0; pass++ {
		for n := range s.t.ids {
			if pass == 0 && (!needHome || s.t.zone[n] != h) || !s.canMove(g, -1, n) {
				continue
			}
			sh := 0
			for _, x := range s.voters[g] {
				sh += s.shared[n][x]
			}
			if best < 0 {
				best, bestShared = n, sh
				continue
			}
			c := slices.Compare(s.roomKey(n), s.roomKey(best))
			if c < 0 || c == 0 && sh < bestShared {
				best, bestShared = n, sh
			}
		}
	}
	s.add(g, best) // the caps hold at least r voters, so some node fits
}

// repair makes every group whole, group by group: at most r voters, no zone
// over its cap, a voter in its home zone, then r voters. Each change takes the
// voter from the most loaded node and gives it to the least loaded one.
func (s *state) repair() {
	r := s.t.r
	for g := range s.voters {
		for len(s.voters[g]) > r {
			s.removeOne(g, false)
		}
		for s.overCap(g) {
			s.removeOne(g, true)
			s.addOne(g)
		}
		if h := s.home[g]; h >= 0 && s.zc[g][h] == 0 && len(s.voters[g]) == r {
			s.removeOne(g, false)
			s.addOne(g)
		}
		for len(s.voters[g]) < r {
			s.addOne(g)
		}
	}
}

func (s *state) overCap(g int) bool {
	for z, c := range s.zc[g] {
		if c > s.t.cap[z] {
			return true
		}
	}
	return false
}

// step is one relocation of a chain: group g's voter from node from to the
// node the step is recorded at.
type step struct{ from, g int }

// balance brings every node into its range [lo, hi] with as few relocations as
// it finds: a node above its range pushes one voter, directly or along a chain
// of relocations of distinct groups, to a node below its maximum (below its
// minimum preferred); a node below its range pulls one from a node above its
// minimum (above its maximum preferred). Each success lowers the total excess
// or deficit by one and raises neither, so it ends; a node no chain can fix is
// left as it is.
func (s *state) balance() {
	for {
		moved := false
		for _, u := range s.byCount(true) {
			if s.count[u] > s.t.hi[u] && s.push(u) {
				moved = true
				break
			}
		}
		if !moved {
			for _, v := range s.byCount(false) {
				if s.count[v] < s.t.lo[v] && s.pull(v) {
					moved = true
					break
				}
			}
		}
		if !moved {
			return
		}
	}
}

// byCount lists the nodes by voters above their maximum (desc true: most
// above first) or below their minimum (desc false: most below first), then by
// index.
func (s *state) byCount(desc bool) []int {
	out := make([]int, len(s.t.ids))
	for i := range out {
		out[i] = i
	}
	key := func(i int) int {
		if desc {
			return s.count[i] - s.t.hi[i]
		}
		return s.t.lo[i] - s.count[i]
	}
	slices.SortStableFunc(out, func(a, b int) int { return key(b) - key(a) })
	return out
}

// groupsOf lists the groups node x holds, those it leads last (moving them
// would move a leader too).
func (s *state) groupsOf(x int) []int {
	var out, led []int
	for g := range s.voters {
		if s.has(g, x) {
			if s.pref[g] == x {
				led = append(led, g)
			} else {
				out = append(out, g)
			}
		}
	}
	return append(out, led...)
}

// onPath reports whether group g already moves on the chain that reaches node
// x (walking parent steps back to the root).
func onPath(parent []step, root, x, g int) bool {
	for x != root {
		if parent[x].g == g {
			return true
		}
		x = parent[x].from
	}
	return false
}

// push moves one voter off node u along the shortest chain it finds.
func (s *state) push(u int) bool {
	n := len(s.t.ids)
	parent := make([]step, n)
	seen := make([]bool, n)
	seen[u] = true
	layer := []int{u}
	for len(layer) > 0 {
		var next []int
		for _, x := range layer {
			for _, g := range s.groupsOf(x) {
				if onPath(parent, u, x, g) {
					continue
				}
				for w := range n {
					if !seen[w] && s.canMove(g, x, w) {
						seen[w], parent[w] = true, step{x, g}
						next = append(next, w)
					}
				}
			}
		}
		best := -1
		for _, w := range next {
			if s.count[w] < s.t.hi[w] && (best < 0 || s.better(w, best)) {
				best = w
			}
		}
		if best >= 0 {
			// Relocate from the far end back; the groups are distinct, so each
			// relocation is checked against its own group only.
			for w := best; w != u; w = parent[w].from {
				st := parent[w]
				s.del(st.g, st.from)
				s.add(st.g, w)
			}
			return true
		}
		layer = next
	}
	return false
}

// pull moves one voter onto node v along the shortest chain it finds.
func (s *state) pull(v int) bool {
	n := len(s.t.ids)
	parent := make([]step, n) // parent[y] = {x, g}: g goes from y to x
	seen := make([]bool, n)
	seen[v] = true
	layer := []int{v}
	for len(layer) > 0 {
		var next []int
		for _, x := range layer {
			for y := range n {
				if seen[y] {
					continue
				}
				for _, g := range s.groupsOf(y) {
					if !onPath(parent, v, x, g) && s.canMove(g, y, x) {
						seen[y], parent[y] = true, step{x, g}
						next = append(next, y)
						break
					}
				}
			}
		}
		best := -1
		for _, y := range next {
			if s.count[y] > s.t.lo[y] && (best < 0 || s.better(best, y)) {
				best = y
			}
		}
		if best >= 0 {
			for y := best; y != v; y = parent[y].from {
				st := parent[y]
				s.del(st.g, y)
				s.add(st.g, st.from)
			}
			return true
		}
		layer = next
	}
	return false
}

// leaders picks each group's preferred leader: a voter in its home zone when
// it has one there, else any voter; prev[g] (when given and allowed) is kept.
// Then, while a node leads at least two groups more than another node it can
// hand one to — directly or along a chain of hand-overs — one is handed over.
// A state where no such chain exists spreads leaders as evenly as the voters
// and homes allow (⌊G/N⌋ to ⌈G/N⌉ whenever that is possible).
func (s *state) leaders(prev []int) []int {
	G, n := len(s.voters), len(s.t.ids)
	cand := make([][]int, G)
	for g, vs := range s.voters {
		if h := s.home[g]; h >= 0 && s.zc[g][h] > 0 {
			for _, x := range vs {
				if s.t.zone[x] == h {
					cand[g] = append(cand[g], x)
				}
			}
		} else {
			cand[g] = vs
		}
	}
	lead, led := make([]int, G), make([]int, n)
	for g := range lead {
		lead[g] = -1
		if prev != nil && prev[g] >= 0 && slices.Contains(cand[g], prev[g]) {
			lead[g] = prev[g]
		} else {
			for _, x := range cand[g] {
				if lead[g] < 0 || led[x] < led[lead[g]] {
					lead[g] = x
				}
			}
		}
		if lead[g] >= 0 {
			led[lead[g]]++
		}
	}
	for s.shiftLeader(lead, led, cand) {
	}
	return lead
}

// shiftLeader hands one group's leadership along the shortest chain from a
// node leading the most to a node leading at least two fewer; false when none
// exists.
func (s *state) shiftLeader(lead, led []int, cand [][]int) bool {
	n := len(s.t.ids)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return led[b] - led[a] })
	for _, u := range order {
		parent := make([]step, n)
		seen := make([]bool, n)
		seen[u] = true
		layer := []int{u}
		for len(layer) > 0 {
			var next []int
			for _, x := range layer {
				for g, l := range lead {
					if l != x {
						continue
					}
					for _, y := range cand[g] {
						if !seen[y] {
							seen[y], parent[y] = true, step{x, g}
							next = append(next, y)
						}
					}
				}
			}
			best := -1
			for _, y := range next {
				if led[y] <= led[u]-2 && (best < 0 || led[y] < led[best] || led[y] == led[best] && y < best) {
					best = y
				}
			}
			if best >= 0 {
				for y := best; y != u; y = parent[y].from {
					lead[parent[y].g] = y
				}
				led[u]--
				led[best]++
				return true
			}
			layer = next
		}
	}
	return false
}

// placement turns the state into a Placement: the leader first, the other
// voters in ID order.
func (s *state) placement(lead []int) Placement {
	p := Placement{Groups: make([]Group, len(s.voters))}
	for g, vs := range s.voters {
		v := make([]string, 0, len(vs))
		if lead[g] >= 0 {
			v = append(v, s.t.ids[lead[g]])
		}
		for _, x := range vs {
			if x != lead[g] {
				v = append(v, s.t.ids[x])
			}
		}
		p.Groups[g] = Group{Voters: v}
	}
	return p
}
