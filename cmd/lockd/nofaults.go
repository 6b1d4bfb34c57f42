//go:build !faults

package main

import (
	"flag"

	"github.com/lockd/lockd/server"
)

// faultFlags is empty in the default build: lockd has no fault flags and no
// /debug/faults, whatever its environment says. A binary for the fault suite
// is built with -tags faults (faults.go).
type faultFlags struct{}

// registerFaultFlags registers nothing.
func registerFaultFlags(*flag.FlagSet) *faultFlags { return &faultFlags{} }

// apply leaves cfg as it is.
func (*faultFlags) apply(*server.Config) error { return nil }
