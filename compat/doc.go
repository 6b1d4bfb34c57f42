// Package compat holds the differential suite: the same command sequences are
// sent to a real redis-server and to an in-process lockd, and the raw reply
// bytes are compared. Everything lives in the _test.go files; run it with
// `go test ./compat/`.
package compat
