//go:build !linux

package main

// threadCPU and processCPU are 0 off Linux: no CPU-time rates.
func threadCPU() float64  { return 0 }
func processCPU() float64 { return 0 }
