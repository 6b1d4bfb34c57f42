//go:build unix

package server

import "syscall"

// openFileLimit is the process's limit on open descriptors (RLIMIT_NOFILE,
// the soft limit, which Go raises to the hard one at start), or 0 if unknown.
func openFileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur >= 1<<62 { // RLIM_INFINITY
		return 0
	}
	return rl.Cur
}
