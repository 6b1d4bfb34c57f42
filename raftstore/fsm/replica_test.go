package fsm

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// replicated applies a KindReplicated entry of link l with cmds and the
// group offset offset, and returns its reply as RESP2 text.
func (g *group) replicated(l command.Link, offset int64, cmds ...command.ReplicatedCmd) string {
	return string(resp.Append(nil, g.entry(command.KindReplicated, command.ReplicatedArgs(l, offset, cmds)), 2))
}

// replication applies a KindReplication entry and returns its reply as RESP2 text.
func (g *group) replication(r command.Replication) string {
	return string(resp.Append(nil, g.entry(command.KindReplication, command.ReplicationArgs(r)), 2))
}

func rcmd(end int64, cmd string) command.ReplicatedCmd {
	return command.ReplicatedCmd{End: end, Args: args(cmd)}
}

// A group applies what a Redis master sent once: commands at or below the
// offset it recorded are skipped (a run sent again after a reconnect), End 0
// (an RDB key) always runs; the master's address makes clients' writes
// read-only for the leader; all of it needs FeatureMigration and survives a
// snapshot.
func TestReplicatedEntriesApplyOnce(t *testing.T) {
	g := newGroup(t, "g")
	// Off: refused, nothing changes.
	if got := g.replicated(command.Link{}, 10, rcmd(10, "SET a 1")); got != "-"+ErrMigrationOff+"\r\n" {
		t.Fatalf("with FeatureMigration off: %q", got)
	}
	if got := g.do("EXISTS a"); got != ":0\r\n" {
		t.Fatalf("a after a refused entry: %q", got)
	}
	g.settings(command.Settings{Features: command.FeatureMigration})
	g.replication(command.Replication{Op: "master", Master: "10.0.0.1:6379", Link: command.Link{Since: 41}})
	if g.ks.ReplicaOf() != "10.0.0.1:6379" {
		t.Fatalf("ReplicaOf = %q", g.ks.ReplicaOf())
	}
	l := command.Link{Since: g.ks.ReplicaOfSince(), Epoch: 7}
	if got := g.replicated(l, 20, rcmd(10, "SET a 1")); got != "-"+errStaleLink+"\r\n" {
		t.Fatalf("before the link's full sync: %q", got)
	}
	if got := g.replication(command.Replication{Op: "full", Link: l}); got != "+OK\r\n" {
		t.Fatalf("full: %q", got)
	}
	// A client's write is refused while following; a read is served.
	if got := g.do("SET a client"); got != "-"+ErrReadOnly+"\r\n" {
		t.Fatalf("a client's SET while following: %q", got)
	}
	eval := func(src string) string {
		return string(resp.Append(nil, g.entry(command.KindCommand, [][]byte{[]byte("EVAL"), []byte(src), []byte("0")}), 2))
	}
	if got := eval("return redis.call('set', 'x', '1')"); !strings.Contains(got, "READONLY") {
		t.Fatalf("a script's write while following: %q", got)
	}
	if got := eval("return redis.call('exists', 'x')"); got != ":0\r\n" {
		t.Fatalf("a script's read while following: %q", got)
	}
	if got := g.replicated(l, 20, rcmd(10, "SET a 1"), rcmd(20, "INCR c")); got != "*2\r\n+OK\r\n:1\r\n" {
		t.Fatalf("first run: %q", got)
	}
	// The same run again (the link resumed from an earlier position), then
	// a run that overlaps it.
	if got := g.replicated(l, 20, rcmd(10, "SET a 1"), rcmd(20, "INCR c")); got != "*2\r\n$-1\r\n$-1\r\n" {
		t.Fatalf("the run again: %q, want both skipped", got)
	}
	if got := g.replicated(l, 30, rcmd(20, "INCR c"), rcmd(30, "INCR c")); got != "*2\r\n$-1\r\n:2\r\n" {
		t.Fatalf("an overlapping run: %q", got)
	}
	if got := g.do("GET c"); got != "$1\r\n2\r\n" {
		t.Fatalf("c = %q, want 2: each INCR applied once", got)
	}
	if got := g.replicated(l, 0, rcmd(0, "SET loaded x")); got != "*1\r\n+OK\r\n" {
		t.Fatalf("an RDB key (End 0): %q", got)
	}
	if g.ks.ReplicationOffset() != 30 {
		t.Fatalf("offset %d, want 30", g.ks.ReplicationOffset())
	}
	// Another link (another sync, or an earlier REPLICAOF) is refused.
	for _, other := range []command.Link{{Since: l.Since, Epoch: 8}, {Since: l.Since - 1, Epoch: 7}} {
		if got := g.replicated(other, 40, rcmd(40, "SET a stale")); got != "-"+errStaleLink+"\r\n" {
			t.Fatalf("link %+v: %q", other, got)
		}
		if got := g.replication(command.Replication{Op: "offset", Link: other, Offset: 99}); got != "-"+errStaleLink+"\r\n" {
			t.Fatalf("offset of link %+v: %q", other, got)
		}
	}
	g.replication(command.Replication{Op: "position", Link: l, ReplID: "abc", Offset: 25, DB: 0})
	g.replication(command.Replication{Op: "halt", Link: command.Link{Since: l.Since}, Reason: "stopped at type set"})
	g.replication(command.Replication{Op: "skipped", Link: command.Link{Since: l.Since}, Reason: "type stream", Offset: 2})
	g.replication(command.Replication{Op: "skipped", Link: command.Link{Since: l.Since}, Reason: "type stream", Offset: 1})
	g.replication(command.Replication{Op: "skipped", Link: command.Link{Since: l.Since}, Reason: "db 1", Offset: 4})

	var buf bytes.Buffer
	if _, err := g.ks.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	r := New()
	if err := r.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	id, pos, db, epoch := r.ReplicationPosition()
	if r.ReplicaOf() != "10.0.0.1:6379" || r.ReplicationOffset() != 30 || id != "abc" || pos != 25 || db != 0 || epoch != 7 || r.ReplicaOfSince() != l.Since {
		t.Fatalf("after a snapshot: master %q offset %d position %q %d %d epoch %d since %d", r.ReplicaOf(), r.ReplicationOffset(), id, pos, db, epoch, r.ReplicaOfSince())
	}
	if r.ReplicationHalted() != "stopped at type set" {
		t.Fatalf("the halt after a snapshot: %q", r.ReplicationHalted())
	}
	if sk := r.ReplicationSkipped(); len(sk) != 2 || sk["type stream"] != 3 || sk["db 1"] != 4 {
		t.Fatalf("what was skipped, after a snapshot: %v", sk)
	}
	// Another master (or none) forgets the last one's stream, and a run
	// still in flight after REPLICAOF NO ONE changes nothing.
	g.replication(command.Replication{Op: "master", Master: "", Link: command.Link{Since: 42}})
	if g.ks.ReplicationHalted() != "" || len(g.ks.ReplicationSkipped()) != 0 {
		t.Fatalf("a new REPLICAOF kept the halt %q, the counts %v", g.ks.ReplicationHalted(), g.ks.ReplicationSkipped())
	}
	if id, pos, _, _ := g.ks.ReplicationPosition(); g.ks.ReplicaOf() != "" || g.ks.ReplicationOffset() != 0 || id != "" || pos != 0 {
		t.Fatalf("after REPLICAOF NO ONE: master %q offset %d position %q %d", g.ks.ReplicaOf(), g.ks.ReplicationOffset(), id, pos)
	}
	g.do("SET a client")
	if got := g.replicated(l, 40, rcmd(40, "SET a master")); got != "-"+errNotFollowing+"\r\n" {
		t.Fatalf("a run after REPLICAOF NO ONE: %q", got)
	}
	if got := g.do("GET a"); got != "$6\r\nclient\r\n" {
		t.Fatalf("a = %q, want the client's write", got)
	}
}

// A mode feature (the same-value SET NX grant) goes off again when a
// settings entry leaves it out; the others stay on.
func TestModeFeaturesTurnOff(t *testing.T) {
	g := newGroup(t, "g")
	g.settings(command.Settings{Features: command.FeatureSameValueNX | command.FeatureMigration})
	g.do("SET k v NX")
	if got := g.do("SET k v NX"); got != "+OK\r\n" {
		t.Fatalf("same-value SET NX with the grant on: %q", got)
	}
	g.settings(command.Settings{Features: 0})
	if got := g.do("SET k v NX"); got != "$-1\r\n" {
		t.Fatalf("same-value SET NX after a -strict-nx leader's settings: %q", got)
	}
	if g.ks.settings.Features&command.FeatureMigration == 0 {
		t.Fatal("FeatureMigration went off with the mode")
	}
}
