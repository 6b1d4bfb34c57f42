package command

import (
	"encoding/binary"
	"errors"

	"github.com/lockd/lockd/outcome"
	"github.com/lockd/lockd/resp"
)

// ErrBadRequests reports a forwarded batch that cannot be decoded.
var ErrBadRequests = errors.New("command: undecodable forwarded requests")

// Request tags on the wire (forwarding between nodes). Values are part of the
// peer protocol: never renumber.
const (
	tagCommand      = 'C'
	tagTx           = 'T'
	tagScript       = 'S'
	tagScriptExists = 'E'
	tagVersions     = 'V'
	tagAdmin        = 'A'
	tagCommandAs    = 'U' // a command with Request.User: args are ScriptAsArgs
	// tagWithUser is any request with its Request.User: args are the user,
	// the request's own tag (one byte) and its own args. Sent only to a
	// leader that understands it (EncodeUserRequests).
	tagWithUser = 'W'
)

// EncodeRequests is the form in which a follower forwards one connection's batch
// to the leader: per request a tag and an argument vector. The leader decodes
// and parses the requests again (parsing is pure). Only an EVAL/EVALSHA
// carries its Request.User (the user of a restricted script): requests the
// store builds itself, which have none. Client requests go through
// EncodeUserRequests.
func EncodeRequests(reqs []Request) []byte {
	return encodeRequests(reqs, func(r Request) bool {
		_, eval := r.Op.(Eval)
		return eval
	}, false)
}

// EncodeUserRequests is EncodeRequests for requests that carry their users
// (Request.User), so that the leader runs each as its user. Without all (some
// member of the group may be of the version before owners, FeatureOwners),
// only what that version decodes is sent: a plain command with a user
// travels as a tagCommandAs (that version ignores the user but for a
// script's), except an EVAL/EVALSHA whose user is not restricted, which that
// version would run as a restricted user's script; other requests travel
// without their user. With all, every request with a user carries it
// (tagWithUser). restricted reports whether a user has ACL restrictions.
func EncodeUserRequests(reqs []Request, all bool, restricted func(user string) bool) []byte {
	return encodeRequests(reqs, func(r Request) bool {
		if _, eval := r.Op.(Eval); eval {
			return restricted(r.User)
		}
		return true
	}, all)
}

// encodeRequests encodes reqs, a plain command with a user as a
// tagCommandAs where asUser says so, and every request with a user as a
// tagWithUser when all is set.
func encodeRequests(reqs []Request, asUser func(Request) bool, all bool) []byte {
	var b []byte
	b = binary.AppendUvarint(b, uint64(len(reqs)))
	for _, r := range reqs {
		tag, args := byte(tagCommand), r.Args
		switch op := r.Op.(type) {
		case Tx:
			tag, args = tagTx, TxArgs(op)
		case ScriptLoad, ScriptFlush:
			tag, args = tagScript, ScriptArgs(op)
		case ScriptExists:
			tag, args = tagScriptExists, op.SHAs
		case Versions:
			tag, args = tagVersions, op.Keys
		case Admin:
			tag, args = tagAdmin, [][]byte{[]byte(op.Action), []byte(op.ID), []byte(op.Addr)}
		}
		switch {
		case r.User == "":
		case all:
			args = append([][]byte{[]byte(r.User), {tag}}, args...)
			tag = tagWithUser
		case tag == tagCommand && asUser(r):
			tag, args = tagCommandAs, ScriptAsArgs(r.User, r.Args)
		}
		b = append(b, tag)
		b = binary.AppendUvarint(b, uint64(len(args)))
		for _, a := range args {
			b = binary.AppendUvarint(b, uint64(len(a)))
			b = append(b, a...)
		}
	}
	return b
}

// DecodeRequests is the inverse of EncodeRequests. A command that no longer
// parses (it cannot happen between nodes of one version) becomes a request whose
// Op is nil and whose error the caller reports.
func DecodeRequests(b []byte) ([]Request, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, ErrBadRequests
	}
	b = b[k:]
	out := make([]Request, 0, n)
	for ; n > 0; n-- {
		if len(b) == 0 {
			return nil, ErrBadRequests
		}
		tag := b[0]
		b = b[1:]
		argc, k := binary.Uvarint(b)
		if k <= 0 || argc > uint64(len(b)) {
			return nil, ErrBadRequests
		}
		b = b[k:]
		args := make([][]byte, argc)
		for i := range args {
			l, k := binary.Uvarint(b)
			if k <= 0 || l > uint64(len(b)-k) {
				return nil, ErrBadRequests
			}
			args[i] = b[k : k+int(l) : k+int(l)]
			b = b[k+int(l):]
		}
		r, err := decodeRequest(tag, args)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if len(b) != 0 {
		return nil, ErrBadRequests
	}
	return out, nil
}

func decodeRequest(tag byte, args [][]byte) (Request, error) {
	if tag == tagWithUser {
		if len(args) < 2 || len(args[0]) == 0 || len(args[1]) != 1 || args[1][0] == tagWithUser || args[1][0] == tagCommandAs {
			return Request{}, ErrBadRequests
		}
		r, err := decodeRequest(args[1][0], args[2:])
		r.User = string(args[0])
		return r, err
	}
	if tag == tagCommandAs {
		user, rest, err := ParseScriptAsArgs(args)
		if err != nil {
			return Request{}, ErrBadRequests
		}
		r, err := decodeRequest(tagCommand, rest)
		r.User = user
		return r, err
	}
	switch tag {
	case tagCommand:
		op, spec, err := Parse(args)
		if err != nil || spec == nil {
			return Request{}, ErrBadRequests
		}
		return Request{Args: args, Op: op, Spec: spec}, nil
	case tagTx:
		tx, err := ParseTx(args)
		if err != nil {
			return Request{}, ErrBadRequests
		}
		return Request{Op: tx, Spec: TxSpec}, nil
	case tagScript:
		op, err := ParseScriptArgs(args)
		if err != nil {
			return Request{}, ErrBadRequests
		}
		spec := ScriptLoadSpec
		if _, ok := op.(ScriptFlush); ok {
			spec = ScriptFlushSpec
		}
		return Request{Op: op, Spec: spec}, nil
	case tagScriptExists:
		return Request{Op: ScriptExists{SHAs: args}, Spec: ScriptExistsSpec}, nil
	case tagVersions:
		return Request{Op: Versions{Keys: args}, Spec: VersionsSpec}, nil
	case tagAdmin:
		if len(args) != 3 {
			return Request{}, ErrBadRequests
		}
		return Request{Op: Admin{Action: string(args[0]), ID: string(args[1]), Addr: string(args[2])}, Spec: AdminSpec}, nil
	}
	return Request{}, ErrBadRequests
}

// ErrBadOutcomes reports a forwarded batch's outcome trailer that cannot be
// decoded.
var ErrBadOutcomes = errors.New("command: undecodable outcomes of forwarded replies")

// AppendOutcomes appends the outcome trailer of a forwarded batch's replies,
// which the leader writes after their RESP array: the number of replies
// whose outcome is not outcome.Done, then for each its index, its outcome
// (one byte) and its Int (signed varint: a queued waiter's id, a wait in
// ms). A batch that simply ran costs one byte. A follower from before
// outcomes reads the array and ignores what follows it.
func AppendOutcomes(b []byte, vs []resp.Value) []byte {
	n := 0
	for _, v := range vs {
		if v.Outcome != outcome.Done {
			n++
		}
	}
	b = binary.AppendUvarint(b, uint64(n))
	for i, v := range vs {
		if v.Outcome != outcome.Done {
			b = binary.AppendUvarint(b, uint64(i))
			b = append(b, byte(v.Outcome))
			b = binary.AppendVarint(b, v.Int)
		}
	}
	return b
}

// ReadOutcomes sets the outcomes (and their Ints) of vs, a forwarded batch's
// replies, from trailer b (AppendOutcomes). An empty b, from a leader that
// predates outcomes, leaves every reply's outcome Done: its texts are the
// same, and the follower then passes refusals to the client instead of
// retrying them itself. A malformed trailer is ErrBadOutcomes, vs unchanged.
func ReadOutcomes(b []byte, vs []resp.Value) error {
	if len(b) == 0 {
		return nil
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(vs)) {
		return ErrBadOutcomes
	}
	b = b[k:]
	type set struct {
		i   int
		o   outcome.Outcome
		num int64
	}
	sets := make([]set, 0, n)
	for ; n > 0; n-- {
		i, k := binary.Uvarint(b)
		if k <= 0 || i >= uint64(len(vs)) || len(b) < k+1 {
			return ErrBadOutcomes
		}
		o := outcome.Outcome(b[k])
		b = b[k+1:]
		num, k := binary.Varint(b)
		if k <= 0 || !o.Valid() {
			return ErrBadOutcomes
		}
		b = b[k:]
		sets = append(sets, set{int(i), o, num})
	}
	if len(b) != 0 {
		return ErrBadOutcomes
	}
	for _, s := range sets {
		vs[s.i].Outcome, vs[s.i].Int = s.o, s.num
	}
	return nil
}
