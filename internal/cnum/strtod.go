// Package cnum reads numbers as glibc's C library does, for the places where
// lockd must accept exactly what Redis accepts: Redis parses scores and Lua
// parses numbers with strtod, whose grammar (leading spaces, hexadecimal
// floats, "inf", "nan(chars)", a longest valid prefix) Go's strconv does not
// share.
package cnum

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// IsSpace is C's isspace in the C locale.
func IsSpace(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHexDigit(c byte) bool {
	return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f')
}

// Strtod parses the longest prefix of s that glibc's strtod accepts (leading
// spaces, a sign, decimal or hexadecimal digits with an exponent, "inf",
// "infinity", "nan", "nan(chars)") and returns its value, its length (0 when
// nothing was parsed) and whether strtod would set ERANGE for it: overflow
// to ±inf or underflow to 0 (a subnormal result is not reported). Values are
// correctly rounded, as glibc's are.
func Strtod[S string | []byte](s S) (f float64, n int, rangeErr bool) {
	i := 0
	for i < len(s) && IsSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg, i = s[i] == '-', i+1
	}
	sign := func(f float64) float64 {
		if neg {
			return -f
		}
		return f
	}
	rest := strings.ToLower(string(s[i:min(len(s), i+8)]))
	switch {
	case strings.HasPrefix(rest, "infinity"):
		return sign(math.Inf(1)), i + 8, false
	case strings.HasPrefix(rest, "inf"):
		return sign(math.Inf(1)), i + 3, false
	case strings.HasPrefix(rest, "nan"):
		n := i + 3
		if n < len(s) && s[n] == '(' {
			j := n + 1
			for j < len(s) && (isDigit(s[j]) || s[j] == '_' || (s[j]|0x20 >= 'a' && s[j]|0x20 <= 'z')) {
				j++
			}
			if j < len(s) && s[j] == ')' {
				n = j + 1
			}
		}
		return math.NaN(), n, false
	}
	hex := len(rest) >= 3 && rest[0] == '0' && rest[1] == 'x' &&
		(isHexDigit(rest[2]) || (rest[2] == '.' && len(rest) > 3 && isHexDigit(rest[3])))
	digit, expCh := isDigit, byte('e')
	start := i
	if hex {
		digit, expCh = isHexDigit, 'p'
		i += 2
	}
	nonzero, digits := false, 0
	for i < len(s) && digit(s[i]) {
		nonzero = nonzero || s[i] != '0'
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && digit(s[i]) {
			nonzero = nonzero || s[i] != '0'
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0, 0, false
	}
	mantEnd := i
	if i < len(s) && (s[i]|0x20) == expCh {
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
	text := string(s[start:i])
	if hex && mantEnd == i {
		text += "p0" // Go wants the binary exponent that C lets one leave out
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, 0, false // not reached: the prefix is well formed
	}
	rangeErr = math.IsInf(f, 0) || (f == 0 && nonzero)
	return sign(f), i, rangeErr
}
