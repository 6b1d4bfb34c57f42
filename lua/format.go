package lua

import (
	"math"
	"strconv"
	"strings"

	glua "github.com/yuin/gopher-lua"
)

// luaFormat is Lua 5.1's string.format (lstrlib.c str_format) with C
// printf semantics for every conversion, so that numbers render as Redis
// renders them.
func (s *state) luaFormat(L *glua.LState) int {
	top := L.GetTop()
	arg := 1
	fmtStr := checkString(L, arg)
	var b strings.Builder
	m := s.meter(L)
	defer m.done()
	grow := func(n int) {
		if b.Len()+n > s.r.maxStr {
			raisef(L, "resulting string too large")
		}
		m.bytes(n)
	}
	for i := 0; i < len(fmtStr); {
		c := fmtStr[i]
		if c != '%' {
			grow(1)
			b.WriteByte(c)
			i++
			continue
		}
		i++
		if i < len(fmtStr) && fmtStr[i] == '%' {
			grow(1)
			b.WriteByte('%')
			i++
			continue
		}
		arg++
		if arg > top {
			argError(L, arg, "no value")
		}
		// scanformat: flags, up to two width digits, '.', up to two
		// precision digits.
		start := i
		for i < len(fmtStr) && strings.IndexByte("-+ #0", fmtStr[i]) >= 0 {
			i++
		}
		if i-start >= len("-+ #0")+1 {
			raisef(L, "invalid format (repeated flags)")
		}
		flags := fmtStr[start:i]
		width, prec := -1, -1
		digits := func() int {
			n := -1
			for k := 0; k < 2 && i < len(fmtStr) && isDigit(fmtStr[i]); k++ {
				if n < 0 {
					n = 0
				}
				n = n*10 + int(fmtStr[i]-'0')
				i++
			}
			return n
		}
		width = digits()
		if i < len(fmtStr) && fmtStr[i] == '.' {
			i++
			prec = digits()
			if prec < 0 {
				prec = 0
			}
		}
		if i < len(fmtStr) && isDigit(fmtStr[i]) {
			raisef(L, "invalid format (width or precision too long)")
		}
		conv := byte(0)
		if i < len(fmtStr) {
			conv = fmtStr[i]
			i++
		}
		spec := cSpec{flags: flags, width: width, prec: prec}
		var out string
		switch conv {
		case 'c':
			ch := byte(toInt32(checkNumber(L, arg)))
			if ch == 0 {
				// sprintf wrote a NUL and strlen stopped there: only
				// the padding before it survives.
				if width > 1 && !strings.Contains(flags, "-") {
					out = strings.Repeat(" ", width-1)
				}
			} else {
				out = spec.pad(string([]byte{ch}), false)
			}
		case 'd', 'i':
			out = spec.formatInt(toInt64(checkNumber(L, arg)), conv)
		case 'o', 'u', 'x', 'X':
			out = spec.formatUint(toUint64(checkNumber(L, arg)), conv)
		case 'e', 'E', 'f', 'g', 'G':
			out = spec.formatFloat(checkNumber(L, arg), conv)
		case 'q':
			str := checkString(L, arg)
			var q strings.Builder
			q.WriteByte('"')
			for k := 0; k < len(str); k++ {
				switch ch := str[k]; ch {
				case '"', '\\', '\n':
					q.WriteByte('\\')
					q.WriteByte(ch)
				case '\r':
					q.WriteString("\\r")
				case 0:
					q.WriteString("\\000")
				default:
					q.WriteByte(ch)
				}
			}
			q.WriteByte('"')
			grow(q.Len())
			b.WriteString(q.String())
			continue
		case 's':
			str := checkString(L, arg)
			if prec < 0 && len(str) >= 100 {
				grow(len(str))
				b.WriteString(str)
				continue
			}
			str = cString(str)
			if prec >= 0 && len(str) > prec {
				str = str[:prec]
			}
			out = spec.pad(str, false)
		default:
			raisef(L, "invalid option '%%%c' to 'format'", conv)
		}
		grow(len(out))
		b.WriteString(out)
	}
	L.Push(glua.LString(b.String()))
	return 1
}

// toUint64 is the C conversion (unsigned long)d as gcc does it on x86-64.
func toUint64(f float64) uint64 {
	const two63 = 9223372036854775808.0
	if f < two63 {
		return uint64(toInt64(f))
	}
	return uint64(toInt64(f-two63)) ^ (1 << 63)
}

// cSpec is one printf conversion: its flags, width and precision (-1 when
// absent).
type cSpec struct {
	flags       string
	width, prec int
}

func (c cSpec) has(f byte) bool { return strings.IndexByte(c.flags, f) >= 0 }

// pad right- or left-justifies s in the field width; zero padding goes
// after the sign and any 0x prefix.
func (c cSpec) pad(s string, numeric bool) string {
	if c.width <= len(s) {
		return s
	}
	n := c.width - len(s)
	switch {
	case c.has('-'):
		return s + strings.Repeat(" ", n)
	case numeric && c.has('0'):
		prefix := 0
		if len(s) > 0 && (s[0] == '-' || s[0] == '+' || s[0] == ' ') {
			prefix = 1
		}
		if len(s) >= prefix+2 && s[prefix] == '0' && (s[prefix+1] == 'x' || s[prefix+1] == 'X') {
			prefix += 2
		}
		return s[:prefix] + strings.Repeat("0", n) + s[prefix:]
	}
	return strings.Repeat(" ", n) + s
}

func (c cSpec) sign(neg bool) string {
	switch {
	case neg:
		return "-"
	case c.has('+'):
		return "+"
	case c.has(' '):
		return " "
	}
	return ""
}

func (c cSpec) formatInt(v int64, conv byte) string {
	neg := v < 0
	mag := uint64(v)
	if neg {
		mag = -mag
	}
	digits := strconv.FormatUint(mag, 10)
	digits = c.precise(digits, mag)
	zero := c.prec < 0
	s := c.sign(neg) + digits
	if !zero {
		return cSpec{flags: strings.ReplaceAll(c.flags, "0", ""), width: c.width}.pad(s, true)
	}
	return c.pad(s, true)
}

func (c cSpec) formatUint(v uint64, conv byte) string {
	var digits, prefix string
	switch conv {
	case 'o':
		digits = strconv.FormatUint(v, 8)
	case 'u':
		digits = strconv.FormatUint(v, 10)
	case 'x':
		digits = strconv.FormatUint(v, 16)
	case 'X':
		digits = strings.ToUpper(strconv.FormatUint(v, 16))
	}
	digits = c.precise(digits, v)
	if c.has('#') {
		switch conv {
		case 'o':
			if !strings.HasPrefix(digits, "0") {
				digits = "0" + digits
			}
		case 'x':
			if v != 0 {
				prefix = "0x"
			}
		case 'X':
			if v != 0 {
				prefix = "0X"
			}
		}
	}
	s := prefix + digits
	if c.prec >= 0 {
		return cSpec{flags: strings.ReplaceAll(c.flags, "0", ""), width: c.width}.pad(s, true)
	}
	return c.pad(s, true)
}

// precise applies an integer precision: the minimum number of digits (a
// zero with precision 0 prints no digit).
func (c cSpec) precise(digits string, v uint64) string {
	if c.prec < 0 {
		return digits
	}
	if c.prec == 0 && v == 0 {
		return ""
	}
	if len(digits) < c.prec {
		return strings.Repeat("0", c.prec-len(digits)) + digits
	}
	return digits
}

func (c cSpec) formatFloat(f float64, conv byte) string {
	neg := math.Signbit(f) && !math.IsNaN(f)
	upper := conv == 'E' || conv == 'G'
	if math.IsInf(f, 0) || math.IsNaN(f) {
		body := "inf"
		if math.IsNaN(f) {
			body, neg = "nan", true // see fmtG: NaN prints as x86 prints it
		}
		if upper {
			body = strings.ToUpper(body)
		}
		return cSpec{flags: strings.ReplaceAll(c.flags, "0", ""), width: c.width}.pad(c.sign(neg)+body, true)
	}
	a := math.Abs(f)
	prec := c.prec
	if prec < 0 {
		prec = 6
	}
	var body string
	switch conv {
	case 'f':
		body = strconv.FormatFloat(a, 'f', prec, 64)
		if prec == 0 && c.has('#') {
			body += "."
		}
	case 'e', 'E':
		body = strconv.FormatFloat(a, 'e', prec, 64)
		if prec == 0 && c.has('#') {
			body = strings.Replace(body, "e", ".e", 1)
		}
	case 'g', 'G':
		if prec == 0 {
			prec = 1
		}
		e := strconv.FormatFloat(a, 'e', prec-1, 64)
		x, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
		if prec > x && x >= -4 {
			body = strconv.FormatFloat(a, 'f', prec-1-x, 64)
		} else {
			body = e
		}
		if c.has('#') {
			if !strings.Contains(body, ".") {
				if k := strings.IndexByte(body, 'e'); k >= 0 {
					body = body[:k] + "." + body[k:]
				} else {
					body += "."
				}
			}
		} else {
			body = trimFraction(body)
		}
	}
	if upper {
		body = strings.ToUpper(body)
	}
	return c.pad(c.sign(neg)+body, true)
}

// trimFraction removes trailing zeros (and a bare '.') from the fraction of
// a %g result, before any exponent.
func trimFraction(s string) string {
	exp := ""
	if k := strings.IndexByte(s, 'e'); k >= 0 {
		s, exp = s[:k], s[k:]
	}
	if strings.Contains(s, ".") {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	return s + exp
}
