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
	// Library-heavy inputs: their work is charged to the same budget, so
	// each stops within it however hostile the pattern or the sizes.
	f.Add(`return string.find(string.rep('a', 40), '.-.-.-.-.-.-.-.-.-.-.-.-b')`, "", "")
	f.Add(`return {string.find(ARGV[1], KEYS[1])}`, "(a*)%1()$", "aaaa")
	f.Add(`return {string.match(ARGV[1], KEYS[1])}`, "%f[%w](%w+)%s*=%s*(%b())", "x = (1 (2)) y")
	f.Add(`return string.gsub(ARGV[1], KEYS[1], '<%0|%1>')`, "[^,]*", "a,,b,c")
	f.Add(`local r = {} for a, b in string.gmatch(ARGV[1], KEYS[1]) do r[#r+1] = tostring(a) .. tostring(b) end return r`, "(%w+)=()", "k=v, x=y")
	f.Add(`return string.gsub(string.rep(ARGV[1], 2000), KEYS[1], function(w) return w:upper() end)`, "%a+", "ab cd ")
	f.Add(`return string.gsub(string.rep(ARGV[1], 5000), '.-' .. KEYS[1], '')`, "z", "ab")
	f.Add(`local s = ARGV[1] for i = 1, 30 do s = string.gsub(s, '.', '%0%0') end return #s`, "", "xy")
	f.Add(`return #string.rep(string.rep(ARGV[1], 1000), 1000)`, "", "ab")
	f.Add(`local t = {} for i = 1, 2000 do t[i] = string.rep(ARGV[1], i % 7) end table.sort(t) return #table.concat(t, KEYS[1])`, ",", "b")
	f.Add(`local t = {} for i = 1, 5000 do table.insert(t, 1, i) end for i = 1, 5000 do table.remove(t, 1) end return #t`, "", "")
	f.Add(`return string.find(ARGV[1], KEYS[1])`, "x[a", "yx[a")
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
