package main

import (
	"strings"
	"testing"
)

// Negative client timeouts and a connection cap below 1 are start-up errors,
// before anything opens.
func TestBadClientLimits(t *testing.T) {
	for _, args := range [][]string{
		{"-timeout", "-1"},
		{"-auth-timeout", "-1s"},
		{"-auth-fail-delay", "-1ms"},
		{"-http-max-conns", "0"},
	} {
		var out strings.Builder
		if rc := run(append(args, "-data-dir", t.TempDir()), &out); rc != 2 || !strings.Contains(out.String(), "-http-max-conns at least 1") {
			t.Errorf("%q: exit %d, %q; want 2 and the bounds", args, rc, out.String())
		}
	}
}
