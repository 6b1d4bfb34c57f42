package clustertest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RedisStartTimeout bounds how long StartRedis waits for one redis-server to
// come up, and how long its cleanup waits for the killed process to end.
const RedisStartTimeout = 20 * time.Second

// RedisInstallHint is what a test that needs redis-server says when it is
// missing: a missing dependency fails the test, it is never skipped.
const RedisInstallHint = "Debian: apt-get install redis-server; `make test` installs it"

// redisTries is how many ports StartRedis tries: a port free when found may
// be taken by another process before redis-server binds it.
const redisTries = 3

// redisLogTail bounds how much of redis-server's log a failure message or
// the log of a failed test carries (its end, where the cause is).
const redisLogTail = 16 << 10

// StartRedis starts a private redis-server (Redis 7.0.15, found on PATH) for
// the test and returns its address, 127.0.0.1:P, and its --dir, a fresh
// t.TempDir(). Its options are
//
//	--save '' --appendonly no --port P --bind 127.0.0.1 --dir DIR --pidfile DIR/redis.pid
//
// followed by extra; in each extra argument "$PORT" stands for P, and a later
// option wins over an earlier one, so extra may turn P into the TLS port:
// "--port", "0", "--tls-port", "$PORT", .... extra must not set --dir,
// --pidfile, --logfile or --daemonize, which StartRedis relies on.
//
// StartRedis returns once the server is up: its pid file names it (it has
// bound its ports, so P is this process's and not another's), and P answers
// a RESP PING with +PONG or -NOAUTH (a server with a password is up too);
// when extra turns the plain port off ("--port", "0"), P only has to accept a
// TCP connection, as a TLS handshake needs the caller's certificates. It
// waits at most RedisStartTimeout, polling. When the process exits before it
// is up (its port was taken) StartRedis tries again on a new port, up to 3
// times. redis-server's output goes to a log in DIR; a failure to start
// fails the test with the log's end, and a test that fails later logs it.
// The process is killed, and waited for, in t.Cleanup. StartRedis fails the
// test, with RedisInstallHint, when redis-server is not on PATH.
func StartRedis(t testing.TB, extra ...string) (addr, dir string) {
	t.Helper()
	return startRedisOn(t, func() string { return Addrs(t, 1)[0] }, extra)
}

// startRedisOn is StartRedis with each try's address from next.
func startRedisOn(t testing.TB, next func() string, extra []string) (addr, dir string) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not on PATH (%v): the test needs Redis 7.0.15 (%s)", err, RedisInstallHint)
	}
	dir = t.TempDir()
	var fails []string
	for try := range redisTries {
		addr := next()
		s, err := launchRedis(bin, dir, addr, try, extra)
		if err != nil {
			t.Fatalf("start %s: %v", bin, err)
		}
		err = s.waitUp(tlsOnly(extra))
		if err == nil {
			t.Cleanup(func() {
				if !s.stop() {
					t.Logf("redis-server on %s (pid %d) did not end within %v of its kill", addr, s.cmd.Process.Pid, RedisStartTimeout)
				}
				if t.Failed() {
					t.Logf("redis-server on %s, log %s:\n%s", addr, s.logPath, readTail(s.logPath))
				}
			})
			return addr, dir
		}
		s.stop()
		fails = append(fails, fmt.Sprintf("redis-server on %s: %v; log %s:\n%s", addr, err, s.logPath, readTail(s.logPath)))
		if !s.exited() { // alive but not up: another port will not help
			break
		}
	}
	t.Fatalf("redis-server did not start (%d tries):\n%s", len(fails), strings.Join(fails, "\n"))
	return "", ""
}

// tlsOnly reports whether extra turns the plain port off: its last --port
// is 0.
func tlsOnly(extra []string) bool {
	off := false
	for i := 0; i+1 < len(extra); i++ {
		if extra[i] == "--port" {
			off = extra[i+1] == "0"
		}
	}
	return off
}

// redisProc is one redis-server process StartRedis launched.
type redisProc struct {
	cmd     *exec.Cmd
	addr    string
	pidPath string
	logPath string
	done    chan struct{} // closed once the process has ended and been waited for
}

// launchRedis starts bin on addr's port with dir as its --dir; try numbers
// its log file.
func launchRedis(bin, dir, addr string, try int, extra []string) (*redisProc, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	s := &redisProc{
		addr:    addr,
		pidPath: filepath.Join(dir, fmt.Sprintf("redis-%d.pid", try)),
		logPath: filepath.Join(dir, fmt.Sprintf("redis-%d.log", try)),
		done:    make(chan struct{}),
	}
	logFile, err := os.Create(s.logPath)
	if err != nil {
		return nil, err
	}
	args := []string{"--save", "", "--appendonly", "no", "--port", port,
		"--bind", "127.0.0.1", "--dir", dir, "--pidfile", s.pidPath}
	for _, a := range extra {
		args = append(args, strings.ReplaceAll(a, "$PORT", port))
	}
	s.cmd = exec.Command(bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	go func() {
		s.cmd.Wait()
		logFile.Close()
		close(s.done)
	}()
	return s, nil
}

// exited reports whether the process has ended.
func (s *redisProc) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// stop kills the process and waits (at most RedisStartTimeout) for it to
// end; it reports whether it did.
func (s *redisProc) stop() bool {
	s.cmd.Process.Kill()
	select {
	case <-s.done:
		return true
	case <-time.After(RedisStartTimeout):
		return false
	}
}

// waitUp polls until the process is up (see StartRedis), has exited, or
// RedisStartTimeout has passed.
func (s *redisProc) waitUp(tcpOnly bool) error {
	var last error
	up := Until(RedisStartTimeout, Poll, func() bool {
		if s.exited() {
			return true
		}
		last = s.probe(tcpOnly)
		return last == nil
	})
	switch {
	case s.exited():
		return fmt.Errorf("redis-server exited before it was up (%v)", s.cmd.ProcessState)
	case !up:
		return fmt.Errorf("not up within %v (last: %v)", RedisStartTimeout, last)
	}
	return nil
}

// probe says why the process is not up yet, or nil when it is.
func (s *redisProc) probe(tcpOnly bool) error {
	b, err := os.ReadFile(s.pidPath)
	if err != nil {
		return fmt.Errorf("no pid file yet: %w", err)
	}
	if pid := strings.TrimSpace(string(b)); pid != strconv.Itoa(s.cmd.Process.Pid) {
		return fmt.Errorf("pid file holds %q", pid)
	}
	c, err := net.DialTimeout("tcp", s.addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	if tcpOnly {
		return nil
	}
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line == "+PONG\r\n" || strings.HasPrefix(line, "-NOAUTH ") {
		return nil
	}
	return fmt.Errorf("PING answered %q", line)
}

// readTail is the end of the file at path (at most redisLogTail bytes), or
// why it cannot be read.
func readTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > redisLogTail {
		b = append([]byte("…\n"), b[len(b)-redisLogTail:]...)
	}
	return string(b)
}
