package test

import (
	"os/exec"
	"syscall"
)

// dieWithTest makes the kernel kill cmd when the test binary dies (a panic, a
// timeout, a kill), so that no lockd outlives the test that started it.
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
