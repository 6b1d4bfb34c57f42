package redisproto

import (
	"testing"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// TestDoorHandlers: every front-door row of the command table has its handler
// (a container may go without one: it answers the arity error), and the
// front door knows no command that is not a row.
func TestDoorHandlers(t *testing.T) {
	rows := 0
	for _, s := range command.Commands() {
		if s.Handler != command.HandlerDoor {
			if _, ok := locals[s.Name]; ok {
				t.Errorf("%s: a keyspace row among the door's commands", s.Name)
			}
			continue
		}
		l, ok := locals[s.Name]
		if !ok || l.Spec != s {
			t.Errorf("%s: the door's entry is not the row", s.Name)
			continue
		}
		rows++
		subs := command.Subcommands(s.Name)
		if l.run == nil && len(subs) == 0 {
			t.Errorf("%s: no handler registered", s.Name)
		}
		if len(l.sub) != len(subs) {
			t.Errorf("%s: %d subcommands at the door, %d rows", s.Name, len(l.sub), len(subs))
		}
		for _, sub := range subs {
			found := false
			for _, ls := range l.sub {
				if ls.Spec == sub {
					found = true
					if ls.run == nil {
						t.Errorf("%s: no handler registered", sub.Name)
					}
				}
			}
			if !found {
				t.Errorf("%s: not at the door", sub.Name)
			}
		}
	}
	if rows != len(locals) {
		t.Errorf("%d door rows, %d door commands", rows, len(locals))
	}
}

// TestHandleRefusesStrays: a handler for a name that is no door row, or a
// second handler for one, panics.
func TestHandleRefusesStrays(t *testing.T) {
	run := func(*conn, [][]byte) resp.Value { return resp.OK }
	for _, name := range []string{"nosuch", "get", "client|nosuch", "ping", "client|id"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("handle(%q) did not panic", name)
				}
			}()
			handle(name, run)
		}()
	}
}
