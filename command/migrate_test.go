package command

import (
	"errors"
	"testing"
)

func TestMigrateKindsSurviveTheCodec(t *testing.T) {
	for _, e := range []Entry{
		{Kind: KindSessionAttach, Time: 5, Wall: 7, Args: SessionAttachArgs(42, 15000)},
		{Kind: KindMigrate, Time: 5, Wall: 7, Args: MigrateArgs(MigrateFreeze, 0, 16383)},
		{Kind: KindImport, Time: 5, Wall: 7, Args: ImportArgs([]byte{0, 1, 2, 255})},
		{Kind: KindShardMap, Time: 5, Wall: 7, Args: ShardMapArgs([]byte{1, 2, 3})},
	} {
		got, err := Decode(e.Encode())
		if err != nil {
			t.Fatalf("kind %d: %v", e.Kind, err)
		}
		if got.Kind != e.Kind || len(got.Args) != len(e.Args) {
			t.Fatalf("kind %d decoded as %+v", e.Kind, got)
		}
	}
	bad := Entry{Kind: maxKind + 1}.Encode()
	if _, err := Decode(bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("kind %d decoded: %v", maxKind+1, err)
	}
}

func TestSessionAttachArgs(t *testing.T) {
	id, ttl, err := ParseSessionAttachArgs(SessionAttachArgs(9, 12000))
	if err != nil || id != 9 || ttl != 12000 {
		t.Fatalf("got %d %d %v", id, ttl, err)
	}
	for _, a := range [][][]byte{nil, SessionAttachArgs(0, 10), SessionAttachArgs(3, 0), {[]byte("x"), []byte("1")}, {[]byte("1"), []byte("y")}} {
		if _, _, err := ParseSessionAttachArgs(a); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%q: %v, want ErrCorrupt", a, err)
		}
	}
}

func TestMigrateArgs(t *testing.T) {
	for _, c := range []struct {
		action   string
		from, to uint16
	}{{MigrateFreeze, 0, 0}, {MigrateDrop, 100, 200}, {MigrateThaw, 16383, 16383}} {
		a, f, to, err := ParseMigrateArgs(MigrateArgs(c.action, c.from, c.to))
		if err != nil || a != c.action || f != c.from || to != c.to {
			t.Errorf("%v: got %q %d %d %v", c, a, f, to, err)
		}
	}
	for _, a := range [][][]byte{
		MigrateArgs("melt", 1, 2), MigrateArgs(MigrateFreeze, 5, 4), MigrateArgs(MigrateDrop, 0, 16384),
		{[]byte("freeze"), []byte("1")}, {[]byte("freeze"), []byte("-1"), []byte("3")},
	} {
		if _, _, _, err := ParseMigrateArgs(a); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%q: %v, want ErrCorrupt", a, err)
		}
	}
}

func TestBlobArgs(t *testing.T) {
	if b, err := ParseImportArgs(ImportArgs([]byte("blob"))); err != nil || string(b) != "blob" {
		t.Fatalf("import: %q %v", b, err)
	}
	if b, err := ParseShardMapArgs(ShardMapArgs([]byte("map"))); err != nil || string(b) != "map" {
		t.Fatalf("map: %q %v", b, err)
	}
	if _, err := ParseImportArgs(nil); !errors.Is(err, ErrCorrupt) {
		t.Fatal("empty import args accepted")
	}
	if _, err := ParseShardMapArgs([][]byte{{1}, {2}}); !errors.Is(err, ErrCorrupt) {
		t.Fatal("two map args accepted")
	}
}

func TestMovedAndTryAgainTexts(t *testing.T) {
	if got := string(MovedError(866)); got != "MOVED 866" {
		t.Fatalf("MovedError = %q", got)
	}
	if got := string(TryAgainError(7)); got != "TRYAGAIN slot 7 is moving to another group" {
		t.Fatalf("TryAgainError = %q", got)
	}
	if s, ok := ParseMoved(string(MovedError(16383))); !ok || s != 16383 {
		t.Fatalf("ParseMoved = %d %v", s, ok)
	}
	for _, m := range []string{"MOVED", "MOVED x", "MOVED 16384", "TRYAGAIN slot 1", "MOVED 1 127.0.0.1:6379"} {
		if _, ok := ParseMoved(m); ok {
			t.Errorf("ParseMoved(%q) accepted", m)
		}
	}
}
