package command

import "strings"

// Namespace settings (DESIGN.md §5). A namespace is a key prefix; a name belongs
// to the namespace with the longest prefix that matches it.
const (
	// DefaultMaxWaiters is the wait-queue cap per name of a namespace that sets none.
	DefaultMaxWaiters = 500
	// MaxLockDelay bounds LOCKDELAY (Chubby's one minute).
	MaxLockDelay = 60_000
)

// NamespaceSet is NAMESPACE.SET prefix [MAXTTL ms] [DEFAULTTTL ms] [MAXWAITERS n]
// [RATE ops/s] [LOCKDELAY ms] [SAFETY efficiency|correctness] [FENCEDBY text].
// Fields not given keep their value (a new namespace starts from the defaults);
// a negative number means "not given".
type NamespaceSet struct {
	Prefix                               []byte
	MaxTTL, DefaultTTL, MaxWaiters, Rate int64
	LockDelay                            int64
	Safety                               string // "", "efficiency" or "correctness"
	FencedBy                             []byte
	FencedBySet                          bool
}

// NamespaceGet is NAMESPACE.GET prefix.
type NamespaceGet struct{ Prefix []byte }

// NamespaceList is NAMESPACE.LIST.
type NamespaceList struct{}

// NamespaceDel is NAMESPACE.DEL prefix.
type NamespaceDel struct{ Prefix []byte }

func (NamespaceSet) isOp()  {}
func (NamespaceGet) isOp()  {}
func (NamespaceList) isOp() {}
func (NamespaceDel) isOp()  {}

// Namespaces are settings of every group: SET and DEL change every group,
// GET and LIST ask group 0. The prefix is the key ACL rules check (the
// metadata describes no key: lockd's own key position, prefixKey).
var namespaceRows = []*Spec{
	withKeys(fsmRow("namespace.set", FlagWrite|FlagPrefixKey, RouteEveryGroup, parseNamespaceSet), prefixKey),
	withKeys(fsmRow("namespace.get", FlagPrefixKey, RouteGroupZero, func(_ string, a [][]byte) (Op, error) {
		return NamespaceGet{Prefix: a[1]}, nonEmptyPrefix(a[1])
	}), prefixKey),
	fsmRow("namespace.list", 0, RouteGroupZero, func(string, [][]byte) (Op, error) { return NamespaceList{}, nil }),
	withKeys(fsmRow("namespace.del", FlagWrite|FlagPrefixKey, RouteEveryGroup, func(_ string, a [][]byte) (Op, error) {
		return NamespaceDel{Prefix: a[1]}, nonEmptyPrefix(a[1])
	}), prefixKey),
}

// prefixKey is a namespace command's key: the prefix, its first argument.
var prefixKey = KeySpec{Begin: atIndex(1), Find: keysRange(0, 1, 0)}

func nonEmptyPrefix(p []byte) error {
	if len(p) == 0 {
		return Error("ERR the namespace prefix must not be empty")
	}
	return nil
}

func parseNamespaceSet(_ string, a [][]byte) (Op, error) {
	op := NamespaceSet{Prefix: a[1], MaxTTL: -1, DefaultTTL: -1, MaxWaiters: -1, Rate: -1, LockDelay: -1}
	if err := nonEmptyPrefix(op.Prefix); err != nil {
		return nil, err
	}
	for i := 2; i < len(a); i += 2 {
		if i+1 >= len(a) {
			return nil, ErrSyntax
		}
		opt, v := strings.ToLower(string(a[i])), a[i+1]
		num := func(lo, hi int64, what string) (int64, error) {
			n, ok := ParseInt(v)
			if !ok {
				return 0, ErrNotInt
			}
			if n < lo || n > hi {
				return 0, Error("ERR " + what)
			}
			return n, nil
		}
		var err error
		switch opt {
		case "maxttl":
			op.MaxTTL, err = num(1, 1<<40, "MAXTTL must be a positive number of ms")
		case "defaultttl":
			op.DefaultTTL, err = num(1, 1<<40, "DEFAULTTTL must be a positive number of ms")
		case "maxwaiters":
			op.MaxWaiters, err = num(0, 1_000_000, "MAXWAITERS must be between 0 and 1000000")
		case "rate":
			op.Rate, err = num(0, 10_000_000, "RATE must be between 0 (unlimited) and 10000000 operations per second")
		case "lockdelay":
			op.LockDelay, err = num(0, MaxLockDelay, "LOCKDELAY must be between 0 and 60000 ms")
		case "safety":
			switch s := strings.ToLower(string(v)); s {
			case "efficiency", "correctness":
				op.Safety = s
			default:
				return nil, Error("ERR SAFETY must be 'efficiency' or 'correctness'")
			}
		case "fencedby":
			op.FencedBy, op.FencedBySet = v, true
		default:
			return nil, ErrSyntax
		}
		if err != nil {
			return nil, err
		}
	}
	return op, nil
}
