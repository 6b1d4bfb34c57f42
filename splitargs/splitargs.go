// Package splitargs splits a line into arguments exactly as Redis's
// sdssplitargs does; Redis uses it for inline requests and for a script's
// shebang line, and so does lockd. It is pure and imports nothing of lockd.
package splitargs

import "bytes"

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func hexVal(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// Split splits a line as Redis's sdssplitargs does: blanks separate
// words; a quote anywhere in a word opens a quoted part; "..." takes \xHH and
// \n \r \t \b \a escapes, '...' takes \'; a closing quote must be followed by a
// blank or the end. The line ends at a NUL byte, as the C string it is in Redis.
func Split(p []byte) ([][]byte, bool) {
	if i := bytes.IndexByte(p, 0); i >= 0 {
		p = p[:i]
	}
	at := func(i int) byte { // p[i], or the C string's terminating NUL
		if i < len(p) {
			return p[i]
		}
		return 0
	}
	var out [][]byte
	i := 0
	for {
		for i < len(p) && isSpace(p[i]) {
			i++
		}
		if i >= len(p) {
			return out, true
		}
		cur := []byte{}
		inq, insq := false, false
		for done := false; !done; {
			c := at(i)
			switch {
			case inq:
				switch {
				case c == '\\' && at(i+1) == 'x' && isHex(at(i+2)) && isHex(at(i+3)):
					h, _ := hexVal(at(i + 2))
					l, _ := hexVal(at(i + 3))
					cur = append(cur, h<<4|l)
					i += 3
				case c == '\\' && at(i+1) != 0:
					i++
					switch e := p[i]; e {
					case 'n':
						cur = append(cur, '\n')
					case 'r':
						cur = append(cur, '\r')
					case 't':
						cur = append(cur, '\t')
					case 'b':
						cur = append(cur, '\b')
					case 'a':
						cur = append(cur, '\a')
					default:
						cur = append(cur, e)
					}
				case c == '"':
					if n := at(i + 1); n != 0 && !isSpace(n) {
						return nil, false
					}
					done = true
				case c == 0:
					return nil, false
				default:
					cur = append(cur, c)
				}
			case insq:
				switch {
				case c == '\\' && at(i+1) == '\'':
					i++
					cur = append(cur, '\'')
				case c == '\'':
					if n := at(i + 1); n != 0 && !isSpace(n) {
						return nil, false
					}
					done = true
				case c == 0:
					return nil, false
				default:
					cur = append(cur, c)
				}
			default:
				switch c {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"':
					inq = true
				case '\'':
					insq = true
				default:
					cur = append(cur, c)
				}
			}
			if i < len(p) {
				i++
			}
		}
		out = append(out, cur)
	}
}

func isHex(c byte) bool {
	_, ok := hexVal(c)
	return ok
}
