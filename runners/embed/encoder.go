package embed

import (
	"math"

	"github.com/nlpodyssey/cybertron/pkg/models/bert"
	"github.com/nlpodyssey/spago/mat"
	"github.com/nlpodyssey/spago/nn/linear"
	"github.com/nlpodyssey/spago/nn/normalization/layernorm"
)

// encode returns the last hidden states of a token sequence, one row of
// Dim values per token (row-major). The embeddings are cybertron's
// (bert.Embeddings: word, position and token-type lookups and their layer
// norm); the encoder layers run here on the weights cybertron holds, as
// cybertron's bert.EncoderLayer computes them but over all tokens at once
// and without an autograd graph: cybertron builds a graph node per token and
// operation, streams every weight matrix from memory once per token and
// computes GELU through math.Pow and math.Tanh in float64, which made it
// about a third as fast as sentence-transformers on PyTorch. The dense
// layers' dot products go through dot4x2 (AVX2 and FMA, 4 weight rows by 2
// tokens) where the CPU has it, spago's otherwise; attention's are spago's.
// GELU is the exact erf form that Hugging Face's "gelu" is (cybertron's is
// the tanh approximation). Safe for concurrent use: it only reads the
// weights. A change here (or in encoderLayer, affine, dot4x2) that can
// change a vector must bump cacheVersion (cache.go).
func encode(b *bert.Model, tokens []string) []float32 {
	dim := b.Config.HiddenSize
	x := make([]float32, 0, len(tokens)*dim)
	for _, t := range b.Embeddings.EncodeTokens(tokens) {
		x = append(x, t.Value().Data().F32()...)
	}
	for _, l := range b.Encoder.Layers {
		x = encoderLayer(l, x, dim)
	}
	return x
}

// encoderLayer is one BERT layer: multi-head self-attention, residual and
// layer norm, then dense, GELU, dense, residual and layer norm. x holds n
// rows of dim values.
func encoderLayer(l *bert.EncoderLayer, x []float32, dim int) []float32 {
	n := len(x) / dim
	att := l.SelfAttention.Attention
	dh := dim / len(att.Heads)
	heads := make([]float32, n*dim) // the heads' outputs side by side, per token
	for h, head := range att.Heads {
		scale := float32(head.ScaleFactor.Value().Item().F64())
		q, k, v := affine(head.Query, x), affine(head.Key, x), affine(head.Value, x)
		keys := mat.NewDense[float32](mat.WithShape(n, dh), mat.WithBacking(k))
		values := mat.NewDense[float32](mat.WithShape(dh, n), mat.WithBacking(transpose(v, n, dh)))
		for i := 0; i < n; i++ {
			s := keys.Mul(column(q[i*dh : (i+1)*dh])).Data().F32()
			softmax(s, scale)
			copy(heads[i*dim+h*dh:], values.Mul(column(s)).Data().F32())
		}
	}
	y := affine(att.OutputMerge, heads)
	addNorm(y, x, l.SelfAttention.Norm)
	hidden := affine(l.FF.MLP[0].(*linear.Model), y)
	gelu(hidden)
	z := affine(l.FF.MLP[2].(*linear.Model), hidden)
	addNorm(z, y, l.FF.Norm)
	return z
}

// affineBlock is how many weight rows affine multiplies by every token
// before moving to the next rows: 32 rows of 1536 float32 are 192 KiB.
const affineBlock = 32

// affine returns W·x + b for each row x of xs (rows of l.W's column count,
// row-major), as rows of l.W's row count. The loop order keeps a block of
// weight rows in cache while every token is multiplied by it. On amd64 with
// AVX2 and FMA, 4 weight rows times 2 tokens go through dot4x2 (the dot
// products were 40% of the encoder's time with spago's one-row kernel,
// whose 2 accumulators wait on the FMA latency); otherwise, and for shapes
// it does not cover, spago's matrix-vector product does the work.
func affine(l *linear.Model, xs []float32) []float32 {
	shape := l.W.Value().Shape()
	rows, cols := shape[0], shape[1]
	w, b := l.W.Value().Data().F32(), l.B.Value().Data().F32()
	n := len(xs) / cols
	out := make([]float32, n*rows)
	if haveDot4x2 && rows%4 == 0 && cols%8 == 0 && cols > 0 {
		affine4x2(w, b, rows, cols, xs, n, out)
		return out
	}
	for r0 := 0; r0 < rows; r0 += affineBlock {
		r1 := min(r0+affineBlock, rows)
		block := mat.NewDense[float32](mat.WithShape(r1-r0, cols), mat.WithBacking(w[r0*cols:r1*cols]))
		for j := 0; j < n; j++ {
			dst := out[j*rows+r0 : j*rows+r1]
			for i, v := range block.Mul(column(xs[j*cols : (j+1)*cols])).Data().F32() {
				dst[i] = v + b[r0+i]
			}
		}
	}
	return out
}

// affine4x2 is affine's loop over dot4x2: rows a multiple of 4, cols of 8.
// An odd last token is paired with itself.
func affine4x2(w, b []float32, rows, cols int, xs []float32, n int, out []float32) {
	var acc [64]float32
	for r0 := 0; r0 < rows; r0 += affineBlock {
		r1 := min(r0+affineBlock, rows)
		for j := 0; j < n; j += 2 {
			j1 := min(j+1, n-1)
			x0, x1 := xs[j*cols:(j+1)*cols], xs[j1*cols:(j1+1)*cols]
			for r := r0; r < r1; r += 4 {
				dot4x2(&w[r*cols], cols, &x0[0], &x1[0], cols, &acc)
				for k := 0; k < 4; k++ {
					out[j*rows+r+k] = sum8(acc[16*k:16*k+8]) + b[r+k]
					out[j1*rows+r+k] = sum8(acc[16*k+8:16*k+16]) + b[r+k]
				}
			}
		}
	}
}

func sum8(v []float32) float32 {
	return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]))
}

func column(v []float32) *mat.Dense[float32] {
	return mat.NewDense[float32](mat.WithShape(len(v), 1), mat.WithBacking(v))
}

func transpose(a []float32, rows, cols int) []float32 {
	t := make([]float32, len(a))
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			t[j*rows+i] = a[i*cols+j]
		}
	}
	return t
}

// softmax replaces s by softmax(scale·s). The exponentials are spago's
// vectorised float32 Exp over the whole row (attention over a 256-token
// text takes 65,536 per head and layer); the sum is in float64.
func softmax(s []float32, scale float32) {
	top := float32(math.Inf(-1))
	for _, v := range s {
		top = max(top, scale*v)
	}
	for i, v := range s {
		s[i] = scale*v - top
	}
	e := column(s).Exp().Data().F32()
	var sum float64
	for _, v := range e {
		sum += float64(v)
	}
	for i, v := range e {
		s[i] = float32(float64(v) / sum)
	}
}

// addNorm replaces y by LayerNorm(y + residual), row by row, with the norm's
// weights and epsilon, in float64 as spago's layernorm.Model computes it
// ((x - mean) / sqrt(var + eps) · w + b).
func addNorm(y, residual []float32, norm *layernorm.Model) {
	w, b := norm.W.Value().Data().F32(), norm.B.Value().Data().F32()
	eps := norm.Eps.Value().Item().F64()
	dim := len(w)
	for r := 0; r < len(y); r += dim {
		row := y[r : r+dim]
		var mean float64
		for i := range row {
			row[i] += residual[r+i]
			mean += float64(row[i])
		}
		mean /= float64(dim)
		var variance float64
		for _, v := range row {
			d := float64(v) - mean
			variance += d * d
		}
		sd := math.Sqrt(variance/float64(dim) + eps)
		for i, v := range row {
			row[i] = float32((float64(v)-mean)/sd*float64(w[i]) + float64(b[i]))
		}
	}
}

// gelu applies the exact GELU, x·Φ(x) = x/2·(1 + erf(x/√2)), in place.
func gelu(h []float32) {
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
