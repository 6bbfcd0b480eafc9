//go:build !linux

package serve

import (
	"errors"
	"syscall"
)

// sysProcAttr puts the server in a process group of its own. Outside Linux
// there is no parent-death signal: only Stop and Reap end servers.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

var parentDeathSignal = false

// startTime is unknown outside Linux; leases then match processes by pid
// alone.
func startTime(pid int) (uint64, error) {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return 0, err
	}
	return 0, nil
}

// groupAlive reports whether a process of group pgid exists.
func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) != syscall.ESRCH }
