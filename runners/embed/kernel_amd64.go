package embed

//go:generate go run kernels_gen.go

import (
	"math"

	"golang.org/x/sys/cpu"
)

// The assembly kernels (kernel_avx2_amd64.s, kernel_avx512_amd64.s, both
// written by kernels_gen.go).
var (
	avx512 = &kernel{name: "avx512", mr: 12, nr: 32, kc: 192, lanes: 16, tile: tileAVX512}
	avx2   = &kernel{name: "avx2", mr: 6, nr: 16, kc: 384, lanes: 8, tile: tileAVX2}
)

// cpuKernels returns the assembly kernels this CPU and OS run, the fastest
// first. x/sys/cpu reports AVX-512 and AVX only where the OS saves their
// registers.
func cpuKernels() []*kernel {
	var ks []*kernel
	if cpu.X86.HasAVX512F {
		ks = append(ks, avx512)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, avx2)
	}
	return ks
}

// haveVecAVX2 says whether geluAVX2, maxAVX2 and expSumAVX2 may run.
var haveVecAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

func tileAVX2(k int, a, b, c []float32, ldc int, bias []float32, mode int) {
	checkTile(6, 16, k, a, b, c, ldc, bias, mode)
	var pb *float32
	if mode == initBias {
		pb = &bias[0]
	}
	tile6x16(k, &a[0], &b[0], &c[0], ldc, pb, mode)
}

func tileAVX512(k int, a, b, c []float32, ldc int, bias []float32, mode int) {
	checkTile(12, 32, k, a, b, c, ldc, bias, mode)
	var pb *float32
	if mode == initBias {
		pb = &bias[0]
	}
	tile12x32(k, &a[0], &b[0], &c[0], ldc, pb, mode)
}

// tile6x16 is tileFunc's contract for mr 6, nr 16, on raw pointers
// (kernel_avx2_amd64.s).
//
//go:noescape
func tile6x16(k int, a, b, c *float32, ldc int, bias *float32, mode int)

// tile12x32 is tileFunc's contract for mr 12, nr 32, on raw pointers
// (kernel_avx512_amd64.s).
//
//go:noescape
func tile12x32(k int, a, b, c *float32, ldc int, bias *float32, mode int)

// geluConsts is gelu8's table: each constant 8 times.
var geluConsts = func() (t [17 * 8]float32) {
	for i, v := range []float32{
		1 / math.Sqrt2, -4, 4, 0.5, 1,
		-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
		-7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02,
		-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
		-1.42647390514189e-02,
	} {
		for j := 0; j < 8; j++ {
			t[8*i+j] = v
		}
	}
	return t
}()

// geluAVX2 is gelu with AVX2 and FMA, 8 values at a time (the last
// len(h)%8 in Go).
func geluAVX2(h []float32) {
	if n := len(h) &^ 7; n > 0 {
		gelu8(&h[0], n, &geluConsts)
	}
	geluGo(h[len(h)&^7:])
}

// gelu8 is in gelu_amd64.s.
//
//go:noescape
func gelu8(h *float32, n int, consts *[17 * 8]float32)

// expConsts is exp8's table: each constant 8 times.
var expConsts = func() (t [13 * 8]float32) {
	for i, v := range []float32{
		-87, math.Log2E, 0.5, 0.693359375, -2.12194440e-4,
		1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1,
		1, math.Float32frombits(127),
	} {
		for j := 0; j < 8; j++ {
			t[8*i+j] = v
		}
	}
	return t
}()

// expSumAVX2 replaces s[i] by e^(scale·s[i] - top) and returns their sum,
// 8 at a time with AVX2 and FMA (the last len(s)%8 with expf32).
func expSumAVX2(s []float32, scale, top float32) float32 {
	var sum float32
	if n := len(s) &^ 7; n > 0 {
		sum = exp8(&s[0], n, scale, top, &expConsts)
	}
	for i := len(s) &^ 7; i < len(s); i++ {
		s[i] = expf32(scale*s[i] - top)
		sum += s[i]
	}
	return sum
}

// maxAVX2 returns the largest of s (not empty, no NaNs), 8 at a time with
// AVX2.
func maxAVX2(s []float32) float32 {
	top := float32(math.Inf(-1))
	if n := len(s) &^ 7; n > 0 {
		top = max8(&s[0], n)
	}
	for _, v := range s[len(s)&^7:] {
		top = max(top, v)
	}
	return top
}

// max8 is in softmax_amd64.s.
//
//go:noescape
func max8(s *float32, n int) float32

// exp8 is in softmax_amd64.s.
//
//go:noescape
func exp8(s *float32, n int, scale, top float32, consts *[13 * 8]float32) float32
