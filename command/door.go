package command

// The rows of the commands the front door (redisproto) answers itself
// (HandlerDoor): redisproto registers one handler under each row's name and
// checks that every row has one (a container without a handler of its own
// answers the arity error, as Redis does). Most never reach a group
// (RouteLocal); those that send an internal Op to the store carry the Route
// of that Op, and their rows are the Spec of the Op's request (TxSpec,
// VersionsSpec, AdminSpec, ScriptLoadSpec, …).

func door(name string, arity int) *Spec {
	return row(name, arity, 0, RouteLocal, HandlerDoor, nil)
}

// doorTo is a door command whose handler sends an Op routed by route.
func doorTo(name string, arity int, flags Flags, route Route) *Spec {
	return row(name, arity, flags, route, HandlerDoor, nil)
}

var doorRows = []*Spec{
	door("ping", -1),
	door("echo", 2),
	door("quit", -1),
	door("select", 2),
	door("auth", -2),
	door("hello", -1),
	door("time", 1),
	door("wait", 3),
	door("info", -1),
	door("monitor", 1),

	door("client", -2),
	door("client|id", 2),
	door("client|getname", 2),
	door("client|setname", 3),
	door("client|setinfo", 4),
	door("client|info", 2),
	door("client|list", -2),
	door("client|kill", -3),
	door("client|no-evict", 3),
	door("client|no-touch", 3),
	door("client|help", 2),

	door("config", -2),
	door("config|get", -3),
	door("config|set", -4),
	door("config|resetstat", 2),
	door("config|help", 2),

	door("command", -1),
	door("command|count", 2),
	door("command|info", -2),
	door("command|docs", -2),
	door("command|list", -2),
	door("command|help", 2),

	// MULTI/EXEC and WATCH: EXEC sends the transaction (Tx, routed by its
	// commands' keys), WATCH asks for the keys' versions (Versions).
	door("multi", 1),
	doorTo("exec", 1, FlagWrite, RouteKeys),
	door("discard", 1),
	doorTo("watch", -2, 0, RouteKeys),
	door("unwatch", 1),

	door("subscribe", -2),
	door("psubscribe", -2),
	door("unsubscribe", -1),
	door("punsubscribe", -1),
	door("pubsub", -2),
	door("pubsub|channels", -2),
	door("pubsub|numsub", -2),
	door("pubsub|numpat", 2),
	door("pubsub|help", 2),

	door("slowlog", -2),
	door("slowlog|get", -2),
	door("slowlog|len", 2),
	door("slowlog|reset", 2),
	door("slowlog|help", 2),

	// Redis Cluster's view of the shards; CLUSTER SLOTS|SHARDS|NODES ask
	// group 0 for the members (an Admin "members" request).
	door("cluster", -2),
	door("cluster|keyslot", 3),
	door("cluster|myid", 2),
	door("cluster|info", 2),
	door("cluster|slots", 2),
	door("cluster|shards", 2),
	door("cluster|nodes", 2),
	door("cluster|help", 2),
	door("asking", 1),
	door("readonly", 1),
	door("readwrite", 1),

	// RAFT: every subcommand's request is an Admin Op whose Spec is the
	// container's row (AdminSpec); RouteAdmin decides by the Op's action.
	doorTo("raft", -2, FlagWrite, RouteAdmin),
	doorTo("raft|add", 4, FlagWrite, RouteAdmin),
	doorTo("raft|remove", 3, FlagWrite, RouteAdmin),
	doorTo("raft|transfer", -2, FlagWrite, RouteAdmin),
	doorTo("raft|members", 2, 0, RouteGroupZero),
	doorTo("raft|groups", 2, 0, RouteGroupZero),
	doorTo("raft|moveslots", 5, FlagWrite, RouteGroupZero),
	door("raft|help", 2),

	// SCRIPT: LOAD and FLUSH change the replicated script cache of every
	// group (a KindScript entry); EXISTS asks group 0.
	door("script", -2),
	doorTo("script|load", 3, FlagWrite, RouteEveryGroup),
	doorTo("script|exists", -3, 0, RouteGroupZero),
	doorTo("script|flush", -2, FlagWrite, RouteEveryGroup),
	door("script|kill", 2),
	door("script|help", 2),

	// ACL: users are replicated. SETUSER and DELUSER are log entries whose
	// arguments are the command's (passwords hashed: HashACLPasswords), so
	// their rows parse; the rest read the local replica's table.
	door("acl", -2),
	withParser(doorTo("acl|setuser", -3, FlagWrite, RouteEveryGroup), func(_ string, a [][]byte) (Op, error) {
		return ACLSetUser{Name: a[2], Rules: a[3:]}, nil
	}),
	withParser(doorTo("acl|deluser", -3, FlagWrite, RouteEveryGroup), func(_ string, a [][]byte) (Op, error) {
		return ACLDelUser{Names: a[2:]}, nil
	}),
	door("acl|getuser", 3),
	door("acl|list", 2),
	door("acl|users", 2),
	door("acl|whoami", 2),
	door("acl|cat", -2),
	door("acl|genpass", -2),
	door("acl|help", 2),
}

// withParser gives a door row the parser of its log entry's arguments.
func withParser(s *Spec, p func(string, [][]byte) (Op, error)) *Spec {
	s.parse = p
	return s
}

// The rows of the internal Ops the door's commands send to the store: a
// request of one of these carries the row as its Spec.
var (
	// TxSpec is EXEC's row: a MULTI transaction (Tx).
	TxSpec = mustRow("exec")
	// VersionsSpec is WATCH's row: the versions of keys (Versions).
	VersionsSpec = mustRow("watch")
	// AdminSpec is RAFT's row: every cluster operation (Admin), those
	// between nodes included; MEMBERS is answered by any node.
	AdminSpec = mustRow("raft")
	// ScriptLoadSpec, ScriptExistsSpec and ScriptFlushSpec are SCRIPT
	// LOAD's, EXISTS's and FLUSH's rows.
	ScriptLoadSpec   = mustRow("script|load")
	ScriptExistsSpec = mustRow("script|exists")
	ScriptFlushSpec  = mustRow("script|flush")
	// ACLSetUserSpec and ACLDelUserSpec are ACL SETUSER's and DELUSER's
	// rows; Parse recognises their argument vectors, so that the log entry
	// and a forwarded request parse again.
	ACLSetUserSpec = mustRow("acl|setuser")
	ACLDelUserSpec = mustRow("acl|deluser")
)
