package shard

import (
	"errors"
	"testing"
)

func TestNewMapSpreadsEvenly(t *testing.T) {
	m, err := NewMap(8)
	if err != nil {
		t.Fatal(err)
	}
	rs := m.Ranges()
	if len(rs) != 8 || rs[0].From != 0 || rs[7].To != Slots-1 {
		t.Fatalf("ranges %v", rs)
	}
	for i, r := range rs {
		if r.Group != i || int(r.To-r.From)+1 != Slots/8 {
			t.Fatalf("range %d = %+v", i, r)
		}
	}
	m3, _ := NewMap(3) // 16384 = 5462 + 5461 + 5461
	if rs := m3.Ranges(); rs[0].To != 5461 || rs[1].To != 10922 || rs[2].To != Slots-1 {
		t.Fatalf("3 groups: %v", rs)
	}
	if got := m3.Owned(); len(got) != 3 || got[0] != 5462 || got[1] != 5461 || got[2] != 5461 {
		t.Fatalf("3 groups own %v slots, want [5462 5461 5461]", got)
	}
	if m.GroupOf([]byte("{user1000}.following")) != m.Group(3443) || m.Group(3443) != 1 {
		t.Fatalf("slot 3443 in group %d", m.Group(3443))
	}
	for _, n := range []int{0, -1, MaxGroups + 1} {
		if _, err := NewMap(n); !errors.Is(err, ErrBadMap) {
			t.Fatalf("NewMap(%d): %v", n, err)
		}
	}
}

func TestAssignAndEncode(t *testing.T) {
	m, _ := NewMap(4)
	m2, err := m.Assign(100, 199, 3)
	if err != nil {
		t.Fatal(err)
	}
	if m2.Version != m.Version+1 || m2.Group(150) != 3 || m.Group(150) != 0 {
		t.Fatalf("assign: version %d, slot 150 in %d (old map: %d)", m2.Version, m2.Group(150), m.Group(150))
	}
	if rs := m2.Ranges(); len(rs) != 6 {
		t.Fatalf("ranges after moving 100-199: %v", rs)
	}
	got, err := Decode(m2.Encode())
	if err != nil || got != m2 {
		t.Fatalf("decode(encode) = %v, %v", got.Ranges(), err)
	}
	for _, bad := range [][]byte{nil, {1}, {1, 4, 1, 5, 0}, append(m2.Encode(), 0)} {
		if _, err := Decode(bad); !errors.Is(err, ErrBadMap) {
			t.Fatalf("Decode(%v): %v", bad, err)
		}
	}
	if _, err := m.Assign(10, 5, 1); !errors.Is(err, ErrBadMap) {
		t.Fatal("a reversed range was accepted")
	}
	if _, err := m.Assign(0, 5, 4); !errors.Is(err, ErrBadMap) {
		t.Fatal("a group out of range was accepted")
	}
}

func FuzzDecodeMap(f *testing.F) {
	m, _ := NewMap(8)
	f.Add(m.Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			return
		}
		if again, err := Decode(m.Encode()); err != nil || again != m {
			t.Fatalf("a decoded map does not round-trip: %v", err)
		}
	})
}
