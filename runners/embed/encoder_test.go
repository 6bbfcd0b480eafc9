package embed

import (
	"math"
	"math/rand"
	"testing"

	"github.com/nlpodyssey/spago/mat"
	"github.com/nlpodyssey/spago/nn/linear"
)

// TestAffineMatchesFloat64Reference checks affine against a float64
// W·x + b on both of its paths, spago's product and (where the CPU has
// AVX2 and FMA) dot4x2, on shapes that take the 4×2 kernel (rows a
// multiple of 4, columns of 8, odd and even token counts) and shapes that
// do not. It switches haveDot4x2, so it must not run in parallel with
// other tests of the package.
func TestAffineMatchesFloat64Reference(t *testing.T) {
	paths := []bool{false}
	if haveDot4x2 {
		paths = append(paths, true)
	} else {
		t.Log("this CPU has no dot4x2 (amd64 with AVX2 and FMA): only spago's path runs")
	}
	defer func(orig bool) { haveDot4x2 = orig }(haveDot4x2)
	for _, dot := range paths {
		name := map[bool]string{false: "spago", true: "dot4x2"}[dot]
		t.Run(name, func(t *testing.T) {
			haveDot4x2 = dot
			t.Logf("affine path: %s (haveDot4x2 = %v)", name, dot)
			r := rand.New(rand.NewSource(3))
			for _, sh := range []struct{ rows, cols, n int }{
				{4, 8, 1}, {8, 16, 2}, {36, 40, 3}, {32, 384, 5}, {64, 24, 4}, {5, 8, 3}, {8, 12, 3}, {3, 7, 2},
			} {
				l := linear.New[float32](sh.cols, sh.rows)
				w := make([]float32, sh.rows*sh.cols)
				b := make([]float32, sh.rows)
				xs := make([]float32, sh.n*sh.cols)
				for _, s := range [][]float32{w, b, xs} {
					for i := range s {
						s[i] = float32(r.NormFloat64())
					}
				}
				mat.SetData[float32](l.W.Value(), w)
				mat.SetData[float32](l.B.Value(), b)
				got := affine(l, xs)
				if len(got) != sh.n*sh.rows {
					t.Fatalf("%+v: %d outputs, want %d", sh, len(got), sh.n*sh.rows)
				}
				for j := 0; j < sh.n; j++ {
					for i := 0; i < sh.rows; i++ {
						want := float64(b[i])
						for k := 0; k < sh.cols; k++ {
							want += float64(w[i*sh.cols+k]) * float64(xs[j*sh.cols+k])
						}
						if g := float64(got[j*sh.rows+i]); math.Abs(g-want) > 1e-4*(1+math.Abs(want)) {
							t.Errorf("%+v token %d row %d: %v, want %v", sh, j, i, g, want)
						}
					}
				}
			}
		})
	}
}
