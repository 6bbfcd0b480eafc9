package analysis

import "math"

// HitAtK reports whether the first k entries of ranked contain at least one
// of answers: one query's term of ToolSense's Rc@k and Rf@k (seed 002
// §3.3), which count a query as recalled when any answer tool is in its
// top k, not by the fraction of answers recovered. A ranked list shorter
// than k is read whole. No answers is never a hit.
func HitAtK(ranked, answers []string, k int) bool {
	top := ranked[:min(k, len(ranked))]
	for _, a := range answers {
		for _, r := range top {
			if r == a {
				return true
			}
		}
	}
	return false
}

// AnswerRecallAtK is the fraction of a query's distinct answers found in
// the first k entries of ranked (a ranked list shorter than k is read
// whole): the per-answer recall that is NOT the paper's Rc@k, reported
// beside it. ok is false when there are no answers.
func AnswerRecallAtK(ranked, answers []string, k int) (v float64, ok bool) {
	top := map[string]bool{}
	for _, r := range ranked[:min(k, len(ranked))] {
		top[r] = true
	}
	distinct := map[string]bool{}
	found := 0
	for _, a := range answers {
		if distinct[a] {
			continue
		}
		distinct[a] = true
		if top[a] {
			found++
		}
	}
	if len(distinct) == 0 {
		return 0, false
	}
	return float64(found) / float64(len(distinct)), true
}

// InternalizationScore is ToolSense's Internalization Score (seed 002
// §3.3, Eq. 2) from free-form recall rf = Rf@k and constrained recall
// rc = Rc@k (fractions):
//
//	IS@k = Rf@k / Rc@k  if Rc@k > 0
//	       0            otherwise
//
// It is not clipped: a model that recalls more freely than under the trie
// scores above 1.
func InternalizationScore(rf, rc float64) float64 {
	if rc > 0 {
		return rf / rc
	}
	return 0
}

// isZ is the 1.96 of seed 002 Appendix G: a 95% interval's half-width in
// standard deviations, as the paper writes it (not the 0.975 quantile
// 1.959964…).
const isZ = 1.96

// InternalizationCI is the 95% confidence interval of IS@k by the delta
// method of seed 002 Appendix G, built from the 95% percentile bootstrap
// intervals rfCI of Rf@k and rcCI of Rc@k:
//
//	σ̂_f = (rfCI.Hi − rfCI.Lo)/2 / 1.96,  σ̂_c = (rcCI.Hi − rcCI.Lo)/2 / 1.96
//	σ_IS ≈ IS · √((σ̂_f/Rf)² + (σ̂_c/Rc)²)
//	CI = [IS − 1.96 σ_IS, IS + 1.96 σ_IS], clipped to [0, 1]
//
// with IS = InternalizationScore(rf, rc). The paper's σ_IS divides by Rf
// and Rc; where one is 0 this function takes the defined value:
//   - Rc = 0: IS is 0 by Eq. 2, and so is every resample's IS (a resample
//     of queries that all miss misses too), so the interval is [0, 0].
//   - Rf = 0 < Rc: IS = 0 and IS·σ̂_f/Rf is (Rf/Rc)·σ̂_f/Rf = σ̂_f/Rc for
//     every Rf > 0, so σ_IS = σ̂_f/Rc (the σ̂_c term is IS·σ̂_c/Rc = 0).
//
// The 1.96s cancel: before clipping the interval is IS ± IS·√((h_f/Rf)² +
// (h_c/Rc)²), h being the bootstrap intervals' half-widths. The interval
// is clipped, the point estimate is not, so an IS above 1
// lies outside its interval. NaN bounds in rfCI or rcCI (no bootstrap)
// give NaN bounds.
func InternalizationCI(rf, rc float64, rfCI, rcCI CI) CI {
	if rc <= 0 {
		return CI{0, 0}
	}
	is := InternalizationScore(rf, rc)
	sf := (rfCI.Hi - rfCI.Lo) / 2 / isZ
	sc := (rcCI.Hi - rcCI.Lo) / 2 / isZ
	var sd float64
	if rf != 0 {
		sd = is * math.Sqrt((sf/rf)*(sf/rf)+(sc/rc)*(sc/rc))
	} else {
		sd = sf / rc
	}
	return CI{clip01(is - isZ*sd), clip01(is + isZ*sd)}
}

// clip01 clips x to [0, 1]; NaN stays NaN.
func clip01(x float64) float64 {
	if x < 0 {
		return 0
	}
	if x > 1 {
		return 1
	}
	return x
}
