package command

import (
	"errors"
	"testing"
)

func TestSettingsAndAttachArgs(t *testing.T) {
	want := Settings{Features: FeatureOwners, MaxSessionsPerUser: 10000}
	if got, err := ParseSettingsArgs(SettingsArgs(want)); err != nil || got != want {
		t.Fatalf("settings round trip: %+v, %v", got, err)
	}
	for _, bad := range [][][]byte{nil, {[]byte("1")}, {[]byte("x"), []byte("1")}, {[]byte("1"), []byte("-1")}} {
		if _, err := ParseSettingsArgs(bad); err == nil {
			t.Errorf("ParseSettingsArgs(%q) accepted it", bad)
		}
	}
	id, ttl, owner, err := ParseSessionAttach(SessionAttachOwnerArgs(9, 12000, "billing"))
	if err != nil || id != 9 || ttl != 12000 || owner != "billing" {
		t.Fatalf("attach with owner: %d %d %q %v", id, ttl, owner, err)
	}
	if _, _, owner, err := ParseSessionAttach(SessionAttachArgs(9, 12000)); err != nil || owner != "" {
		t.Fatalf("attach without owner: %q %v", owner, err)
	}
	if _, _, _, err := ParseSessionAttach(append(SessionAttachArgs(9, 12000), []byte{})); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("attach with an empty owner: %v", err)
	}
	// The previous version's parser refuses an owner: such an entry must
	// never reach it (the settings gate it).
	if _, _, err := ParseSessionAttachArgs(SessionAttachOwnerArgs(9, 12000, "billing")); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ParseSessionAttachArgs took an owner: %v", err)
	}
}

// Who may use another user's session: a user allowed every key and every
// admin command; not one held to some keys or refused an admin command.
func TestManagesSessions(t *testing.T) {
	user := func(rules ...string) *User {
		var rs [][]byte
		for _, r := range rules {
			rs = append(rs, []byte(r))
		}
		u, err := SetUser(NewUser("u"), rs, true)
		if err != nil {
			t.Fatal(err)
		}
		return &u
	}
	for _, c := range []struct {
		u    *User
		want bool
	}{
		{user("on", "~*", "+@all"), true},
		{user("on", "~*", "-@all", "+@admin"), true},
		{user("on", "~payouts/*", "+@all"), false},
		{user("on", "~*", "+@all", "-@admin"), false},
		{user("on", "~*", "+@all", "-acl"), false},
	} {
		if got := c.u.ManagesSessions(); got != c.want {
			t.Errorf("%s: ManagesSessions %v, want %v", c.u.Describe(), got, c.want)
		}
	}
	d, _ := LookupUser(nil, DefaultUserName)
	if !d.ManagesSessions() {
		t.Error("the default user does not manage sessions")
	}
	if _, ok := LookupUser(nil, "ghost"); ok {
		t.Error("an unknown user was found")
	}
	team := NewACLTable([]User{*user("on", "~payouts/*", "+@all")})
	if MayUseSession(team, "u", "billing") || !MayUseSession(team, "u", "u") || !MayUseSession(team, "u", "") || !MayUseSession(team, "default", "billing") {
		t.Error("MayUseSession")
	}
}
