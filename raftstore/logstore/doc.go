// Package logstore implements hashicorp/raft's LogStore and StableStore on a badger v4 database (one per node, or one per Store of its own) and a journal whose files also hold the log's recent entries (journal.go, tail.go).
package logstore
