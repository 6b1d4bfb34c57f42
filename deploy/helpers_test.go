package deploy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/clustertest"
)

// lockdBin is the lockd binary the tests run: LOCKD_TEST_BIN, or one built
// from ./cmd/lockd by TestMain.
var lockdBin string

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	if bin := os.Getenv("LOCKD_TEST_BIN"); bin != "" {
		lockdBin = bin
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "lockd-deploy-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "deploy: temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	lockdBin = filepath.Join(dir, "lockd")
	gobin := "go"
	if p, err := exec.LookPath("go"); err == nil {
		gobin = p
	}
	if out, err := exec.Command(gobin, "build", "-o", lockdBin, "github.com/lockd/lockd/cmd/lockd").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "deploy: building lockd: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// toolTimeout bounds every run of an external checker.
const toolTimeout = time.Minute

// tool returns the path of a checker the suite depends on, failing the test
// with the way to install it when it is missing (`make deps` installs them).
func tool(t *testing.T, name, debianPkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not on PATH (%v): the deploy checks need it (Debian: apt-get install %s; `make test` installs it)", name, err, debianPkg)
	}
	return p
}

// run runs a command in dir with a bounded time and returns its combined
// output and its error (an *exec.ExitError for a non-zero exit).
func run(t *testing.T, dir string, env []string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = env
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %s: still running after %v", name, strings.Join(args, " "), toolTimeout)
	}
	return out.String(), err
}

// readFile reads a file of this directory (or below it).
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var flagLine = regexp.MustCompile(`(?m)^\s+-([a-z0-9-]+)`)

// lockdFlags is the set of flags `lockd -help` lists.
func lockdFlags(t *testing.T) map[string]bool {
	t.Helper()
	out, _ := run(t, "", nil, lockdBin, "-help") // -help exits non-zero
	flags := map[string]bool{}
	for _, m := range flagLine.FindAllStringSubmatch(out, -1) {
		flags[m[1]] = true
	}
	if len(flags) < 5 {
		t.Fatalf("lockd -help lists %d flags; output:\n%s", len(flags), out)
	}
	return flags
}

// checkFlags fails the test for every -flag in args that lockd does not have.
func checkFlags(t *testing.T, where string, args []string, flags map[string]bool) {
	t.Helper()
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !flags[name] {
			t.Errorf("%s passes %s, which lockd does not have (lockd -help lists %s)", where, a, sortedKeys(flags))
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// syncBuffer collects a process's output while the test reads it.
type syncBuffer = clustertest.Output
