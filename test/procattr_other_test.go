//go:build !linux

package test

import "os/exec"

// dieWithTest: only Linux can tie a child's life to its parent's; elsewhere
// t.Cleanup alone kills the processes.
func dieWithTest(*exec.Cmd) {}
