// Package mux shares a node's single peer port among every Raft group's transport and request forwarding, routing each inbound connection by the one-byte header its dialer sends first.
package mux
