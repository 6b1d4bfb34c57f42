# Thin targets: each one is a command a user or CI runs as it is.
GO      ?= go
BIN     := bin
DATA    ?= lockd-data
PKGS    := ./...
# FAULTS builds the fault hooks in (raftstore/faults.go, lockd's hidden fault
# flags, /debug/faults; docs/developing.md): every go test here passes it, so
# the tests that inject faults run; build, run, cluster and bench do not.
FAULTS  := -tags faults

.PHONY: all build run test deps lint unit compat e2e bench bench-ab bench-groups bench-scale bench-memory chaos cluster cluster-stop clean fuzz compat-fuzz

all: build

build:
	$(GO) build -o $(BIN)/lockd ./cmd/lockd

## run: a single-node lockd, RESP on 127.0.0.1:6379, data in ./$(DATA)
run: build
	./$(BIN)/lockd -data-dir $(DATA)

## test: the whole suite (installs redis-server / redis-tools when missing)
test: deps lint
	$(GO) test $(FAULTS) -count=1 -timeout 15m $(PKGS)
	@$(MAKE) --no-print-directory fuzz

## fuzz: a short run of every fuzz target (10 targets, about 40 s of fuzzing on 2
## cores). A crash is written to the package's testdata/fuzz/<Target>/, where the
## plain `go test` replays it from then on: fix it and keep the file as a
## regression test. Each target runs a fixed number of inputs (its count below,
## about 4 s here), not a duration: with a duration, Go before 1.27 can fail a
## clean run with a bare "context deadline exceeded" when the time runs out
## (golang/go#75804; seen in this suite on resp:FuzzReadValue). make fuzz
## FUZZTIME=10m for a real campaign (FUZZTIME, when set, replaces every count).
FUZZTIME ?=
FUZZ_TARGETS := redisproto:FuzzReader:40000 resp:FuzzReadValue:300000 \
	command:FuzzParse:200000 command:FuzzDecode:250000 \
	raftstore/fsm:FuzzApply:70000 raftstore/fsm:FuzzRestore:45000 \
	raftstore/journal:FuzzJournalReplay:60000 raftstore/appendpipe:FuzzDecode:150000 \
	lua:FuzzScript:1200 lua:FuzzCheckSyntax:70000
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; n=$${rest##*:}; \
		budget=$(FUZZTIME); budget=$${budget:-$${n}x}; \
		echo "fuzz $$pkg $$name for $$budget"; \
		$(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $$budget ./$$pkg >/tmp/lockd-fuzz.$$$$.log 2>&1 || \
			{ cat /tmp/lockd-fuzz.$$$$.log; rm -f /tmp/lockd-fuzz.$$$$.log; exit 1; }; \
		rm -f /tmp/lockd-fuzz.$$$$.log; \
	done

## compat-fuzz: a long run of the seeded random differential test against a
## real redis-server (compat/differential_test.go; `make test` runs 200
## sequences of seed 1): N sequences (default 1000000) of LEN commands (default
## 30) from SEED (a random one when empty, printed), no new sequence after
## DURATION (default 10m; at most about 2h under the 3h test timeout). A
## divergence is printed shrunk, as redis-cli lines with both replies, and the
## COMPAT_FUZZ_SEED/COMPAT_FUZZ_SEQ that rerun it.
N   ?= 1000000
LEN ?= 30
compat-fuzz: deps
	COMPAT_FUZZ_SEED=$(or $(SEED),random) COMPAT_FUZZ_N=$(N) COMPAT_FUZZ_LEN=$(LEN) COMPAT_FUZZ_DURATION=$(DURATION) \
		$(GO) test $(FAULTS) -count=1 -timeout 3h -run 'TestDifferential$$' -v ./compat/

## deps: what the suite needs that Go does not bring: a real redis-server as the
## reference of the compat suite, redis-cli / redis-benchmark, etcd / etcdctl
## (the peer that lockbench -etcd and make bench measure), PostgreSQL (the
## fenced payout example; its test runs initdb and postgres in a temp directory),
## promtool / systemd-analyze (deploy/'s tests check the rules and units), and
## Debian's python3-redis for /usr/bin/python3 (redis-py's RedisCluster, a
## cluster-aware client in another language, against a lockd cluster in test/).
deps:
	@if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then \
		echo "installing redis-server and redis-tools"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server redis-tools >/dev/null; \
	fi
	@if ! command -v etcd >/dev/null || ! command -v etcdctl >/dev/null; then \
		echo "installing etcd-server and etcd-client (lockbench -etcd tests, make bench)"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq etcd-server etcd-client >/dev/null; \
	fi
	@if ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		echo "installing postgresql (the fenced payout example, client/examples/payout)"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq postgresql >/dev/null; \
	fi
	@if ! command -v promtool >/dev/null || ! command -v systemd-analyze >/dev/null; then \
		echo "installing promtool (package prometheus) and systemd-analyze (the deploy/ checks)"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends prometheus systemd >/dev/null; \
	fi
	@if ! /usr/bin/python3 -c 'import redis.cluster' >/dev/null 2>&1; then \
		echo "installing python3-redis (redis-py's RedisCluster against a lockd cluster, test/)"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq python3-redis >/dev/null; \
	fi
	@redis-server --version

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet $(FAULTS) $(PKGS)

## bench: the same lock workloads (cmd/lockbench) against lockd (1 node and 3 nodes),
## a durable redis-server and a 3-member etcd, at 1/16/64 clients, in one table
## (about 10 minutes; BENCH_QUICK=1: about 2), printed and written with its date,
## commit and machine to docs/bench/latest.md (BENCH_TABLE; docs/benchmarks.md).
## scripts/bench.sh (redis-benchmark) and scripts/lockbench.sh (mixed profile,
## FENCE check) run on their own.
bench: build deps
	./scripts/compare.sh

## bench-ab: a change before and after: fresh 3-node clusters from two lockd
## binaries (or single nodes: AB_NODES=1), alternating, under the same loads, with
## the servers' CPU per operation (scripts/ab.sh; A=, B=, AB_ROUNDS, AB_NODES,
## AB_GROUPS, AB_DIRECT, BENCH_DURATION).
bench-ab: deps
	./scripts/ab.sh

## bench-groups: the same 3-node cluster with 1, 3 (the default) and 8 Raft groups
## under the same uncontended lock load, with the servers' CPU per operation
## (scripts/groups.sh; BENCH_DURATION, BENCH_CLIENTS, BENCH_GROUPS).
bench-groups: build deps
	./scripts/groups.sh

## bench-scale: issue 49's scale-out measurement: fresh clusters of 3, 6 and 9
## nodes (-groups 8, -replicas 3 once lockd has it) under the same uncontended
## lock load, clients over all nodes: cycles/s, acquire p50/p99, the servers' CPU
## per operation and per node, fsyncs per operation; printed and written with its
## date, commit and machine to docs/bench/scale.md (scripts/scale.sh; SCALE_NODES,
## SCALE_CLIENTS, BENCH_DURATION, SCALE_TABLE).
bench-scale: build deps
	./scripts/scale.sh

## bench-memory: issue 9's memory and restart targets: a 3-node cluster holding
## BIG_LOCKS locks (default 1000000) against redis-server holding as many keys
## with TTLs, and a follower's restart time (scripts/bigstate.sh).
bench-memory: build deps
	./scripts/bigstate.sh

## chaos: the Jepsen-style campaign (test/chaos_*): seeded runs of 3- and 5-node
## clusters under kill -9, SIGSTOP, partitions and delay through a proxy, slow and
## failing fsync and clock faults, checked after every run; then the negative
## control, the planted bugs, and the other fault suites. Runs alternate between
## 1 and 4 Raft groups per node (the replay checks every group's log); every 4th run is
## placed: 6 nodes, -groups 8 -replicas 3, with member moves (RAFT REMOVE drains a node,
## it is wiped and joins again) among the faults. Prints the campaign's table at the end.
## make chaos DURATION=2m SEED=7 for another length and seed;
## KINDS=pause-leader,isolate-leader limits the campaign to those fault kinds (naming
## member-move makes every run placed).
## test/ builds its own lockd with -tags faults (its TestMain); bin/lockd stays
## the default build.
DURATION ?= 10m
SEED     ?=
KINDS    ?=
chaos: build
	@mkdir -p $(BIN)
	CHAOS_DURATION=$(DURATION) CHAOS_SEED=$(SEED) CHAOS_FAULTS=$(KINDS) CHAOS_REPORT=$(CURDIR)/$(BIN)/chaos-report.txt \
		$(GO) test $(FAULTS) -count=1 -timeout 3h -run 'TestChaos(Campaign|NegativeControl|PlantedBugs)$$' -v ./test/
	$(GO) test $(FAULTS) -count=1 -run 'Test.*Crash|Test.*Kill|TestCluster|TestLinearizab' -v ./test/
	$(GO) test $(FAULTS) -count=1 -run 'TestClusterFailover|TestMinority|TestSessionSurvives|TestJoin' -v ./raftstore/
	@cat $(BIN)/chaos-report.txt

## cluster: three local nodes (RESP 6391-6393); stop them with make cluster-stop
cluster: build
	./deploy/cluster.sh start

cluster-stop:
	./deploy/cluster.sh stop

clean:
	rm -rf $(BIN)
