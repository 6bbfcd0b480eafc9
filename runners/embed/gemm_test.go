package embed

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// product is one random C = A·B (+ bias) (GELU) with strided A and C.
type product struct {
	m, n, k    int
	lda, ldc   int
	a, w, bias []float32 // w is B transposed, n rows of k
	gelu       bool
}

func newProduct(r *rand.Rand, m, n, k int, bias, gelu bool) *product {
	p := &product{m: m, n: n, k: k, lda: k + r.Intn(3), ldc: n + r.Intn(3), gelu: gelu}
	p.a = randFloats(r, m*p.lda)
	p.w = randFloats(r, n*k)
	if bias {
		p.bias = randFloats(r, n)
	}
	return p
}

func randFloats(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

// run computes the product with kernel kn on threads goroutines; the
// padding columns of C (beyond n) keep their NaN.
func (p *product) run(kn *kernel, threads int) []float32 {
	b := newPanels(p.k, p.n, kn.nr)
	b.packNK(p.w, p.k)
	c := make([]float32, p.m*p.ldc)
	for i := range c {
		c[i] = float32(math.NaN())
	}
	(&gemm{m: p.m, a: p.a, lda: p.lda, b: &b, c: c, ldc: p.ldc, bias: p.bias, gelu: p.gelu}).run(kn, threads)
	return c
}

// want is the product in float64.
func (p *product) want(i, j int) float64 {
	var s float64
	if p.bias != nil {
		s = float64(p.bias[j])
	}
	for q := 0; q < p.k; q++ {
		s += float64(p.a[i*p.lda+q]) * float64(p.w[j*p.k+q])
	}
	if p.gelu {
		s = 0.5 * s * (1 + math.Erf(s/math.Sqrt2))
	}
	return s
}

// tileShapes are Go kernels of the assembly kernels' shapes (the AVX-512
// one's included), so that the driver's blocking, packing and edges run
// at those shapes on any CPU: float64 products rounded once, enough to
// check where every value goes.
var tileShapes = []*kernel{
	{name: "go12x32", mr: 12, nr: 32, kc: 192, lanes: 1, tile: tileRef(12, 32)},
	{name: "go6x16", mr: 6, nr: 16, kc: 384, lanes: 1, tile: tileRef(6, 16)},
}

// tileRef is a tileFunc of any shape in float64.
func tileRef(mr, nr int) tileFunc {
	return func(k int, a, b, c []float32, ldc int, bias []float32, mode int) {
		checkTile(mr, nr, k, a, b, c, ldc, bias, mode)
		for i := 0; i < mr; i++ {
			for j := 0; j < nr; j++ {
				var s float64
				switch mode {
				case initBias:
					s = float64(bias[j])
				case initC:
					s = float64(c[i*ldc+j])
				}
				for p := 0; p < k; p++ {
					s += float64(a[p*mr+i]) * float64(b[p*nr+j])
				}
				c[i*ldc+j] = float32(s)
			}
		}
	}
}

// raggedShapes are products whose m, n and k are below, at and beyond
// every kernel's tile (4×4, 6×16, 12×32), its unrolling of k by 4 and
// kcBlock, plus the encoder's own shapes.
func raggedShapes() []struct{ m, n, k int } {
	shapes := []struct{ m, n, k int }{
		{1, 1, 1}, {1, 3, 2}, {2, 5, 3}, {3, 7, 4}, {5, 15, 5}, {6, 16, 8}, {7, 17, 9},
		{11, 31, 13}, {12, 32, 16}, {13, 33, 31}, {25, 48, 64}, {4, 4, 257}, {17, 40, 300},
		{30, 64, 513}, {50, 100, 7}, {97, 24, 40}, {200, 70, 33},
		{46, 1152, 384}, {46, 384, 1536}, {9, 46, 32}, {46, 32, 46},
	}
	return shapes
}

// TestKernelsMatchFloat64ReferenceOnRaggedShapes checks gemm with every
// kernel this CPU runs (AVX-512 and AVX2 where present, the portable one
// always) and the Go kernels of their shapes (tileShapes) against a
// float64 product on ragged shapes, with and without bias and GELU,
// strided A and C, on 1 and 3 goroutines, and that it writes nothing
// beyond the n columns of C.
func TestKernelsMatchFloat64ReferenceOnRaggedShapes(t *testing.T) {
	for _, kn := range append(kernels(), tileShapes...) {
		t.Run(kn.name, func(t *testing.T) {
			r := rand.New(rand.NewSource(1))
			for i, sh := range raggedShapes() {
				p := newProduct(r, sh.m, sh.n, sh.k, i%2 == 0, i%3 == 0)
				for _, threads := range []int{1, 3} {
					c := p.run(kn, threads)
					for i := 0; i < p.m; i++ {
						for j := 0; j < p.ldc; j++ {
							got := float64(c[i*p.ldc+j])
							if j >= p.n {
								if !math.IsNaN(got) {
									t.Fatalf("%+v: C[%d][%d] beyond n written: %v", sh, i, j, got)
								}
								continue
							}
							var scale float64 // Σ|a·b|: float32 rounding errors grow with it and √k
							for q := 0; q < p.k; q++ {
								scale += math.Abs(float64(p.a[i*p.lda+q]) * float64(p.w[j*p.k+q]))
							}
							if want := p.want(i, j); math.Abs(got-want) > 1e-6+6e-7*math.Sqrt(float64(p.k))*scale {
								t.Fatalf("%+v threads %d: C[%d][%d] = %v, want %v", sh, threads, i, j, got, want)
							}
						}
					}
				}
			}
		})
	}
}

// TestKernelsMatchPortableKernel compares every kernel this CPU runs with
// the portable one on random ragged shapes: they must agree to float32
// rounding (the portable kernel rounds products and sums apart on amd64).
func TestKernelsMatchPortableKernel(t *testing.T) {
	ks := kernels()
	t.Logf("kernels on this CPU: %v", Kernels())
	if len(ks) == 1 {
		t.Skip("this CPU runs the portable kernel only")
	}
	r := rand.New(rand.NewSource(2))
	for trial := 0; trial < 60; trial++ {
		m, n, k := 1+r.Intn(70), 1+r.Intn(90), 1+r.Intn(600)
		p := newProduct(r, m, n, k, r.Intn(2) == 0, r.Intn(2) == 0)
		want := p.run(portable, 1)
		for _, kn := range ks[:len(ks)-1] {
			got := p.run(kn, 1+r.Intn(3))
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					g, w := got[i*p.ldc+j], want[i*p.ldc+j]
					if math.Abs(float64(g-w)) > 2e-5*math.Sqrt(float64(k))*(1+math.Abs(float64(w))) {
						t.Fatalf("%s m=%d n=%d k=%d: C[%d][%d] = %v, portable %v", kn.name, m, n, k, i, j, g, w)
					}
				}
			}
		}
	}
}

// TestAVX512AndAVX2GiveTheSameBits checks that the two assembly kernels,
// which add each element's products in the same order with one FMA each,
// agree bit for bit on random ragged shapes. It runs only on a CPU with
// AVX-512.
func TestAVX512AndAVX2GiveTheSameBits(t *testing.T) {
	k512, err := kernelNamed("avx512")
	if err != nil {
		t.Skipf("no AVX-512 on this CPU: %v", err)
	}
	k2, err := kernelNamed("avx2")
	if err != nil {
		t.Skipf("no AVX2: %v", err)
	}
	r := rand.New(rand.NewSource(3))
	for trial := 0; trial < 100; trial++ {
		m, n, k := 1+r.Intn(80), 1+r.Intn(100), 1+r.Intn(700)
		p := newProduct(r, m, n, k, r.Intn(2) == 0, false)
		a, b := p.run(k512, 2), p.run(k2, 2)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				if x, y := a[i*p.ldc+j], b[i*p.ldc+j]; math.Float32bits(x) != math.Float32bits(y) {
					t.Fatalf("m=%d n=%d k=%d: C[%d][%d] avx512 %v, avx2 %v", m, n, k, i, j, x, y)
				}
			}
		}
	}
}

// TestProductRowsDoNotDependOnTheirNeighbours multiplies rows alone and
// among others, at every offset against the tile height, and requires the
// same bits: what makes a text's vector independent of the texts encoded
// with it.
func TestProductRowsDoNotDependOnTheirNeighbours(t *testing.T) {
	for _, kn := range append(kernels(), tileShapes...) {
		t.Run(kn.name, func(t *testing.T) {
			r := rand.New(rand.NewSource(4))
			p := newProduct(r, 40, 37, 300, true, true)
			all := p.run(kn, 2)
			for off := 0; off < 2*kn.mr; off++ {
				for _, rows := range []int{1, kn.mr - 1, kn.mr + 1} {
					if off+rows > p.m {
						continue
					}
					q := *p
					q.m, q.a = rows, p.a[off*p.lda:]
					part := q.run(kn, 1)
					for i := 0; i < rows; i++ {
						for j := 0; j < p.n; j++ {
							if x, y := part[i*p.ldc+j], all[(off+i)*p.ldc+j]; math.Float32bits(x) != math.Float32bits(y) {
								t.Fatalf("rows %d…%d alone: C[%d][%d] = %v, among all %v", off, off+rows-1, i, j, x, y)
							}
						}
					}
				}
			}
		})
	}
}

// TestPackKNMatchesPackNKOfTheTranspose packs a matrix and its transpose
// both ways and expects the same panels.
func TestPackKNMatchesPackNKOfTheTranspose(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for _, nr := range []int{4, 16, 32} {
		for _, sh := range []struct{ k, n int }{{1, 1}, {3, 5}, {7, 33}, {46, 32}} {
			s := randFloats(r, sh.k*sh.n) // k rows of n
			st := make([]float32, sh.n*sh.k)
			for i := 0; i < sh.k; i++ {
				for j := 0; j < sh.n; j++ {
					st[j*sh.k+i] = s[i*sh.n+j]
				}
			}
			a, b := newPanels(sh.k, sh.n, nr), newPanels(sh.k, sh.n, nr)
			a.packKN(s, sh.n)
			b.packNK(st, sh.k)
			if fmt.Sprint(a.data) != fmt.Sprint(b.data) {
				t.Errorf("nr %d %+v: packKN %v, packNK of the transpose %v", nr, sh, a.data, b.data)
			}
		}
	}
}

// TestGELUAVX2MatchesGo checks the vectorised GELU against the Go one
// (same rational erf; the FMAs round differently) and both against
// float64's, on lengths with and without a tail. Near -5, x·Φ(x) is
// below 1e-6 and 1 + erf cancels in float32: the bound is absolute.
func TestGELUAVX2MatchesGo(t *testing.T) {
	if !haveVecAVX2 {
		t.Skip("no AVX2 and FMA on this CPU")
	}
	for _, n := range []int{1, 7, 8, 9, 64, 1001} {
		h := make([]float32, n)
		for i := range h {
			h[i] = float32(-7 + 14*float64(i)/float64(n))
		}
		want := append([]float32(nil), h...)
		geluGo(want)
		x := append([]float32(nil), h...)
		geluAVX2(h)
		for i := range h {
			exact := 0.5 * float64(x[i]) * (1 + math.Erf(float64(x[i])/math.Sqrt2))
			for _, got := range []float32{h[i], want[i]} {
				if math.Abs(float64(got)-exact) > 1e-6*(1+math.Abs(exact)) {
					t.Fatalf("n %d: gelu(%v): avx2 %v, go %v, float64 %v", n, x[i], h[i], want[i], exact)
				}
			}
		}
	}
}

func TestExpf32IsWithin2UlpOfMathExp(t *testing.T) {
	for x := -87.0; x <= 0; x += 1e-3 {
		got := expf32(float32(x))
		want := float32(math.Exp(float64(float32(x))))
		if ulps := math.Abs(float64(math.Float32bits(got)) - float64(math.Float32bits(want))); ulps > 2 {
			t.Fatalf("expf32(%v) = %v, math.Exp %v (%v ulp)", float32(x), got, want, ulps)
		}
	}
	if got := expf32(-100); got != 0 {
		t.Errorf("expf32(-100) = %v, want 0", got)
	}
}

// TestSoftmaxMatchesFloat64 checks softmax, on the AVX2 path (maximum and
// exponentials 8 at a time, the tail in Go) where the CPU has it and on
// the Go path, against float64 on rows with and without a tail, with
// scores far below the top (whose exponentials underflow). It switches
// haveVecAVX2, so it must not run in parallel with other tests.
func TestSoftmaxMatchesFloat64(t *testing.T) {
	paths := []bool{false}
	if haveVecAVX2 {
		paths = append(paths, true)
	}
	defer func(orig bool) { haveVecAVX2 = orig }(haveVecAVX2)
	for _, vec := range paths {
		haveVecAVX2 = vec
		r := rand.New(rand.NewSource(6))
		for _, n := range []int{1, 5, 8, 13, 46, 256} {
			s := randFloats(r, n)
			for i := range s {
				s[i] *= 30
			}
			if n > 2 {
				s[1] = -1e4
			}
			const scale = 0.17677669 // 1/√32
			top := math.Inf(-1)
			for _, v := range s {
				top = math.Max(top, float64(scale*v))
			}
			want := make([]float64, n)
			var sum float64
			for i, v := range s {
				want[i] = math.Exp(float64(scale*v) - top)
				sum += want[i]
			}
			x := append([]float32(nil), s...)
			inv := softmax(s, scale)
			for i := range s {
				got := float64(s[i] * inv)
				// e^x's relative error grows with |x|, rounded in float32.
				w, tol := want[i]/sum, 2.5e-7*(4+math.Abs(float64(scale*x[i])-top))
				if math.Abs(got-w) > tol*w && math.Abs(got-w) > 1e-37 {
					t.Fatalf("avx2 %v, n %d: softmax[%d] = %v, float64 %v", vec, n, i, got, w)
				}
			}
		}
	}
}

// TestEncoderKernelsAgree runs a random 2-layer encoder 96 wide with 3
// heads of 32 (full tiles and ragged ones) over sequences of 1 to 70
// tokens on every kernel: the AVX-512 and AVX2 kernels must give the same
// bits (the rest of the encoder is shared), the portable one the same
// states to rounding.
func TestEncoderKernelsAgree(t *testing.T) {
	cfg := miniLM
	cfg.HiddenSize, cfg.NumAttentionHeads, cfg.NumHiddenLayers, cfg.IntermediateSize, cfg.VocabSize = 96, 3, 2, 192, 50
	w := randomWeights(cfg, 7)
	seqs := randomSeqs(cfg.VocabSize, []int{1, 7, 13, 40, 70, 3}, 8)
	states := map[string][]float32{}
	for _, kn := range kernels() {
		e, err := newEncoder(kn, cfg, w)
		if err != nil {
			t.Fatal(err)
		}
		e.forward(seqs, 3, func(s []float32) { states[kn.name] = append([]float32(nil), s...) })
	}
	want := states["portable"]
	for name, got := range states {
		for i := range got {
			if math.Abs(float64(got[i]-want[i])) > 2e-4*(1+math.Abs(float64(want[i]))) {
				t.Fatalf("%s: state %d = %v, portable %v", name, i, got[i], want[i])
			}
		}
	}
	if a, b := states["avx512"], states["avx2"]; a != nil && b != nil {
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("state %d: avx512 %v, avx2 %v", i, a[i], b[i])
			}
		}
		t.Logf("avx512 and avx2: %d states, same bits", len(a))
	} else {
		t.Logf("kernels on this CPU: %v; avx512 against avx2 not checked", Kernels())
	}
}
