package main

import "golang.org/x/sys/cpu"

// fmaY and fmaZ are in peak_amd64.s.
func fmaY(n int)
func fmaZ(n int)

// fmaLoop returns the FMA loop for vectors of lanes float32 and the FLOPs
// of one iteration, or nil where the CPU lacks that width.
func fmaLoop(lanes int) (func(int), float64) {
	switch {
	case lanes == 16 && cpu.X86.HasAVX512F:
		return fmaZ, 12 * 16 * 2
	case lanes == 8 && cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		return fmaY, 12 * 8 * 2
	}
	return nil, 0
}

// features lists the vector features of this CPU that the kernels use or
// could.
func features() []string {
	var fs []string
	for _, f := range []struct {
		name string
		has  bool
	}{
		{"avx", cpu.X86.HasAVX}, {"avx2", cpu.X86.HasAVX2}, {"fma", cpu.X86.HasFMA},
		{"avx512f", cpu.X86.HasAVX512F}, {"avx512dq", cpu.X86.HasAVX512DQ},
		{"avx512bw", cpu.X86.HasAVX512BW}, {"avx512vl", cpu.X86.HasAVX512VL},
	} {
		if f.has {
			fs = append(fs, f.name)
		}
	}
	return fs
}
