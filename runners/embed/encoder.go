package embed

import (
	"math"
	"sync"
)

// encoder is a BERT encoder's weights laid out for one GEMM kernel: the
// embedding tables as they are, every dense layer's weight matrix
// transposed and packed into the kernel's panels (gemm.go) once at Load,
// the query, key and value projections side by side as one 3·dim-wide
// layer. Read-only after newEncoder: forward may run concurrently.
type encoder struct {
	kn                  *kernel
	dim, heads, inter   int
	word, pos, tokTypes []float32 // rows of dim
	embNorm             layerNorm
	layers              []layer
	// slabs holds *[]float32 of activations that forward reuses: a group
	// of 2,048 tokens needs 35 MB, which Go would otherwise zero again on
	// every call.
	slabs sync.Pool
}

// dense is a linear layer, y = x·Wᵀ + b, with Wᵀ packed.
type dense struct {
	w panels
	b []float32
}

func newDense(kn *kernel, w, b []float32, out, in int) dense {
	p := newPanels(in, out, kn.nr)
	p.packNK(w, in)
	return dense{w: p, b: b}
}

// layerNorm is a layer norm's weight, bias and epsilon.
type layerNorm struct {
	w, b []float32
	eps  float64
}

// layer is one BERT encoder layer.
type layer struct {
	qkv, out, up, down dense
	attNorm, ffNorm    layerNorm
}

// groupTokens bounds how many tokens forward encodes at once (about 17 KiB
// of activations each for all-MiniLM-L6-v2): enough rows that every weight
// panel, read from memory once per group, serves many tokens.
const groupTokens = 2048

// forward calls use with the last hidden states of the token sequences
// seqs (ids in the vocabulary, each sequence at most the position table's
// length), one row of dim values per token, the sequences one after
// another; the states are valid only during the call. The dense layers
// multiply the rows of all sequences at once (they act on each token
// alone, so sequences of any lengths share them without padding);
// attention runs per sequence and head. Up to threads goroutines share
// the work. A row depends on its own sequence only, bit for bit: the
// kernels' sums do not depend on where a row lies (gemm.go).
func (e *encoder) forward(seqs [][]int, threads int, use func(states []float32)) {
	starts := make([]int, len(seqs)+1)
	for i, s := range seqs {
		starts[i+1] = starts[i] + len(s)
	}
	rows, dim := starts[len(seqs)], e.dim
	need := rows * (6*dim + e.inter)
	slab, _ := e.slabs.Get().(*[]float32)
	if slab == nil || cap(*slab) < need {
		s := make([]float32, need)
		slab = &s
	}
	defer e.slabs.Put(slab)
	buf := (*slab)[:need]
	take := func(n int) []float32 {
		s := buf[:n:n]
		buf = buf[n:]
		return s
	}
	x, y, qkv, ctx, h := take(rows*dim), take(rows*dim), take(rows*3*dim), take(rows*dim), take(rows*e.inter)
	e.embed(seqs, starts, x, threads)
	for i := range e.layers {
		l := &e.layers[i]
		(&gemm{m: rows, a: x, lda: dim, b: &l.qkv.w, c: qkv, ldc: 3 * dim, bias: l.qkv.b}).run(e.kn, threads)
		e.attention(starts, qkv, ctx, threads)
		(&gemm{m: rows, a: ctx, lda: dim, b: &l.out.w, c: y, ldc: dim, bias: l.out.b}).run(e.kn, threads)
		addNorm(y, x, l.attNorm, threads)
		(&gemm{m: rows, a: y, lda: dim, b: &l.up.w, c: h, ldc: e.inter, bias: l.up.b, gelu: true}).run(e.kn, threads)
		(&gemm{m: rows, a: h, lda: e.inter, b: &l.down.w, c: x, ldc: dim, bias: l.down.b}).run(e.kn, threads)
		addNorm(x, y, l.ffNorm, threads)
	}
	use(x)
}

// embed writes the embeddings of the sequences into x: word, position and
// token type 0, layer-normed.
func (e *encoder) embed(seqs [][]int, starts []int, x []float32, threads int) {
	dim := e.dim
	parallel(threads, len(seqs), func() (func(int), func()) {
		return func(s int) {
			for p, id := range seqs[s] {
				row := x[(starts[s]+p)*dim : (starts[s]+p+1)*dim]
				w, pos := e.word[id*dim:(id+1)*dim], e.pos[p*dim:(p+1)*dim]
				for i := range row {
					row[i] = w[i] + pos[i] + e.tokTypes[i]
				}
				e.embNorm.apply(row)
			}
		}, nil
	})
}

// attention writes each sequence's multi-head self-attention into ctx
// (rows of dim, head h in columns h·dh …): per sequence and head, scores
// S = Q·Kᵀ through the kernel (Kᵀ packed from qkv), the exponentials of
// softmax(S/√dh) row by row, then S·V (V packed) straight into ctx, each
// row divided by its sum of exponentials there.
func (e *encoder) attention(starts []int, qkv, ctx []float32, threads int) {
	dim, heads := e.dim, e.heads
	dh := dim / heads
	scale := float32(1 / math.Sqrt(float64(dh)))
	ld := 3 * dim
	kn := e.kn
	parallel(threads, (len(starts)-1)*heads, func() (func(int), func()) {
		s := getScratch(kn)
		return func(item int) {
			seq, h := item/heads, item%heads
			r0, n := starts[seq], starts[seq+1]-starts[seq]
			// S has a whole number of panels of columns (the kernel then
			// needs no edge tiles across them); columns n and beyond are
			// scores against zero keys, never read.
			cols := (n + kn.nr - 1) / kn.nr * kn.nr
			s.kt = grow(s.kt, cols*dh)
			keys := panels{k: dh, n: cols, nr: kn.nr, data: s.kt}
			clear(keys.data)
			keys.n = n
			keys.packNK(qkv[r0*ld+dim+h*dh:], ld)
			keys.n = cols
			s.scores = grow(s.scores, n*cols)
			scores := s.scores
			(&gemm{m: n, a: qkv[r0*ld+h*dh:], lda: ld, b: &keys, c: scores, ldc: cols}).block(kn, s, 0, n, 0, cols)
			s.inv = grow(s.inv, n)
			for i := range s.inv {
				s.inv[i] = softmax(scores[i*cols:i*cols+n], scale)
			}
			s.vt = grow(s.vt, (dh+kn.nr-1)/kn.nr*kn.nr*n)
			values := panels{k: n, n: dh, nr: kn.nr, data: s.vt}
			values.packKN(qkv[r0*ld+2*dim+h*dh:], ld)
			out := ctx[r0*dim+h*dh:]
			(&gemm{m: n, a: scores, lda: cols, b: &values, c: out, ldc: dim}).block(kn, s, 0, n, 0, dh)
			for i, f := range s.inv {
				row := out[i*dim : i*dim+dh]
				for j := range row {
					row[j] *= f
				}
			}
		}, func() { putScratch(s) }
	})
}

// grow returns s resliced to n, reallocated when too short.
func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// softmax replaces s by e^(scale·s - scale·max(s)) (scale > 0) and returns
// 1 / their sum: the caller divides later, where there are fewer values.
// The maximum and the exponentials go 8 at a time with AVX2 and FMA where
// the CPU has them; the sum is in float32.
func softmax(s []float32, scale float32) float32 {
	var top, sum float32
	if haveVecAVX2 {
		top = maxAVX2(s) * scale
		sum = expSumAVX2(s, scale, top)
	} else {
		top = float32(math.Inf(-1))
		for _, v := range s {
			top = max(top, v)
		}
		top *= scale
		for i, v := range s {
			s[i] = expf32(scale*v - top)
			sum += s[i]
		}
	}
	return 1 / sum
}

// expf32 is e^x for x ≤ 0 in float32 (softmax's arguments), as Cephes'
// expf computes it: x = n·ln2 + r with |r| ≤ ln2/2, e^r by a degree-7
// polynomial, 2^n from the exponent bits; 0 below -87 (where e^x is
// subnormal in float32). Within 2 ulp of math.Exp (tested).
func expf32(x float32) float32 {
	if x < -87 {
		return 0
	}
	n := float32(math.Floor(float64(x*math.Log2E + 0.5)))
	r := x - n*0.693359375 - n*-2.12194440e-4
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	p = p*r*r + r + 1
	return p * math.Float32frombits(uint32(int32(n)+127)<<23)
}

// addNorm replaces y by LayerNorm(y + residual), row by row, with up to
// threads goroutines.
func addNorm(y, residual []float32, n layerNorm, threads int) {
	dim := len(n.w)
	rows := len(y) / dim
	const chunk = 64
	parallel(threads, (rows+chunk-1)/chunk, func() (func(int), func()) {
		return func(c int) {
			for r := c * chunk; r < min((c+1)*chunk, rows); r++ {
				row, res := y[r*dim:(r+1)*dim], residual[r*dim:(r+1)*dim]
				for i := range row {
					row[i] += res[i]
				}
				n.apply(row)
			}
		}, nil
	})
}

// apply replaces row by (row - mean) / sqrt(var + eps) · w + b, mean and
// variance in float64, each summed in four interleaved parts so that the
// additions do not wait on one another.
func (n layerNorm) apply(row []float32) {
	w, b := n.w[:len(row)], n.b[:len(row)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(row); i += 4 {
		s0 += float64(row[i])
		s1 += float64(row[i+1])
		s2 += float64(row[i+2])
		s3 += float64(row[i+3])
	}
	for ; i < len(row); i++ {
		s0 += float64(row[i])
	}
	mean := (s0 + s1 + s2 + s3) / float64(len(row))
	s0, s1, s2, s3 = 0, 0, 0, 0
	i = 0
	for ; i+4 <= len(row); i += 4 {
		d0, d1, d2, d3 := float64(row[i])-mean, float64(row[i+1])-mean, float64(row[i+2])-mean, float64(row[i+3])-mean
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < len(row); i++ {
		d := float64(row[i]) - mean
		s0 += d * d
	}
	inv := 1 / math.Sqrt((s0+s1+s2+s3)/float64(len(row))+n.eps)
	for i, v := range row {
		row[i] = float32((float64(v)-mean)*inv*float64(w[i]) + float64(b[i]))
	}
}

// gelu applies the exact GELU, x·Φ(x) = x/2·(1 + erf(x/√2)), in place:
// 8 values at a time with AVX2 and FMA where the CPU has them.
func gelu(h []float32) {
	if haveVecAVX2 {
		geluAVX2(h)
		return
	}
	geluGo(h)
}

func geluGo(h []float32) {
	for i, x := range h {
		h[i] = 0.5 * x * (1 + erf32(x*(1/math.Sqrt2)))
	}
}

// erf32 is erf in float32 as Eigen and XLA compute it: an odd rational
// function of degree 13/8 on [-4, 4] (beyond which erf is ±1 in float32),
// within 5e-7 of math.Erf (tested; float32 spacing near 1 is 6e-8). math.Erf in float64 took a fifth of the
// encoder's time.
func erf32(x float32) float32 {
	x = max(-4, min(4, x))
	x2 := x * x
	p := x2*-2.72614225801306e-10 + 2.77068142495902e-08
	p = p*x2 + -2.10102402082508e-06
	p = p*x2 + -5.69250639462346e-05
	p = p*x2 + -7.34990630326855e-04
	p = p*x2 + -2.95459980854025e-03
	p = p*x2 + -1.60960333262415e-02
	q := x2*-1.45660718464996e-05 + -2.13374055278905e-04
	q = q*x2 + -1.68282697438203e-03
	q = q*x2 + -7.37332916720468e-03
	q = q*x2 + -1.42647390514189e-02
	return x * p / q
}

// flops is the floating-point operations (a multiply-add counts 2) of the
// encoder's matrix products for one sequence of n tokens: the dense layers
// and attention's two products per head; the norms, softmax and GELU are
// not counted.
func (e *encoder) flops(n int) float64 {
	d, f := float64(e.dim), float64(e.inter)
	perLayer := 2*float64(n)*(3*d*d+d*d+2*d*f) + 2*2*float64(n)*float64(n)*d
	return float64(len(e.layers)) * perLayer
}
