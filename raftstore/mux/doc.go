// Package mux shares a node's single peer port among every Raft group's transport and request forwarding, routing each inbound connection by the one-byte header its dialer sends first, once the connection has proved it comes from a peer (mutual TLS with an optional certificate check, and the cluster secret's challenge-response; see auth.go).
package mux
