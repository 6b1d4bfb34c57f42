package raftstore

import (
	"strings"
	"testing"

	"github.com/lockd/lockd/command"
)

// TestRouteFollowsRows: the router sends every row that is not routed by its
// keys where the row's route says; the RAFT subcommands, whose requests all
// carry the container's row (AdminSpec), go where their own rows say.
func TestRouteFollowsRows(t *testing.T) {
	n := &Node{}
	want := map[command.Route]routeKind{
		command.RouteEveryGroup: fanWrite,
		command.RouteCombine:    fanRead,
		command.RouteGroupZero:  toGroup,
		command.RouteSessions:   sessionAll,
		command.RouteLocal:      toGroup,
	}
	var all []*command.Spec
	for _, s := range command.Commands() {
		all = append(all, s)
		all = append(all, command.Subcommands(s.Name)...)
	}
	checked := 0
	for _, s := range all {
		r := command.Request{Spec: s}
		if container, sub, ok := strings.Cut(s.Name, "|"); ok && container == "raft" {
			r = command.Request{Spec: command.AdminSpec, Op: command.Admin{Action: sub}}
		}
		k, ok := want[s.Route]
		if s.Route == command.RouteAdmin && s.Name != "raft" {
			k, ok = adminAll, true
		}
		if !ok {
			continue
		}
		checked++
		if got := n.target(r); got.kind != k || got.group != 0 {
			t.Errorf("%s (route %v): target = %+v, want kind %d", s.Name, s.Route, got, k)
		}
	}
	if checked < 20 {
		t.Fatalf("only %d rows checked", checked)
	}
}
