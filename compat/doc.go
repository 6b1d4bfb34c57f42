// Package compat holds the differential suite: the same command sequences are
// sent to a real redis-server (7.0.15, on PATH) and to an in-process lockd, and
// the raw reply bytes are compared. Everything lives in the _test.go files:
//
//	go test ./compat/                                 # redis-server vs lockd
//	go test ./compat/ -run 'TestCompat/set/SET_NX_XX' # one case
//	COMPAT_VERBOSE=1 go test -v ./compat/ -run …      # log both replies of every step
//	COMPAT_TARGET=redis go test ./compat/             # redis-server vs a second redis-server
//	go test -tags compat_redis ./compat/              # the same, without building lockd
//
// The harness is in harness_test.go (servers, raw client, runner) and
// resp_test.go (reply frames); the only allowed differences are named in
// normalize_test.go; the cases are grouped by family in the other files.
package compat
