package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "lockd.conf")
	os.WriteFile(file, []byte("# lockd\naddr = 127.0.0.1:7000\ndata-dir = \"/from/file\"\n-log-level = debug\n"), 0o600)
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:6379", "")
	dataDir := fs.String("data-dir", "lockd-data", "")
	level := fs.String("log-level", "info", "")
	fs.String("config", "", "")
	if err := fs.Parse([]string{"-log-level", "warn"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"LOCKD_DATA_DIR": "/from/env"}
	if err := applyConfig(fs, file, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if *addr != "127.0.0.1:7000" || *dataDir != "/from/env" || *level != "warn" {
		t.Fatalf("addr %q (file), data-dir %q (env over file), log-level %q (command line over file)", *addr, *dataDir, *level)
	}
	os.WriteFile(file, []byte("nosuch = 1\n"), 0o600)
	if err := applyConfig(fs, file, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), `unknown setting "nosuch"`) {
		t.Fatalf("unknown setting: %v", err)
	}
	os.WriteFile(file, []byte("addr\n"), 0o600)
	if err := applyConfig(fs, file, func(string) string { return "" }); err == nil {
		t.Fatal("a line without = was accepted")
	}
}

// A write limit that would refuse every write is a start-up error.
func TestBadMaxWriteBytes(t *testing.T) {
	for _, v := range []string{"0", "-5"} {
		var out strings.Builder
		if rc := run([]string{"-max-write-bytes", v, "-data-dir", t.TempDir()}, &out); rc != 2 || !strings.Contains(out.String(), "bad -max-write-bytes "+v) {
			t.Fatalf("-max-write-bytes %s: exit %d, %q", v, rc, out.String())
		}
	}
}

func TestBadLogBytes(t *testing.T) {
	for _, v := range []string{"0", "-5"} {
		var out strings.Builder
		if rc := run([]string{"-log-bytes", v, "-data-dir", t.TempDir()}, &out); rc != 2 || !strings.Contains(out.String(), "-log-bytes") {
			t.Fatalf("-log-bytes %s: exit %d, %q", v, rc, out.String())
		}
	}
}

// A negative timer slack is refused before lockd executes itself again
// (internal/timerslack), as is one the environment gives.
func TestBadTimerSlack(t *testing.T) {
	var out strings.Builder
	if rc := run([]string{"-timer-slack", "-1ms", "-data-dir", t.TempDir()}, &out); rc != 2 || !strings.Contains(out.String(), "bad -timer-slack -1ms") {
		t.Fatalf("-timer-slack -1ms: exit %d, %q", rc, out.String())
	}
	t.Setenv("LOCKD_TIMER_SLACK", "-2ms")
	out.Reset()
	if rc := run([]string{"-data-dir", t.TempDir()}, &out); rc != 2 || !strings.Contains(out.String(), "bad -timer-slack -2ms") {
		t.Fatalf("LOCKD_TIMER_SLACK=-2ms: exit %d, %q", rc, out.String())
	}
}

// A cluster secret too short to resist guessing, accept mode without a
// secret and an unknown mode are start-up errors, before anything opens.
func TestBadClusterSecret(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-cluster-secret", "short"}, "bad -cluster-secret: 5 bytes"},
		{[]string{"-cluster-secret-mode", "accept"}, "bad -cluster-secret: 0 bytes"},
		{[]string{"-cluster-secret", "0123456789abcdef0123", "-cluster-secret-mode", "maybe"}, `bad -cluster-secret-mode "maybe"`},
	} {
		var out strings.Builder
		if rc := run(append(tc.args, "-data-dir", t.TempDir()), &out); rc != 2 || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%q: exit %d, %q; want 2 and %q", tc.args, rc, out.String(), tc.want)
		}
	}
}

// A negative session cap is a start-up error (0 means no cap).
func TestBadMaxSessionsPerUser(t *testing.T) {
	var out strings.Builder
	if rc := run([]string{"-max-sessions-per-user", "-1", "-data-dir", t.TempDir()}, &out); rc != 2 || !strings.Contains(out.String(), "bad -max-sessions-per-user -1") {
		t.Fatalf("-max-sessions-per-user -1: exit %d, %q", rc, out.String())
	}
}
