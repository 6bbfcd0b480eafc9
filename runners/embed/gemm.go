package embed

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// A kernel is a GEMM micro-kernel: tile computes one mr×nr block of
// C = A·B from mr rows of A packed by packA and a panel of B packed by
// panels. Every kernel accumulates each element of C in one float32 chain
// of fused multiply-adds over k in increasing order, starting from zero,
// the bias or the value already in C (initZero, initBias, initC): an
// element's value depends on its row of A, its column of B and k only,
// never on where its tile lies, how k was split into blocks or how many
// rows were multiplied together, and the AVX-512 and AVX2 kernels give the
// same bits. The portable kernel rounds the product and the sum separately
// on amd64 (Go fuses them on arm64, ppc64 and s390x), so it agrees with
// the others to rounding only.
type kernel struct {
	name   string
	mr, nr int
	// kc is how many columns of A (rows of B) one pass of the tiles
	// takes: kc rows of a panel of B, which every tile of a block of rows
	// reads again, stay within L1 (24 KiB for both assembly kernels).
	kc int
	// lanes is how many float32 one vector instruction holds (1 for the
	// portable kernel): for the fraction of the FMA peak.
	lanes int
	tile  tileFunc
}

// tileFunc computes C[i][j] = init(i, j) + Σ_{p<k} A[i][p]·B[p][j] for
// i < mr, j < nr, where A[i][p] is a[p·mr+i], B[p][j] is b[p·nr+j] and
// C[i][j] is c[i·ldc+j]; init is 0, bias[j] or C[i][j] for initZero,
// initBias and initC. k ≥ 1. The slices must hold the elements the tile
// reads and writes (checkTile).
type tileFunc func(k int, a, b, c []float32, ldc int, bias []float32, mode int)

// The accumulators of a tile start from zero, the bias or C.
const (
	initZero = iota
	initBias
	initC
)

// checkTile panics unless the slices hold what a tile of mr×nr reads and
// writes: a guard in front of the assembly kernels, which cannot check.
func checkTile(mr, nr, k int, a, b, c []float32, ldc int, bias []float32, mode int) {
	if k < 1 || len(a) < k*mr || len(b) < k*nr || len(c) < (mr-1)*ldc+nr || (mode == initBias && len(bias) < nr) {
		panic(fmt.Sprintf("embed: tile %dx%d k=%d: a %d, b %d, c %d (ldc %d), bias %d, mode %d",
			mr, nr, k, len(a), len(b), len(c), ldc, len(bias), mode))
	}
}

// portable is the kernel for CPUs without an assembly one: 4×4 in Go.
var portable = &kernel{name: "portable", mr: 4, nr: 4, kc: 256, lanes: 1, tile: tileGo}

func tileGo(k int, a, b, c []float32, ldc int, bias []float32, mode int) {
	checkTile(4, 4, k, a, b, c, ldc, bias, mode)
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
	a, b = a[:4*k], b[:4*k]
	for p := 0; p < 4*k; p += 4 {
		ap, bp := a[p:p+4], b[p:p+4]
		b0, b1, b2, b3 := bp[0], bp[1], bp[2], bp[3]
		x := ap[0]
		c00 += x * b0
		c01 += x * b1
		c02 += x * b2
		c03 += x * b3
		x = ap[1]
		c10 += x * b0
		c11 += x * b1
		c12 += x * b2
		c13 += x * b3
		x = ap[2]
		c20 += x * b0
		c21 += x * b1
		c22 += x * b2
		c23 += x * b3
		x = ap[3]
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

// mcBlock is how many rows of A gemm packs at a time: a block of mcBlock
// rows by the kernel's kc columns (up to 144 KiB) stays in L2 while every
// panel of B multiplies it. A multiple of every kernel's mr.
const mcBlock = 192

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

// scratch is one worker's room: a packed block of A and a tile for the
// edges of C, and attention's packed keys and values, scores and their
// sums' inverses.
type scratch struct {
	a, c, bias          []float32
	kt, vt, scores, inv []float32
}

// scratches holds *scratch for reuse: a packed block of A is up to
// 288 KiB, and every GEMM and attention phase needs one per goroutine.
var scratches sync.Pool

// getScratch returns a scratch big enough for kn, from scratches when one
// there is; putScratch returns it.
func getScratch(kn *kernel) *scratch {
	if s, ok := scratches.Get().(*scratch); ok && len(s.a) >= mcBlock*kn.kc && len(s.c) >= kn.mr*kn.nr && len(s.bias) >= kn.nr {
		return s
	}
	return &scratch{a: make([]float32, mcBlock*kn.kc), c: make([]float32, kn.mr*kn.nr), bias: make([]float32, kn.nr)}
}

func putScratch(s *scratch) { scratches.Put(s) }

// run computes the product with up to threads goroutines. It splits C
// into blocks of rows, at most mcBlock and, on several threads, small
// enough that every thread gets about eight (the threads take blocks as
// they finish one, so they end at most a small block apart); only when
// there are fewer blocks than threads (a few tokens) does it split the
// columns too, each such block then packing its rows of A again.
func (g *gemm) run(kn *kernel, threads int) {
	if g.m == 0 || g.b.n == 0 {
		return
	}
	const step = 12 // a multiple of every kernel's mr
	mc := mcBlock
	if threads > 1 {
		mc = min(mcBlock, max(step, (g.m+8*threads-1)/(8*threads)+step-1)/step*step)
	}
	rowBlocks := (g.m + mc - 1) / mc
	panelCount := (g.b.n + kn.nr - 1) / kn.nr
	colBlocks := 1
	if rowBlocks < threads {
		colBlocks = min(panelCount, (2*threads+rowBlocks-1)/rowBlocks)
	}
	perBlock := (panelCount + colBlocks - 1) / colBlocks
	colBlocks = (panelCount + perBlock - 1) / perBlock
	parallel(threads, rowBlocks*colBlocks, func() (func(int), func()) {
		s := getScratch(kn)
		return func(item int) {
			r, cb := item/colBlocks, item%colBlocks
			i0, i1 := r*mc, min((r+1)*mc, g.m)
			j0, j1 := cb*perBlock*kn.nr, min((cb+1)*perBlock*kn.nr, g.b.n)
			g.block(kn, s, i0, i1, j0, j1)
		}, func() { putScratch(s) }
	})
}

// block computes rows i0…i1-1 and columns j0…j1-1 of C (j0 a multiple of
// the kernel's nr): for each block of mcBlock rows and kc columns of A,
// packed, every panel of B in turn multiplies every tile of rows.
func (g *gemm) block(kn *kernel, s *scratch, i0, i1, j0, j1 int) {
	mr, nr, k := kn.mr, kn.nr, g.b.k
	for m0 := i0; m0 < i1; m0 += mcBlock {
		m1 := min(m0+mcBlock, i1)
		for k0 := 0; k0 < k; k0 += kn.kc {
			kc := min(kn.kc, k-k0)
			packA(s.a, g.a, g.lda, m0, m1, k0, kc, mr)
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
				for i := m0; i < m1; i += mr {
					a := s.a[(i-m0)*kc : (i-m0+mr)*kc]
					if rows := min(mr, m1-i); rows < mr || cols < nr {
						g.edge(kn, s, kc, a, rows, cols, bp, g.c[i*g.ldc+j:], bias, mode)
					} else {
						kn.tile(kc, a, bp, g.c[i*g.ldc+j:], g.ldc, bias, mode)
					}
				}
			}
		}
		if g.gelu {
			for i := m0; i < m1; i++ {
				gelu(g.c[i*g.ldc+j0 : i*g.ldc+j1])
			}
		}
	}
}

// packA packs rows m0…m1-1, columns k0…k0+kc-1 of a (row stride lda) into
// dst for the tiles: each group of mr rows as kc columns of mr values,
// rows beyond m1 zero.
func packA(dst, a []float32, lda, m0, m1, k0, kc, mr int) {
	for t := m0; t < m1; t += mr {
		tile := dst[(t-m0)*kc : (t-m0+mr)*kc]
		if t+mr <= m1 {
			switch mr {
			case 6:
				pack6(tile, a, lda, t*lda+k0, kc)
				continue
			case 12:
				pack6x2(tile, a, lda, t*lda+k0, kc)
				continue
			}
		}
		for r := 0; r < mr; r++ {
			if t+r >= m1 {
				for p := r; p < len(tile); p += mr {
					tile[p] = 0
				}
				continue
			}
			for p, v := range a[(t+r)*lda+k0 : (t+r)*lda+k0+kc] {
				tile[p*mr+r] = v
			}
		}
	}
}

// pack6 packs 6 full rows of kc from a[off:] (row stride lda) as kc
// columns of 6: packA's common case, written out so that the compiler
// checks bounds once per row rather than once per value.
func pack6(dst, a []float32, lda, off, kc int) {
	r0, r1, r2 := a[off:off+kc], a[off+lda:off+lda+kc], a[off+2*lda:off+2*lda+kc]
	r3, r4, r5 := a[off+3*lda:off+3*lda+kc], a[off+4*lda:off+4*lda+kc], a[off+5*lda:off+5*lda+kc]
	dst = dst[:6*kc]
	for p := range r0 {
		d := (*[6]float32)(dst[6*p:])
		d[0], d[1], d[2], d[3], d[4], d[5] = r0[p], r1[p], r2[p], r3[p], r4[p], r5[p]
	}
}

// pack6x2 is pack6 for 12 rows.
func pack6x2(dst, a []float32, lda, off, kc int) {
	r0, r1, r2 := a[off:off+kc], a[off+lda:off+lda+kc], a[off+2*lda:off+2*lda+kc]
	r3, r4, r5 := a[off+3*lda:off+3*lda+kc], a[off+4*lda:off+4*lda+kc], a[off+5*lda:off+5*lda+kc]
	off += 6 * lda
	r6, r7, r8 := a[off:off+kc], a[off+lda:off+lda+kc], a[off+2*lda:off+2*lda+kc]
	r9, r10, r11 := a[off+3*lda:off+3*lda+kc], a[off+4*lda:off+4*lda+kc], a[off+5*lda:off+5*lda+kc]
	dst = dst[:12*kc]
	for p := range r0 {
		d := (*[12]float32)(dst[12*p:])
		d[0], d[1], d[2], d[3], d[4], d[5] = r0[p], r1[p], r2[p], r3[p], r4[p], r5[p]
		d[6], d[7], d[8], d[9], d[10], d[11] = r6[p], r7[p], r8[p], r9[p], r10[p], r11[p]
	}
}

// edge computes a tile of rows×cols < mr×nr through the scratch tile, so
// that the kernel writes only memory of its own.
func (g *gemm) edge(kn *kernel, s *scratch, kc int, a []float32, rows, cols int, bp, c, bias []float32, mode int) {
	nr := kn.nr
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
	kn.tile(kc, a, bp, s.c, nr, bias, mode)
	for r := 0; r < rows; r++ {
		copy(c[r*g.ldc:r*g.ldc+cols], s.c[r*nr:r*nr+cols])
	}
}

// parallel runs items 0…n-1 on up to threads goroutines (the caller's
// among them), each taking the next item as it finishes one. worker is
// called once per goroutine and returns the function that goroutine runs
// items with, so that each has scratch memory of its own, and a function
// (or nil) to call when it has run its last.
func parallel(threads, n int, worker func() (do func(item int), done func())) {
	threads = max(1, min(threads, n))
	if threads == 1 {
		do, done := worker()
		for i := 0; i < n; i++ {
			do(i)
		}
		if done != nil {
			done()
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	loop := func() {
		do, done := worker()
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				break
			}
			do(i)
		}
		if done != nil {
			done()
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
