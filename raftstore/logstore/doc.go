// Package logstore implements hashicorp/raft's LogStore and StableStore on a badger v4 database (one per node: a Shared of several groups, or a Store of its own opened with Open) and a journal whose files also hold the log's recent entries (journal.go, tail.go).
package logstore
