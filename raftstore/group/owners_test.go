package group

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/internal/clustertest"
	"github.com/lockd/lockd/raftstore/group/grouptest"
	"github.com/lockd/lockd/resp"
)

// doAs, teamUsers and isSessionRefusal are grouptest's.
var (
	doAs             = grouptest.DoAs
	teamUsers        = grouptest.TeamUsers
	isSessionRefusal = grouptest.IsSessionRefusal
)

// Issue 44, item 1: a session belongs to the user who opened it. Another
// team's SESSION.CLOSE, SESSION.KEEPALIVE and LOCK.ACQUIRE … SESSION on it
// are refused NOPERM and change nothing (its lock stays held, no entry is
// written); a guessed id that is not open is NOSESSION; the owner, an admin
// (every key and admin command) and the default user may use it. A
// transaction is held to the same, and may not open a session for a user
// who is capped.
func TestSessionOwners(t *testing.T) {
	s := openConfig(t, Config{DataDir: t.TempDir(), PeerAddr: "127.0.0.1:0", ApplyTimeout: 3 * time.Second})
	defer s.Close()
	teamUsers(t, s)
	open := doAs(s, "billing", "SESSION.OPEN")
	if open.Kind != resp.KindMap {
		t.Fatalf("billing's SESSION.OPEN = %v", open)
	}
	id := fmt.Sprint(open.Elems[1].Int)
	tok := doAs(s, "billing", "LOCK.ACQUIRE", "billing/ledger", "w1", "SESSION", id)
	if tok.Kind != resp.KindInt {
		t.Fatalf("billing's acquire = %v", tok)
	}
	before := s.raft.LastIndex()
	for _, cmd := range [][]string{
		{"SESSION.CLOSE", id},
		{"SESSION.KEEPALIVE", id},
		{"LOCK.ACQUIRE", "payouts/x", "p1", "SESSION", id},
	} {
		if v := doAs(s, "payouts", cmd...); !isSessionRefusal(v) {
			t.Errorf("payouts' %v on billing's session = %v, want %s", cmd, v, command.ErrSessionNoPerm)
		}
	}
	tx := command.Tx{Cmds: [][][]byte{{[]byte("SESSION.CLOSE"), []byte(id)}}}
	r := command.Request{Op: tx, Spec: command.TxSpec, User: "payouts"}
	if v := s.Do(context.Background(), []command.Request{r})[0]; !isSessionRefusal(v) {
		t.Errorf("payouts' MULTI SESSION.CLOSE EXEC on billing's session = %v", v)
	}
	if got := s.raft.LastIndex(); got != before {
		t.Errorf("the refusals wrote %d log entries", got-before)
	}
	if v := doAs(s, "billing", "LOCK.VALIDATE", "billing/ledger", fmt.Sprint(tok.Int)); v.Int != 1 {
		t.Fatalf("billing's lock is gone after payouts' attempts: %v", v)
	}
	// A guess at an id no session has: NOSESSION, whether or not it opens later.
	guess := fmt.Sprint(s.raft.LastIndex() + 2)
	if v := doAs(s, "payouts", "SESSION.CLOSE", guess); v.String() != string(command.ErrNoSession) {
		t.Errorf("close of a guessed id = %v", v)
	}
	// The owner and an admin may; so may the default user.
	if v := doAs(s, "billing", "SESSION.KEEPALIVE", id); v.Kind != resp.KindInt {
		t.Errorf("billing's keepalive = %v", v)
	}
	if v := doAs(s, "default", "SESSION.KEEPALIVE", id); v.Kind != resp.KindInt {
		t.Errorf("default's keepalive = %v", v)
	}
	if v := doAs(s, "ops", "SESSION.CLOSE", id); v.Kind != resp.KindInt || v.Int != 1 {
		t.Errorf("the admin's SESSION.CLOSE = %v, want 1 lock released", v)
	}
	if v := doAs(s, "billing", "EXISTS", "billing/ledger"); v.Int != 0 {
		t.Errorf("the closed session's lock remains")
	}
	txOpen := command.Request{Op: command.Tx{Cmds: [][][]byte{{[]byte("SESSION.OPEN")}}}, Spec: command.TxSpec, User: "payouts"}
	if v := s.Do(context.Background(), []command.Request{txOpen})[0]; v.String() != errTxSessionOpen {
		t.Errorf("payouts' SESSION.OPEN inside MULTI = %v", v)
	}
}

// Issue 44, item 7: sessions per user are capped (Config.MaxSessionsPerUser,
// replicated to the FSM by the leader): the sessions up to the cap open, the
// next is refused with ERR max sessions …, a closed one frees a place; the
// admin and the default user are not capped.
func TestSessionCapPerUser(t *testing.T) {
	s := openConfig(t, Config{DataDir: t.TempDir(), PeerAddr: "127.0.0.1:0", ApplyTimeout: 3 * time.Second, MaxSessionsPerUser: 3})
	defer s.Close()
	teamUsers(t, s)
	var ids []string
	for i := range 3 {
		v := doAs(s, "payouts", "SESSION.OPEN")
		if v.Kind != resp.KindMap {
			t.Fatalf("session %d of 3: %v", i+1, v)
		}
		ids = append(ids, fmt.Sprint(v.Elems[1].Int))
	}
	if v := doAs(s, "payouts", "SESSION.OPEN"); !v.IsError() || !strings.HasPrefix(v.String(), "ERR max sessions per user reached (3)") {
		t.Fatalf("the fourth session = %v, want ERR max sessions per user reached (3)", v)
	}
	if v := doAs(s, "billing", "SESSION.OPEN"); v.Kind != resp.KindMap {
		t.Fatalf("billing is counted apart: %v", v)
	}
	for range 4 {
		for _, user := range []string{"ops", "default"} {
			if v := doAs(s, user, "SESSION.OPEN"); v.Kind != resp.KindMap {
				t.Fatalf("%s capped: %v", user, v)
			}
		}
	}
	if v := doAs(s, "payouts", "SESSION.CLOSE", ids[0]); v.IsError() {
		t.Fatal(v)
	}
	if v := doAs(s, "payouts", "SESSION.OPEN"); v.Kind != resp.KindMap {
		t.Fatalf("after a close: %v", v)
	}
}

// waitOwners waits (bounded) until every running node of c has applied the
// settings that turn owners on (the leader proposes them once every member
// greeted its pipelines).
func waitOwners(t *testing.T, c *cluster) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		on := true
		for _, s := range c.running() {
			on = on && s.OwnersOn()
		}
		if on {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("owners not on at every node within 15 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// follower returns a running node that does not lead.
func (c *cluster) follower(t *testing.T) *Store {
	t.Helper()
	li, _ := c.leader()
	ms := c.members()
	for _, i := range clustertest.Followers(ms) {
		if i != li {
			return ms[i].Store
		}
	}
	t.Fatal("no follower")
	return nil
}

// Issue 44, item 2: a request forwarded by a follower runs at the leader as
// the user who sent it. The follower's Store is called directly, as a front
// door would after its own checks, so the leader's check is the one tested:
// a restricted user's ACL SETUSER, another team's key in a command, in a
// transaction, and a WATCH of it are refused NOPERM at the leader and change
// nothing; the user's own keys work.
func TestForwardedRequestsRunAsTheirUser(t *testing.T) {
	c := newCluster(t, 3)
	_, leader := c.leader()
	teamUsers(t, leader)
	waitOwners(t, c)
	f := c.follower(t)
	ctx := context.Background()
	if v := doAs(f, "payouts", "ACL", "SETUSER", "payouts", "~*", "+@all"); !v.IsError() || !strings.HasPrefix(v.String(), "NOPERM") {
		t.Fatalf("payouts' forwarded ACL SETUSER = %v, want NOPERM", v)
	}
	if v := doAs(f, "default", "SET", "billing/secret", "s3"); v.String() != "OK" {
		t.Fatal(v)
	}
	for _, cmd := range [][]string{{"GET", "billing/secret"}, {"SET", "billing/secret", "stolen"}, {"DEL", "billing/secret"}} {
		if v := doAs(f, "payouts", cmd...); !v.IsError() || v.String() != string(command.ErrNoPermKey) {
			t.Errorf("payouts' forwarded %v = %v, want %s", cmd, v, command.ErrNoPermKey)
		}
	}
	tx := command.Request{Op: command.Tx{Cmds: [][][]byte{{[]byte("SET"), []byte("billing/secret"), []byte("x")}}}, Spec: command.TxSpec, User: "payouts"}
	watch := command.Request{Op: command.Versions{Keys: [][]byte{[]byte("billing/secret")}}, Spec: command.VersionsSpec, User: "payouts"}
	for _, v := range f.Do(ctx, []command.Request{tx, watch}) {
		if !v.IsError() || !strings.HasPrefix(v.String(), "NOPERM") {
			t.Errorf("payouts' forwarded transaction or WATCH = %v, want NOPERM", v)
		}
	}
	if v := doAs(f, "payouts", "SET", "payouts/own", "1"); v.String() != "OK" {
		t.Errorf("payouts' own key through the follower: %v", v)
	}
	if v := doAs(leader, "default", "GET", "billing/secret"); v.String() != "s3" {
		t.Errorf("billing/secret = %v, want s3", v)
	}
	u, _ := leader.ACL().User("payouts")
	if u.AllKeys || len(u.Keys) != 1 {
		t.Errorf("payouts' rules changed: %s", u.Describe())
	}
}

// A session's owner is replicated: after the leader crashes, the new leader
// still refuses another team's SESSION.CLOSE and KEEPALIVE (through any
// node) and still lets the owner keep it alive.
func TestSessionOwnerSurvivesFailover(t *testing.T) {
	c := newCluster(t, 3)
	li, leader := c.leader()
	teamUsers(t, leader)
	waitOwners(t, c)
	open := doAs(leader, "billing", "SESSION.OPEN", "TTL", "5000")
	if open.Kind != resp.KindMap {
		t.Fatalf("SESSION.OPEN: %v", open)
	}
	id := fmt.Sprint(open.Elems[1].Int)
	tok := doAs(leader, "billing", "LOCK.ACQUIRE", "billing/job", "w1", "SESSION", id)
	if tok.Kind != resp.KindInt {
		t.Fatalf("acquire: %v", tok)
	}
	c.crash(li)
	c.leader()
	for i := range c.peers {
		s := c.node(i)
		if s == nil {
			continue
		}
		for _, cmd := range [][]string{{"SESSION.CLOSE", id}, {"SESSION.KEEPALIVE", id}} {
			if v := doAs(s, "payouts", cmd...); !isSessionRefusal(v) {
				t.Errorf("payouts' %v through node %d after the failover = %v", cmd, i, v)
			}
		}
		if v := doAs(s, "billing", "SESSION.KEEPALIVE", id); v.Int != 5000 {
			t.Errorf("billing's keepalive through node %d after the failover: %v", i, v)
		}
		if v := doAs(s, "billing", "LOCK.VALIDATE", "billing/job", fmt.Sprint(tok.Int)); v.Int != 1 {
			t.Errorf("billing's lock lost (node %d): %v", i, v)
		}
	}
}

// While a member of the group has not said it understands owners (a node of
// the version before them, pipe version 2), the leader turns nothing on:
// sessions have no owner, anyone may use them, as before, and the replicas
// stay identical.
func TestOwnersWaitForEveryMember(t *testing.T) {
	// Two of three greet as the previous version: whichever node leads has
	// such a member.
	c := newClusterWith(t, 3, func(i int, cfg *Config) {
		if i > 0 {
			cfg.pipeVersion = pipeVersionBatch
		}
	})
	_, leader := c.leader()
	teamUsers(t, leader)
	open := doAs(leader, "billing", "SESSION.OPEN")
	if open.Kind != resp.KindMap {
		t.Fatalf("SESSION.OPEN: %v", open)
	}
	if leader.OwnersOn() {
		t.Fatal("owners on while a member does not understand them")
	}
	id := fmt.Sprint(open.Elems[1].Int)
	if v := doAs(c.follower(t), "payouts", "SESSION.KEEPALIVE", id); v.Kind != resp.KindInt {
		t.Fatalf("an ownerless session refused another user: %v", v)
	}
	c.converge()
}

// The features of pipe versions 4 (WATCH tombstones, sorted sets and lists)
// and 5 (the same-value SET NX grant) wait for every member as owners do:
// with members of version 3 the leader turns owners on and nothing else;
// with every member at 4, those of 4; at 5, all of them, but for the
// same-value grant when the nodes run -strict-nx.
func TestTypesFeaturesWaitForEveryMember(t *testing.T) {
	for _, tc := range []struct {
		name   string
		peer   byte
		strict bool
		want   uint64
	}{
		{"members of version 3", pipeVersionOwners, false, command.FeatureOwners},
		{"every member at 4", pipeVersionTypes, false, command.FeatureOwners | pipeTypesFeatures},
		{"every member at 5", pipeVersionMigration, false, command.FeatureOwners | pipeTypesFeatures | pipeMigrationFeatures},
		{"every member at 5, strict NX", pipeVersionMigration, true, command.FeatureOwners | pipeTypesFeatures | command.FeatureMigration},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClusterWith(t, 3, func(i int, cfg *Config) {
				if i > 0 {
					cfg.pipeVersion = tc.peer
				}
				cfg.StrictNX = tc.strict
			})
			_, leader := c.leader()
			deadline := time.Now().Add(10 * time.Second)
			for leader.settings().Features != tc.want {
				if time.Now().After(deadline) {
					t.Fatalf("features %b, want %b", leader.settings().Features, tc.want)
				}
				time.Sleep(20 * time.Millisecond)
			}
			// And it stays so: ten rounds of the leader's settings sync (50 ms).
			for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				if f := leader.settings().Features; f != tc.want {
					t.Fatalf("features became %b, want %b", f, tc.want)
				}
			}
			c.converge()
		})
	}
}
