//go:build faults

package main

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/httpapi"
	"github.com/lockd/lockd/raftstore"
	"github.com/lockd/lockd/raftstore/logstore"
	"github.com/lockd/lockd/raftstore/multiraft"
	"github.com/lockd/lockd/server"
)

// Fault injection for the test/ fault suite. This file builds only with the
// faults tag (go build -tags faults; docs/developing.md): the default binary
// has none of it (nofaults.go). Even in a fault build, the flags below exist
// only when the environment has LOCKD_FAULT_INJECTION=1, so they are hidden
// from -h.
const faultEnv = "LOCKD_FAULT_INJECTION"

// faultFlags are the hidden flags; nil fields when they are not registered.
type faultFlags struct {
	control      *bool
	dialVia      *string
	takeoverSkew *time.Duration
	lyingDisk    *time.Duration
}

// registerFaultFlags registers the hidden fault flags on fs when faultEnv is set.
func registerFaultFlags(fs *flag.FlagSet) *faultFlags {
	f := &faultFlags{}
	if os.Getenv(faultEnv) != "1" {
		return f
	}
	f.control = fs.Bool("fault-control", false, "(fault tests) serve POST/GET /debug/faults on the HTTP port: fsync_delay, fsync_fail, clock_jump, clock_rate, lying_disk")
	f.dialVia = fs.String("dial-via", "", "(fault tests) dial peers through proxies: peer-addr=proxy-addr,...")
	f.takeoverSkew = fs.Duration("planted-takeover-skew", 0, "(fault tests) PLANTED BUG: a new leader continues log time this far ahead, ending leases early")
	f.lyingDisk = fs.Duration("planted-lying-disk", 0, "(fault tests) PLANTED BUG: log writes are acknowledged this long before they are durable")
	return f
}

// apply installs the requested faults into cfg.
func (f *faultFlags) apply(cfg *server.Config) error {
	if f.control == nil {
		return nil
	}
	via := map[string]string{}
	if *f.dialVia != "" {
		for _, item := range strings.Split(*f.dialVia, ",") {
			from, to, ok := strings.Cut(strings.TrimSpace(item), "=")
			if !ok || from == "" || to == "" {
				return fmt.Errorf("-dial-via: %q is not peer-addr=proxy-addr", item)
			}
			via[from] = to
		}
	}
	if !*f.control && *f.lyingDisk == 0 && len(via) == 0 && *f.takeoverSkew == 0 {
		return nil
	}
	if *f.control && cfg.HTTPAddr == "" {
		return errors.New("-fault-control needs the HTTP port (-http-addr)")
	}
	fc := &faultControl{clock: raftstore.NewFaultClock()}
	cfg.StoreHook = func(sc *raftstore.Config) {
		sc.DialVia = via
		sc.PlantedTakeoverSkew = *f.takeoverSkew
		if !*f.control && *f.lyingDisk == 0 {
			return
		}
		sc.Now = fc.clock.Now
		sc.WrapLogStore = func(ls raft.LogStore) raft.LogStore {
			fc.mu.Lock()
			defer fc.mu.Unlock()
			d := logstore.NewFaulty(ls)
			if *f.lyingDisk > 0 {
				d.SetLyingDisk(*f.lyingDisk)
			}
			fc.disk = d
			return d
		}
		sc.WrapEngineStorage = func(s multiraft.Storage) multiraft.Storage {
			fc.mu.Lock()
			defer fc.mu.Unlock()
			d := multiraft.NewFaultyStorage(s)
			fc.disk = engineDisk{d}
			return d
		}
	}
	if *f.control {
		cfg.HTTPHook = func(h http.Handler) http.Handler { return httpapi.WithFaults(h, fc) }
	}
	return nil
}

// faultControl is this process's httpapi.FaultControl.
type faultControl struct {
	clock *raftstore.FaultClock
	mu    sync.Mutex
	disk  diskFaults // set when Raft opens its log
}

// diskFaults are the write faults of a node's log: logstore.Faulty under
// hashicorp/raft, engineDisk on the engine.
type diskFaults interface {
	SetWriteDelay(time.Duration)
	SetFailWrites(bool)
	WriteDelay() time.Duration
	FailWrites() bool
	Counts() (writes, failed uint64)
	SetLyingDisk(time.Duration) error
	LyingDisk() time.Duration
}

// engineDisk is the engine's storage faults: no lying disk (acknowledging
// writes before they are durable is hashicorp/raft's planted bug).
type engineDisk struct{ *multiraft.FaultyStorage }

func (engineDisk) SetLyingDisk(d time.Duration) error {
	if d != 0 {
		return errors.New("lying_disk is not built on the engine")
	}
	return nil
}

func (engineDisk) LyingDisk() time.Duration { return 0 }

var errNoDisk = errors.New("the log store is not open yet")

func (fc *faultControl) faulty() (diskFaults, error) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.disk == nil {
		return nil, errNoDisk
	}
	return fc.disk, nil
}

// SetFault implements httpapi.FaultControl.
func (fc *faultControl) SetFault(name, value string) error {
	switch name {
	case "clock_jump":
		d, err := time.ParseDuration(value)
		if err != nil {
			return fmt.Errorf("clock_jump: %w", err)
		}
		fc.clock.Jump(d)
		return nil
	case "clock_rate":
		r, err := strconv.ParseFloat(value, 64)
		if err != nil || r < 0 {
			return fmt.Errorf("clock_rate: %q is not a rate >= 0", value)
		}
		fc.clock.SetRate(r)
		return nil
	}
	disk, err := fc.faulty()
	if err != nil {
		return err
	}
	switch name {
	case "fsync_delay":
		d, err := time.ParseDuration(value)
		if err != nil {
			return fmt.Errorf("fsync_delay: %w", err)
		}
		disk.SetWriteDelay(d)
	case "fsync_fail":
		on, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("fsync_fail: %w", err)
		}
		disk.SetFailWrites(on)
	case "lying_disk":
		d, err := time.ParseDuration(value)
		if err != nil {
			return fmt.Errorf("lying_disk: %w", err)
		}
		return disk.SetLyingDisk(d)
	default:
		return fmt.Errorf("unknown fault %q", name)
	}
	return nil
}

// Faults implements httpapi.FaultControl.
func (fc *faultControl) Faults() map[string]string {
	rate, jumped := fc.clock.State()
	out := map[string]string{
		"clock_rate":   strconv.FormatFloat(rate, 'g', -1, 64),
		"clock_jumped": jumped.String(),
	}
	if disk, err := fc.faulty(); err == nil {
		w, failed := disk.Counts()
		out["fsync_delay"] = disk.WriteDelay().String()
		out["fsync_fail"] = strconv.FormatBool(disk.FailWrites())
		out["lying_disk"] = disk.LyingDisk().String()
		out["log_writes"] = strconv.FormatUint(w, 10)
		out["log_writes_failed"] = strconv.FormatUint(failed, 10)
	}
	return out
}
