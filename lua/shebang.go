package lua

import (
	"errors"
	"strings"
)

var scriptFlagNames = []struct {
	name string
	flag Flags
}{
	{"no-writes", FlagNoWrites},
	{"allow-oom", FlagAllowOOM},
	{"allow-stale", FlagAllowStale},
	{"no-cluster", FlagNoCluster},
	{"allow-cross-slot-keys", FlagAllowCrossSlot},
}

// parseShebang is Redis 7's evalExtractShebangFlags: a script that starts
// with "#!" must name the lua engine and may declare flags. It returns the
// body to compile, in which the shebang line is blanked but its line feed
// kept, so that line numbers in messages stay those of the source.
func parseShebang(src []byte) ([]byte, Flags, error) {
	if len(src) < 2 || src[0] != '#' || src[1] != '!' {
		return src, FlagEvalCompat, nil
	}
	end := strings.IndexByte(string(src), '\n')
	if end < 0 {
		return nil, 0, errors.New("ERR Invalid script shebang")
	}
	parts, ok := splitArgs(cString(string(src[:end])))
	if !ok || len(parts) == 0 {
		return nil, 0, errors.New("ERR Invalid engine in script shebang")
	}
	if parts[0] != "#!lua" {
		return nil, 0, errors.New("ERR Unexpected engine in script shebang: " + parts[0])
	}
	var flags Flags
	for _, p := range parts[1:] {
		if !strings.HasPrefix(p, "flags=") {
			return nil, 0, errors.New("ERR Unknown lua shebang option: " + p)
		}
		list := p[len("flags="):]
		if list == "" {
			continue
		}
		for _, name := range strings.Split(list, ",") {
			found := false
			for _, f := range scriptFlagNames {
				if f.name == name {
					flags |= f.flag
					found = true
					break
				}
			}
			if !found {
				return nil, 0, errors.New("ERR Unexpected flag in script shebang: " + name)
			}
		}
	}
	return src[end:], flags, nil
}

// splitArgs is Redis's sdssplitargs: words separated by blanks, with
// "double quoted" (C escapes, \xHH) and 'single quoted' words. ok is false
// for unbalanced quotes or a closing quote not followed by a blank.
func splitArgs(line string) (args []string, ok bool) {
	p := 0
	at := func(i int) byte {
		if i < len(line) {
			return line[i]
		}
		return 0
	}
	for {
		for p < len(line) && isSpace(line[p]) {
			p++
		}
		if p >= len(line) {
			return args, true
		}
		var cur []byte
		inq, insq, done := false, false, false
		for !done {
			c := at(p)
			switch {
			case inq:
				switch {
				case c == '\\' && at(p+1) == 'x' && isHex(at(p+2)) && isHex(at(p+3)):
					cur = append(cur, byte(hexVal(at(p+2))*16+hexVal(at(p+3))))
					p += 3
				case c == '\\' && at(p+1) != 0:
					p++
					e := at(p)
					switch e {
					case 'n':
						e = '\n'
					case 'r':
						e = '\r'
					case 't':
						e = '\t'
					case 'b':
						e = '\b'
					case 'a':
						e = '\a'
					}
					cur = append(cur, e)
				case c == '"':
					if n := at(p + 1); n != 0 && !isSpace(n) {
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
				case c == '\\' && at(p+1) == '\'':
					p++
					cur = append(cur, '\'')
				case c == '\'':
					if n := at(p + 1); n != 0 && !isSpace(n) {
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
			if at(p) != 0 {
				p++
			}
		}
		args = append(args, string(cur))
	}
}
