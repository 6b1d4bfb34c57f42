package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/loopback"
)

// pgStartTimeout bounds initdb plus a server accepting connections.
const pgStartTimeout = 60 * time.Second

// pgBinDir finds PostgreSQL's server programs: on PATH, or where Debian's
// postgresql package puts them (/usr/lib/postgresql/<version>/bin, off PATH).
func pgBinDir(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("postgres"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p)
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	var ok []string
	for _, d := range dirs {
		if st, err := os.Stat(filepath.Join(d, "initdb")); err == nil && !st.IsDir() {
			ok = append(ok, d)
		}
	}
	if len(ok) == 0 {
		t.Fatal("PostgreSQL is not installed (no initdb/postgres on PATH or in /usr/lib/postgresql/*/bin): " +
			"the payout example needs it (Debian: apt-get install postgresql; `make deps` installs it)")
	}
	version := func(d string) int { v, _ := strconv.Atoi(filepath.Base(filepath.Dir(d))); return v }
	sort.Slice(ok, func(i, j int) bool { return version(ok[i]) > version(ok[j]) })
	return ok[0]
}

// pgCredential is who runs PostgreSQL: postgres refuses to run as root, so a
// root test runs it as the "postgres" system user (created by Debian's
// package); anyone else runs it as themselves (nil).
func pgCredential(t *testing.T) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("running as root, and PostgreSQL refuses to: it needs the 'postgres' system user "+
			"(Debian's postgresql package creates it): %v", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}
}

// startPostgres creates a throwaway cluster in a temporary directory
// (initdb, trust authentication, no fsync), starts it on a free 127.0.0.1
// port, and stops it (fast shutdown, then SIGKILL) with the test. It returns
// a lib/pq connection string.
func startPostgres(t *testing.T) string {
	t.Helper()
	bin := pgBinDir(t)
	cred := pgCredential(t)
	// Not t.TempDir: the postgres user must be able to reach the directory,
	// and t.TempDir's parent is private to this user.
	dir, err := os.MkdirTemp("", "lockd-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	for attempt := 1; ; attempt++ { // the free port can be taken before postgres binds it
		port := freePort(t)
		logPath := filepath.Join(dir, fmt.Sprintf("postgres-%d.log", attempt))
		logf, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-k", dir,
			"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
			"-c", "full_page_writes=off", "-c", "max_connections=30")
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start postgres: %v", err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); logf.Close(); close(exited) }()
		stop := func() {
			cmd.Process.Signal(syscall.SIGINT) // fast shutdown
			select {
			case <-exited:
			case <-time.After(15 * time.Second):
				cmd.Process.Kill()
				<-exited
			}
		}
		dsn := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable connect_timeout=5", port)
		if err := waitPostgres(dsn, exited); err == nil {
			t.Cleanup(stop)
			return dsn
		} else if attempt == 3 {
			stop()
			log, _ := os.ReadFile(logPath)
			t.Fatalf("postgres did not start: %v\n%s", err, log)
		}
		stop()
	}
}

// waitPostgres polls until the server accepts a connection, it exits, or
// pgStartTimeout passes.
func waitPostgres(dsn string, exited <-chan struct{}) error {
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	deadline := time.Now().Add(pgStartTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := db.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("postgres exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no connection within %v: %v", pgStartTimeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// freePort is a 127.0.0.1 port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ports, err := loopback.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// lineAfter returns what follows prefix in line, or "".
func lineAfter(line, prefix string) string {
	if i := strings.Index(line, prefix); i >= 0 {
		return line[i+len(prefix):]
	}
	return ""
}
