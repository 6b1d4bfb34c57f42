package lua

import (
	"math"
	"strconv"
	"strings"

	"github.com/lockd/lockd/internal/cnum"
)

// Number formatting and parsing exactly as Redis's Lua 5.1 does it in C
// (printf "%.14g" for tostring, "%.17g" for redis.call arguments, strtod for
// tonumber), independent of the CPU the replica runs on.

// fmtNumber is Lua 5.1's number-to-string conversion (LUAI_NUMFFORMAT "%.14g").
func fmtNumber(f float64) string { return fmtG(f, 14) }

// fmtArg is the conversion redis.call applies to number arguments ("%.17g").
func fmtArg(f float64) string { return fmtG(f, 17) }

// fmtG is C's "%.<prec>g" for a double. NaN always renders as "-nan" (what
// glibc prints for the NaN an x86 division produces): the sign of a NaN
// depends on the CPU, and replicas must agree.
func fmtG(f float64, prec int) string {
	switch {
	case math.IsNaN(f):
		return "-nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	// strconv's 'g' with an explicit precision follows C's rules (exponent
	// when exp < -4 or exp >= prec, trailing zeros removed, two exponent digits).
	return strconv.FormatFloat(f, 'g', prec, 64)
}

// toInt64 converts a Lua number to a 64-bit integer the way the C cast
// (long long)d does on x86-64: truncation toward zero, and the "integer
// indefinite" value math.MinInt64 for NaN and out-of-range values.
func toInt64(f float64) int64 {
	if math.IsNaN(f) || f >= 9223372036854775808.0 || f < -9223372036854775808.0 {
		return math.MinInt64
	}
	return int64(f)
}

// toInt32 is the C cast (int)d on x86-64 (luaL_checkint): truncation, and
// math.MinInt32 for NaN and out-of-range values.
func toInt32(f float64) int32 {
	if math.IsNaN(f) || f >= 2147483648.0 || f <= -2147483649.0 {
		return math.MinInt32
	}
	return int32(f)
}

// cString cuts s at its first NUL byte, as the C functions Lua calls see it.
func cString(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// str2number is Lua 5.1's luaO_str2d: glibc strtod (decimal, hexadecimal,
// inf, nan), a fallback to strtoul base 16, then only trailing spaces.
func str2number(s string) (float64, bool) {
	s = cString(s)
	f, n, _ := cnum.Strtod(s)
	if n == 0 {
		return 0, false
	}
	if n < len(s) && (s[n] == 'x' || s[n] == 'X') {
		u, m, _ := strtoul(s, 16)
		f, n = float64(u), m
	}
	for n < len(s) && cnum.IsSpace(s[n]) {
		n++
	}
	if n != len(s) {
		return 0, false
	}
	return f, true
}

// strtoul is C's strtoul: leading spaces, an optional sign (a minus negates
// modulo 2^64), an optional 0x prefix in base 16, digits; ULONG_MAX on
// overflow. It returns the value, the length parsed (0 when no digit) and
// whether it overflowed.
func strtoul(s string, base int) (uint64, int, bool) {
	i := 0
	for i < len(s) && cnum.IsSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if base == 16 && i+2 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') && digitVal(s[i+2]) < 16 {
		i += 2
	}
	start := i
	var v uint64
	over := false
	for i < len(s) {
		d := digitVal(s[i])
		if d >= base {
			break
		}
		if v > (math.MaxUint64-uint64(d))/uint64(base) {
			over = true
		}
		v = v*uint64(base) + uint64(d)
		i++
	}
	if i == start {
		return 0, 0, false
	}
	if over {
		return math.MaxUint64, i, true
	}
	if neg {
		v = -v
	}
	return v, i, false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// digitVal is the value of c as a digit in base 36 (99 when it is none).
func digitVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10
	}
	return 99
}
