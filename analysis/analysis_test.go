package analysis

import (
	"math"
	"testing"
)

// Expected values are exact fractions computed by hand from
// 1 - C(n-c,k)/C(n,k) (and checked with Python's math.comb).
func TestPassAtKMatchesTheBinomialForm(t *testing.T) {
	for _, tc := range []struct {
		n, c, k int
		want    float64
		ok      bool
	}{
		{n: 5, c: 2, k: 1, want: 2.0 / 5, ok: true},                 // pass@1 is c/n
		{n: 5, c: 2, k: 2, want: 1 - 3.0/10, ok: true},              // C(3,2)/C(5,2)
		{n: 5, c: 2, k: 3, want: 1 - 1.0/10, ok: true},              // C(3,3)/C(5,3)
		{n: 5, c: 2, k: 4, want: 1, ok: true},                       // n-c < k: every 4-subset passes
		{n: 20, c: 3, k: 5, want: 1 - 6188.0/15504, ok: true},       // C(17,5)/C(20,5)
		{n: 200, c: 10, k: 100, want: 0.9992289739372822, ok: true}, // math.comb, exact to double rounding
		{n: 10, c: 0, k: 5, want: 0, ok: true},
		{n: 10, c: 10, k: 1, want: 1, ok: true},
		{n: 3, c: 1, k: 5, ok: false}, // k > n: undefined, not 0
		{n: 3, c: 1, k: 0, ok: false},
		{n: 3, c: 4, k: 1, ok: false},
		{n: 0, c: 0, k: 1, ok: false},
	} {
		got, ok := PassAtK(tc.n, tc.c, tc.k)
		if ok != tc.ok || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("PassAtK(%d, %d, %d) = %v, %v; want %v, %v", tc.n, tc.c, tc.k, got, ok, tc.want, tc.ok)
		}
	}
}

func TestQuantileInterpolatesLikeNumpy(t *testing.T) {
	xs := []float64{1, 2, 3, 4}
	for _, tc := range []struct{ q, want float64 }{{0, 1}, {0.25, 1.75}, {0.5, 2.5}, {0.975, 3.925}, {1, 4}} {
		if got := Quantile(xs, tc.q); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if !math.IsNaN(Quantile(nil, 0.5)) || !math.IsNaN(Mean(nil)) {
		t.Error("no values: want NaN")
	}
	if got := Quantile([]float64{7}, 0.3); got != 7 {
		t.Errorf("one value: %v", got)
	}
}

func TestBootstrapIsSeededAndResamplesGroups(t *testing.T) {
	// Constant values: every resample has the same mean.
	if ci, ok := Bootstrap([]float64{0.5, 0.5, 0.5}, 200, 0.95, 1, 2); !ok || ci.Lo != 0.5 || ci.Hi != 0.5 {
		t.Errorf("constant: %+v %v", ci, ok)
	}
	// Two groups, 0 and 1: resampled means are 0, 1/2, 1 with
	// probabilities 1/4, 1/2, 1/4, so the 2.5% and 97.5% quantiles of
	// 1000 draws are 0 and 1.
	if ci, _ := Bootstrap([]float64{0, 1}, 1000, 0.95, 1, 2); ci.Lo != 0 || ci.Hi != 1 {
		t.Errorf("two groups: %+v", ci)
	}
	vals := []float64{0, 0.25, 1, 0.5, 0, 1, 0.75, 0.2, 0.1, 0.9}
	a, _ := Bootstrap(vals, 500, 0.95, 7, StreamOf("m|baseline"))
	b, _ := Bootstrap(vals, 500, 0.95, 7, StreamOf("m|baseline"))
	c, _ := Bootstrap(vals, 500, 0.95, 8, StreamOf("m|baseline"))
	if a != b {
		t.Errorf("same seed, different intervals: %+v %+v", a, b)
	}
	if a == c {
		t.Errorf("another seed drew the same interval %+v", a)
	}
	m := Mean(vals)
	if !(a.Lo < m && m < a.Hi) || a.Lo < 0 || a.Hi > 1 {
		t.Errorf("interval %+v does not hold the mean %v inside [0, 1]", a, m)
	}
	// The interval narrows as groups are added (the same values, ten times over).
	var many []float64
	for range 10 {
		many = append(many, vals...)
	}
	w, _ := Bootstrap(many, 500, 0.95, 7, 1)
	if w.Hi-w.Lo >= a.Hi-a.Lo {
		t.Errorf("100 groups: width %v, 10 groups: %v", w.Hi-w.Lo, a.Hi-a.Lo)
	}
	if _, ok := Bootstrap(nil, 10, 0.95, 1, 1); ok {
		t.Error("no groups: want !ok")
	}
}
