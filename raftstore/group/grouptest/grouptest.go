// Package grouptest holds the request helpers that the tests of a group
// (raftstore/group) and of a node of groups (raftstore) share: building a
// request as a front door would, running one as a user, and the users of the
// session-owner tests. Tests only; lockd never imports it.
package grouptest

import (
	"context"
	"fmt"
	"testing"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// Doer runs a batch of requests: a group's Store or a Node.
type Doer interface {
	Do(context.Context, []command.Request) []resp.Value
}

// Req parses cmd as the front door would; it panics on a command that does
// not parse (a test's own mistake).
func Req(cmd ...string) command.Request {
	var args [][]byte
	for _, a := range cmd {
		args = append(args, []byte(a))
	}
	op, spec, err := command.Parse(args)
	if err != nil || spec == nil {
		panic(fmt.Sprintf("%q: %v", cmd, err))
	}
	return command.Request{Args: args, Op: op, Spec: spec}
}

// DoAs runs cmd on s as user (what a front door sends for that user).
func DoAs(s Doer, user string, cmd ...string) resp.Value {
	r := Req(cmd...)
	r.User = user
	return s.Do(context.Background(), []command.Request{r})[0]
}

// TeamUsers creates the users of issue 44 on s: two teams, each held to its
// own keys and refused admin commands (as SECURITY.md suggests), and an
// admin allowed every key and command.
func TeamUsers(t testing.TB, s Doer) {
	t.Helper()
	for _, rules := range [][]string{
		{"payouts", "on", "nopass", "~payouts/*", "+@all", "-@admin", "-@dangerous"},
		{"billing", "on", "nopass", "~billing/*", "+@all", "-@admin", "-@dangerous"},
		{"ops", "on", "nopass", "~*", "+@all"},
	} {
		if v := DoAs(s, "default", append([]string{"ACL", "SETUSER"}, rules...)...); v.String() != "OK" {
			t.Fatalf("ACL SETUSER %s: %v", rules[0], v)
		}
	}
}

// IsSessionRefusal reports the NOPERM of another user's session.
func IsSessionRefusal(v resp.Value) bool {
	return v.IsError() && v.String() == string(command.ErrSessionNoPerm)
}

// QueueLength reads LOCK.INFO's queue_length through s (0 when the lock is
// free).
func QueueLength(s Doer, name string) int64 {
	v := s.Do(context.Background(), []command.Request{Req("LOCK.INFO", name)})[0]
	for i := 0; i+1 < len(v.Elems); i += 2 {
		if v.Elems[i].String() == "queue_length" {
			return v.Elems[i+1].Int
		}
	}
	return 0
}
