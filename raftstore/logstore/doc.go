// Package logstore implements hashicorp/raft's LogStore and StableStore on a badger v4 database, one database per Raft group.
package logstore
