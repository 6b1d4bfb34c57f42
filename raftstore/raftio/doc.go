// Package raftio holds the adapters between hashicorp/raft and lockd that
// need nothing of a group: LogCache (the newest log entries in memory, small
// ones only), SlogWriter (hashicorp/raft's own log lines into slog) and
// WithDialVia (peer dials through a proxy, for fault tests). A group
// (raftstore/group) puts them around its Raft instance; the adapters wired
// into a group's state machine and Raft (the durability rule, the
// appendpipe wiring) stay in that package.
//
// Files: logcache.go, hclogslog.go, dialvia.go.
package raftio
