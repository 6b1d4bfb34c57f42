package compat

// REPLICAOF/SLAVEOF and ROLE as a master answers them: their argument
// errors, NO ONE on a server that follows nobody, and ROLE of a master.
// Following a real master is checked in test/replicaof_test.go.
var replicationCases = []tcase{
	{name: "REPLICAOF errors and NO ONE", steps: []step{
		cmd("REPLICAOF", "NO", "ONE"),
		cmd("REPLICAOF", "no", "one"),
		cmd("SLAVEOF", "NO", "ONE"),
		cmd("REPLICAOF", "127.0.0.1", "+6379"),
		cmd("REPLICAOF", "127.0.0.1", "06379"),
		cmd("REPLICAOF", "127.0.0.1", "70000"),
		cmd("REPLICAOF", "127.0.0.1", "-1"),
		cmd("REPLICAOF", "127.0.0.1", "port"),
		cmd("REPLICAOF", "127.0.0.1"),
		cmd("SLAVEOF", "a", "b", "c"),
		cmd("ROLE"),
		cmd("ROLE", "x"),
	}},
}
