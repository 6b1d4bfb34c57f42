package fsm

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/lua"
	"github.com/lockd/lockd/resp"
)

const (
	recipeDel     = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`
	recipePexpire = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) else return 0 end`
)

// doArgs applies one command given as its arguments (which may hold
// spaces); one that starts with "AS user" is a script run for that user.
func (h *harness) doArgs(a ...string) string {
	b := make([][]byte, len(a))
	for i, s := range a {
		b[i] = []byte(s)
	}
	if a[0] != "AS" {
		return h.apply(b)
	}
	h.index++
	e := command.Entry{Kind: command.KindScriptAs, Time: h.now, Wall: wall + h.now, Args: command.ScriptAsArgs(a[1], b[2:])}
	return string(resp.Append(nil, h.ks.Apply(h.index, e), 2))
}

// The lock recipes run natively give what the interpreter gives, replies and
// effects alike, in every case: the interpreter runs the same scripts with a
// block comment added, which keeps them from being recognised.
func TestRecipesMatchTheInterpreter(t *testing.T) {
	native, interp := newHarness(t), newHarness(t)
	type call struct {
		advance int64
		args    []string
	}
	eval := func(script string, rest ...string) []string { return append([]string{"EVAL", script}, rest...) }
	calls := []call{
		{0, []string{"SET", "k", "v"}},
		{0, eval(recipeDel, "1", "k", "w")}, // not the holder
		{0, eval(recipeDel, "1", "k", "v")}, // released
		{0, eval(recipeDel, "1", "k", "v")}, // gone already
		{0, []string{"SET", "k", "v", "PX", "100"}},
		{0, eval(recipePexpire, "1", "k", "v", "5000")}, // extended
		{0, []string{"PTTL", "k"}},
		{0, eval(recipePexpire, "1", "k", "w", "9000")}, // not the holder
		{0, eval(recipePexpire, "1", "k", "v", "soon")}, // PEXPIRE fails inside the script
		{0, eval(recipePexpire, "1", "k", "v")},         // ARGV[2] missing
		{0, eval(recipeDel, "1", "k")},                  // ARGV[1] missing
		{0, []string{"PTTL", "k"}},
		{6000, eval(recipeDel, "1", "k", "v")}, // expired meanwhile
		{0, []string{"HSET", "h", "a", "1"}},
		{0, eval(recipeDel, "1", "h", "v")}, // WRONGTYPE inside the script
		{0, []string{"LOCK.ACQUIRE", "l", "o", "PX", "1000"}},
		{0, eval(recipeDel, "1", "l", "o")},
		{0, []string{"SET", "k", "v"}},
		{0, eval(recipeDel, "2", "k", "k2", "v")}, // two keys: the script reads KEYS[1] only
		{0, []string{"EXISTS", "k"}},
		{0, []string{"SET", "k", "v"}},
		{0, []string{"EVALSHA_RO", sha1hex(recipeDel), "1", "k", "v"}}, // cached by the EVALs above; a read-only call may not DEL
		{0, []string{"EXISTS", "k"}},
		{0, []string{"ACL", "SETUSER", "full", "on", "nopass", "~k*", "+get", "+del", "+pexpire"}},
		{0, []string{"ACL", "SETUSER", "readonly", "on", "nopass", "~k*", "+get"}},
		{0, append([]string{"AS", "readonly"}, eval(recipeDel, "1", "k", "v")...)}, // may not DEL
		{0, append([]string{"AS", "readonly"}, eval(recipeDel, "1", "k", "w")...)}, // not the holder: no DEL
		{0, append([]string{"AS", "full"}, eval(recipeDel, "1", "other", "v")...)}, // may not read the key
		{0, append([]string{"AS", "full"}, eval(recipePexpire, "1", "k", "v", "7000")...)},
		{0, []string{"PTTL", "k"}},
		{0, append([]string{"AS", "full"}, eval(recipeDel, "1", "k", "v")...)},
		{0, []string{"EXISTS", "k"}},
	}
	var ran int
	for i, c := range calls {
		native.now += c.advance
		interp.now += c.advance
		a := native.doArgs(c.args...)
		other := append([]string(nil), c.args...)
		for j, s := range other {
			if s == recipeDel || s == recipePexpire {
				other[j] = s + " --[[ interpreted ]]"
			}
			if s == sha1hex(recipeDel) {
				other[j] = sha1hex(recipeDel + " --[[ interpreted ]]")
			}
		}
		b := interp.doArgs(other...)
		for _, src := range []string{recipeDel, recipePexpire} { // errors name the script
			b = strings.ReplaceAll(b, sha1hex(src+" --[[ interpreted ]]"), sha1hex(src))
		}
		if a != b {
			t.Fatalf("call %d %q: native %q, interpreter %q", i, strings.Join(c.args, " "), a, b)
		}
		if slices.Contains(c.args, "EVAL") {
			ran++
		}
	}
	if ran < 10 {
		t.Fatalf("only %d recipe runs compared", ran)
	}
}

// A recognised recipe does not run in the interpreter: it succeeds where any
// interpreted script would exceed a one-instruction budget.
func TestRecipeRunsNatively(t *testing.T) {
	h := newHarness(t)
	h.ks.budget = 1
	h.doArgs("SET", "k", "v")
	if got := h.doArgs("EVAL", recipeDel, "1", "k", "v"); got != num(1) {
		t.Fatalf("recipe under a one-instruction budget = %q, want :1", got)
	}
	h.doArgs("SET", "k", "v")
	if got := h.doArgs("EVAL", recipeDel+" --[[ interpreted ]]", "1", "k", "v"); !strings.HasPrefix(got, "-") {
		t.Fatalf("an interpreted script under a one-instruction budget = %q, want an error", got)
	}
}

func sha1hex(src string) string { return lua.SHA1Hex([]byte(src)) }
