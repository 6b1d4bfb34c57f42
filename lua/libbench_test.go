package lua

import (
	"strings"
	"testing"
)

// BenchmarkLibraryScripts measures what charging library work to the
// budget costs ordinary scripts: the lock release (no library calls), and
// scripts that spend their time in gsub, find, gmatch and table.concat, each
// run with the apply's budget as the fsm runs them, and with no budget (no
// counting at all).
func BenchmarkLibraryScripts(b *testing.B) {
	text := strings.Repeat("lorem  ipsum dolor\tsit amet, ", 40) // ~1 KB
	for _, c := range []struct {
		name, src string
		keys      []string
		argv      []string
	}{
		{"release", compareAndDelete, []string{"lock:orders"}, []string{"owner-token-1"}},
		{"gsub", `return string.gsub(ARGV[1], '%s+', ' ')`, nil, []string{text}},
		{"find", `local n = 0 for i = 1, 20 do if string.find(ARGV[1], 'amet,%s+lorem', i * 10) then n = n + 1 end end return n`, nil, []string{text}},
		{"gmatch", `local n = 0 for w in string.gmatch(ARGV[1], '%a+') do n = n + #w end return n`, nil, []string{text}},
		{"concat", `local t = {} for i = 1, 100 do t[i] = ARGV[1] end return #table.concat(t, ',')`, nil, []string{"0123456789"}},
	} {
		for _, lim := range []struct {
			name string
			lim  Limits
		}{{"budget", Limits{MaxInstructions: 250_000_000}}, {"unlimited", Limits{}}} {
			b.Run(c.name+"/"+lim.name, func(b *testing.B) {
				e := New()
				sha, err := e.Load([]byte(c.src))
				if err != nil {
					b.Fatal(err)
				}
				h := mapHost{}
				keys, argv := bytesArgs(c.keys), bytesArgs(c.argv)
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					h["lock:orders"] = "owner-token-1"
					if v := e.Run(sha, keys, argv, h, lim.lim); v.IsError() {
						b.Fatalf("got %s", render(v))
					}
				}
			})
		}
	}
}
