package serve

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// sysProcAttr puts the server in a process group of its own (so Stop and
// Reap reach whatever it spawns) and asks the kernel to SIGKILL it when
// the thread that started it dies (PR_SET_PDEATHSIG). The Go runtime does
// not retire the threads of ordinary goroutines, so in practice that is
// when this process dies, kill -9 included.
func sysProcAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if parentDeathSignal {
		a.Pdeathsig = syscall.SIGKILL
	}
	return a
}

// parentDeathSignal is switched off only by the test that shows Reap
// cleaning up what the death signal would otherwise have killed.
var parentDeathSignal = true

// startTime is the process's start time in clock ticks since boot (field
// 22 of /proc/PID/stat): with the pid it names a process across pid reuse.
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces and
	// parentheses itself: the fields after it start past the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state); field 22 is f[19].
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	if string(f[0]) == "Z" {
		return 0, fmt.Errorf("process %d is a zombie", pid)
	}
	return strconv.ParseUint(string(f[19]), 10, 64)
}

// groupAlive reports whether a process of group pgid is alive (zombies
// not counted: they have exited and only wait for their parent).
func groupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) == syscall.ESRCH {
		return false
	}
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range dir {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		// f[0] state, f[1] ppid, f[2] pgrp
		if len(f) > 2 && string(f[2]) == strconv.Itoa(pgid) && string(f[0]) != "Z" && pid > 0 {
			return true
		}
	}
	return false
}
