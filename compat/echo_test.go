package compat

import "strings"

// Errors that echo a client's argument: Redis words them with
// addReplyErrorFormat, so the argument is a C string (cut at its first NUL
// byte, "%.128s" also at 128 bytes), CR and LF at the end of the text are
// trimmed and those inside it written as spaces. Every such error lockd
// answers is here with a NUL and a trailing CRLF in the echoed argument.
// (CONFIG SET of a parameter lockd does not support is lockd's own error;
// CLIENT SETINFO is not in Redis 7.0.15: both are left out.)
var echoCases = []tcase{
	{name: "HELLO option", steps: []step{
		cmd("HELLO", "2", "fo\x00o\r\n"),
		cmd("HELLO", "2", "foo\r\n"),
		cmd("HELLO", "2", "\r\nfoo"),
		cmd("HELLO", "2", "a\rb\nc"),
		cmd("HELLO", "2", "\x00"),
		cmd("PING"),
	}},
	{name: "CLIENT subcommands", steps: []step{
		cmd("CLIENT", "no\x00pe\r\n"),
		cmd("CLIENT", "nope\r\n"),
		cmd("CLIENT", strings.Repeat("s", 127)+"\r\n"),
		cmd("CLIENT", "LIST", "TYPE", "a\x00b\r\n"),
		cmd("CLIENT", "LIST", "TYPE", "ab\r\n"),
		cmd("CLIENT", "KILL", "USER", "ab\r\n"),
		cmd("CLIENT", "KILL", "USER", "a\x00b"),
		cmd("CLIENT", "KILL", "USER", "default", "SKIPME", "yes"),
		cmd("CLIENT", "SETNAME", "a\x00b"),
		cmd("CLIENT", "SETNAME", "ab\r\n"),
		cmd("PING"),
	}},
	{name: "ACL CAT and SETUSER", steps: []step{
		cmd("ACL", "CAT", "ab\x00c\r\n"),
		cmd("ACL", "CAT", "ab\r\n"),
		cmd("ACL", "CAT", strings.Repeat("x", 200)),
		cmd("ACL", "CAT", strings.Repeat("y", 127)+"\r\n"),
		cmd("ACL", "SETUSER", "echo-user", "+get\r\n"),
		cmd("ACL", "SETUSER", "echo-user", "bad\r\n"),
		cmd("ACL", "SETUSER", "echo-user", "ba\x00d\r\n"),
		cmd("ACL", "SETUSER", "echo-user", "on", "\r\nbad"),
		cmd("ACL", "USERS"),
	}},
	{name: "EXPIRE option", steps: []step{
		cmd("SET", "k", "v"),
		cmd("EXPIRE", "k", "10", "a\x00b\r\n"),
		cmd("EXPIRE", "k", "10", "ab\r\n"),
		cmd("PEXPIRE", "k", "10", "x\ry"),
		cmd("TTL", "k"),
	}},
	{name: "unknown command and subcommand", steps: []step{
		cmd("fo\x00o\r\n", "a\x00b\r\n"),
		cmd("foo\r\n"),
		cmd("foo", "a\r\n"),
		cmd("ACL", "nope\r\n"),
		cmd("CONFIG", "no\x00pe"),
	}},
	{name: "CLIENT TRACKING prefixes", steps: []step{
		cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "x\r\n", "PREFIX", "x"),
		cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "y", "PREFIX", "y\r\n"),
		cmd("CLIENT", "TRACKINGINFO"),
	}},
}
