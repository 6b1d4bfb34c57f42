package tlsconf

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestLoadRefusesIncompleteOptions(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		opts Options
		want error
	}{
		{"cert without key", Options{CertFile: "c.pem"}, ErrIncomplete},
		{"key without cert", Options{KeyFile: "k.pem"}, ErrIncomplete},
		{"CA without a pair", Options{CAFile: ca}, ErrIncomplete},
		{"client auth without CA", Options{CertFile: "c.pem", KeyFile: "k.pem", ClientAuth: true}, ErrNoCA},
		{"CA that is not PEM", Options{CertFile: "c.pem", KeyFile: "k.pem", CAFile: ca}, ErrBadCA},
		{"peer CA without a pair", Options{PeerCAFile: ca}, ErrIncomplete},
		{"peer CA that is not PEM", Options{CertFile: "c.pem", KeyFile: "k.pem", PeerCAFile: ca}, ErrBadCA},
	} {
		if _, err := Load(c.opts, nil); !errors.Is(err, c.want) {
			t.Errorf("%s: Load = %v, want %v", c.name, err, c.want)
		}
	}
	if (Options{}).Enabled() {
		t.Error("empty Options report TLS enabled")
	}
	if !(Options{PeerCAFile: ca}).Enabled() {
		t.Error("a peer CA alone does not report TLS enabled")
	}
}

func TestLoadMissingFiles(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(Options{CertFile: filepath.Join(dir, "c.pem"), KeyFile: filepath.Join(dir, "k.pem")}, nil)
	if err == nil {
		t.Fatal("Load of missing files succeeded")
	}
}
