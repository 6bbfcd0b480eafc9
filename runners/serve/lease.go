package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Lease is the record Start leaves in its state directory while a server
// runs, and Stop removes: which process is the server and which process
// started it, each named by pid and start time so that a reused pid is
// never mistaken for either.
type Lease struct {
	PID            int       `json:"pid"`              // the server, leader of its own process group
	StartTime      uint64    `json:"start_time"`       // its /proc/PID/stat start time (clock ticks since boot)
	Owner          int       `json:"owner_pid"`        // the process that called Start
	OwnerStartTime uint64    `json:"owner_start_time"` // the owner's start time
	Identity       string    `json:"identity"`         // Spec.Identity
	Endpoint       string    `json:"endpoint"`         // Server.Endpoint
	Argv           []string  `json:"argv"`
	Started        time.Time `json:"started"`
	// Container is a wrapped server's instance name (Server.Container),
	// Remove its Wrapper's remove command: Reap runs it when the owner is
	// dead, whether the process PID is alive or not.
	Container string   `json:"container,omitempty"`
	Remove    []string `json:"remove,omitempty"`
}

// ReapGrace is how long Reap waits after SIGTERM before SIGKILL.
const ReapGrace = 5 * time.Second

const leasePrefix, leaseSuffix = "serve-", ".json"

func (l Lease) file(dir string) string {
	return filepath.Join(dir, fmt.Sprintf("%s%d-%d%s", leasePrefix, l.PID, l.StartTime, leaseSuffix))
}

// writeLease writes the lease atomically (a temporary name, then rename).
func writeLease(dir string, l Lease) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, ".lease-*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	name := l.file(dir)
	if err == nil {
		err = os.Rename(f.Name(), name)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return name, nil
}

// alive reports whether pid is still the process that started at start.
func alive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	t, err := startTime(pid)
	return err == nil && t == start
}

// Reap ends the servers that processes now dead left behind in stateDir
// (a lacuna killed with kill -9 before it could stop them, on a system
// where the parent-death signal did not reach them) and removes their
// leases: SIGTERM to the server's process group, SIGKILL after ReapGrace,
// then, for a wrapped server, the lease's remove command (a container
// outlives its client, whom the parent-death signal killed). Leases whose
// owner still runs (another lacuna sharing the directory, or this
// process) are left alone; leases whose server is already gone are
// removed. Call it before starting servers. A missing directory holds
// nothing to reap. It returns the leases it removed, servers killed or
// not. Concurrent Reaps of one directory are safe (each lease is handled
// once at most, the rest find it gone).
func Reap(stateDir string) ([]Lease, error) {
	entries, err := os.ReadDir(stateDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reap %s: %w", stateDir, err)
	}
	var reaped []Lease
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, leasePrefix) || !strings.HasSuffix(name, leaseSuffix) {
			continue
		}
		path := filepath.Join(stateDir, name)
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var l Lease
		if err := json.Unmarshal(b, &l); err != nil {
			errs = append(errs, fmt.Errorf("lease %s: %w", path, err))
			continue
		}
		if alive(l.Owner, l.OwnerStartTime) {
			continue
		}
		if alive(l.PID, l.StartTime) {
			if err := killGroup(l.PID, l.StartTime, ReapGrace); err != nil {
				errs = append(errs, fmt.Errorf("reap server %d (%s): %w", l.PID, path, err))
				continue
			}
		}
		if len(l.Remove) > 0 {
			if err := runRemove(context.Background(), l.Remove); err != nil {
				errs = append(errs, fmt.Errorf("reap server %s (%s): %w", l.Container, path, err))
				continue
			}
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		reaped = append(reaped, l)
	}
	return reaped, errors.Join(errs...)
}

// killGroup ends the process group led by pid (started at start): SIGTERM,
// then SIGKILL once the group outlives grace. It returns when no process
// of the group is alive (zombies no one has waited for count as gone).
// The SIGTERM goes only to a leader that is still the server (pid reuse);
// a group whose leader is gone is killed on its own.
func killGroup(pid int, start uint64, grace time.Duration) error {
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	deadline := time.Now().Add(grace)
	for groupAlive(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	return killRest(pid)
}

// killRest SIGKILLs what remains of group pgid and waits (5 s at most) for
// it to be gone.
func killRest(pgid int) error {
	for i := 0; groupAlive(pgid); i++ {
		if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
		if i == 250 {
			return fmt.Errorf("process group %d survives SIGKILL", pgid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}
