package cnum

import (
	"math"
	"testing"
)

// What glibc's strtod gives for each input (value, characters used, ERANGE).
func TestStrtod(t *testing.T) {
	cases := []struct {
		in       string
		f        float64
		n        int
		rangeErr bool
	}{
		{"1.5", 1.5, 3, false},
		{"  -2e3xyz", -2000, 6, false},
		{"+.5", 0.5, 3, false},
		{"1e", 1, 1, false},
		{"0x1.8p1", 3, 7, false},
		{"0x10", 16, 4, false},
		{"0x", 0, 1, false},
		{"-inf", math.Inf(-1), 4, false},
		{"Infinity!", math.Inf(1), 8, false},
		{"nan(abc_1)", math.NaN(), 10, false},
		{"nan(", math.NaN(), 3, false},
		{"1e400", math.Inf(1), 5, true},
		{"1e-400", 0, 6, true},
		{"0e-400", 0, 6, false},
		{"abc", 0, 0, false},
		{"", 0, 0, false},
	}
	for _, c := range cases {
		f, n, re := Strtod(c.in)
		same := f == c.f || (math.IsNaN(f) && math.IsNaN(c.f))
		if !same || n != c.n || re != c.rangeErr {
			t.Errorf("Strtod(%q) = %v, %d, %v; want %v, %d, %v", c.in, f, n, re, c.f, c.n, c.rangeErr)
		}
		if fb, nb, reb := Strtod([]byte(c.in)); nb != n || reb != re || (fb != f && !(math.IsNaN(fb) && math.IsNaN(f))) {
			t.Errorf("Strtod([]byte %q) differs from the string form", c.in)
		}
	}
}
