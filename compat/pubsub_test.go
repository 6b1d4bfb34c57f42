package compat

// Pub/sub: subscriptions, confirmations, messages (RESP2 arrays, RESP3 pushes),
// the RESP2 subscribed-mode restrictions and PING reply, PUBSUB introspection.
// Connection 1 publishes; connection 0 subscribes and reads.

var pubsubCases = []tcase{
	{name: "SUBSCRIBE and messages", steps: []step{
		cmd("SUBSCRIBE", "a", "b"),
		raw("", 1), // the second confirmation
		cmd("PUBLISH", "a", "hello").on(1),
		raw("", 1), // the message
		cmd("PUBLISH", "nobody", "x").on(1),
		cmd("PUBLISH", "b", "\x00bin\r\n").on(1),
		raw("", 1),
		cmd("PUBSUB", "NUMSUB", "a", "b", "c").on(1),
		cmd("PUBSUB", "CHANNELS").on(1).with(unordered),
		cmd("PUBSUB", "CHANNELS", "a*").on(1),
		cmd("PUBSUB", "NUMPAT").on(1),
		cmd("UNSUBSCRIBE", "a"),
		cmd("PUBLISH", "a", "gone").on(1),
		cmd("UNSUBSCRIBE"),
		cmd("UNSUBSCRIBE"),
		cmd("PING"),
	}},
	{name: "PSUBSCRIBE", steps: []step{
		cmd("PSUBSCRIBE", "news.*", "h?llo"),
		raw("", 1),
		cmd("PUBLISH", "news.sport", "goal").on(1),
		raw("", 1),
		cmd("PUBLISH", "hello", "x").on(1),
		raw("", 1),
		cmd("PUBSUB", "NUMPAT").on(1),
		cmd("PUNSUBSCRIBE", "news.*"),
		cmd("PUNSUBSCRIBE"),
		cmd("PUNSUBSCRIBE"),
	}},
	{name: "subscribed mode", proto: 2, steps: []step{
		cmd("SUBSCRIBE", "a"),
		cmd("PING"),
		cmd("PING", "x"),
		cmd("GET", "k"),
		cmd("SET", "k", "v"),
		cmd("NOSUCH"),
		cmd("UNSUBSCRIBE", "a"),
		cmd("GET", "k"),
	}},
	{name: "RESP3 commands while subscribed", proto: 3, steps: []step{
		cmd("SET", "k", "v"),
		cmd("SUBSCRIBE", "a"),
		cmd("GET", "k"),
		cmd("PING"),
		cmd("PUBLISH", "a", "m").on(1),
		raw("", 1),
		cmd("UNSUBSCRIBE", "a"),
	}},
	{name: "pubsub errors", steps: []step{
		cmd("SUBSCRIBE"),
		cmd("PSUBSCRIBE"),
		cmd("PUBLISH", "a"),
		cmd("PUBSUB"),
		cmd("PUBSUB", "FOO"),
		cmd("PUBSUB", "NUMSUB"),
		cmd("PUBSUB", "NUMPAT", "x"),
		cmd("MULTI"),
		cmd("PUBLISH", "a", "b"),
		cmd("EXEC"),
	}},
}
