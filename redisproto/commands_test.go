package redisproto

import (
	"strconv"
	"strings"
	"testing"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

func cmdArgs(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// runSub runs a registered subcommand the way the front door does.
func runSub(t *testing.T, container, sub string, a ...string) resp.Value {
	t.Helper()
	s := locals[container].sub[sub]
	if s == nil || s.run == nil {
		t.Fatalf("%s %s is not registered", container, sub)
	}
	return s.run(nil, cmdArgs(append([]string{container, sub}, a...)...))
}

// COMMAND COUNT, COMMAND and COMMAND LIST describe the same commands.
func TestCommandCountListConsistent(t *testing.T) {
	all := cmdCommand(nil, cmdArgs("command"))
	count := runSub(t, "command", "count")
	list := runSub(t, "command", "list")
	if count.Kind != resp.KindInt || all.Kind != resp.KindArray || list.Kind != resp.KindArray {
		t.Fatalf("kinds: COUNT %v, COMMAND %v, LIST %v", count.Kind, all.Kind, list.Kind)
	}
	if int(count.Int) != len(all.Elems) || len(all.Elems) != len(list.Elems) {
		t.Fatalf("COMMAND COUNT = %d, len(COMMAND) = %d, len(COMMAND LIST) = %d", count.Int, len(all.Elems), len(list.Elems))
	}
	for i, e := range all.Elems {
		if got, want := string(list.Elems[i].Str), string(e.Elems[0].Str); got != want {
			t.Errorf("COMMAND LIST[%d] = %q, COMMAND[%d] is %q", i, got, i, want)
		}
	}
	if info := cmdCommandInfo(nil, cmdArgs("command", "info")); string(resp.Append(nil, info, 3)) != string(resp.Append(nil, all, 3)) {
		t.Error("COMMAND INFO without names differs from COMMAND")
	}
}

// Every command and subcommand has its COMMAND INFO / DOCS description, and
// that description agrees with the arity the command is run with.
func TestCommandMetaComplete(t *testing.T) {
	var missing []string
	for _, s := range allSpecs() {
		for _, c := range append([]*localSpec{s}, subSpecs(s)...) {
			m, ok := command.Meta(c.Name)
			if !ok {
				missing = append(missing, c.Name)
				continue
			}
			if m.Arity != c.Arity {
				t.Errorf("%s: command.Meta arity %d, but it runs with arity %d", c.Name, m.Arity, c.Arity)
			}
			if m.Doc.Summary == "" || m.Doc.Since == "" || m.Doc.Group == "" {
				t.Errorf("%s: incomplete Doc %+v", c.Name, m.Doc)
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("no command.Meta entry (command/meta.go) for: %s", strings.Join(missing, ", "))
	}
}

// The rendering, byte for byte, against what redis-server 7.0.15 replies.
func TestCommandInfoBytes(t *testing.T) {
	const setEntry2 = "*10\r\n$3\r\nset\r\n:-3\r\n*2\r\n+write\r\n+denyoom\r\n:1\r\n:1\r\n:1\r\n*3\r\n+@write\r\n+@string\r\n+@slow\r\n*0\r\n" +
		"*1\r\n*8\r\n$5\r\nnotes\r\n$48\r\nRW and ACCESS due to the optional `GET` argument\r\n$5\r\nflags\r\n*4\r\n+RW\r\n+access\r\n+update\r\n+variable_flags\r\n" +
		"$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n" +
		"$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*0\r\n"
	const setEntry3 = "*10\r\n$3\r\nset\r\n:-3\r\n~2\r\n+write\r\n+denyoom\r\n:1\r\n:1\r\n:1\r\n~3\r\n+@write\r\n+@string\r\n+@slow\r\n~0\r\n" +
		"~1\r\n%4\r\n$5\r\nnotes\r\n$48\r\nRW and ACCESS due to the optional `GET` argument\r\n$5\r\nflags\r\n~4\r\n+RW\r\n+access\r\n+update\r\n+variable_flags\r\n" +
		"$12\r\nbegin_search\r\n%2\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n%1\r\n$5\r\nindex\r\n:1\r\n" +
		"$9\r\nfind_keys\r\n%2\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n%3\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n~0\r\n"
	tests := []struct {
		args  []string
		proto int
		want  string
	}{
		{[]string{"SET", "nosuch"}, 2, "*2\r\n" + setEntry2 + "$-1\r\n"},
		{[]string{"set", "nosuch"}, 3, "*2\r\n" + setEntry3 + "_\r\n"},
		{[]string{"PUBSUB|NUMSUB"}, 2, "*1\r\n*10\r\n$13\r\npubsub|numsub\r\n:-2\r\n*3\r\n+pubsub\r\n+loading\r\n+stale\r\n:0\r\n:0\r\n:0\r\n*2\r\n+@pubsub\r\n+@slow\r\n*0\r\n*0\r\n*0\r\n"},
		{[]string{"pubsub|numsub"}, 3, "*1\r\n*10\r\n$13\r\npubsub|numsub\r\n:-2\r\n~3\r\n+pubsub\r\n+loading\r\n+stale\r\n:0\r\n:0\r\n:0\r\n~2\r\n+@pubsub\r\n+@slow\r\n~0\r\n~0\r\n~0\r\n"},
		{[]string{"client|", "get|x", "client|id|x", "client|nosuch"}, 2, "*4\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n"},
	}
	for _, tc := range tests {
		v := cmdCommandInfo(nil, cmdArgs(append([]string{"command", "info"}, tc.args...)...))
		if got := string(resp.Append(nil, v, tc.proto)); got != tc.want {
			t.Errorf("COMMAND INFO %v (RESP%d):\n got  %q\n want %q", tc.args, tc.proto, got, tc.want)
		}
	}
}

func TestCommandDocsBytes(t *testing.T) {
	// Redis's reply less its arguments tree, which lockd does not report.
	const want = "%1\r\n$5\r\nhmset\r\n%7\r\n$7\r\nsummary\r\n$43\r\nSet multiple hash fields to multiple values\r\n" +
		"$5\r\nsince\r\n$5\r\n2.0.0\r\n$5\r\ngroup\r\n$4\r\nhash\r\n$10\r\ncomplexity\r\n$47\r\nO(N) where N is the number of fields being set.\r\n" +
		"$9\r\ndoc_flags\r\n~1\r\n+deprecated\r\n$16\r\ndeprecated_since\r\n$5\r\n4.0.0\r\n$11\r\nreplaced_by\r\n$38\r\n`HSET` with multiple field-value pairs\r\n"
	v := cmdCommandDocs(nil, cmdArgs("command", "docs", "HMSET", "nosuch"))
	if got := string(resp.Append(nil, v, 3)); got != want {
		t.Errorf("COMMAND DOCS HMSET nosuch:\n got  %q\n want %q", got, want)
	}
	v = cmdCommandDocs(nil, cmdArgs("command", "docs", "pubsub"))
	got := string(resp.Append(nil, v, 3))
	for _, sub := range []string{"pubsub|channels", "pubsub|help", "pubsub|numpat", "pubsub|numsub"} {
		if !strings.Contains(got, "$"+strconv.Itoa(len(sub))+"\r\n"+sub+"\r\n") {
			t.Errorf("COMMAND DOCS pubsub lacks %s: %q", sub, got)
		}
	}
	if !strings.Contains(got, "$11\r\nsubcommands\r\n%4\r\n") {
		t.Errorf("COMMAND DOCS pubsub: subcommands map: %q", got)
	}
}

func TestFindSpec(t *testing.T) {
	for name, want := range map[string]string{
		"get": "get", "GET": "get", "client": "client", "CLIENT|ID": "client|id", "command|docs": "command|docs",
		"client|": "", "client|id|x": "", "get|x": "", "ping|x": "", "nosuch": "", "|id": "",
	} {
		s := findSpec([]byte(name))
		got := ""
		if s != nil {
			got = s.Name
		}
		if got != want {
			t.Errorf("findSpec(%q) = %q, want %q", name, got, want)
		}
	}
}

// CLIENT LIST's idle counts from a connection's last command, whichever
// path served it (the event loop or the connection's goroutine): a client
// that waited over a second shows idle≥1, and idle=0 once it sends one.
func TestClientListIdle(t *testing.T) {
	for name, start := range map[string]func(*testing.T, Config, Store) *Server{
		"goroutine": startServer, "loop": startLoopServer,
	} {
		t.Run(name, func(t *testing.T) {
			s := start(t, Config{}, newFSMStore())
			c, watcher := dialClient(t, s.Addr()), dialClient(t, s.Addr())
			id := "id=" + strconv.FormatInt(clientID(t, c), 10) + " "
			idle := func() string {
				for _, line := range strings.Split(watcher.do("CLIENT", "LIST"), "\n") {
					if strings.Contains(line, id) {
						_, rest, _ := strings.Cut(line, " idle=")
						v, _, _ := strings.Cut(rest, " ")
						return v
					}
				}
				return "?"
			}
			waitFor(t, "the client shows idle=1", func() bool { return idle() == "1" })
			if got := c.do("GET", "k"); got != "$-1\r\n" {
				t.Fatalf("GET: %q", got)
			}
			if got := idle(); got != "0" {
				t.Fatalf("idle=%s right after a command, want 0", got)
			}
		})
	}
}
