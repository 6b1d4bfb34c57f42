package timerslack

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func apply(slack time.Duration) error {
	if _, again := os.LookupEnv(reexecMark); again {
		os.Unsetenv(reexecMark) // not for whatever this process starts
		return nil
	}
	// The prctl and the exec on one thread: exec keeps the slack of the
	// thread that calls it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if current() == slack {
		return nil
	}
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(slack.Nanoseconds()), 0, 0, 0); err != nil {
		return fmt.Errorf("timer slack: prctl: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("timer slack: %w", err)
	}
	if err := os.Setenv(reexecMark, "1"); err != nil {
		return fmt.Errorf("timer slack: %w", err)
	}
	err = syscall.Exec(exe, os.Args, os.Environ())
	os.Unsetenv(reexecMark)
	return fmt.Errorf("timer slack: executing %s again: %w", exe, err)
}

func current() time.Duration {
	n, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		return 0
	}
	return time.Duration(n)
}
