package lua

import (
	"bytes"
	"fmt"

	glua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// compile compiles a chunk. On failure it returns Lua 5.1's message
// ("<chunk>:<line>: <what> near '<token>'"): the chunk is first checked by
// checkSyntax, a Lua 5.1 parser that only reports errors, because
// gopher-lua's parser words them differently and accepts a few things
// Lua 5.1 refuses.
func compile(src []byte, chunkname string) (*glua.FunctionProto, string) {
	chunk, msg := parseChunk(src, chunkname)
	if msg != "" {
		return nil, msg
	}
	return compileChunk(chunk, chunkname)
}

// parseChunk is the first half of compile: it checks src and returns
// gopher-lua's syntax tree of it, or compile's message.
func parseChunk(src []byte, chunkname string) ([]ast.Stmt, string) {
	msg, edits := checkSyntax(src, chunkname)
	if msg != "" {
		return nil, msg
	}
	if len(edits) > 0 {
		var b []byte
		last := 0
		for _, e := range edits {
			b = append(b, src[last:e.start]...)
			b = append(b, e.text...)
			last = e.end
		}
		src = append(b, src[last:]...)
	}
	chunk, err := parse.Parse(bytes.NewReader(src), chunkname)
	if err != nil {
		return nil, gopherSyntaxMessage(chunkname, err)
	}
	return chunk, ""
}

// compileChunk is the second half of compile. gopher-lua folds constants in
// the tree as it compiles it: read the tree before, not after.
func compileChunk(chunk []ast.Stmt, chunkname string) (*glua.FunctionProto, string) {
	proto, err := glua.Compile(chunk, chunkname)
	if err != nil {
		return nil, fmt.Sprintf("%s: %v", chunkname, err)
	}
	return proto, ""
}

// gopherSyntaxMessage formats an error of gopher-lua's parser for what
// checkSyntax let through (should not happen).
func gopherSyntaxMessage(chunkname string, err error) string {
	if pe, ok := err.(*parse.Error); ok {
		return fmt.Sprintf("%s:%d: %s near '%s'", chunkname, pe.Pos.Line, pe.Message, pe.Token)
	}
	return fmt.Sprintf("%s: %v", chunkname, err)
}
