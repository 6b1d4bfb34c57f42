package group

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/command"
)

// ACL users are replicated: a user created through a follower (forwarded to
// the leader) reaches every replica, and a replica that was down catches up
// from a snapshot that carries the users.
func TestACLUsersReplicated(t *testing.T) {
	c := newCluster(t, 3)
	li, _ := c.leader()
	fi := (li + 1) % 3
	ctx := context.Background()
	if v := c.node(fi).Do(ctx, []command.Request{req("ACL", "SETUSER", "payouts", "on", "#"+fmt.Sprintf("%064x", 1), "~payouts/*", "+@all")})[0]; v.String() != "OK" {
		t.Fatalf("SETUSER through a follower: %v", v)
	}
	waitUser := func(s *Store, name string, want bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, ok := s.ACL().User(name)
			if ok == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("user %q present=%v on a replica, want %v", name, ok, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, s := range c.running() {
		waitUser(s, "payouts", true)
	}
	// A script run for that user, forwarded by a follower and applied on
	// every replica, may not touch keys outside the user's patterns.
	as := func(user string, cmd ...string) command.Request { r := req(cmd...); r.User = user; return r }
	c.node(fi).Do(ctx, []command.Request{req("SET", "search/x", "secret")})
	out := c.node(fi).Do(ctx, []command.Request{
		as("payouts", "EVAL", "return redis.call('GET', 'search/x')", "0"),
		as("payouts", "EVAL", "return redis.call('SET', 'payouts/x', 'v')", "0"),
		req("EVAL", "return redis.call('GET', 'search/x')", "0"),
	})
	if !strings.Contains(out[0].String(), "can't access at least one of the keys") || out[1].String() != "OK" || out[2].String() != "secret" {
		t.Fatalf("scripts as a restricted user, then as nobody in particular: %v", out)
	}
	c.converge()
	// A replica that misses the change (and enough entries for a snapshot)
	// learns it from the snapshot.
	down := (li + 2) % 3
	c.crash(down)
	_, leader := c.leader()
	leader.Do(ctx, []command.Request{req("ACL", "SETUSER", "search", "on", "nopass", "~search/*", "+@read")})
	leader.Do(ctx, []command.Request{req("ACL", "DELUSER", "payouts")})
	for i := 0; i < 150; i++ {
		leader.Do(ctx, []command.Request{req("SET", fmt.Sprintf("k%d", i), "v")})
	}
	c.start(down)
	waitUser(c.node(down), "search", true)
	waitUser(c.node(down), "payouts", false)
	c.converge()
}
