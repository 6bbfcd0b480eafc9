//go:build !amd64

package embed

// cpuKernels returns no assembly kernels: they are amd64 only.
func cpuKernels() []*kernel { return nil }

// haveVecAVX2 is false off amd64: GELU and softmax run in Go. A variable,
// as on amd64, so that tests can switch it.
var haveVecAVX2 = false

func geluAVX2(h []float32) { panic("embed: geluAVX2 needs amd64") }

func expSumAVX2(s []float32, scale, top float32) float32 { panic("embed: expSumAVX2 needs amd64") }

func maxAVX2(s []float32) float32 { panic("embed: maxAVX2 needs amd64") }
