//go:build unix

package embed

import "syscall"

// cpuSeconds is the CPU time this process has used, user and system: on a
// machine shared with other work it counts what the benchmark got, not the
// wall clock it waited.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}
