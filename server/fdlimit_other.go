//go:build !unix

package server

// openFileLimit is unknown here: no descriptor budget is applied.
func openFileLimit() uint64 { return 0 }
