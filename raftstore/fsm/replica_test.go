package fsm

import (
	"bytes"
	"testing"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// replicated applies a KindReplicated entry of cmds ("end command" pairs)
// with the group offset offset and returns its reply as RESP2 text.
func (g *group) replicated(offset int64, cmds ...command.ReplicatedCmd) string {
	return string(resp.Append(nil, g.entry(command.KindReplicated, command.ReplicatedArgs(offset, cmds)), 2))
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
	if got := g.replicated(10, rcmd(10, "SET a 1")); got != "-"+ErrMigrationOff+"\r\n" {
		t.Fatalf("with FeatureMigration off: %q", got)
	}
	if got := g.do("EXISTS a"); got != ":0\r\n" {
		t.Fatalf("a after a refused entry: %q", got)
	}
	g.settings(command.Settings{Features: command.FeatureMigration})
	g.entry(command.KindReplication, command.ReplicationArgs(command.Replication{Op: "master", Master: "10.0.0.1:6379"}))
	if g.ks.ReplicaOf() != "10.0.0.1:6379" {
		t.Fatalf("ReplicaOf = %q", g.ks.ReplicaOf())
	}
	if got := g.replicated(20, rcmd(10, "SET a 1"), rcmd(20, "INCR c")); got != "*2\r\n+OK\r\n:1\r\n" {
		t.Fatalf("first run: %q", got)
	}
	// The same run again (the link resumed from an earlier position), then
	// a run that overlaps it.
	if got := g.replicated(20, rcmd(10, "SET a 1"), rcmd(20, "INCR c")); got != "*2\r\n$-1\r\n$-1\r\n" {
		t.Fatalf("the run again: %q, want both skipped", got)
	}
	if got := g.replicated(30, rcmd(20, "INCR c"), rcmd(30, "INCR c")); got != "*2\r\n$-1\r\n:2\r\n" {
		t.Fatalf("an overlapping run: %q", got)
	}
	if got := g.do("GET c"); got != "$1\r\n2\r\n" {
		t.Fatalf("c = %q, want 2: each INCR applied once", got)
	}
	if got := g.replicated(0, rcmd(0, "SET loaded x")); got != "*1\r\n+OK\r\n" {
		t.Fatalf("an RDB key (End 0): %q", got)
	}
	if g.ks.ReplicationOffset() != 30 {
		t.Fatalf("offset %d, want 30", g.ks.ReplicationOffset())
	}
	g.entry(command.KindReplication, command.ReplicationArgs(command.Replication{Op: "position", ReplID: "abc", Offset: 25, DB: 0}))

	var buf bytes.Buffer
	if _, err := g.ks.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	r := New()
	if err := r.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	id, pos, db := r.ReplicationPosition()
	if r.ReplicaOf() != "10.0.0.1:6379" || r.ReplicationOffset() != 30 || id != "abc" || pos != 25 || db != 0 {
		t.Fatalf("after a snapshot: master %q offset %d position %q %d %d", r.ReplicaOf(), r.ReplicationOffset(), id, pos, db)
	}
	// Another master (or none) forgets the last one's stream, and a run
	// still in flight after REPLICAOF NO ONE changes nothing.
	g.entry(command.KindReplication, command.ReplicationArgs(command.Replication{Op: "master", Master: ""}))
	if id, pos, _ := g.ks.ReplicationPosition(); g.ks.ReplicaOf() != "" || g.ks.ReplicationOffset() != 0 || id != "" || pos != 0 {
		t.Fatalf("after REPLICAOF NO ONE: master %q offset %d position %q %d", g.ks.ReplicaOf(), g.ks.ReplicationOffset(), id, pos)
	}
	g.do("SET a client")
	if got := g.replicated(40, rcmd(40, "SET a master")); got != "-"+errNotFollowing+"\r\n" {
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
