package command

// The rows of the commands the front door (redisproto) answers itself
// (HandlerDoor): redisproto registers one handler under each row's name and
// checks that every row has one (a container without a handler of its own
// answers the arity error, as Redis does). Most never reach a group
// (RouteLocal); those that send an internal Op to the store carry the Route
// of that Op, and their rows are the Spec of the Op's request (TxSpec,
// VersionsSpec, AdminSpec, ScriptLoadSpec, …).

func door(name string) *Spec {
	return row(name, 0, RouteLocal, HandlerDoor, nil)
}

// doorTo is a door command whose handler sends an Op routed by route.
func doorTo(name string, flags Flags, route Route) *Spec {
	return row(name, flags, route, HandlerDoor, nil)
}

var doorRows = []*Spec{
	door("ping"),
	door("echo"),
	door("quit"),
	door("select"),
	door("auth"),
	door("hello"),
	door("time"),
	door("wait"),
	door("info"),
	door("monitor"),
	door("replicaof"),
	door("slaveof"),
	door("role"),

	door("client"),
	door("client|id"),
	door("client|getname"),
	door("client|setname"),
	door("client|setinfo"),
	door("client|info"),
	door("client|list"),
	door("client|kill"),
	door("client|no-evict"),
	door("client|no-touch"),
	door("client|tracking"),
	door("client|caching"),
	door("client|getredir"),
	door("client|trackinginfo"),
	door("client|help"),

	door("config"),
	door("config|get"),
	door("config|set"),
	door("config|resetstat"),
	door("config|help"),

	door("command"),
	door("command|count"),
	door("command|info"),
	door("command|docs"),
	door("command|list"),
	door("command|help"),

	// MULTI/EXEC and WATCH: EXEC sends the transaction (Tx, routed by its
	// commands' keys), WATCH asks for the keys' versions (Versions).
	door("multi"),
	doorTo("exec", FlagWrite, RouteKeys),
	door("discard"),
	doorTo("watch", 0, RouteKeys),
	door("unwatch"),

	door("subscribe"),
	door("psubscribe"),
	door("unsubscribe"),
	door("punsubscribe"),
	door("pubsub"),
	door("pubsub|channels"),
	door("pubsub|numsub"),
	door("pubsub|numpat"),
	door("pubsub|help"),

	door("slowlog"),
	door("slowlog|get"),
	door("slowlog|len"),
	door("slowlog|reset"),
	door("slowlog|help"),

	// Redis Cluster's view of the shards; CLUSTER SLOTS|SHARDS|NODES ask
	// group 0 for the members (an Admin "members" request).
	door("cluster"),
	door("cluster|keyslot"),
	door("cluster|myid"),
	door("cluster|info"),
	door("cluster|slots"),
	door("cluster|shards"),
	door("cluster|nodes"),
	door("cluster|help"),
	door("asking"),
	door("readonly"),
	door("readwrite"),

	// RAFT: every subcommand's request is an Admin Op whose Spec is the
	// container's row (AdminSpec); RouteAdmin decides by the Op's action.
	doorTo("raft", FlagWrite, RouteAdmin),
	doorTo("raft|add", FlagWrite, RouteAdmin),
	doorTo("raft|remove", FlagWrite, RouteAdmin),
	doorTo("raft|transfer", FlagWrite, RouteAdmin),
	doorTo("raft|members", 0, RouteGroupZero),
	doorTo("raft|groups", 0, RouteGroupZero),
	doorTo("raft|moveslots", FlagWrite, RouteGroupZero),
	doorTo("raft|addgroups", FlagWrite, RouteGroupZero),
	door("raft|help"),

	// SCRIPT: LOAD and FLUSH change the replicated script cache of every
	// group (a KindScript entry); EXISTS asks group 0.
	door("script"),
	doorTo("script|load", FlagWrite, RouteEveryGroup),
	doorTo("script|exists", 0, RouteGroupZero),
	doorTo("script|flush", FlagWrite, RouteEveryGroup),
	door("script|kill"),
	door("script|help"),

	// ACL: users are replicated. SETUSER and DELUSER are log entries whose
	// arguments are the command's (passwords hashed: HashACLPasswords), so
	// their rows parse; the rest read the local replica's table.
	door("acl"),
	withParser(doorTo("acl|setuser", FlagWrite, RouteEveryGroup), func(_ string, a [][]byte) (Op, error) {
		return ACLSetUser{Name: a[2], Rules: a[3:]}, nil
	}),
	withParser(doorTo("acl|deluser", FlagWrite, RouteEveryGroup), func(_ string, a [][]byte) (Op, error) {
		return ACLDelUser{Names: a[2:]}, nil
	}),
	door("acl|getuser"),
	door("acl|list"),
	door("acl|users"),
	door("acl|whoami"),
	door("acl|cat"),
	door("acl|genpass"),
	door("acl|help"),
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
