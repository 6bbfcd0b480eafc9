//go:build !amd64

package embed

// cpuKernels returns no assembly kernels: they are amd64 only.
func cpuKernels() []*kernel { return nil }

// haveGELUAVX2 is false off amd64: gelu runs in Go.
const haveGELUAVX2 = false

func geluAVX2(h []float32) { panic("embed: geluAVX2 needs amd64") }
