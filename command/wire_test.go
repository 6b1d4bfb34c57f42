package command

import (
	"encoding/binary"
	"reflect"
	"testing"
)

func TestRequestsRoundTrip(t *testing.T) {
	cmd := func(s ...string) Request {
		var a [][]byte
		for _, x := range s {
			a = append(a, []byte(x))
		}
		op, spec, err := Parse(a)
		if err != nil {
			t.Fatal(err)
		}
		return Request{Args: a, Op: op, Spec: spec}
	}
	in := []Request{
		cmd("SET", "k", "v", "NX", "PX", "100", "FENCE"),
		cmd("GET", "k"),
		{Op: Tx{Watch: []Watched{{Key: []byte("w"), Version: 7}}, Cmds: [][][]byte{{[]byte("INCR"), []byte("n")}}}, Spec: TxSpec},
		{Op: ScriptLoad{Source: []byte("return 1")}, Spec: ScriptLoadSpec},
		{Op: ScriptFlush{}, Spec: ScriptFlushSpec},
		{Op: ScriptExists{SHAs: [][]byte{[]byte("abc")}}, Spec: ScriptExistsSpec},
		{Op: Versions{Keys: [][]byte{[]byte("a"), []byte("b")}}, Spec: VersionsSpec},
		{Op: Admin{Action: "add", ID: "n4", Addr: "127.0.0.1:7394"}, Spec: AdminSpec},
		cmd("EVAL", "return 1", "1", "k", "a"),
	}
	out, err := DecodeRequests(EncodeRequests(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("%d requests back, want %d", len(out), len(in))
	}
	for i := range in {
		if out[i].Spec != in[i].Spec || !reflect.DeepEqual(out[i].Op, in[i].Op) {
			t.Errorf("request %d: %#v, want %#v", i, out[i].Op, in[i].Op)
		}
	}
	for _, bad := range [][]byte{nil, {5}, {1, 'C', 9}, {1, 'Z', 0}, append(EncodeRequests(in[:1]), 0)} {
		if _, err := DecodeRequests(bad); err == nil {
			t.Errorf("DecodeRequests(%q) accepted garbage", bad)
		}
	}
}

// tagsOf lists the request tags of an EncodeRequests payload.
func tagsOf(t *testing.T, b []byte) []byte {
	t.Helper()
	n, k := binary.Uvarint(b)
	b = b[k:]
	var tags []byte
	for ; n > 0; n-- {
		tags = append(tags, b[0])
		b = b[1:]
		argc, k := binary.Uvarint(b)
		b = b[k:]
		for ; argc > 0; argc-- {
			l, k := binary.Uvarint(b)
			b = b[k+int(l):]
		}
	}
	return tags
}

// Forwarded requests carry their users (issue 44): with every member
// understanding owners, every request with a user takes it along (tag 'W');
// before that, only what the previous version decodes: a plain command's user
// (tag 'U', which that version ignores but for a script's), never an
// unrestricted user's script (that version would check its calls as a
// restricted user's), nothing on the other kinds.
func TestUserRequestsOnTheWire(t *testing.T) {
	cmd := func(user string, s ...string) Request {
		var a [][]byte
		for _, x := range s {
			a = append(a, []byte(x))
		}
		op, spec, err := Parse(a)
		if err != nil {
			t.Fatal(err)
		}
		return Request{Args: a, Op: op, Spec: spec, User: user}
	}
	in := []Request{
		cmd("payouts", "SESSION.CLOSE", "8"),
		cmd("payouts", "ACL", "SETUSER", "payouts", "~*"),
		{Op: Tx{Cmds: [][][]byte{{[]byte("SET"), []byte("billing/x"), []byte("1")}}}, Spec: TxSpec, User: "payouts"},
		{Op: ScriptFlush{}, Spec: ScriptFlushSpec, User: "payouts"},
		{Op: Versions{Keys: [][]byte{[]byte("billing/x")}}, Spec: VersionsSpec, User: "payouts"},
		{Op: Admin{Action: "add", ID: "n4", Addr: "127.0.0.1:7394"}, Spec: AdminSpec, User: "payouts"},
		cmd("payouts", "EVAL", "return 1", "0"),
		cmd("ops", "EVAL", "return 1", "0"),
		cmd("", "GET", "k"),
	}
	restricted := func(user string) bool { return user != "ops" }
	users := func(b []byte) []string {
		out, err := DecodeRequests(b)
		if err != nil {
			t.Fatal(err)
		}
		var u []string
		for i, r := range out {
			if r.Spec != in[i].Spec || !reflect.DeepEqual(r.Op, in[i].Op) {
				t.Errorf("request %d: %#v, want %#v", i, r.Op, in[i].Op)
			}
			u = append(u, r.User)
		}
		return u
	}
	all := EncodeUserRequests(in, true, restricted)
	if got, want := users(all), []string{"payouts", "payouts", "payouts", "payouts", "payouts", "payouts", "payouts", "ops", ""}; !reflect.DeepEqual(got, want) {
		t.Errorf("all: users %q, want %q", got, want)
	}
	old := EncodeUserRequests(in, false, restricted)
	if got, want := users(old), []string{"payouts", "payouts", "", "", "", "", "payouts", "", ""}; !reflect.DeepEqual(got, want) {
		t.Errorf("previous version: users %q, want %q", got, want)
	}
	if got, want := string(tagsOf(t, old)), "UUTSVAUCC"; got != want {
		t.Errorf("previous version: tags %q, want %q (no 'W')", got, want)
	}
	// EncodeRequests (the store's own requests) sends a script's user only.
	if got, want := users(EncodeRequests(in)), []string{"", "", "", "", "", "", "payouts", "ops", ""}; !reflect.DeepEqual(got, want) {
		t.Errorf("EncodeRequests: users %q, want %q", got, want)
	}
	for _, bad := range [][][]byte{
		{[]byte("u")},
		{[]byte(""), {tagCommand}, []byte("GET"), []byte("k")},
		{[]byte("u"), {tagWithUser}, []byte("v"), {tagCommand}, []byte("GET"), []byte("k")},
		{[]byte("u"), []byte("CC"), []byte("GET"), []byte("k")},
	} {
		if _, err := decodeRequest(tagWithUser, bad); err == nil {
			t.Errorf("decodeRequest('W', %q) accepted it", bad)
		}
	}
}
