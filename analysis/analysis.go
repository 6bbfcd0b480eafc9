// Package analysis holds the estimators and statistics of lacuna's
// benchmark tables: pass@k with the unbiased estimator of Chen et al.
// (2021), means, and confidence intervals for means over groups (tasks):
// a score interval for values in [0, 1] (MeanCI) and a percentile
// bootstrap that resamples groups (Bootstrap). Its functions are pure and
// safe for concurrent use; the bootstrap is deterministic given its seed.
package analysis

import (
	"math"
	"math/rand/v2"
	"slices"
)

// PassAtK is the unbiased estimator of pass@k of Chen et al. (2021) for
// one task with n samples of which c passed:
//
//	1 - C(n-c, k) / C(n, k)
//
// computed in the numerically stable product form
// 1 - prod_{i=n-c+1..n} (1 - k/i) (no binomial coefficient is formed, so
// n = 200 is as exact as n = 2). It is 1 when n-c < k (every k-subset
// holds a passing sample). ok is false, and the value 0, when the
// estimator is undefined: k < 1, k > n, or c outside 0..n. Callers
// report an undefined pass@k as missing (null), never as 0.
func PassAtK(n, c, k int) (v float64, ok bool) {
	if k < 1 || k > n || c < 0 || c > n {
		return 0, false
	}
	if n-c < k {
		return 1, true
	}
	prod := 1.0
	for i := n - c + 1; i <= n; i++ {
		prod *= 1 - float64(k)/float64(i)
	}
	return 1 - prod, true
}

// Mean is the arithmetic mean of xs; NaN for none.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Quantile is the q-quantile (0 ≤ q ≤ 1) of sorted xs by linear
// interpolation between order statistics (Hyndman and Fan's type 7, the
// default of numpy.quantile and R): position q·(n-1). NaN for none.
func Quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	pos := q * float64(n-1)
	i := int(math.Floor(pos))
	if i >= n-1 {
		return sorted[n-1]
	}
	f := pos - float64(i)
	return sorted[i] + f*(sorted[i+1]-sorted[i])
}

// CI is a confidence interval.
type CI struct{ Lo, Hi float64 }

// Bootstrap is a percentile bootstrap over groups: B times, it draws
// len(values) groups with replacement and takes the mean of their values;
// the interval is the (1-level)/2 and (1+level)/2 quantiles (Quantile) of
// the B means. One value per group: a task's pass@1, its mean API_acc, …,
// so the interval reflects the variation between tasks (the unit that was
// sampled), not between samples of one task.
//
// The draws come from a PCG seeded with (seed, stream): the same
// arguments give the same interval on every platform, and a caller that
// derives stream from the group's name (StreamOf) gets intervals that do
// not change when other groups are added. ok is false for no values or
// B < 1.
//
// The percentile interval runs narrow on few groups and has zero width
// when all values agree; for values in [0, 1] (rates, pass@k), MeanCI
// keeps its coverage from 10 groups up.
func Bootstrap(values []float64, b int, level float64, seed, stream uint64) (ci CI, ok bool) {
	n := len(values)
	if n == 0 || b < 1 {
		return CI{}, false
	}
	rng := rand.New(rand.NewPCG(seed, stream))
	means := make([]float64, b)
	for j := range means {
		s := 0.0
		for range n {
			s += values[rng.IntN(n)]
		}
		means[j] = s / float64(n)
	}
	slices.Sort(means)
	return CI{Quantile(means, (1-level)/2), Quantile(means, (1+level)/2)}, true
}

// StreamOf derives a bootstrap stream from a group's name (FNV-1a 64).
func StreamOf(name string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return h
}
