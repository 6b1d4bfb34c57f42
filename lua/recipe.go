package lua

import (
	"bytes"
	"regexp"
)

// Recipe names a script the engine recognises as one of the lock recipes
// every Redis lock client sends, so that its caller may run it natively
// instead of in an interpreter (a script is most of the CPU of a release).
type Recipe uint8

const (
	// NoRecipe: run the script.
	NoRecipe Recipe = iota
	// CompareAndDelete is
	//	if redis.call("get", KEYS[1]) == ARGV[1] then
	//	    return redis.call("del", KEYS[1])
	//	else return 0 end
	// (or with "end return 0"): the release of Redis's SET NX lock recipe,
	// redsync's, the compare-and-delete of most clients.
	CompareAndDelete
	// CompareAndPexpire is the same with
	//	return redis.call("pexpire", KEYS[1], ARGV[2])
	// in place of the DEL: the recipe's lease extension.
	CompareAndPexpire
	// CompareAndDeleteOrMissing is redsync's (v4) release:
	//	local val = redis.call("GET", KEYS[1])
	//	if val == ARGV[1] then
	//	    return redis.call("DEL", KEYS[1])
	//	elseif val == false then return -1
	//	else return 0 end
	// CompareAndDelete that answers -1 for an absent key ("lock already
	// expired").
	CompareAndDeleteOrMissing
	// CompareAndDeleteEach is node-redlock's (v5) release of the keys of a
	// multi-resource lock:
	//	local count = 0
	//	for i, key in ipairs(KEYS) do
	//	    if redis.call("get", key) == ARGV[1] then
	//	        redis.pcall("del", key)
	//	        count = count + 1
	//	    end
	//	end
	//	return count
	// A GET that fails raises (after the DELs of the keys before it); a DEL
	// that fails is ignored and counted all the same (pcall).
	CompareAndDeleteEach
)

// recipeText matches a script's text, once normalised (normaliseRecipe),
// against the recipes; the command names may be in any case and either
// quote, as Lua allows.
var recipeText = regexp.MustCompile(`^if redis\.call\(["'](?i:get)["'],KEYS\[1\]\)==ARGV\[1\]then return redis\.call\(["']((?i:del)["'],KEYS\[1\]|(?i:pexpire)["'],KEYS\[1\],ARGV\[2\])\)(else return 0 end|end return 0)$`)

// orMissingText and eachText match CompareAndDeleteOrMissing and
// CompareAndDeleteEach, normalised, with their clients' variable names.
var (
	orMissingText = regexp.MustCompile(`^local val=redis\.call\(["'](?i:get)["'],KEYS\[1\]\)if val==ARGV\[1\]then return redis\.call\(["'](?i:del)["'],KEYS\[1\]\)elseif val==false then return -1 else return 0 end$`)
	eachText      = regexp.MustCompile(`^local count=0 for i,key in ipairs\(KEYS\)do if redis\.call\(["'](?i:get)["'],key\)==ARGV\[1\]then redis\.pcall\(["'](?i:del)["'],key\)count=count\+1 end end return count$`)
)

// recipeOf says which recipe src is, if any. A script with a shebang (its
// flags change how it runs) or a block comment is never one.
func recipeOf(src []byte) Recipe {
	if bytes.HasPrefix(src, []byte("#!")) || bytes.Contains(src, []byte("--[")) {
		return NoRecipe
	}
	norm := normaliseRecipe(src)
	switch {
	case orMissingText.Match(norm):
		return CompareAndDeleteOrMissing
	case eachText.Match(norm):
		return CompareAndDeleteEach
	}
	m := recipeText.FindSubmatch(norm)
	switch {
	case m == nil:
		return NoRecipe
	case bytes.HasSuffix(m[1], []byte("ARGV[2]")):
		return CompareAndPexpire
	}
	return CompareAndDelete
}

// normaliseRecipe drops src's line comments, folds each run of white space
// into one space, and drops the spaces next to the punctuation of the
// recipes, so that their layouts compare equal. It only has to be exact for
// scripts that end up matching recipeText: anything it mangles (a "--" inside
// a string, say) simply matches nothing.
func normaliseRecipe(src []byte) []byte {
	out := make([]byte, 0, len(src))
	space := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c == '-' && i+1 < len(src) && src[i+1] == '-' { // a comment, to the end of the line
			for i < len(src) && src[i] != '\n' {
				i++
			}
			space = true
			continue
		}
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' {
			space = true
			continue
		}
		if space && len(out) > 0 && !tight(out[len(out)-1]) && !tight(c) {
			out = append(out, ' ')
		}
		space = false
		out = append(out, c)
	}
	return out
}

// tight reports whether the recipes never need a space beside c.
func tight(c byte) bool {
	switch c {
	case '(', ')', '[', ']', ',', '=', '+':
		return true
	}
	return false
}

// Recipe says which lock recipe the cached script sha (any case) is: running
// it natively must give what the interpreter gives, reply and effects (see
// the constants). NoRecipe for a script not cached or not a recipe.
func (e *Engine) Recipe(sha string) Recipe {
	if s := e.lookup(sha); s != nil {
		return s.recipe
	}
	return NoRecipe
}
