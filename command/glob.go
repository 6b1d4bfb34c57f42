package command

// Match reports whether s matches the glob pattern p exactly as Redis's
// stringmatchlen does: '*' any run, '?' one byte, '[abc]', '[^a-z]' classes, '\'
// escapes the next byte, an unterminated class runs to the end of the pattern. As
// in Redis, an empty string matches only the empty pattern, and a '*' that fails at
// every position stops the stars before it from trying longer matches (so that
// patterns like "*a*a*a*b" cannot take exponential time).
func Match(p, s []byte) bool {
	skip := false
	return match(p, s, &skip, 0)
}

func match(p, s []byte, skipLonger *bool, nesting int) bool {
	if nesting > 1000 {
		return false
	}
	for len(p) > 0 && len(s) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for len(s) > 0 {
				if match(p[1:], s, skipLonger, nesting+1) {
					return true
				}
				if *skipLonger {
					return false
				}
				s = s[1:]
			}
			*skipLonger = true
			return false
		case '?':
			s = s[1:]
			p = p[1:]
		case '[':
			var ok bool
			ok, p = matchClass(p[1:], s[0])
			if !ok {
				return false
			}
			s = s[1:]
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if p[0] != s[0] {
				return false
			}
			s = s[1:]
			p = p[1:]
		}
		if len(s) == 0 {
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			break
		}
	}
	return len(p) == 0 && len(s) == 0
}

// matchClass matches c against the class that starts after '['; it returns the
// pattern after the closing ']' (or the empty rest of an unterminated class).
func matchClass(p []byte, c byte) (bool, []byte) {
	not := len(p) > 0 && p[0] == '^'
	if not {
		p = p[1:]
	}
	match := false
	for len(p) > 0 && p[0] != ']' {
		switch {
		case p[0] == '\\' && len(p) >= 2:
			if p[1] == c {
				match = true
			}
			p = p[2:]
		case len(p) >= 3 && p[1] == '-':
			lo, hi := p[0], p[2]
			if lo > hi {
				lo, hi = hi, lo
			}
			if c >= lo && c <= hi {
				match = true
			}
			p = p[3:]
		default:
			if p[0] == c {
				match = true
			}
			p = p[1:]
		}
	}
	if len(p) > 0 {
		p = p[1:] // the ']'
	}
	return match != not, p
}
