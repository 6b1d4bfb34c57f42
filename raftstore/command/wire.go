package command

import (
	"encoding/binary"
	"errors"
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
)

// EncodeRequests is the form in which a follower forwards one connection's batch
// to the leader: per request a tag and an argument vector. The leader decodes
// and parses the requests again (parsing is pure).
func EncodeRequests(reqs []Request) []byte {
	var b []byte
	b = binary.AppendUvarint(b, uint64(len(reqs)))
	for _, r := range reqs {
		tag, args := byte(tagCommand), r.Args
		switch op := r.Op.(type) {
		case Eval:
			if r.User != "" {
				tag, args = tagCommandAs, ScriptAsArgs(r.User, r.Args)
			}
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
