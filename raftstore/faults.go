//go:build faults

package raftstore

import "github.com/lockd/lockd/raftstore/group"

// FaultClock is group.FaultClock, a monotonic clock for fault-injection
// tests (Config.Now). It builds only with the faults tag.
type FaultClock = group.FaultClock

// NewFaultClock returns a clock that reads like time.Now until changed
// (group.NewFaultClock).
func NewFaultClock() *FaultClock { return group.NewFaultClock() }
