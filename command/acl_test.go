package command

import (
	"strings"
	"testing"
)

func argv(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

func mustUser(t *testing.T, rules string) User {
	t.Helper()
	u, err := SetUser(NewUser("u"), argv(rules), true)
	if err != nil {
		t.Fatalf("SetUser(%q): %v", rules, err)
	}
	return u
}

// Command rules apply in order, as Redis's command bitmap does.
func TestACLCommandRules(t *testing.T) {
	for _, tc := range []struct {
		rules string
		cmd   string
		want  bool
	}{
		{"+@all", "flushall", true},
		{"+@all -@dangerous", "flushall", false},
		{"+@all -@dangerous", "get", true},
		{"-@all +get", "get", true},
		{"-@all +get", "set", false},
		{"+@read -get", "get", false},
		{"-get +@read", "get", true},
		{"+client", "client|list", true},
		{"+client -client|list", "client|list", false},
		{"+client -client|list", "client|id", true},
		{"-client +@admin", "client|list", true}, // client|list is @admin
		{"-client +@admin", "client|id", false},
		{"+@all -acl|setuser", "acl|setuser", false},
		{"+@all -acl|setuser", "acl|whoami", true},
		{"allcommands nocommands +ping", "ping", true},
		{"allcommands nocommands +ping", "get", false},
	} {
		u := mustUser(t, tc.rules)
		m, _ := Meta(tc.cmd)
		if got := u.CanRun(tc.cmd, m.Categories); got != tc.want {
			t.Errorf("%q: CanRun(%s) = %v, want %v (rules now %q)", tc.rules, tc.cmd, got, tc.want, u.CommandRules())
		}
	}
}

// How rules read back: later rules replace those they override; categories
// come first unless that would change the meaning.
func TestACLCommandRulesDescribed(t *testing.T) {
	for _, tc := range []struct{ rules, want string }{
		{"+get -@all +set +client|id", "-@all +set +client|id"},
		{"+acl|whoami +acl", "-@all +acl"},
		{"+@all -@dangerous", "+@all -@dangerous"},
		{"+@read -get", "-@all +@read -get"},
		{"+get +@hash", "-@all +@hash +get"},
		{"-get +@read", "-@all +@read"},
		{"-client +@admin", "-@all -client +@admin"},
	} {
		u := mustUser(t, tc.rules)
		if got := u.CommandRules(); got != tc.want {
			t.Errorf("%q reads back %q, want %q", tc.rules, got, tc.want)
		}
	}
}

func TestCommandKeys(t *testing.T) {
	for _, tc := range []struct{ cmd, want string }{
		{"GET k", "k"},
		{"SET k v NX PX 10", "k"},
		{"MSET a 1 b 2 c 3", "a b c"},
		{"DEL a b", "a b"},
		{"EVAL s 2 k1 k2 a1", "k1 k2"},
		{"EVALSHA sha 0 a1", ""},
		{"EVAL s x k", ""},
		{"LOCK.ACQUIRE name owner PX 10", "name"},
		{"NAMESPACE.SET payouts/ MAXTTL 5", "payouts/"},
		{"SESSION.OPEN TTL 5", ""},
		{"PING", ""},
		{"CLIENT LIST", ""},
		{"WATCH a b", "a b"},
	} {
		var got []string
		for _, k := range CommandKeys(argv(tc.cmd)) {
			got = append(got, string(k))
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("keys of %q = %q, want %q", tc.cmd, got, tc.want)
		}
	}
}

func TestAuthorize(t *testing.T) {
	u := mustUser(t, "on nopass ~payouts/* &events:* +@all -@admin")
	for _, tc := range []struct{ cmd, want string }{
		{"GET payouts/1", ""},
		{"GET search/1", string(ErrNoPermKey)},
		{"MGET payouts/1 search/1", string(ErrNoPermKey)},
		{"PUBLISH events:x m", ""},
		{"PUBLISH other m", string(ErrNoPermChan)},
		{"PSUBSCRIBE events:*", ""},
		{"PSUBSCRIBE events:a*", string(ErrNoPermChan)},
		{"NAMESPACE.SET payouts/ MAXTTL 5", "NOPERM this user has no permissions to run the 'namespace.set' command"},
		{"CONFIG SET x y", "NOPERM this user has no permissions to run the 'config|set' command"},
	} {
		a := argv(tc.cmd)
		err := u.Authorize(FullName(a), a)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%q: %q, want %q", tc.cmd, got, tc.want)
		}
	}
}

// Passwords reach the log only hashed, and the log entry parses to the same
// user as the clear-text rules.
func TestHashACLPasswords(t *testing.T) {
	in := argv("ACL SETUSER alice on >s3cret <old ~k nopass")
	out := HashACLPasswords(in)
	joined := string(bytesJoin(out))
	if strings.Contains(joined, "s3cret") || strings.Contains(joined, "old") {
		t.Fatalf("clear text left: %q", joined)
	}
	if string(out[4]) != "#"+HashPassword([]byte("s3cret")) || string(out[5]) != "!"+HashPassword([]byte("old")) {
		t.Fatalf("hashed = %q", out)
	}
	if string(in[4]) != ">s3cret" {
		t.Fatal("HashACLPasswords changed its input")
	}
	op, spec, err := Parse(out)
	if err != nil || spec != ACLSetUserSpec || string(op.(ACLSetUser).Name) != "alice" {
		t.Fatalf("Parse = %v %v %v", op, spec, err)
	}
	if _, _, err := Parse(argv("ACL SETUSER")); err == nil || err.Error() != "ERR wrong number of arguments for 'acl|setuser' command" {
		t.Fatalf("short SETUSER: %v", err)
	}
	if _, spec, _ := Parse(argv("ACL WHOAMI")); spec != nil {
		t.Fatal("ACL WHOAMI parsed as a log command")
	}
}

func bytesJoin(a [][]byte) []byte {
	var out []byte
	for _, b := range a {
		out = append(append(out, b...), ' ')
	}
	return out
}
