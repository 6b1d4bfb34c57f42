package deploy

import (
	"bufio"
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/loopback"
)

const unitPath = "systemd/lockd@.service"

// unit is a parsed unit file: section -> key -> values in order (continued
// lines joined).
type unit map[string]map[string][]string

func parseUnit(t *testing.T, text string) unit {
	t.Helper()
	u := unit{}
	section := ""
	var logical []string
	var cur strings.Builder
	for _, line := range strings.Split(text, "\n") {
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(line)
		logical = append(logical, cur.String())
		cur.Reset()
	}
	for _, line := range logical {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s: cannot read line %q", unitPath, line)
			}
			u[section][k] = append(u[section][k], strings.TrimSpace(v))
		}
	}
	return u
}

// last is the value that takes effect for a single-valued key.
func (u unit) last(section, key string) string {
	vs := u[section][key]
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

// writeTestUnit writes the unit into a temporary directory with its ExecStart
// binary replaced by the lockd under test (verify requires it to exist).
func writeTestUnit(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs(lockdBin)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(readFile(t, unitPath)), "/usr/local/bin/lockd", bin)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "lockd@.service"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "lockd@n1.service")
}

// TestSystemdUnit: `systemd-analyze verify` accepts the unit without a single
// warning, `systemd-analyze security` rates its exposure at most 2.0 ("OK"),
// and it restarts on failure, raises the file limit, owns a state directory
// and stops with SIGTERM, leaving lockd more than its 20 s shutdown bound.
func TestSystemdUnit(t *testing.T) {
	analyze := tool(t, "systemd-analyze", "systemd")
	instance := writeTestUnit(t)
	out, err := run(t, "", nil, analyze, "verify", "--man=no", instance)
	if err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err = run(t, "", nil, analyze, "security", "--offline=true", "--threshold=20", "--no-pager", instance)
	if err != nil {
		t.Errorf("systemd-analyze security: exposure above 2.0 (%v):\n%s", err, out)
	}

	u := parseUnit(t, string(readFile(t, unitPath)))
	for _, c := range []struct{ key, want string }{
		{"Restart", "on-failure"},
		{"KillSignal", "SIGTERM"},
		{"StateDirectory", "lockd/%i"},
		{"DynamicUser", "yes"},
		{"NoNewPrivileges", "yes"},
		{"ProtectSystem", "strict"},
	} {
		if got := u.last("Service", c.key); got != c.want {
			t.Errorf("%s=%q, want %q", c.key, got, c.want)
		}
	}
	if u.last("Service", "LimitNOFILE") == "" {
		t.Errorf("LimitNOFILE is not set")
	}
	stop, err := time.ParseDuration(u.last("Service", "TimeoutStopSec"))
	if err != nil || stop <= 20*time.Second {
		t.Errorf("TimeoutStopSec=%q: want a duration above lockd's 20 s shutdown bound (%v)", u.last("Service", "TimeoutStopSec"), err)
	}
	if exec := u.last("Service", "ExecStart"); !strings.Contains(exec, "-data-dir /var/lib/lockd/%i ") {
		t.Errorf("ExecStart %q does not keep the data in the state directory /var/lib/lockd/%%i", exec)
	}
}

// envFile reads a systemd environment file (KEY=VALUE lines).
func envFile(t *testing.T, path string) map[string]string {
	t.Helper()
	env := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, path)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: %q is not KEY=VALUE", path, line)
		}
		env[k] = strings.TrimSpace(v)
	}
	return env
}

var braced = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// execStart expands the unit's ExecStart for one instance as systemd does
// for the forms the unit uses: %i, ${VAR} (one argument) and a lone $VAR
// (split at spaces; no argument when empty). Environment= gives defaults,
// the environment file overrides them.
func execStart(t *testing.T, u unit, instance string, file map[string]string) []string {
	t.Helper()
	env := map[string]string{}
	for _, line := range u["Service"]["Environment"] {
		for _, kv := range strings.Fields(line) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
	}
	for k, v := range file {
		env[k] = v
	}
	var argv []string
	for _, word := range strings.Fields(u.last("Service", "ExecStart")) {
		word = strings.ReplaceAll(word, "%i", instance)
		if name, ok := strings.CutPrefix(word, "$"); ok && !strings.HasPrefix(name, "{") {
			argv = append(argv, strings.Fields(env[name])...)
			continue
		}
		argv = append(argv, braced.ReplaceAllStringFunc(word, func(m string) string {
			return env[braced.FindStringSubmatch(m)[1]]
		}))
	}
	return argv
}

var hostPort = regexp.MustCompile(`\b\d+\.\d+\.\d+\.\d+:\d+\b`)

// freeAddrs returns n distinct loopback addresses that were free a moment
// ago (loopback.Addrs).
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	out, err := loopback.Addrs(n)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSystemdClusterStarts: the three nodes' environment files describe one
// cluster, and the command lines the unit makes of them start it. The
// addresses are moved to free loopback ports and the data to a temporary
// directory; everything else runs as the unit would run it: all three nodes
// become ready, and each stops cleanly on SIGTERM within TimeoutStopSec.
func TestSystemdClusterStarts(t *testing.T) {
	u := parseUnit(t, string(readFile(t, unitPath)))
	flags := lockdFlags(t)
	nodes := []string{"n1", "n2", "n3"}
	envs := map[string]map[string]string{}
	for _, n := range nodes {
		envs[n] = envFile(t, filepath.Join("systemd", n+".env"))
	}
	for _, n := range nodes {
		e := envs[n]
		if e["CLUSTER_ARGS"] != envs["n1"]["CLUSTER_ARGS"] {
			t.Errorf("%s.env: CLUSTER_ARGS differs from n1.env's: every node of a new cluster gets the same -peers", n)
		}
		if want := n + "=" + e["PEER_ADDR"]; !strings.Contains(e["CLUSTER_ARGS"]+",", want+",") {
			t.Errorf("%s.env: CLUSTER_ARGS %q does not list this node as %s", n, e["CLUSTER_ARGS"], want)
		}
		checkFlags(t, unitPath+" with "+n+".env", execStart(t, u, n, e), flags)
	}
	if t.Failed() {
		return
	}

	// Move every address to loopback, consistently across the three files.
	moved := map[string]string{}
	for _, n := range nodes {
		for _, v := range envs[n] {
			for _, a := range hostPort.FindAllString(v, -1) {
				moved[a] = ""
			}
		}
	}
	free := freeAddrs(t, len(moved))
	for a := range moved {
		moved[a], free = free[0], free[1:]
	}
	for _, n := range nodes {
		for k, v := range envs[n] {
			envs[n][k] = hostPort.ReplaceAllStringFunc(v, func(a string) string { return moved[a] })
		}
	}
	data := t.TempDir()
	type proc struct {
		cmd    *exec.Cmd
		http   string
		exited chan struct{} // closed when the process has exited; then err is set
		err    error
		log    *syncBuffer
	}
	procs := map[string]*proc{}
	for _, n := range nodes {
		argv := execStart(t, u, n, envs[n])
		argv[0] = lockdBin
		for i, a := range argv {
			argv[i] = strings.Replace(a, "/var/lib/lockd/", data+"/", 1)
		}
		p := &proc{cmd: exec.Command(argv[0], argv[1:]...), http: envs[n]["HTTP_ADDR"], exited: make(chan struct{}), log: &syncBuffer{}}
		p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.err = p.cmd.Wait(); close(p.exited) }()
		t.Cleanup(func() {
			select {
			case <-p.exited:
			default:
				p.cmd.Process.Kill()
				<-p.exited
			}
		})
		procs[n] = p
	}

	client := http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range nodes {
		for {
			resp, err := client.Get("http://" + procs[n].http + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s is not ready 30 s after the start (last: %v)", n, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	stop, _ := time.ParseDuration(u.last("Service", "TimeoutStopSec"))
	for _, n := range nodes { // one at a time, as a rolling restart stops them
		p := procs[n]
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-p.exited:
			if p.err != nil {
				t.Errorf("%s: exit after SIGTERM: %v", n, p.err)
			}
		case <-time.After(stop):
			t.Errorf("%s did not stop within TimeoutStopSec (%v) of SIGTERM", n, stop)
		}
	}
	if t.Failed() {
		for _, n := range nodes {
			t.Logf("%s log:\n%s", n, procs[n].log)
		}
	}
}
