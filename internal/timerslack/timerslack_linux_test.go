package timerslack

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// helperEnv makes the test binary, started again by TestEveryThread, run
// helper instead of the tests.
const helperEnv = "TIMERSLACK_TEST_HELPER"

func TestMain(m *testing.M) {
	if s := os.Getenv(helperEnv); s != "" {
		helper(s)
		return
	}
	os.Exit(m.Run())
}

// helper applies the slack it is given (executing itself again), then prints
// every thread's slack and whether the re-execution mark is still set.
func helper(s string) {
	d, _ := time.ParseDuration(s)
	if err := Apply(d); err != nil {
		os.Stdout.WriteString("error " + err.Error() + "\n")
		os.Exit(1)
	}
	_, mark := os.LookupEnv(reexecMark)
	os.Stdout.WriteString("mark " + strconv.FormatBool(mark) + "\n")
	// /proc/<tid> serves every thread's files, though only the process's
	// are listed.
	tasks, _ := filepath.Glob("/proc/self/task/*")
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc", filepath.Base(t), "timerslack_ns"))
		if err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("thread " + strings.TrimSpace(string(b)) + "\n")
	}
	os.Exit(0)
}

func runHelper(t *testing.T, slack string) (threads []string, mark string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+slack)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(l, " ")
		switch k {
		case "thread":
			threads = append(threads, v)
		case "mark":
			mark = v
		default:
			t.Fatalf("helper said %q", l)
		}
	}
	return threads, mark
}

// Every thread of the process, the runtime's own started before main
// included, runs with the slack Apply set, and the mark that stops a second
// re-execution is gone from the environment.
func TestEveryThread(t *testing.T) {
	threads, mark := runHelper(t, "3ms")
	if len(threads) < 2 {
		t.Fatalf("%d threads seen, want the runtime's too", len(threads))
	}
	for _, v := range threads {
		if v != "3000000" {
			t.Fatalf("a thread's slack is %s ns, want 3000000 (all: %v)", v, threads)
		}
	}
	if mark != "false" {
		t.Fatal("the re-execution mark is still in the environment")
	}
}

// Apply(0) leaves the slack as inherited: the kernel's default here.
func TestZeroKeeps(t *testing.T) {
	threads, _ := runHelper(t, "0s")
	for _, v := range threads {
		if v != strconv.FormatInt(Current().Nanoseconds(), 10) {
			t.Fatalf("a thread's slack is %s ns, want this test's own %v", v, Current())
		}
	}
}
