package fsm

import (
	"bytes"
	"errors"
	"testing"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// A batch entry answers exactly as its commands would in entries of their
// own, each with a logical index (token) of its own: a name granted, released
// and granted again inside one entry gets two different, rising tokens, and
// the entries after the batch carry the raised token base on, through a
// snapshot too.
func TestBatchEntry(t *testing.T) {
	cmds := []string{
		"LOCK.ACQUIRE x o1 PX 10000",
		"LOCK.ACQUIRE y o2 PX 10000",
		"LOCK.RELEASE x 2",
		"LOCK.ACQUIRE x o3 PX 10000",
		"SET a v FENCE",
		"LOCK.ACQUIRE y o4 PX 10000", // held: nil
	}
	// One entry per command, at indexes 2..7.
	one := newHarness(t)
	one.do("SET first v")
	var want []string
	for _, c := range cmds {
		want = append(want, one.do(c))
	}
	wantNext := one.do("SET b v FENCE")

	// The same commands in one batch entry at index 2.
	ks := New()
	ks.Apply(1, command.Entry{Kind: command.KindCommand, Wall: wall, Args: args("SET first v")})
	var batch [][][]byte
	for _, c := range cmds {
		batch = append(batch, args(c))
	}
	e := command.Entry{Kind: command.KindBatch, Wall: wall, Args: command.BatchArgs(batch)}
	var got []string
	err := ks.ApplyEach(2, e, func(cmd command.Entry, v resp.Value) {
		if cmd.Kind != command.KindCommand || !bytes.Equal(bytes.Join(cmd.Args, []byte(" ")), []byte(cmds[len(got)])) {
			t.Errorf("command %d handed as %d %q, want %q", len(got), cmd.Kind, cmd.Args, cmds[len(got)])
		}
		got = append(got, string(resp.Append(nil, v, 2)))
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range cmds {
		if i >= len(got) || got[i] != want[i] {
			t.Fatalf("batch replies %q, want %q (each command in an entry of its own)", got, want)
		}
	}
	if want[0] != num(2) || want[3] != num(5) {
		t.Fatalf("tokens of x: %q then %q, want 2 then 5", want[0], want[3])
	}
	if ks.Index() != 2 || ks.TokenBase() != uint64(len(cmds)-1) {
		t.Fatalf("after the batch: index %d, token base %d; want 2, %d", ks.Index(), ks.TokenBase(), len(cmds)-1)
	}
	next := string(resp.Append(nil, ks.Apply(3, command.Entry{Kind: command.KindCommand, Wall: wall, Args: args("SET b v FENCE")}), 2))
	if next != wantNext {
		t.Fatalf("the entry after the batch answered %q, want %q", next, wantNext)
	}

	// The base survives a snapshot.
	var buf bytes.Buffer
	if _, err := ks.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	r := New()
	if err := r.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	if got := string(resp.Append(nil, r.Apply(4, command.Entry{Kind: command.KindCommand, Wall: wall, Args: args("SET c v FENCE")}), 2)); got != num(9) {
		t.Fatalf("restored, the next entry's token is %q, want 9", got)
	}

	// Apply renders a batch's replies as one array.
	arr := string(resp.Append(nil, r.Apply(5, command.Entry{Kind: command.KindBatch, Wall: wall,
		Args: command.BatchArgs([][][]byte{args("SET d v FENCE"), args("SET e v FENCE")})}), 2))
	if want := "*2\r\n" + num(10) + num(11); arr != want {
		t.Fatalf("Apply(batch) = %q, want %q", arr, want)
	}
}

// A batch entry whose arguments do not parse applies nothing.
func TestBatchEntryCorrupt(t *testing.T) {
	ks := New()
	ks.Apply(1, command.Entry{Kind: command.KindCommand, Wall: wall, Args: args("SET a v")})
	for _, bad := range [][][]byte{nil, args("2 SET"), args("x SET a v"), args("0"), args("3 SET a v 1")} {
		err := ks.ApplyEach(2, command.Entry{Kind: command.KindBatch, Wall: wall, Args: bad}, func(command.Entry, resp.Value) {
			t.Fatalf("%q: a command of a corrupt batch was applied", bad)
		})
		if !errors.Is(err, command.ErrCorrupt) {
			t.Fatalf("%q: ApplyEach = %v, want ErrCorrupt", bad, err)
		}
		if ks.Index() != 1 || ks.TokenBase() != 0 {
			t.Fatalf("%q: index %d, base %d after a corrupt batch; want 1, 0", bad, ks.Index(), ks.TokenBase())
		}
	}
}
