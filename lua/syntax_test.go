package lua

import (
	"testing"
)

// FuzzCheckSyntax: the Lua 5.1 checker never panics, and a chunk it accepts
// compiles (or fails with a message in Lua's format).
func FuzzCheckSyntax(f *testing.F) {
	for _, c := range compatCases {
		f.Add(c.script)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p := &parser{lx: lexer{src: []byte(src), line: 1, chunk: "x"}, ahead: noToken}
		func() {
			defer func() {
				if r := recover(); r != nil {
					if _, ok := r.(syntaxError); !ok {
						t.Fatalf("panic %v on %q", r, src)
					}
				}
			}()
			p.lx.next()
			p.next()
			p.openFunc(true)
			p.chunk()
			p.check(tkEOS)
		}()
		compile([]byte(src), "x")
	})
}
