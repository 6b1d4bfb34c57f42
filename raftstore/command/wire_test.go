package command

import (
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
