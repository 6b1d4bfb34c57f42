package fsm

import (
	"bytes"
	"testing"

	"github.com/lockd/lockd/command"
)

func TestACLSetUserAndDelUser(t *testing.T) {
	h := newHarness(t)
	if got := h.do("ACL SETUSER alice on #" + command.HashPassword([]byte("pw")) + " ~payouts/* +@all -@admin"); got != ok {
		t.Fatalf("SETUSER = %q", got)
	}
	u, found := h.ks.ACL().User("alice")
	if !found {
		t.Fatal("alice not in the table after SETUSER")
	}
	if !u.CheckPassword([]byte("pw")) || u.CheckPassword([]byte("nope")) {
		t.Fatal("alice's password does not check as set")
	}
	if got, want := u.Describe(), "user alice on #"+command.HashPassword([]byte("pw"))+" ~payouts/* resetchannels +@all -@admin"; got != want {
		t.Fatalf("Describe = %q, want %q", got, want)
	}
	// Rules apply on top of the existing user.
	if got := h.do("ACL SETUSER alice off"); got != ok {
		t.Fatalf("SETUSER off = %q", got)
	}
	if u, _ := h.ks.ACL().User("alice"); u.On || len(u.Keys) != 1 {
		t.Fatalf("after off: %+v", u)
	}
	// A failing rule changes nothing.
	if got := h.do("ACL SETUSER alice on ~x ~* ~y"); got != "-ERR Error in ACL SETUSER modifier '~y': "+
		"Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. "+
		"Try 'resetkeys' to start with an empty list of patterns\r\n" {
		t.Fatalf("bad SETUSER = %q", got)
	}
	if u, _ := h.ks.ACL().User("alice"); u.On {
		t.Fatal("a failed SETUSER applied its first rules")
	}
	// The default user starts from Redis's default when first changed.
	h.do("ACL SETUSER default -@dangerous")
	if u, _ := h.ks.ACL().User("default"); !u.NoPass || !u.AllKeys || u.CommandRules() != "+@all -@dangerous" {
		t.Fatalf("default after SETUSER: %+v", u)
	}
	if got := h.do("ACL DELUSER default"); got != "-ERR The 'default' user cannot be removed\r\n" {
		t.Fatalf("DELUSER default = %q", got)
	}
	if got := h.do("ACL DELUSER alice nobody alice"); got != num(1) {
		t.Fatalf("DELUSER = %q", got)
	}
	if _, found := h.ks.ACL().User("alice"); found {
		t.Fatal("alice survived DELUSER")
	}
}

// Users are in snapshots (version 3), and a version 2 snapshot still restores.
func TestACLSnapshot(t *testing.T) {
	h := &harness{t: t, ks: New()} // no settings: the version before them
	h.do("SET k v")
	h.do("NAMESPACE.SET payouts/ MAXTTL 5000")
	h.do("ACL SETUSER bob on nopass ~a* &ch +get -@all +set +client|id")
	h.do("ACL SETUSER carol reset")
	var buf bytes.Buffer
	if _, err := h.ks.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if buf.Bytes()[3] != 4 { // no settings or session owners: version 4 (snapshot.go)
		t.Fatalf("snapshot version byte = %d, want 4", buf.Bytes()[3])
	}
	r := New()
	if err := r.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"bob", "carol"} {
		a, _ := h.ks.ACL().User(name)
		b, found := r.ACL().User(name)
		if !found || a.Describe() != b.Describe() {
			t.Fatalf("%s after restore: %v (%q), want %q", name, found, b.Describe(), a.Describe())
		}
	}
	var again bytes.Buffer
	r.Snapshot().WriteTo(&again)
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Fatal("a restored keyspace writes a different snapshot")
	}

	// Version 2: the same stream without the users section.
	h2 := newHarness(t)
	h2.do("SET k v")
	h2.do("NAMESPACE.SET payouts/ MAXTTL 5000")
	var v3 bytes.Buffer
	h2.ks.Snapshot().WriteTo(&v3)
	v2 := append([]byte(nil), v3.Bytes()...)
	v2[3] = 2
	v2 = v2[:len(v2)-1] // the empty users section is one byte: a zero count
	r2 := New()
	if err := r2.Restore(bytes.NewReader(v2)); err != nil {
		t.Fatalf("version 2 snapshot: %v", err)
	}
	if got := string(mustRead(t, r2, "NAMESPACE.LIST")); got != "*1\r\n$8\r\npayouts/\r\n" || r2.ACL() != nil {
		t.Fatalf("version 2 restore: NAMESPACE.LIST %q, users %v", got, r2.ACL().Users())
	}
}

func mustRead(t *testing.T, k *Keyspace, cmd string) []byte {
	h := &harness{t: t, ks: k}
	return []byte(h.read(cmd))
}
