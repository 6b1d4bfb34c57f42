package command

import (
	"math"
	"strconv"
)

// ParseInt parses b exactly as Redis's string2ll does: optional '-', no '+', no
// spaces, no leading zeros, no overflow. It is the only integer parser of the
// command vocabulary, so every command agrees with Redis on what an integer is.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := false
	p := b
	if p[0] == '-' {
		neg = true
		p = p[1:]
		if len(p) == 0 {
			return 0, false
		}
	}
	if p[0] < '1' || p[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range p {
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (math.MaxUint64-9)/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if neg {
		if v > uint64(math.MaxInt64)+1 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// ParseCursor parses a SCAN cursor as Redis does with strtoul: the empty string is
// 0, one leading '+' or '-' is allowed ("-1" wraps to 2^64-1), leading blanks,
// trailing junk and overflow are not.
func ParseCursor(b []byte) (uint64, bool) {
	if len(b) > 0 && (b[0] == ' ' || (b[0] >= '\t' && b[0] <= '\r')) {
		return 0, false
	}
	neg := false
	digits := b
	if len(digits) > 0 && (digits[0] == '+' || digits[0] == '-') {
		neg = digits[0] == '-'
		digits = digits[1:]
	}
	if len(digits) == 0 {
		return 0, len(b) == 0
	}
	v, err := strconv.ParseUint(string(digits), 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}
