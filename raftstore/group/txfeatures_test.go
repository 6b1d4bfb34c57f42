package group

import (
	"context"
	"testing"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// listDump is redis-server 7.0.15's DUMP of the list [a b] (a quicklist of
// one listpack, RDB version 10).
const listDump = "\x12\x01\x02\r\r\x00\x00\x00\x02\x00\x81a\x02\x81b\x02\xff\n\x00h\xeb\n\x89\x13A\xbb\xb1"

// A transaction whose queued commands need a feature turns it on as the
// same command outside MULTI does (ensureFeature): MULTI RPUSH … EXEC
// (FeatureCollections) and MULTI RESTORE … EXEC (FeatureMigration too) as a
// fresh group's first such write succeed, rather than being refused by the
// state machine until a top-level write turned the feature on. (Before the
// fix this failed whenever the request beat the leader's settings tick,
// most runs.)
func TestTxTurnsOnQueuedCommandsFeatures(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write [][]byte
	}{
		{"RPUSH", [][]byte{[]byte("RPUSH"), []byte("q"), []byte("a"), []byte("b")}},
		{"RESTORE", [][]byte{[]byte("RESTORE"), []byte("q"), []byte("0"), []byte(listDump)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 3)
			_, leader := c.leader()
			tx := command.Request{Op: command.Tx{Cmds: [][][]byte{
				tc.write,
				{[]byte("LRANGE"), []byte("q"), []byte("0"), []byte("-1")},
			}}, Spec: command.TxSpec}
			v := leader.Do(context.Background(), []command.Request{tx})[0]
			if got := string(resp.Append(nil, v, 2)); got != "*2\r\n"+map[string]string{"RPUSH": ":2\r\n", "RESTORE": "+OK\r\n"}[tc.name]+
				"*2\r\n$1\r\na\r\n$1\r\nb\r\n" {
				t.Fatalf("MULTI %s q …; LRANGE q 0 -1; EXEC as the group's first such write = %q", tc.name, got)
			}
			c.converge()
		})
	}
}
