package lua

import (
	"errors"
	"strings"

	"github.com/lockd/lockd/splitargs"
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

// splitArgs is Redis's sdssplitargs, which Redis also uses on shebang lines.
func splitArgs(line string) ([]string, bool) {
	parts, ok := splitargs.Split([]byte(line))
	if !ok {
		return nil, false
	}
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = string(p)
	}
	return out, true
}
