//go:build faults

package main

import (
	"io"
	"strings"
	"testing"
)

// The hidden fault flags stay out of the reference: they exist only with
// LOCKD_FAULT_INJECTION=1, which newFlagSet does not look at.
func TestConfigurationReferenceHidesFaultFlags(t *testing.T) {
	t.Setenv(faultEnv, "1")
	fs, _ := newFlagSet(io.Discard)
	if ref := flagReference(fs); strings.Contains(ref, "fault-control") || strings.Contains(ref, "planted") {
		t.Fatalf("the reference shows a hidden fault flag:\n%s", ref)
	}
	registerFaultFlags(fs)
	if fs.Lookup("fault-control") == nil {
		t.Fatal("with LOCKD_FAULT_INJECTION=1 the fault flags are registered on lockd's flag set")
	}
}
