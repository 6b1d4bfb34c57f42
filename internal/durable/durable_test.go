package durable

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileReplacesContent(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := WriteFile(p, []byte("a longer first version"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("second"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "second" {
		t.Fatalf("read %q, %v; want the second version only", b, err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
	if err := SyncDir(dir); err != nil {
		t.Fatal(err)
	}
}

func TestErrorsAreReported(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no", "such")
	if err := WriteFile(filepath.Join(missing, "f"), nil, 0o600); err == nil {
		t.Fatal("a file in a missing directory was written")
	}
	if err := SyncDir(missing); err == nil {
		t.Fatal("a missing directory was synced")
	}
}
