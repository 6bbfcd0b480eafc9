package embed

import "golang.org/x/sys/cpu"

// haveDot4x2 says whether dot4x2 may run: it needs AVX2 and FMA.
var haveDot4x2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dot4x2 is in dot_amd64.s.
//
//go:noescape
func dot4x2(w *float32, stride int, x0, x1 *float32, n int, acc *[64]float32)
