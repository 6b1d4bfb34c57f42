package command

import (
	"math"
	"strings"
	"testing"
)

func TestParseFloatAsString2d(t *testing.T) {
	good := map[string]float64{
		"1": 1, "-1.5": -1.5, "+4": 4, ".5": 0.5, "5.": 5, "1e3": 1000, "1E-2": 0.01,
		"inf": math.Inf(1), "+inf": math.Inf(1), "-inf": math.Inf(-1), "INFINITY": math.Inf(1),
		"0x10": 16, "0x1p-3": 0.125, "0X.8": 0.5, "-0": math.Copysign(0, -1), "0e-999": 0,
		"5e-324": 5e-324, "1.7976931348623157e308": math.MaxFloat64,
	}
	for in, want := range good {
		got, ok := ParseFloat([]byte(in))
		if !ok || math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("ParseFloat(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", " 1", "1 ", "1e", "1e+", "x", "nan", "-nan", "NaN(1)", "1e400", "-1e400",
		"1e-400", "1\x00", "0x", "1_0", "infinit", "--1", "."} {
		if got, ok := ParseFloat([]byte(in)); ok {
			t.Errorf("ParseFloat(%q) = %v, accepted", in, got)
		}
	}
}

func TestParseScoreBoundAsZslParseRange(t *testing.T) {
	for in, want := range map[string]ScoreBound{
		"1": {V: 1}, "(1": {V: 1, Ex: true}, "": {}, "(": {Ex: true}, " 2": {V: 2},
		"1e999": {V: math.Inf(1)}, "1\x00junk": {V: 1}, "-inf": {V: math.Inf(-1)},
	} {
		got, ok := parseScoreBound([]byte(in))
		if !ok || got != want {
			t.Errorf("parseScoreBound(%q) = %+v, %v; want %+v", in, got, ok, want)
		}
	}
	for _, in := range []string{"x", "((1", "1 ", "nan", "(nan", "1e"} {
		if _, ok := parseScoreBound([]byte(in)); ok {
			t.Errorf("parseScoreBound(%q) accepted", in)
		}
	}
}

func TestParseZSetErrors(t *testing.T) {
	for line, want := range map[string]string{
		"zadd k nx xx 1 a":             string(errZAddXXNX),
		"zadd k gt lt 1 a":             string(errZAddGTLTNX),
		"zadd k nx xx 1":               string(ErrSyntax),
		"zadd k incr 1 a 2 b":          string(errZAddIncrPairs),
		"zadd k 1 a x b":               string(ErrNotFloat),
		"zrange k 0 1 limit 0 1":       string(errZLimitRank),
		"zrangebylex k - + withscores": string(errZScoresLex),
		"zrange k a 1":                 string(ErrNotInt),
		"zrange k x 1 byscore":         string(ErrMinMaxFloat),
		"zrange k x + bylex":           string(ErrMinMaxLex),
		"zpopmin k x":                  string(ErrNotPositive),
		"zpopmin k 1 2":                string(ErrSyntax),
		"zrevrange k 0 1 rev":          string(ErrSyntax),
		"zscan k x":                    "ERR invalid cursor",
	} {
		_, _, err := Parse(splitWords(line))
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", line, err, want)
		}
	}
	op, _, err := Parse(splitWords("zrevrangebyscore k (5 1 withscores limit 1 2"))
	if err != nil {
		t.Fatal(err)
	}
	r := op.(ZRange)
	if !r.Rev || r.By != ZByScore || r.Min != (ScoreBound{V: 1}) || r.Max != (ScoreBound{V: 5, Ex: true}) ||
		!r.WithScores || r.Offset != 1 || r.Limit != 2 {
		t.Errorf("parsed %+v", r)
	}
}

func splitWords(s string) [][]byte {
	var out [][]byte
	for _, w := range strings.Fields(s) {
		out = append(out, []byte(w))
	}
	return out
}
