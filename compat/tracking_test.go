package compat

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// Client-side caching: CLIENT TRACKING / CACHING / GETREDIR / TRACKINGINFO,
// their errors, and the invalidations a tracking connection receives.
// Connection 0 tracks; connection 1 writes. An invalidation is read as the
// frame before the reply to a PING that follows the write (pingAfterPush):
// both servers queue it on connection 0 before they answer connection 1's
// write, so the order is fixed. Not here (timing): invalidations of keys
// that expire (redisproto's and the cluster tests cover lockd's).
//
// Redis 7.0.15 answers "CLIENT TRACKING ON BCAST PREFIX x PREFIX a PREFIX ab"
// (an overlap between two new prefixes that are not the first) with an error
// and then +OK, enabling tracking anyway (checkPrefixCollisionsOrReply
// returns the index); lockd answers the error alone and changes nothing, so
// the case is left out.

// pushThenPong reads an invalidation then the PONG of the PING it sends.
func pushThenPong() step { return raw("*1\r\n$4\r\nPING\r\n", 2) }

var trackingCases = []tcase{
	{name: "tracking errors", steps: []step{
		cmd("CLIENT", "TRACKING"),
		cmd("CLIENT", "TRACKING", "maybe"),
		cmd("CLIENT", "TRACKING", "on", "foo"),
		cmd("CLIENT", "TRACKING", "ON", "REDIRECT"),
		cmd("CLIENT", "TRACKING", "ON", "PREFIX"),
		cmd("CLIENT", "TRACKING", "ON", "REDIRECT", "x"),
		cmd("CLIENT", "TRACKING", "ON", "REDIRECT", "0"),
		cmd("CLIENT", "TRACKING", "ON", "REDIRECT", "987654"),
		cmd("CLIENT", "TRACKING", "OFF", "REDIRECT", "987654"),
		cmd("CLIENT", "TRACKING", "ON", "PREFIX", "a"),
		cmd("CLIENT", "TRACKING", "ON", "BCAST", "OPTIN"),
		cmd("CLIENT", "TRACKING", "ON", "OPTOUT", "BCAST"),
		cmd("CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT"),
		cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a", "PREFIX", "ab"),
		cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "ab", "PREFIX", "a"),
		cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "x\x00y", "PREFIX", "x"),
		cmd("CLIENT", "TRACKING", "maybe", "BCAST"),
		cmd("CLIENT", "CACHING", "YES"),
		cmd("CLIENT", "CACHING", "maybe"),
		cmd("CLIENT", "CACHING"),
		cmd("CLIENT", "CACHING", "yes", "no"),
		cmd("CLIENT", "GETREDIR", "x"),
		cmd("CLIENT", "TRACKINGINFO", "x"),
		cmd("CLIENT", "TRACKING", "OFF"),
		cmd("CLIENT", "TRACKINGINFO"),
		cmd("CLIENT", "GETREDIR"),
	}},
	{name: "tracking modes", steps: []step{
		cmd("CLIENT", "TRACKING", "ON"),
		cmd("CLIENT", "TRACKINGINFO"),
		cmd("CLIENT", "GETREDIR"),
		cmd("CLIENT", "CACHING", "YES"),
		cmd("CLIENT", "TRACKING", "ON", "BCAST"),
		cmd("CLIENT", "TRACKING", "ON", "OPTIN"),
		cmd("CLIENT", "CACHING", "NO"),
		cmd("CLIENT", "CACHING", "maybe"),
		cmd("CLIENT", "CACHING", "yes"),
		cmd("CLIENT", "TRACKINGINFO"),
		cmd("PING"),
		cmd("CLIENT", "TRACKINGINFO"),
		cmd("CLIENT", "TRACKING", "ON", "OPTOUT"),
		cmd("CLIENT", "TRACKING", "ON", "OPTIN", "NOLOOP"),
		cmd("CLIENT", "TRACKINGINFO"),
		cmd("CLIENT", "TRACKING", "ON", "NOLOOP"),
		cmd("CLIENT", "TRACKINGINFO"),
		cmd("CLIENT", "TRACKING", "off"),
		cmd("CLIENT", "TRACKING", "ON", "OPTOUT"),
		cmd("CLIENT", "CACHING", "YES"),
		cmd("CLIENT", "CACHING", "NO"),
		cmd("CLIENT", "TRACKINGINFO"),
		cmd("CLIENT", "TRACKING", "OFF"),
		cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "b", "PREFIX", "a"),
		cmd("CLIENT", "TRACKINGINFO"),
		cmd("CLIENT", "TRACKING", "ON"),
		cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "abc"),
		cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "c"),
		cmd("CLIENT", "TRACKING", "ON", "BCAST"),
		cmd("CLIENT", "TRACKINGINFO"),
		cmd("CLIENT", "GETREDIR"),
		cmd("CLIENT", "TRACKING", "OFF"),
		cmd("CLIENT", "TRACKINGINFO"),
		cmd("CLIENT", "TRACKING", "OFF"),
	}},
	{name: "tracking-table-max-keys", steps: []step{
		cmd("CONFIG", "GET", "tracking-table-max-keys"),
		cmd("CONFIG", "SET", "tracking-table-max-keys", "abc"),
		cmd("CONFIG", "SET", "tracking-table-max-keys", "-1"),
		cmd("CONFIG", "SET", "tracking-table-max-keys", "500"),
		cmd("CONFIG", "GET", "tracking-table-max-keys"),
		cmd("CONFIG", "SET", "tracking-table-max-keys", "1000000"),
	}},
	{name: "invalidation push", proto: 3, steps: []step{
		cmd("CLIENT", "TRACKING", "ON"),
		cmd("GET", "k"),
		cmd("SET", "k", "1").on(1),
		pushThenPong(),
		cmd("SET", "k", "2").on(1), // no longer tracked: nothing
		cmd("PING"),
		cmd("MGET", "a", "b", "k"),
		cmd("DEL", "b").on(1), // nothing deleted: nothing changed
		cmd("PING"),
		cmd("SET", "b", "x").on(1),
		pushThenPong(),
		cmd("MSET", "a", "x", "k", "y").on(1),
		raw("*1\r\n$4\r\nPING\r\n", 3),
		cmd("STRLEN", "c"),
		cmd("HSET", "c", "f", "v").on(1),
		pushThenPong(),
		cmd("HGET", "h", "f"),
		cmd("EXPIRE", "h", "100").on(1), // no key: nothing changes
		cmd("HSET", "h", "f", "v").on(1),
		pushThenPong(),
	}},
	{name: "invalidation of own writes", proto: 3, steps: []step{
		cmd("CLIENT", "TRACKING", "ON"),
		cmd("GET", "k"),
		raw("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\n1\r\n", 2), // +OK, then the push
		cmd("GET", "k"),
		cmd("CLIENT", "TRACKING", "ON", "NOLOOP"),
		cmd("SET", "k", "2"),
		cmd("PING"),
		cmd("GET", "k"),
		cmd("SET", "k", "3").on(1),
		pushThenPong(),
	}},
	{name: "invalidation on FLUSHALL", proto: 3, steps: []step{
		cmd("CLIENT", "TRACKING", "ON"),
		cmd("GET", "k"),
		cmd("FLUSHALL").on(1),
		pushThenPong(),
		cmd("SET", "k", "1").on(1), // the table was emptied
		cmd("PING"),
	}},
	{name: "tracked inside MULTI and scripts", proto: 3, steps: []step{
		cmd("CLIENT", "TRACKING", "ON"),
		cmd("MULTI"),
		cmd("GET", "m"),
		cmd("EXEC"),
		cmd("SET", "m", "1").on(1),
		pushThenPong(),
		cmd("EVAL", "return redis.call('get', KEYS[1])", "1", "s"),
		cmd("SET", "s", "1").on(1),
		pushThenPong(),
		cmd("EVAL_RO", "return redis.call('get', KEYS[1])", "1", "r"),
		cmd("SET", "r", "1").on(1),
		pushThenPong(),
	}},
	// OBJECT ENCODING and MEMORY USAGE are reads (their subcommands' rows
	// are readonly): their keys are remembered, alone and inside MULTI; OBJECT
	// HELP reads no key.
	{name: "tracked OBJECT and MEMORY subcommands", proto: 3, steps: []step{
		cmd("SET", "oe", "1"),
		cmd("SET", "mu", "1"),
		cmd("SET", "ot", "1"),
		cmd("CLIENT", "TRACKING", "ON"),
		cmd("OBJECT", "ENCODING", "oe"),
		cmd("SET", "oe", "2").on(1),
		pushThenPong(),
		cmd("MEMORY", "USAGE", "mu"),
		cmd("SET", "mu", "2").on(1),
		pushThenPong(),
		cmd("OBJECT", "HELP").with(anyText),
		cmd("MULTI"),
		cmd("OBJECT", "REFCOUNT", "ot"),
		cmd("EXEC"),
		cmd("DEL", "ot").on(1),
		pushThenPong(),
	}},
	{name: "OPTIN and OPTOUT", proto: 3, steps: []step{
		cmd("CLIENT", "TRACKING", "ON", "OPTIN"),
		cmd("GET", "o1"),
		cmd("CLIENT", "CACHING", "YES"),
		cmd("GET", "o2"),
		cmd("GET", "o3"), // CACHING was for one command
		cmd("MSET", "o1", "1", "o2", "2", "o3", "3").on(1),
		pushThenPong(),
		cmd("CLIENT", "CACHING", "YES"),
		cmd("MULTI"),
		cmd("GET", "o1"),
		cmd("GET", "o3"),
		cmd("EXEC"),
		cmd("DEL", "o1").on(1),
		pushThenPong(),
		cmd("DEL", "o3").on(1),
		pushThenPong(),
		cmd("CLIENT", "TRACKING", "OFF"),
		cmd("CLIENT", "TRACKING", "ON", "OPTOUT"),
		cmd("GET", "p1"),
		cmd("CLIENT", "CACHING", "NO"),
		cmd("GET", "p2"),
		cmd("MSET", "p1", "1", "p2", "2").on(1),
		pushThenPong(),
	}},
	{name: "BCAST", proto: 3, steps: []step{
		cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "p:", "PREFIX", "q:"),
		cmd("MSET", "p:b", "1", "p:a", "2", "x", "3").on(1),
		pushThenPong(),
		cmd("DEL", "q:1", "x").on(1), // nothing deleted: nothing changed
		cmd("PING"),
		cmd("SET", "q:1", "v").on(1),
		pushThenPong(),
		cmd("SET", "p:c", "1"), // its own write, without NOLOOP
		pushThenPong(),
		cmd("CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP"),
		cmd("SET", "p:c", "2"),
		cmd("PING"),
		cmd("SET", "zz", "1").on(1), // the "" prefix added by BCAST alone
		pushThenPong(),
		cmd("CLIENT", "TRACKING", "OFF"),
		cmd("CLIENT", "TRACKING", "ON", "BCAST"),
		cmd("FLUSHALL").on(1),
		pushThenPong(),
	}},
}

// TestTrackingRedirect runs the REDIRECT flows, whose client ids differ
// between the servers, against both and compares the bytes with each id
// replaced by "ID": a RESP2 tracking connection redirecting to a RESP2
// connection subscribed to __redis__:invalidate, to a RESP3 one, and a
// redirection broken by the target's close.
func TestTrackingRedirect(t *testing.T) {
	e := newEnv(t)
	// One flow on one server: each line is a connection's step, "<n> CMD …"
	// sends a command on connection n and reads one frame; "<n> read" only
	// reads; "<n> close" closes it; "<n> gone <m>" polls on n until the
	// server no longer lists m. "$ID<n>" is connection n's CLIENT ID.
	flows := map[string][]string{
		"resp2 to subscribed resp2": {
			"0 SUBSCRIBE __redis__:invalidate",
			"1 CLIENT TRACKING ON REDIRECT $ID0",
			"1 CLIENT GETREDIR",
			"1 CLIENT TRACKINGINFO",
			"1 GET k",
			"2 SET k v",
			"0 read",
			"2 FLUSHALL",
			"0 read",
			"1 CLIENT TRACKING OFF",
			"1 CLIENT TRACKING ON BCAST REDIRECT $ID0 PREFIX k",
			"2 MSET k2 1 k1 2",
			"0 read",
		},
		"resp2 to resp3": {
			"0 HELLO 3",
			"1 CLIENT TRACKING ON REDIRECT $ID0",
			"1 GET k",
			"2 SET k v",
			"0 read",
			"2 FLUSHALL",
			"0 read",
		},
		"broken redirection": {
			"1 HELLO 3",
			"1 CLIENT TRACKING ON REDIRECT $ID0",
			"1 GET k",
			"0 close",
			"2 gone 0",
			"2 SET k v",
			"1 read",
			"1 CLIENT TRACKINGINFO",
			"1 CLIENT LIST ID $ID1",
		},
	}
	for name, flow := range flows {
		t.Run(name, func(t *testing.T) {
			e.redis.flush(t)
			e.other.flush(t)
			want := runFlow(t, e.redis.addr, flow)
			got := runFlow(t, e.other.addr, flow)
			for i := range flow {
				if i >= len(want) || i >= len(got) || want[i] != got[i] {
					t.Errorf("step %d %q:\n\tredis: %q\n\t%s: %q", i+1, flow[i], at(want, i), e.other.name, at(got, i))
				}
			}
		})
	}
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "<missing>"
}

// runFlow runs a TestTrackingRedirect flow on one server: what each step
// read, with client ids replaced by $ID<n> and CLIENT LIST's line cut to
// its flags and redir fields.
func runFlow(t *testing.T, addr string, flow []string) []string {
	conns := map[string]*conn{}
	ids := map[string]string{}
	get := func(n string) *conn {
		if c := conns[n]; c != nil {
			return c
		}
		c, err := dial(addr)
		if err != nil {
			t.Fatalf("dial %s: %v", addr, err)
		}
		t.Cleanup(c.close)
		c.send(multibulk("CLIENT", "ID"))
		o := c.read(replyTimeout)
		ids[n] = strings.TrimSuffix(strings.TrimPrefix(string(o.raw), ":"), "\r\n")
		conns[n] = c
		return c
	}
	mask := func(s string) string {
		for n, id := range ids {
			s = strings.ReplaceAll(s, ":"+id+"\r\n", ":$ID"+n+"\r\n")
			s = strings.ReplaceAll(s, "="+id+" ", "=$ID"+n+" ")
		}
		return s
	}
	var out []string
	for _, line := range flow {
		n, rest, _ := strings.Cut(line, " ")
		c := get(n)
		switch rest {
		case "read":
			o := c.read(replyTimeout)
			if o.end != "" {
				out = append(out, o.String())
			} else {
				out = append(out, mask(string(o.raw)))
			}
			continue
		case "close":
			c.close()
			out = append(out, "")
			continue
		}
		if m, ok := strings.CutPrefix(rest, "gone "); ok {
			deadline := time.Now().Add(pollTimeout)
			for {
				c.send(multibulk("CLIENT", "LIST", "ID", ids[m]))
				o := c.read(replyTimeout)
				if !strings.Contains(string(o.raw), "id=") || o.end != "" || time.Now().After(deadline) {
					out = append(out, strconv.FormatBool(!strings.Contains(string(o.raw), "id=")))
					break
				}
				time.Sleep(pollEvery)
			}
			continue
		}
		args := strings.Fields(rest)
		for i, a := range args {
			if strings.HasPrefix(a, "$ID") {
				get(a[3:])
				args[i] = ids[a[3:]]
			}
		}
		c.send(multibulk(args...))
		o := c.read(replyTimeout)
		s := string(o.raw)
		if strings.EqualFold(args[0], "client") && strings.EqualFold(args[1], "list") {
			var kept []string
			for _, f := range strings.Fields(s) {
				if strings.HasPrefix(f, "flags=") || strings.HasPrefix(f, "redir=") {
					kept = append(kept, f)
				}
			}
			s = strings.Join(kept, " ") + " "
		} else if strings.EqualFold(args[0], "hello") {
			s = "(HELLO)" // its fields differ by design (helloIdentity)
		}
		out = append(out, mask(s))
	}
	return out
}
