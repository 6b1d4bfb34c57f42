package lua

import (
	"math"
	"math/big"
	"strconv"
	"strings"
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

// isSpace is C's isspace in the "C" locale.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
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
	f, n := strtod(s)
	if n == 0 {
		return 0, false
	}
	if n < len(s) && (s[n] == 'x' || s[n] == 'X') {
		u, m, _ := strtoul(s, 16)
		f, n = float64(u), m
	}
	for n < len(s) && isSpace(s[n]) {
		n++
	}
	if n != len(s) {
		return 0, false
	}
	return f, true
}

// strtod parses the longest prefix of s that glibc's strtod accepts and
// returns its value and length (0 when nothing was parsed).
func strtod(s string) (float64, int) {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	sign := func(f float64) float64 {
		if neg {
			return -f
		}
		return f
	}
	rest := strings.ToLower(s[i:])
	switch {
	case strings.HasPrefix(rest, "infinity"):
		return sign(math.Inf(1)), i + 8
	case strings.HasPrefix(rest, "inf"):
		return sign(math.Inf(1)), i + 3
	case strings.HasPrefix(rest, "nan"):
		n := i + 3
		if n < len(s) && s[n] == '(' {
			j := n + 1
			for j < len(s) && (isAlnum(s[j]) || s[j] == '_') {
				j++
			}
			if j < len(s) && s[j] == ')' {
				n = j + 1
			}
		}
		return math.NaN(), n
	case len(rest) >= 3 && rest[0] == '0' && rest[1] == 'x' && (isHex(rest[2]) || (rest[2] == '.' && len(rest) > 3 && isHex(rest[3]))):
		f, n := hexFloat(s[i+2:])
		return sign(f), i + 2 + n
	}
	start := i
	digits := 0
	for i < len(s) && isDigit(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0, 0
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			i = j
		}
	}
	// The prefix is well formed, so only range errors remain possible, and
	// ParseFloat then returns ±Inf or 0 as strtod does.
	f, _ := strconv.ParseFloat(s[start:i], 64)
	return sign(f), i
}

// hexFloat parses hex digits [. hex digits] [p exponent] (after "0x").
func hexFloat(s string) (float64, int) {
	i := 0
	mant := new(big.Int)
	exp := 0
	for i < len(s) && isHex(s[i]) {
		mant.Lsh(mant, 4)
		mant.Or(mant, big.NewInt(int64(hexVal(s[i]))))
		i++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isHex(s[i]) {
			mant.Lsh(mant, 4)
			mant.Or(mant, big.NewInt(int64(hexVal(s[i]))))
			exp -= 4
			i++
		}
	}
	if i < len(s) && (s[i] == 'p' || s[i] == 'P') {
		j := i + 1
		eneg := false
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			eneg = s[j] == '-'
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			e := 0
			for j < len(s) && isDigit(s[j]) {
				if e < 1<<20 {
					e = e*10 + int(s[j]-'0')
				}
				j++
			}
			if eneg {
				e = -e
			}
			exp += e
			i = j
		}
	}
	f := new(big.Float).SetPrec(2000).SetInt(mant)
	f.SetMantExp(f, exp)
	v, _ := f.Float64()
	return v, i
}

// strtoul is C's strtoul: leading spaces, an optional sign (a minus negates
// modulo 2^64), an optional 0x prefix in base 16, digits; ULONG_MAX on
// overflow. It returns the value, the length parsed (0 when no digit) and
// whether it overflowed.
func strtoul(s string, base int) (uint64, int, bool) {
	i := 0
	for i < len(s) && isSpace(s[i]) {
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
func isHex(c byte) bool   { return digitVal(c) < 16 }
func isAlnum(c byte) bool { return digitVal(c) < 36 }
func hexVal(c byte) int   { return digitVal(c) }

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
