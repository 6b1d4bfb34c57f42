package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockd/lockd/server"
)

func TestStatusAndVersion(t *testing.T) {
	s, err := server.New(server.Config{RESPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", DataDir: t.TempDir(), NodeID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out, errb bytes.Buffer
	if rc := runStatus([]string{"-addr", s.RESPAddr()}, &out, &errb); rc != 0 {
		t.Fatalf("status rc %d: %s %s", rc, out.String(), errb.String())
	}
	for _, want := range []string{"node n1 at " + s.RESPAddr() + ": leader", "locks 0", "ID ", "n1 ", "leader"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if rc := runStatus([]string{"-addr", "127.0.0.1:1", "-timeout", "200ms"}, &out, &errb); rc != 1 {
		t.Fatalf("status of a node that is not there: rc %d", rc)
	}
	out.Reset()
	if runVersion(&out); !strings.HasPrefix(out.String(), "lockd "+server.Version) {
		t.Fatalf("version = %q", out.String())
	}
	if rc := run([]string{"-help"}, &errb); rc != 0 || !strings.Contains(errb.String(), "LOCKD_<FLAG>") {
		t.Fatalf("-help rc %d: %s", rc, errb.String())
	}
}
