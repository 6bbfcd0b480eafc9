package main

import "syscall"

// threadCPU is the CPU time of the calling OS thread (RUSAGE_THREAD).
func threadCPU() float64 { return rusage(1) }

// processCPU is the CPU time of the process, every thread.
func processCPU() float64 { return rusage(syscall.RUSAGE_SELF) }

func rusage(who int) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}
