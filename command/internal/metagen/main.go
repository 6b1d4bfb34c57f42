// Command metagen writes command's table of Redis command metadata
// (meta_redis.go: what COMMAND INFO and COMMAND DOCS report) from Redis
// 7.0.15's own command descriptions, the src/commands/*.json files checked in
// under command/redisjson. It is run by go generate in
// command:
//
//	go run ./internal/metagen -in redisjson -out meta_redis.go
//
// It applies what redis-server derives from those files when it starts
// (implicit ACL categories, the legacy first/last/step key range, the
// movablekeys flag, the display names and orders of flags), so that the table
// renders byte for byte as that Redis answers. A flag, category or group it
// does not know fails the run.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
)

func main() {
	in := flag.String("in", "redisjson", "directory of Redis's src/commands/*.json files")
	out := flag.String("out", "meta_redis.go", "Go file to write")
	flag.Parse()
	src, err := generate(*in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "metagen:", err)
		os.Exit(1)
	}
	if old, err := os.ReadFile(*out); err == nil && bytes.Equal(old, src) {
		return // unchanged: keep the file's time stamp
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "metagen:", err)
		os.Exit(1)
	}
}
