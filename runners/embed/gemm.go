package embed

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// A kernel is a GEMM micro-kernel: tile computes one mr×nr block of
// C = A·B from an mr×k block of A and a k×nr panel of B packed by panels.
// Every kernel accumulates each element of C in one float32 chain of fused
// multiply-adds over k in increasing order, starting from zero, the bias or
// the value already in C (initZero, initBias, initC): an element's value
// depends on its row of A, its column of B and k only, never on where its
// tile lies, how k was split into blocks or how many rows were encoded
// together, and the AVX-512 and AVX2 kernels give the same bits. The
// portable kernel rounds the product and the sum separately on amd64 (Go
// fuses them on arm64, ppc64 and s390x), so it agrees with the others to
// rounding only.
type kernel struct {
	name   string
	mr, nr int
	// lanes is how many float32 one vector instruction holds (1 for the
	// portable kernel): for the fraction of the FMA peak.
	lanes int
	tile  tileFunc
}

// tileFunc computes C[i][j] = init(i, j) + Σ_{p<k} A[i][p]·B[p][j] for
// i < mr, j < nr, where A[i][p] is a[i·lda+p], B[p][j] is b[p·nr+j] and
// C[i][j] is c[i·ldc+j]; init is 0, bias[j] or C[i][j] for initZero,
// initBias and initC. k ≥ 1. The slices must hold the elements the tile
// reads and writes (the asm kernels check it and panic otherwise).
type tileFunc func(k int, a []float32, lda int, b []float32, c []float32, ldc int, bias []float32, mode int)

// The accumulators of a tile start from zero, the bias or C.
const (
	initZero = iota
	initBias
	initC
)

// checkTile panics unless the slices hold what a tile of mr×nr reads and
// writes: a guard in front of the asm kernels, which cannot check.
func checkTile(mr, nr, k int, a []float32, lda int, b []float32, c []float32, ldc int, bias []float32, mode int) {
	if k < 1 || len(a) < (mr-1)*lda+k || len(b) < k*nr || len(c) < (mr-1)*ldc+nr || (mode == initBias && len(bias) < nr) {
		panic(fmt.Sprintf("embed: tile %dx%d k=%d: a %d (lda %d), b %d, c %d (ldc %d), bias %d, mode %d",
			mr, nr, k, len(a), lda, len(b), len(c), ldc, len(bias), mode))
	}
}

// portable is the kernel for CPUs without an assembly one: 4×4 in Go.
var portable = &kernel{name: "portable", mr: 4, nr: 4, lanes: 1, tile: tileGo}

func tileGo(k int, a []float32, lda int, b []float32, c []float32, ldc int, bias []float32, mode int) {
	checkTile(4, 4, k, a, lda, b, c, ldc, bias, mode)
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 float32
	switch mode {
	case initBias:
		c00, c01, c02, c03 = bias[0], bias[1], bias[2], bias[3]
		c10, c11, c12, c13 = c00, c01, c02, c03
		c20, c21, c22, c23 = c00, c01, c02, c03
		c30, c31, c32, c33 = c00, c01, c02, c03
	case initC:
		c00, c01, c02, c03 = c[0], c[1], c[2], c[3]
		c10, c11, c12, c13 = c[ldc], c[ldc+1], c[ldc+2], c[ldc+3]
		c20, c21, c22, c23 = c[2*ldc], c[2*ldc+1], c[2*ldc+2], c[2*ldc+3]
		c30, c31, c32, c33 = c[3*ldc], c[3*ldc+1], c[3*ldc+2], c[3*ldc+3]
	}
	a0, a1, a2, a3 := a[:k], a[lda:lda+k], a[2*lda:2*lda+k], a[3*lda:3*lda+k]
	b = b[:4*k]
	for p := range a0 {
		bp := b[4*p : 4*p+4]
		b0, b1, b2, b3 := bp[0], bp[1], bp[2], bp[3]
		x := a0[p]
		c00 += x * b0
		c01 += x * b1
		c02 += x * b2
		c03 += x * b3
		x = a1[p]
		c10 += x * b0
		c11 += x * b1
		c12 += x * b2
		c13 += x * b3
		x = a2[p]
		c20 += x * b0
		c21 += x * b1
		c22 += x * b2
		c23 += x * b3
		x = a3[p]
		c30 += x * b0
		c31 += x * b1
		c32 += x * b2
		c33 += x * b3
	}
	c[0], c[1], c[2], c[3] = c00, c01, c02, c03
	c[ldc], c[ldc+1], c[ldc+2], c[ldc+3] = c10, c11, c12, c13
	c[2*ldc], c[2*ldc+1], c[2*ldc+2], c[2*ldc+3] = c20, c21, c22, c23
	c[3*ldc], c[3*ldc+1], c[3*ldc+2], c[3*ldc+3] = c30, c31, c32, c33
}

// kernelNamed returns the kernel of that name among those this CPU runs.
func kernelNamed(name string) (*kernel, error) {
	var names []string
	for _, k := range kernels() {
		if k.name == name {
			return k, nil
		}
		names = append(names, k.name)
	}
	return nil, fmt.Errorf("kernel %q: this CPU runs %q", name, names)
}

// kernels returns the kernels this CPU runs, the fastest first: AVX-512,
// AVX2 with FMA, portable, as the CPU has them (cpuKernels, detected at
// run time with golang.org/x/sys/cpu).
func kernels() []*kernel {
	return append(cpuKernels(), portable)
}

// panels is a k×n matrix B packed for a kernel of panel width nr: panel q
// holds columns q·nr … q·nr+nr-1 as k rows of nr values (zero beyond n),
// one panel after another. A tile reads a run of consecutive rows of one
// panel front to back.
type panels struct {
	k, n, nr int
	data     []float32
}

func newPanels(k, n, nr int) panels {
	return panels{k: k, n: n, nr: nr, data: make([]float32, (n+nr-1)/nr*nr*k)}
}

// packNK packs B = Sᵀ where S is n rows of k (row stride ld): a weight
// matrix as Hugging Face stores it (out × in), or attention's keys.
func (p *panels) packNK(s []float32, ld int) {
	k, nr := p.k, p.nr
	for j := 0; j < p.n; j++ {
		q, jj := j/nr, j%nr
		dst := p.data[q*k*nr+jj:]
		row := s[j*ld : j*ld+k]
		for i, v := range row {
			dst[i*nr] = v
		}
	}
}

// packKN packs B = S where S is k rows of n (row stride ld): attention's
// values.
func (p *panels) packKN(s []float32, ld int) {
	k, n, nr := p.k, p.n, p.nr
	for q := 0; q*nr < n; q++ {
		w := min(nr, n-q*nr)
		for i := 0; i < k; i++ {
			dst := p.data[(q*k+i)*nr : (q*k+i)*nr+nr]
			copy(dst[:w], s[i*ld+q*nr:i*ld+q*nr+w])
			clear(dst[w:])
		}
	}
}

// Block sizes of gemm: a block of A of mcBlock rows by kcBlock columns
// stays in L2 while every panel of B multiplies it, and kcBlock rows of one
// panel (16 KiB for the AVX2 kernel) stay in L1 while every tile of rows
// of the block goes through them.
const (
	kcBlock = 256
	mcBlock = 96
)

// gemm is one product C = A·B (+ bias) (GELU): A is m rows of b.k
// (row stride lda), C m rows of b.n (row stride ldc).
type gemm struct {
	m    int
	a    []float32
	lda  int
	b    *panels
	c    []float32
	ldc  int
	bias []float32 // of b.n, or nil
	gelu bool      // apply GELU to C at the end
}

// scratch is one worker's room for tiles at the edge of C.
type scratch struct {
	a, c, bias []float32
}

func newScratch(kn *kernel) *scratch {
	return &scratch{a: make([]float32, kn.mr*kcBlock), c: make([]float32, kn.mr*kn.nr), bias: make([]float32, kn.nr)}
}

// run computes the product with up to threads goroutines, splitting C into
// blocks of rows (and of columns when there are too few row blocks to keep
// every thread busy).
func (g *gemm) run(kn *kernel, threads int) {
	if g.m == 0 || g.b.n == 0 {
		return
	}
	rowBlocks := (g.m + mcBlock - 1) / mcBlock
	panelCount := (g.b.n + kn.nr - 1) / kn.nr
	colBlocks := 1
	if threads > 1 && rowBlocks < 4*threads {
		colBlocks = min(panelCount, (4*threads+rowBlocks-1)/rowBlocks)
	}
	perBlock := (panelCount + colBlocks - 1) / colBlocks
	colBlocks = (panelCount + perBlock - 1) / perBlock
	parallel(threads, rowBlocks*colBlocks, func() func(int) {
		s := newScratch(kn)
		return func(item int) {
			r, cb := item/colBlocks, item%colBlocks
			i0, i1 := r*mcBlock, min((r+1)*mcBlock, g.m)
			j0, j1 := cb*perBlock*kn.nr, min((cb+1)*perBlock*kn.nr, g.b.n)
			g.block(kn, s, i0, i1, j0, j1)
		}
	})
}

// block computes rows i0…i1-1 and columns j0…j1-1 of C (j0 a multiple of
// the kernel's nr).
func (g *gemm) block(kn *kernel, s *scratch, i0, i1, j0, j1 int) {
	mr, nr, k := kn.mr, kn.nr, g.b.k
	for k0 := 0; k0 < k; k0 += kcBlock {
		kc := min(kcBlock, k-k0)
		mode := initC
		if k0 == 0 {
			mode = initZero
			if g.bias != nil {
				mode = initBias
			}
		}
		for j := j0; j < j1; j += nr {
			bp := g.b.data[(j/nr*k+k0)*nr : (j/nr*k+k0+kc)*nr]
			var bias []float32
			if mode == initBias {
				bias = g.bias[j:min(j+nr, g.b.n)]
			}
			cols := min(nr, g.b.n-j)
			for i := i0; i < i1; i += mr {
				rows := min(mr, g.m-i)
				a := g.a[i*g.lda+k0:]
				if rows == mr && cols == nr {
					kn.tile(kc, a, g.lda, bp, g.c[i*g.ldc+j:], g.ldc, bias, mode)
					continue
				}
				g.edge(kn, s, kc, a, rows, cols, bp, g.c[i*g.ldc+j:], bias, mode)
			}
		}
	}
	if g.gelu {
		for i := i0; i < i1; i++ {
			gelu(g.c[i*g.ldc+j0 : i*g.ldc+j1])
		}
	}
}

// edge computes a tile of rows×cols < mr×nr through the scratch tile, so
// that the kernel reads and writes only memory of its own; the zero rows
// and columns it adds do not touch the others.
func (g *gemm) edge(kn *kernel, s *scratch, kc int, a []float32, rows, cols int, bp, c, bias []float32, mode int) {
	mr, nr := kn.mr, kn.nr
	lda := g.lda
	if rows < mr {
		for r := 0; r < mr; r++ {
			dst := s.a[r*kc : (r+1)*kc]
			if r < rows {
				copy(dst, a[r*g.lda:r*g.lda+kc])
			} else {
				clear(dst)
			}
		}
		a, lda = s.a, kc
	}
	if mode == initBias {
		copy(s.bias, bias)
		clear(s.bias[len(bias):])
		bias = s.bias
	}
	clear(s.c)
	if mode == initC {
		for r := 0; r < rows; r++ {
			copy(s.c[r*nr:r*nr+cols], c[r*g.ldc:r*g.ldc+cols])
		}
	}
	kn.tile(kc, a, lda, bp, s.c, nr, bias, mode)
	for r := 0; r < rows; r++ {
		copy(c[r*g.ldc:r*g.ldc+cols], s.c[r*nr:r*nr+cols])
	}
}

// parallel runs items 0…n-1 on up to threads goroutines (the caller's
// among them), each taking the next item as it finishes one. worker is
// called once per goroutine and returns the function that goroutine runs
// items with, so that each has scratch memory of its own.
func parallel(threads, n int, worker func() func(item int)) {
	threads = max(1, min(threads, n))
	if threads == 1 {
		do := worker()
		for i := 0; i < n; i++ {
			do(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	loop := func() {
		do := worker()
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			do(i)
		}
	}
	for t := 1; t < threads; t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loop()
		}()
	}
	loop()
	wg.Wait()
}
