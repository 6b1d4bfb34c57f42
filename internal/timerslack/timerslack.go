// Package timerslack sets how late the kernel may wake a sleeping thread of
// lockd (Linux's per-thread timer slack), so that it can fold wake-ups
// together.
//
// Why lockd cares: Go's scheduler monitor (sysmon) polls every 20 µs
// whenever a process turns busy after being idle, and a lock server turns
// busy and idle again hundreds of times a second; on a virtual machine each
// of those sleeps is a pair of costly context switches (cmd/lockd/DESIGN.md,
// for what it cost and what 1 ms of slack saves). Every timer of the process
// may then fire up to the slack late, never early: lock and session expiry,
// Raft's timeouts and the wait deadlines are late by at most that.
//
// A thread inherits its slack from the thread that creates it, and sysmon's
// thread exists before main runs; so Apply sets the slack of the calling
// thread and executes the program again, whose every thread then starts with
// it. Called once, early in main, before anything is opened.
package timerslack

import "time"

// reexecMark is set in the environment of the program Apply executes again,
// so that a kernel that does not keep the slack (a real-time thread's is 0)
// cannot make it execute itself forever.
const reexecMark = "LOCKD_INTERNAL_TIMER_SLACK_APPLIED"

// Apply makes slack the timer slack of every thread of this process, by
// executing the program again with the same arguments and environment when
// the current slack differs (on success it does not return). It returns nil
// when the slack already is slack, when slack is 0 (leave it as inherited),
// off Linux, or after one re-execution. It blocks only for the exec.
func Apply(slack time.Duration) error {
	if slack <= 0 {
		return nil
	}
	return apply(slack)
}

// Current is the calling thread's timer slack (0 where unknown: off Linux).
func Current() time.Duration { return current() }
