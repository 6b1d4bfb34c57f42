// Package test holds lockd's fault-injection suites: real lockd processes are
// killed, restarted and driven by real tools, and their histories are checked for
// the guarantees of DESIGN.md §1.
package test
