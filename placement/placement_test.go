package placement

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// shape names a way to give N nodes zones.
type shape struct {
	name  string
	zones func(i, n int) string
}

var shapes = []shape{
	{"nozones", func(i, n int) string { return "" }},
	{"3zones", func(i, n int) string { return fmt.Sprintf("z%d", i%3) }},
	{"2zones", func(i, n int) string { return fmt.Sprintf("z%d", i%2) }},
	// uneven: half the nodes in one zone, the rest split over two.
	{"uneven", func(i, n int) string {
		switch {
		case i < (n+1)/2:
			return "big"
		case i%2 == 0:
			return "a"
		}
		return "b"
	}},
	// mixed: every third node has no zone.
	{"mixed", func(i, n int) string {
		if i%3 == 2 {
			return ""
		}
		return fmt.Sprintf("z%d", i%2)
	}},
}

func mkNodes(n int, sh shape) []Node {
	out := make([]Node, n)
	for i := range out {
		out[i] = Node{ID: fmt.Sprintf("n%02d", i), Zone: sh.zones(i, n)}
	}
	return out
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// loads counts voters and preferred leaderships per node ID.
func loads(p Placement) (voters, leads map[string]int) {
	voters, leads = map[string]int{}, map[string]int{}
	for _, g := range p.Groups {
		for j, id := range g.Voters {
			voters[id]++
			if j == 0 {
				leads[id]++
			}
		}
	}
	return voters, leads
}

func zoneOf(nodes []Node) map[string]string {
	m := map[string]string{}
	for _, n := range nodes {
		m[n.ID] = n.Zone
	}
	return m
}

// distinctZones counts the failure domains: named zones plus zone-less nodes.
func distinctZones(nodes []Node) int {
	var names []string
	k := 0
	for _, n := range nodes {
		if n.Zone == "" {
			k++
		} else {
			names = append(names, n.Zone)
		}
	}
	slices.Sort(names)
	return k + len(slices.Compact(names))
}

// checkZoneSpread asserts no group has two voters in one named zone while the
// cluster has at least r failure domains.
func checkZoneSpread(t *testing.T, p Placement, nodes []Node, r int) {
	t.Helper()
	if distinctZones(nodes) < r {
		return
	}
	zone := zoneOf(nodes)
	for g, grp := range p.Groups {
		seen := map[string]bool{}
		for _, id := range grp.Voters {
			z := zone[id]
			if z != "" && seen[z] {
				t.Fatalf("group %d has two voters in zone %s: %v", g, z, grp.Voters)
			}
			seen[z] = true
		}
	}
}

func TestPlanShapes(t *testing.T) {
	for _, sh := range shapes {
		for n := 1; n <= 12; n++ {
			nodes := mkNodes(n, sh)
			for _, R := range []int{1, 3, 5} {
				r := min(R, n)
				for G := 1; G <= 64; G++ {
					p, err := Plan(nodes, G, R, nil)
					if err != nil {
						t.Fatalf("%s N=%d G=%d R=%d: %v", sh.name, n, G, R, err)
					}
					if err := p.Check(nodes, R); err != nil {
						t.Fatalf("%s N=%d G=%d R=%d: %v\n%v", sh.name, n, G, R, err, p)
					}
					checkZoneSpread(t, p, nodes, r)
					voters, leads := loads(p)
					for _, nd := range nodes {
						if l := leads[nd.ID]; l < G/n || l > ceilDiv(G, n) {
							t.Fatalf("%s N=%d G=%d R=%d: %s leads %d, want %d..%d\n%v", sh.name, n, G, R, nd.ID, l, G/n, ceilDiv(G, n), p)
						}
						if sh.name == "nozones" || distinctZones(nodes) >= n {
							if v := voters[nd.ID]; v < G*r/n || v > ceilDiv(G*r, n) {
								t.Fatalf("%s N=%d G=%d R=%d: %s holds %d", sh.name, n, G, R, nd.ID, v)
							}
						}
					}
					// Deterministic, and independent of the order nodes come in.
					rev := slices.Clone(nodes)
					slices.Reverse(rev)
					q, err := Plan(rev, G, R, nil)
					if err != nil || !reflect.DeepEqual(p, q) {
						t.Fatalf("%s N=%d G=%d R=%d: reversed nodes give another plan:\n%v\n%v", sh.name, n, G, R, p, q)
					}
					// A balanced plan needs no moves.
					if moves, err := Rebalance(p, nodes, R, nil); err != nil || len(moves) != 0 {
						t.Fatalf("%s N=%d G=%d R=%d: Rebalance of a plan: %v %v", sh.name, n, G, R, moves, err)
					}
				}
			}
		}
	}
}

// The issue's shape: 6 nodes, 8 groups, 3 replicas.
func TestPlanIssueShape(t *testing.T) {
	for _, sh := range []shape{shapes[0], shapes[1]} { // no zones; 3 zones × 2 nodes
		nodes := mkNodes(6, sh)
		p, err := Plan(nodes, 8, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		voters, leads := loads(p)
		for g, grp := range p.Groups {
			if len(grp.Voters) != 3 {
				t.Fatalf("%s: group %d has %d voters", sh.name, g, len(grp.Voters))
			}
		}
		for _, nd := range nodes {
			if voters[nd.ID] > 4 || voters[nd.ID] < 4 {
				t.Fatalf("%s: %s holds %d groups, want 4 (⌈8·3/6⌉)", sh.name, nd.ID, voters[nd.ID])
			}
			if leads[nd.ID] < 1 || leads[nd.ID] > 2 {
				t.Fatalf("%s: %s leads %d", sh.name, nd.ID, leads[nd.ID])
			}
		}
		checkZoneSpread(t, p, nodes, 3)
		// Groups do not pile on the same sets of nodes: each node shares
		// groups with at least 4 others (all 4 outside its zone with zones),
		// so when it fails its groups' leaders spread over them.
		for _, nd := range nodes {
			peers := map[string]bool{}
			for _, grp := range p.Groups {
				if slices.Contains(grp.Voters, nd.ID) {
					for _, id := range grp.Voters {
						peers[id] = id != nd.ID
					}
				}
			}
			delete(peers, nd.ID)
			if len(peers) < 4 {
				t.Fatalf("%s: %s shares groups with only %v", sh.name, nd.ID, peers)
			}
		}
		if sh.name == "3zones" {
			zone := zoneOf(nodes)
			for g, grp := range p.Groups {
				seen := map[string]bool{}
				for _, id := range grp.Voters {
					if seen[zone[id]] {
						t.Fatalf("group %d: two voters in zone %s", g, zone[id])
					}
					seen[zone[id]] = true
				}
			}
		}
	}
}

// A zone alone in its zone gets a voter of every group: zone spread wins over
// load spread, and Check's ranges say so.
func TestPlanZoneSpreadWinsOverLoad(t *testing.T) {
	nodes := []Node{{"a1", "A"}, {"a2", "A"}, {"a3", "A"}, {"a4", "A"}, {"b1", "B"}, {"c1", "C"}}
	p, err := Plan(nodes, 8, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Check(nodes, 3); err != nil {
		t.Fatal(err)
	}
	voters, _ := loads(p)
	want := map[string]int{"a1": 2, "a2": 2, "a3": 2, "a4": 2, "b1": 8, "c1": 8}
	if !reflect.DeepEqual(voters, want) {
		t.Fatalf("voters per node %v, want %v", voters, want)
	}
	// Two zones for three replicas: at most two voters of a group in a zone.
	nodes = []Node{{"a1", "A"}, {"a2", "A"}, {"a3", "A"}, {"b1", "B"}}
	p, err = Plan(nodes, 6, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Check(nodes, 3); err != nil {
		t.Fatal(err)
	}
	voters, _ = loads(p)
	if voters["b1"] != 6 {
		t.Fatalf("b1 holds %d, want 6 (one voter of every group)", voters["b1"])
	}
}

func TestPlanHomes(t *testing.T) {
	nodes := mkNodes(6, shapes[1]) // z0: n00 n03, z1: n01 n04, z2: n02 n05
	homes := map[int]string{0: "z1", 3: "z2", 5: "z1", 6: "nowhere"}
	p, err := Plan(nodes, 8, 3, homes)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Check(nodes, 3); err != nil {
		t.Fatal(err)
	}
	zone := zoneOf(nodes)
	for g, z := range map[int]string{0: "z1", 3: "z2", 5: "z1"} {
		if got := zone[p.Groups[g].Voters[0]]; got != z {
			t.Fatalf("group %d led from %s, want its home %s: %v", g, got, z, p.Groups[g].Voters)
		}
	}
	// Replication factor 1 on 2 zones: the home zone gets the only voter.
	nodes = []Node{{"a", "east"}, {"b", "west"}, {"c", "west"}}
	homes = map[int]string{}
	for g := range 6 {
		homes[g] = "east"
	}
	p, err = Plan(nodes, 6, 1, homes)
	if err != nil {
		t.Fatal(err)
	}
	for g, grp := range p.Groups {
		if grp.Voters[0] != "a" {
			t.Fatalf("group %d on %v, want a (its home east)", g, grp.Voters)
		}
	}
}

func TestPlanErrors(t *testing.T) {
	nodes := mkNodes(3, shapes[0])
	for name, f := range map[string]func() error{
		"no nodes":   func() error { _, err := Plan(nil, 1, 3, nil); return err },
		"no groups":  func() error { _, err := Plan(nodes, 0, 3, nil); return err },
		"too many":   func() error { _, err := Plan(nodes, MaxGroups+1, 3, nil); return err },
		"replicas 0": func() error { _, err := Plan(nodes, 4, 0, nil); return err },
		"empty ID":   func() error { _, err := Plan([]Node{{ID: ""}}, 4, 1, nil); return err },
		"dup ID":     func() error { _, err := Plan([]Node{{ID: "a"}, {ID: "a", Zone: "z"}}, 4, 1, nil); return err },
		"home range": func() error { _, err := Plan(nodes, 4, 3, map[int]string{4: "z", -1: "z"}); return err },
		"rebalance dup voter": func() error {
			_, err := Rebalance(Placement{Groups: []Group{{Voters: []string{"n00", "n00"}}}}, nodes, 3, nil)
			return err
		},
	} {
		if err := f(); !errors.Is(err, ErrInput) {
			t.Errorf("%s: %v, want ErrInput", name, err)
		}
	}
	_, err := Plan(nodes, 4, 3, map[int]string{4: "z", 7: "z", -1: "z"})
	if want := "placement: bad input: home for group -1 of 4"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

func TestDefaultReplicas(t *testing.T) {
	for n, want := range []int{0, 1, 2, 3, 3, 5, 5, 5, 5, 5} {
		if got := DefaultReplicas(n); got != want {
			t.Errorf("DefaultReplicas(%d) = %d, want %d", n, got, want)
		}
	}
	if DefaultReplicas(-1) != 0 || DefaultReplicas(100) != 5 {
		t.Error("DefaultReplicas out of range")
	}
}

func TestCheckFindsProblems(t *testing.T) {
	nodes := mkNodes(3, shapes[0])
	for name, c := range map[string]struct {
		p        Placement
		replicas int
		want     string
	}{
		"short":      {Placement{Groups: []Group{{Voters: []string{"n00", "n01"}}}}, 3, `group 0: 2 voters, want 3`},
		"not a node": {Placement{Groups: []Group{{Voters: []string{"n00", "n01", "x"}}}}, 3, `group 0: voter "x" is not a node`},
		"twice":      {Placement{Groups: []Group{{Voters: []string{"n00", "n01", "n01"}}}}, 3, `group 0: voter "n01" listed twice`},
		"load": {Placement{Groups: []Group{{Voters: []string{"n00"}}, {Voters: []string{"n00"}}, {Voters: []string{"n01"}}}}, 1,
			`node "n00" holds 2 voters, want 1 to 1`},
	} {
		if err := c.p.Check(nodes, c.replicas); !errors.Is(err, ErrUnbalanced) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	zoned := []Node{{"a", "z1"}, {"b", "z1"}, {"c", "z2"}, {"d", "z3"}}
	p := Placement{Groups: []Group{{Voters: []string{"a", "b", "c"}}, {Voters: []string{"d", "c", "a"}}}}
	if err := p.Check(zoned, 3); err == nil || !strings.Contains(err.Error(), `group 0: 2 voters in zone "z1", at most 1`) {
		t.Errorf("zone check: %v", err)
	}
}

func TestApply(t *testing.T) {
	p := Placement{Groups: []Group{{Voters: []string{"a", "b", "c"}}}}
	q := p.Apply(Move{Group: 0, Add: "d"}).Apply(Move{Group: 0, Lead: "c"}).Apply(Move{Group: 0, Remove: "a"})
	if want := []string{"c", "b", "d"}; !slices.Equal(q.Groups[0].Voters, want) {
		t.Fatalf("got %v, want %v", q.Groups[0].Voters, want)
	}
	if want := []string{"a", "b", "c"}; !slices.Equal(p.Groups[0].Voters, want) {
		t.Fatalf("Apply changed its receiver: %v", p.Groups[0].Voters)
	}
	r := q.Apply(Move{Group: 0, Remove: "c"}).Apply(Move{Group: 5, Add: "x"}).Apply(Move{Group: 0, Add: "b"})
	if want := []string{"b", "d"}; !slices.Equal(r.Groups[0].Voters, want) {
		t.Fatalf("got %v, want %v", r.Groups[0].Voters, want)
	}
}

// applyChecked applies moves to cur, asserting at every step the bounds
// Rebalance promises, and returns the result.
func applyChecked(t *testing.T, cur Placement, moves []Move, r int) Placement {
	t.Helper()
	start := make([]int, len(cur.Groups))
	for g, grp := range cur.Groups {
		start[g] = len(grp.Voters)
	}
	seenGroup, lastGroup := map[int]bool{}, -1
	p := cur
	for i, m := range moves {
		if m.Group != lastGroup {
			if seenGroup[m.Group] {
				t.Fatalf("move %d (%v): group %d's moves are not contiguous", i, m, m.Group)
			}
			seenGroup[m.Group], lastGroup = true, m.Group
		}
		set := boolInt(m.Add != "") + boolInt(m.Remove != "") + boolInt(m.Lead != "")
		if set != 1 {
			t.Fatalf("move %d: %+v sets %d fields", i, m, set)
		}
		if m.Remove != "" && !slices.Contains(p.Groups[m.Group].Voters, m.Remove) ||
			m.Add != "" && slices.Contains(p.Groups[m.Group].Voters, m.Add) ||
			m.Lead != "" && !slices.Contains(p.Groups[m.Group].Voters, m.Lead) {
			t.Fatalf("move %d (%v) does not fit %v", i, m, p.Groups[m.Group].Voters)
		}
		if m.Remove != "" && p.Groups[m.Group].Voters[0] == m.Remove {
			t.Fatalf("move %d (%v) removes the preferred leader without a Lead first", i, m)
		}
		p = p.Apply(m)
		n := len(p.Groups[m.Group].Voters)
		if n < min(start[m.Group], r) || n < r/2+1 && start[m.Group] >= r/2+1 || n > max(r+1, start[m.Group]) {
			t.Fatalf("move %d (%v): group %d has %d voters (started with %d, r=%d)", i, m, m.Group, n, start[m.Group], r)
		}
	}
	return p
}

// countAdds is the number of replicas a move list creates.
func countAdds(moves []Move) int {
	n := 0
	for _, m := range moves {
		if m.Add != "" {
			n++
		}
	}
	return n
}

func TestRebalanceJoin(t *testing.T) {
	for _, sh := range shapes {
		for _, G := range []int{8, 16, 31, 64} {
			for _, R := range []int{3, 5} {
				nodes := mkNodes(7, sh)
				cur, err := Plan(nodes[:6], G, R, nil)
				if err != nil {
					t.Fatal(err)
				}
				moves, err := Rebalance(cur, nodes, R, nil)
				if err != nil {
					t.Fatal(err)
				}
				p := applyChecked(t, cur, moves, R)
				if err := p.Check(nodes, R); err != nil {
					t.Fatalf("%s G=%d R=%d: %v", sh.name, G, R, err)
				}
				checkZoneSpread(t, p, nodes, R)
				voters, leads := loads(p)
				if sh.name == "nozones" {
					if v := voters["n06"]; v < G*R/7 || v > ceilDiv(G*R, 7) {
						t.Fatalf("G=%d R=%d: the new node holds %d", G, R, v)
					}
					if l := leads["n06"]; l < G/7 || l > ceilDiv(G, 7) {
						t.Fatalf("G=%d R=%d: the new node leads %d", G, R, l)
					}
				}
				// Few moves: the new node's share, not a reshuffle. Without
				// zones exactly the share; with zones a few more, when the
				// zones' totals must shift and the most loaded nodes hold only
				// groups that cannot go to the new node's zone (2 zones, G=64,
				// R=3: 31 for a share of 27, the least there is: n01 holds
				// only groups with two voters in the new node's zone, so its
				// 4 surplus voters go to its own zone first).
				slack := 0
				if sh.name != "nozones" {
					slack = voters["n06"]/6 + 1
				}
				if adds, share := countAdds(moves), voters["n06"]; adds > share+slack {
					t.Fatalf("%s G=%d R=%d: %d replicas moved for a new node holding %d:\n%v", sh.name, G, R, adds, share, moves)
				}
				if again, _ := Rebalance(p, nodes, R, nil); len(again) != 0 {
					t.Fatalf("%s G=%d R=%d: not settled: %v", sh.name, G, R, again)
				}
			}
		}
	}
}

func TestRebalanceRemove(t *testing.T) {
	for _, sh := range shapes {
		for _, G := range []int{8, 16, 64} {
			nodes := mkNodes(6, sh)
			cur, err := Plan(nodes, G, 3, nil)
			if err != nil {
				t.Fatal(err)
			}
			left := append(slices.Clone(nodes[:2]), nodes[3:]...) // n02 gone
			moves, err := Rebalance(cur, left, 3, nil)
			if err != nil {
				t.Fatal(err)
			}
			// Groups that held n02 come first, Add before Remove.
			held := 0
			for _, g := range cur.Groups {
				if slices.Contains(g.Voters, "n02") {
					held++
				}
			}
			repaired := map[int]bool{}
			for i, m := range moves {
				if !slices.Contains(cur.Groups[m.Group].Voters, "n02") {
					if len(repaired) != held {
						t.Fatalf("%s: move %d (%v) before every group on n02 was repaired", sh.name, i, m)
					}
					continue
				}
				if m.Remove == "n02" {
					repaired[m.Group] = true
				}
			}
			p := applyChecked(t, cur, moves, 3)
			if err := p.Check(left, 3); err != nil {
				t.Fatalf("%s G=%d: %v", sh.name, G, err)
			}
			checkZoneSpread(t, p, left, 3)
			// The node comes back: it gets its share again.
			back, err := Rebalance(p, nodes, 3, nil)
			if err != nil {
				t.Fatal(err)
			}
			q := applyChecked(t, p, back, 3)
			if err := q.Check(nodes, 3); err != nil {
				t.Fatalf("%s G=%d back: %v", sh.name, G, err)
			}
		}
	}
}

func TestRebalanceTwoAtOnce(t *testing.T) {
	nodes := mkNodes(8, shapes[0])
	cur, err := Plan(nodes[:6], 16, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	// n00 and n01 leave, n06 and n07 join.
	now := nodes[2:]
	moves, err := Rebalance(cur, now, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := applyChecked(t, cur, moves, 3)
	if err := p.Check(now, 3); err != nil {
		t.Fatal(err)
	}
	// Only the two gone nodes' replicas moved: 16·3/6 = 8 each.
	if adds := countAdds(moves); adds != 16 {
		t.Fatalf("%d replicas moved, want 16", adds)
	}
}

func TestRebalanceHomes(t *testing.T) {
	nodes := mkNodes(6, shapes[1])
	cur, err := Plan(nodes, 8, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	homes := map[int]string{0: "z2", 1: "z2", 2: "z2"}
	moves, err := Rebalance(cur, nodes, 3, homes)
	if err != nil {
		t.Fatal(err)
	}
	p := applyChecked(t, cur, moves, 3)
	zone := zoneOf(nodes)
	for g := range 3 {
		if zone[p.Groups[g].Voters[0]] != "z2" {
			t.Fatalf("group %d led from %s", g, p.Groups[g].Voters[0])
		}
	}
	for _, m := range moves {
		if m.Lead == "" {
			t.Fatalf("a home in a zone that already holds a voter needs only Lead moves: %v", moves)
		}
	}
}

// Random histories: nodes join and leave, the replication factor changes,
// some groups have homes; every step keeps the promises and ends balanced
// (homes can force a node past its range, so Check is asserted without them).
func TestRebalanceRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(49, 1))
	factors := []int{1, 2, 3, 4, 5, 7}
	for trial := range 600 {
		sh := shapes[trial%len(shapes)]
		pool := mkNodes(14, sh)
		live := slices.Clone(pool[:1+rng.IntN(len(pool))])
		G, R := 1+rng.IntN(80), factors[rng.IntN(len(factors))]
		var homes map[int]string
		if trial%2 == 1 {
			homes = map[int]string{}
			for g := range G {
				if rng.IntN(3) == 0 {
					homes[g] = pool[rng.IntN(len(pool))].Zone
				}
			}
		}
		cur, err := Plan(live, G, R, homes)
		if err != nil {
			t.Fatal(err)
		}
		for step := range 4 {
			for k := rng.IntN(3); k > 0 && len(live) > 1; k-- {
				i := rng.IntN(len(live))
				live = slices.Delete(live, i, i+1)
			}
			for k := rng.IntN(3); k > 0; k-- {
				nd := pool[rng.IntN(len(pool))]
				if !slices.ContainsFunc(live, func(x Node) bool { return x.ID == nd.ID }) {
					live = append(live, nd)
				}
			}
			if rng.IntN(4) == 0 {
				R = factors[rng.IntN(len(factors))]
			}
			moves, err := Rebalance(cur, live, R, homes)
			if err != nil {
				t.Fatal(err)
			}
			r := min(R, len(live))
			cur = applyChecked(t, cur, moves, r)
			where := fmt.Sprintf("trial %d step %d (%s, G=%d R=%d, %d nodes, homes %v)", trial, step, sh.name, G, R, len(live), homes != nil)
			if homes == nil {
				if err := cur.Check(live, R); err != nil {
					t.Fatalf("%s: %v", where, err)
				}
			}
			checkZoneSpread(t, cur, live, r)
			checkHomes(t, cur, live, homes)
			if again, _ := Rebalance(cur, live, R, homes); len(again) != 0 {
				t.Fatalf("%s: not settled: %v", where, again)
			}
		}
	}
}

// checkHomes asserts a group with a voter in its home zone is led from there.
func checkHomes(t *testing.T, p Placement, nodes []Node, homes map[int]string) {
	t.Helper()
	zone := zoneOf(nodes)
	for g := range p.Groups {
		hz := homes[g]
		if hz == "" {
			continue
		}
		if slices.ContainsFunc(p.Groups[g].Voters, func(id string) bool { return zone[id] == hz }) &&
			zone[p.Groups[g].Voters[0]] != hz {
			t.Fatalf("group %d (home %s) led from %s: %v", g, hz, zone[p.Groups[g].Voters[0]], p.Groups[g].Voters)
		}
	}
}

// Rebalance repairs any mess: unknown voters, too many, too few, none, two in
// one zone.
func TestRebalanceScrambled(t *testing.T) {
	rng := rand.New(rand.NewPCG(49, 2))
	for trial := range 400 {
		sh := shapes[trial%len(shapes)]
		nodes := mkNodes(1+rng.IntN(12), sh)
		ids := []string{"gone1", "gone2"}
		for _, n := range nodes {
			ids = append(ids, n.ID)
		}
		G, R := 1+rng.IntN(40), 1+rng.IntN(6)
		cur := Placement{Groups: make([]Group, G)}
		for g := range cur.Groups {
			perm := rng.Perm(len(ids))
			for _, i := range perm[:rng.IntN(min(len(ids), R+3)+1)] {
				cur.Groups[g].Voters = append(cur.Groups[g].Voters, ids[i])
			}
		}
		moves, err := Rebalance(cur, nodes, R, nil)
		if err != nil {
			t.Fatal(err)
		}
		p := applyChecked(t, cur, moves, min(R, len(nodes)))
		if err := p.Check(nodes, R); err != nil {
			t.Fatalf("trial %d (%s, G=%d, R=%d, N=%d): %v", trial, sh.name, G, R, len(nodes), err)
		}
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	p, err := Plan(mkNodes(7, shapes[3]), 33, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Groups = append(p.Groups, Group{}, Group{Voters: []string{"", "ü"}})
	q, err := Decode(p.Encode())
	if err != nil || !reflect.DeepEqual(p, q) {
		t.Fatalf("round trip: %v\n%v\n%v", err, p, q)
	}
	for _, bad := range [][]byte{nil, {2}, {1}, {1, 1}, {1, 1, 1}, {1, 1, 1, 5, 'a'}, {1, 0, 0}, {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}} {
		if _, err := Decode(bad); !errors.Is(err, ErrBadEncoding) {
			t.Errorf("Decode(%v): %v", bad, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	p, _ := Plan(mkNodes(5, shapes[1]), 6, 3, nil)
	f.Add(p.Encode())
	f.Add([]byte{1, 2, 0, 1, 1, 'x'})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Decode(b)
		if err != nil {
			return
		}
		if got := p.Encode(); !slices.Equal(got, b) {
			t.Fatalf("Decode accepted %v, which encodes back as %v", b, got)
		}
	})
}

// bigCluster is 50 nodes in 3 zones.
func bigCluster() []Node {
	out := make([]Node, 50)
	for i := range out {
		out[i] = Node{ID: fmt.Sprintf("node%02d", i), Zone: fmt.Sprintf("z%d", i%3)}
	}
	return out
}

// BenchmarkPlan: 256 groups (MaxGroups) × 5 replicas on 49 nodes.
func BenchmarkPlan(b *testing.B) {
	nodes := bigCluster()[:49]
	for b.Loop() {
		if _, err := Plan(nodes, MaxGroups, 5, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRebalanceJoin: a 50th node joins the 49 of BenchmarkPlan.
func BenchmarkRebalanceJoin(b *testing.B) {
	nodes := bigCluster()
	cur, err := Plan(nodes[:49], MaxGroups, 5, nil)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Rebalance(cur, nodes, 5, nil); err != nil {
			b.Fatal(err)
		}
	}
}
