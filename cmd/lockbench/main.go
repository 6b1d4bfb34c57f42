// Command lockbench drives lock workloads against any Redis-protocol server
// (lockd or redis-server) and reports throughput and latency percentiles per
// operation kind.
//
// A lock is the usual Redis recipe: acquire with SET name owner NX PX ttl (plus
// FENCE on lockd with -fence, which answers the fencing token), release with a
// compare-and-delete script and keep alive with a compare-and-pexpire script,
// both loaded once with SCRIPT LOAD and run with EVALSHA. With -lock it is
// lockd's lock record instead: LOCK.ACQUIRE name owner PX ttl, with -wait
// blocking in the name's FIFO queue (WAIT ms) rather than polling, and
// LOCK.RELEASE name token; the tokens are checked with -fence.
//
// Workloads:
//
//	uncontended  every client acquires and releases names of its own
//	contended    every client tries K shared names (-names); grants and
//	             "taken" are counted apart; with -fence, the tokens granted
//	             for one name must strictly increase (violations are reported)
//	mixed        the seed profile: 40% acquires, 40% releases, 8% keepalives,
//	             6% lock-status reads (PTTL), 6% try-locks that find the lock
//	             taken. A keepalive is a compare-and-pexpire of one held lock
//	             (a replicated write); with -sessions, the locks are lockd
//	             lock records on one session per client and a keepalive is
//	             SESSION.KEEPALIVE, which renews them all and writes nothing.
//
// With -etcd, the same closed loop drives etcd through its v3 client
// (go.etcd.io/etcd/client/v3), so that the peer is measured by the same tool.
// Every client has its own connection to one endpoint and its own lease, kept
// alive by a session, to which its locks are attached:
//
//	-etcd txn    acquire: Txn If CreateRevision(name)==0 Then Put(name, owner,
//	             lease), one try (a failed compare counts as "taken");
//	             release: Txn If CreateRevision(name)==token Then Delete, the
//	             compare-and-delete that the Redis recipe's script does
//	-etcd mutex  the stock concurrency.Mutex: Lock waits its turn (revision
//	             order) on the name, Unlock deletes the client's key; an
//	             acquire's latency includes that wait
//
// With -fence, the revision of each grant (the response header's) is checked
// like lockd's tokens: per name, it must strictly increase. Only the
// uncontended and contended workloads run against etcd, without pipelining.
//
// A progress line goes to stderr every second; the report goes to stdout, as
// tables or, with -json, as one JSON object. Exit status: 0 when the run
// finished (error replies are counted, not fatal), 1 when it could not run or
// a fencing violation was seen, 2 on bad flags, or -fence or -lock against a
// server that has neither FENCE nor LOCK.ACQUIRE.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// config is what the flags say.
type config struct {
	addrs    []string
	clients  int
	duration time.Duration // 0: bounded by n only
	n        int64         // 0: bounded by duration only
	workload string
	names    int
	ttl      time.Duration
	hold     time.Duration
	fence    bool
	pipeline int
	resp     int
	retries  int
	timeout  time.Duration
	prefix   string
	json     bool
	quiet    bool
	etcd     string        // "": RESP; etcdTxn or etcdMutex: the etcd v3 API
	lock     bool          // LOCK.ACQUIRE / LOCK.RELEASE instead of SET NX / script
	wait     time.Duration // -lock: LOCK.ACQUIRE … WAIT
	direct   bool          // route each client to its names' group leader (CLUSTER SLOTS)
	sessions bool          // mixed on lockd sessions: locks attached to a session per client, keepalive = SESSION.KEEPALIVE
}

// lockRecords reports whether the run uses lockd's lock records (-lock, or
// -sessions, whose locks are records on a session) rather than Redis keys.
func (c *config) lockRecords() bool { return c.lock || c.sessions }

var workloads = []string{"uncontended", "contended", "mixed"}

// The lock recipes of -etcd.
const (
	etcdTxn   = "txn"   // a lease per client; acquire: Txn If CreateRevision==0 Then Put with the lease; release: Txn If CreateRevision==token Then Delete
	etcdMutex = "mutex" // concurrency.Mutex on a session per client: Lock waits in revision order, Unlock deletes
)

// addrList is a flag that may be repeated and holds comma-separated addresses.
type addrList []string

func (a *addrList) String() string { return strings.Join(*a, ",") }

func (a *addrList) Set(s string) error {
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*a = append(*a, p)
		}
	}
	return nil
}

// errUsage marks a flag error (exit status 2).
var errUsage = errors.New("usage")

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("lockbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var addrs addrList
	cfg := &config{}
	fs.Var(&addrs, "addr", "server address host:port; repeat it or give a comma list to spread the clients over cluster nodes, client i on address i mod n (default 127.0.0.1:6379, with -etcd 127.0.0.1:2379)")
	fs.IntVar(&cfg.clients, "clients", 50, "clients, one connection each")
	fs.DurationVar(&cfg.duration, "duration", 0, "how long to run (default 10s when -n is not given either)")
	fs.Int64Var(&cfg.n, "n", 0, "total operations to run, all clients and kinds together (0: bounded by -duration)")
	fs.StringVar(&cfg.workload, "workload", "uncontended", "uncontended, contended or mixed")
	fs.IntVar(&cfg.names, "names", 8, "contended: the number of shared lock names")
	fs.DurationVar(&cfg.ttl, "ttl", 10*time.Second, "lock TTL (PX), whole milliseconds; with -etcd the TTL of each client's lease, rounded up to whole seconds")
	fs.DurationVar(&cfg.hold, "hold", 0, "contended: how long a client holds a granted lock before releasing it")
	fs.BoolVar(&cfg.fence, "fence", false, "append FENCE to SET (lockd only; checked with one probe first); with -etcd, check the grants' revisions instead")
	fs.IntVar(&cfg.pipeline, "pipeline", 1, "operations per round trip on each connection")
	fs.IntVar(&cfg.resp, "resp", 2, "RESP protocol version, 2 or 3")
	fs.IntVar(&cfg.retries, "retries", 0, "retries of a failed command by go-redis (it retries TRYAGAIN, not UNKNOWNOUTCOME); 0 shows every error")
	fs.DurationVar(&cfg.timeout, "timeout", 5*time.Second, "read and write timeout of one command")
	fs.StringVar(&cfg.prefix, "prefix", "lockbench", "key prefix; a random run ID follows it")
	fs.BoolVar(&cfg.direct, "direct", false, "lockd clusters: send every command straight to its name's group leader, as a cluster-aware client does: CLUSTER SLOTS on the first -addr gives each client a leader to connect to and, uncontended, names (with a hash tag) in slots that leader leads; contended with -names 1: every client on that name's leader; on a single node (INFO cluster_enabled:0) every client on the first -addr")
	fs.BoolVar(&cfg.sessions, "sessions", false, "mixed on lockd's sessions: each client opens a session (SESSION.OPEN TTL -ttl) and holds its locks on it (LOCK.ACQUIRE name owner SESSION id, LOCK.RELEASE name token); a keepalive is SESSION.KEEPALIVE, which renews every lock the client holds and writes nothing to the log")
	fs.BoolVar(&cfg.json, "json", false, "print the report as JSON")
	fs.BoolVar(&cfg.quiet, "quiet", false, "no progress lines")
	fs.BoolVar(&cfg.lock, "lock", false, "lockd's lock records: acquire with LOCK.ACQUIRE name owner PX ttl [WAIT ms], release with LOCK.RELEASE name token (uncontended and contended only)")
	fs.DurationVar(&cfg.wait, "wait", 0, "with -lock: how long an acquire waits in the name's FIFO queue (LOCK.ACQUIRE … WAIT, whole ms, below -timeout); 0 tries once")
	fs.StringVar(&cfg.etcd, "etcd", "", "talk to etcd (v3 gRPC API) at -addr instead of RESP, with this lock recipe: "+
		"txn (lease + transaction, try once) or mutex (the stock concurrency.Mutex, waits); uncontended and contended only, -pipeline 1")
	if err := fs.Parse(args); err != nil {
		return nil, errUsage
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	cfg.addrs = addrs
	if len(cfg.addrs) == 0 {
		cfg.addrs = []string{"127.0.0.1:6379"}
		if cfg.etcd != "" {
			cfg.addrs = []string{"127.0.0.1:2379"}
		}
	}
	if cfg.duration == 0 && cfg.n == 0 {
		cfg.duration = 10 * time.Second
	}
	known := false
	for _, w := range workloads {
		known = known || w == cfg.workload
	}
	switch {
	case !known:
		return nil, fmt.Errorf("%w: -workload %q: want one of %s", errUsage, cfg.workload, strings.Join(workloads, ", "))
	case cfg.clients < 1:
		return nil, fmt.Errorf("%w: -clients must be at least 1", errUsage)
	case cfg.duration < 0 || cfg.n < 0:
		return nil, fmt.Errorf("%w: -duration and -n must not be negative", errUsage)
	case cfg.names < 1:
		return nil, fmt.Errorf("%w: -names must be at least 1", errUsage)
	case cfg.ttl < time.Millisecond || cfg.ttl%time.Millisecond != 0:
		return nil, fmt.Errorf("%w: -ttl must be a whole number of milliseconds, at least 1ms", errUsage)
	case cfg.hold < 0:
		return nil, fmt.Errorf("%w: -hold must not be negative", errUsage)
	case cfg.pipeline < 1:
		return nil, fmt.Errorf("%w: -pipeline must be at least 1", errUsage)
	case cfg.resp != 2 && cfg.resp != 3:
		return nil, fmt.Errorf("%w: -resp must be 2 or 3", errUsage)
	case cfg.retries < 0:
		return nil, fmt.Errorf("%w: -retries must not be negative", errUsage)
	case cfg.timeout <= 0:
		return nil, fmt.Errorf("%w: -timeout must be positive", errUsage)
	case cfg.etcd != "" && cfg.etcd != etcdTxn && cfg.etcd != etcdMutex:
		return nil, fmt.Errorf("%w: -etcd %q: want %s or %s", errUsage, cfg.etcd, etcdTxn, etcdMutex)
	case cfg.etcd != "" && cfg.workload == "mixed":
		return nil, fmt.Errorf("%w: -etcd runs the uncontended and contended workloads, not mixed", errUsage)
	case cfg.etcd != "" && cfg.pipeline != 1:
		return nil, fmt.Errorf("%w: -etcd has no pipelining: -pipeline must be 1", errUsage)
	case cfg.lock && (cfg.etcd != "" || cfg.workload == "mixed"):
		return nil, fmt.Errorf("%w: -lock runs the uncontended and contended workloads over RESP, not mixed or -etcd", errUsage)
	case cfg.direct && (cfg.etcd != "" || cfg.workload == "mixed" || (cfg.workload == "contended" && cfg.names != 1)):
		return nil, fmt.Errorf("%w: -direct runs the uncontended workload, and the contended one with -names 1, over RESP", errUsage)
	case cfg.sessions && (cfg.workload != "mixed" || cfg.etcd != "" || cfg.lock || cfg.fence):
		return nil, fmt.Errorf("%w: -sessions runs the mixed workload on lockd, without -lock, -fence or -etcd", errUsage)
	case cfg.wait != 0 && !cfg.lock:
		return nil, fmt.Errorf("%w: -wait needs -lock", errUsage)
	case cfg.wait < 0 || cfg.wait%time.Millisecond != 0 || cfg.wait >= cfg.timeout:
		return nil, fmt.Errorf("%w: -wait must be a whole number of milliseconds below -timeout (%v)", errUsage, cfg.timeout)
	}
	return cfg, nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole command: flags, the run, the report. An interrupt (ctx done)
// ends the run early and still reports what was measured.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if err != errUsage { // the flag package has printed its own message
			fmt.Fprintf(stderr, "lockbench: %v\n", err)
		}
		return 2
	}
	var progress io.Writer = stderr
	if cfg.quiet {
		progress = io.Discard
	}
	res, err := bench(ctx, cfg, progress)
	if err != nil {
		fmt.Fprintf(stderr, "lockbench: %v\n", err)
		if errors.Is(err, errNoFence) || errors.Is(err, errNoLock) {
			return 2
		}
		return 1
	}
	if cfg.json {
		err = writeJSON(stdout, res)
	} else {
		err = writeTable(stdout, res)
	}
	if err != nil {
		fmt.Fprintf(stderr, "lockbench: %v\n", err)
		return 1
	}
	if res.FenceViolations > 0 {
		fmt.Fprintf(stderr, "lockbench: %d fencing-token violations: tokens for one name did not strictly increase\n", res.FenceViolations)
		return 1
	}
	return 0
}
