package lua

import (
	"bytes"
	"testing"

	"github.com/lockd/lockd/resp"
)

// FuzzScript: any script source, with any KEYS and ARGV, is compiled and run
// within a small instruction budget and string cap without panicking, and two
// runs on equal hosts give the same reply (scripts are deterministic, which
// replication relies on).
func FuzzScript(f *testing.F) {
	for _, c := range compatCases {
		f.Add(c.script, "k", "a")
	}
	f.Add(`return redis.call('set', KEYS[1], ARGV[1])`, "k", "v")
	f.Add(`local t = {} for i = 1, 1e9 do t[i] = i end`, "", "")
	f.Add(`return string.rep(ARGV[1], 1e9)`, "", "x")
	f.Add(`return cjson.decode(ARGV[1])`, "", `{"a":[1,2,{"b":null}]}`)
	f.Add(`return cmsgpack.unpack(ARGV[1])`, "", "\x93\x01\x02\x03")
	f.Add(`return struct.unpack('>I2', ARGV[1])`, "", "\x00\x01")
	f.Fuzz(func(t *testing.T, src, key, arg string) {
		run := func() []byte {
			e := New()
			sha, err := e.Load([]byte(src))
			if err != nil {
				return []byte(err.Error())
			}
			v := e.Run(sha, [][]byte{[]byte(key)}, [][]byte{[]byte(arg)}, newFakeHost(),
				Limits{MaxInstructions: 200_000, MaxStringLen: 1 << 20})
			return resp.Append(nil, v, 3)
		}
		if a, b := run(), run(); !bytes.Equal(a, b) {
			t.Fatalf("%q: two runs differ: %q vs %q", src, a, b)
		}
	})
}
