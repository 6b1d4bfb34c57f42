package command

import (
	"errors"
	"fmt"
	"testing"

	"github.com/lockd/lockd/lua"
	"github.com/lockd/lockd/outcome"
	"github.com/lockd/lockd/resp"
)

// A forwarded batch's replies keep their outcomes (and the numbers that go
// with them) across the trailer; replies that simply ran cost nothing but the
// count.
func TestOutcomesRoundTrip(t *testing.T) {
	in := []resp.Value{
		resp.OK,
		ErrNoSession.Reply(),
		MovedReply(866),
		resp.Error("ERR plain"),
		resp.Failed(outcome.Unknown, "UNKNOWNOUTCOME x"),
		func() resp.Value {
			v := resp.Failed(outcome.Queued, "QUEUED 1234567890123")
			v.Int = 1234567890123
			return v
		}(),
		func() resp.Value { v := resp.Failed(outcome.RateLimited, "RATELIMITED …"); v.Int = 250; return v }(),
	}
	b := AppendOutcomes(nil, in)
	// What a follower decodes from the RESP array: texts, no outcomes.
	out := make([]resp.Value, len(in))
	for i, v := range in {
		out[i] = resp.Value{Kind: v.Kind, Str: v.Str}
	}
	if err := ReadOutcomes(b, out); err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if out[i].Outcome != in[i].Outcome || out[i].Int != in[i].Int {
			t.Errorf("reply %d: outcome %v int %d, want %v %d", i, out[i].Outcome, out[i].Int, in[i].Outcome, in[i].Int)
		}
	}
	if n := len(AppendOutcomes(nil, []resp.Value{resp.OK, resp.Int(3)})); n != 1 {
		t.Errorf("trailer of plain replies is %d bytes, want 1", n)
	}
}

// A leader from before outcomes sends no trailer: every reply stays Done. A
// malformed trailer is refused and changes nothing.
func TestOutcomesTrailerAbsentOrBad(t *testing.T) {
	vs := []resp.Value{resp.Error("TRYAGAIN write not applied"), resp.OK}
	if err := ReadOutcomes(nil, vs); err != nil || vs[0].Outcome != outcome.Done {
		t.Fatalf("no trailer: err %v, outcome %v", err, vs[0].Outcome)
	}
	good := AppendOutcomes(nil, []resp.Value{resp.Failed(outcome.NotApplied, "TRYAGAIN x"), resp.OK})
	bad := [][]byte{
		{2},             // two outcomes announced, none follow
		{1, 5, 1, 0},    // index past the replies
		{1, 0, 200, 0},  // no such outcome
		{1, 0, 1},       // number missing
		append(good, 0), // bytes after the trailer
		{9},             // more outcomes than replies
	}
	for i, b := range bad {
		vs := []resp.Value{resp.Error("TRYAGAIN x"), resp.OK}
		if err := ReadOutcomes(b, vs); !errors.Is(err, ErrBadOutcomes) {
			t.Errorf("bad trailer %d (%v): err %v, want ErrBadOutcomes", i, b, err)
		}
		if vs[0].Outcome != outcome.Done || vs[1].Outcome != outcome.Done {
			t.Errorf("bad trailer %d changed the replies' outcomes", i)
		}
	}
}

// The errors that know their reply name their outcome by identity, and the
// replies that carry a number carry it in Int.
func TestErrorReplies(t *testing.T) {
	if string(ErrNoScript) != lua.ErrNoScript {
		t.Errorf("command.ErrNoScript %q, lua.ErrNoScript %q: one text", ErrNoScript, lua.ErrNoScript)
	}
	for _, c := range []struct {
		v    resp.Value
		o    outcome.Outcome
		text string
	}{
		{ErrNoSession.Reply(), outcome.NoSession, string(ErrNoSession)},
		{ErrWrongType.Reply(), outcome.WrongType, string(ErrWrongType)},
		{ErrSyntax.Reply(), outcome.Done, string(ErrSyntax)},
		{ErrNoPermKey.Reply(), outcome.Denied, string(ErrNoPermKey)},
		{ErrNoPermCommand("get").Reply(), outcome.Denied, "NOPERM this user has no permissions to run the 'get' command"},
		{ErrSessionNoPerm.Reply(), outcome.Denied, string(ErrSessionNoPerm)},
		{MovedReply(7), outcome.Moved, "MOVED 7"},
		{MovingReply(7), outcome.Moving, "TRYAGAIN slot 7 is moving to another group"},
	} {
		if !c.v.IsError() || c.v.Outcome != c.o || c.v.String() != c.text {
			t.Errorf("%q: outcome %v, want %v (text %q)", c.v.String(), c.v.Outcome, c.o, c.text)
		}
	}
	// A wrapped Failure keeps its outcome and shows the wrapper's text; an
	// error that is no Replier is the command's own answer.
	tooLarge := &Failure{Outcome: outcome.TooLarge, Text: "ERR write too large for the log"}
	if v := ErrorReply(fmt.Errorf("%w: 5 bytes, at most 4", tooLarge)); v.Outcome != outcome.TooLarge || v.String() != "ERR write too large for the log: 5 bytes, at most 4" {
		t.Errorf("wrapped Failure: %q with outcome %v", v.String(), v.Outcome)
	}
	if v := ErrorReply(errors.New("ERR plain")); v.Outcome != outcome.Done || v.String() != "ERR plain" {
		t.Errorf("plain error: %q with outcome %v", v.String(), v.Outcome)
	}
	if MovedReply(7).Int != 7 || MovingReply(9).Int != 9 {
		t.Error("slot refusals do not carry their slot")
	}
}
