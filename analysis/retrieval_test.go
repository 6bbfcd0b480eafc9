package analysis

import (
	"math"
	"testing"
)

func TestHitAtKCountsAQueryWithAnyAnswerInTheTopK(t *testing.T) {
	ranked := []string{"a", "b", "c", "d"}
	for _, tc := range []struct {
		name    string
		answers []string
		k       int
		want    bool
	}{
		{"first answer at rank 1", []string{"a"}, 1, true},
		{"answer just outside k", []string{"c"}, 2, false},
		{"answer at rank k", []string{"c"}, 3, true},
		{"one of three answers is enough", []string{"x", "y", "b"}, 2, true},
		{"no answer retrieved", []string{"x"}, 4, false},
		{"k beyond the list reads it whole", []string{"d"}, 50, true},
		{"no answers is never a hit", nil, 4, false},
		{"k zero retrieves nothing", []string{"a"}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := HitAtK(ranked, tc.answers, tc.k); got != tc.want {
				t.Errorf("HitAtK(%v, %v, %d) = %v, want %v", ranked, tc.answers, tc.k, got, tc.want)
			}
		})
	}
}

func TestAnswerRecallAtKIsTheFractionOfDistinctAnswersFound(t *testing.T) {
	ranked := []string{"a", "b", "c", "d"}
	for _, tc := range []struct {
		name    string
		answers []string
		k       int
		want    float64
		ok      bool
	}{
		{"one of two", []string{"a", "x"}, 1, 0.5, true},
		{"two of four", []string{"a", "c", "x", "y"}, 3, 0.5, true},
		{"all found", []string{"d", "a"}, 4, 1, true},
		{"duplicate answers count once", []string{"a", "a", "x"}, 1, 0.5, true},
		{"none found", []string{"c"}, 2, 0, true},
		{"no answers", nil, 2, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := AnswerRecallAtK(ranked, tc.answers, tc.k)
			if got != tc.want || ok != tc.ok {
				t.Errorf("AnswerRecallAtK(%v, %v, %d) = %v, %v; want %v, %v", ranked, tc.answers, tc.k, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestInternalizationScoreIsRfOverRcAndZeroWhenRcIsZero(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rf, rc float64
		want   float64
	}{
		{"half internalized", 0.3, 0.6, 0.5},
		{"low recall, fully internalized (Appendix F)", 0.1, 0.1, 1},
		{"high recall, mostly internalized (Appendix F: 0.89)", 0.8, 0.9, 0.8 / 0.9},
		{"trie-dependent (Appendix F: IS = 0 at Rc = 0.10)", 0, 0.1, 0},
		{"Rc = 0 is 0, not undefined", 0.2, 0, 0},
		{"Rc = Rf = 0", 0, 0, 0},
		{"free above constrained is not clipped", 0.6, 0.5, 1.2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Within rounding: 0.8/0.9 folds exactly as constants.
			if got := InternalizationScore(tc.rf, tc.rc); math.Abs(got-tc.want) > 1e-15 {
				t.Errorf("InternalizationScore(%v, %v) = %v, want %v", tc.rf, tc.rc, got, tc.want)
			}
		})
	}
}

// TestInternalizationCIIsTheDeltaMethodOfAppendixG: the expected bounds
// are worked by hand from σ̂ = half-width / 1.96, σ_IS = IS·√((σ̂_f/Rf)² +
// (σ̂_c/Rc)²) and IS ± 1.96 σ_IS, clipped to [0, 1].
func TestInternalizationCIIsTheDeltaMethodOfAppendixG(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rf, rc     float64
		rfCI, rcCI CI
		want       CI
	}{
		// Half-widths 0.03528 and 0.09408: σ̂_f = 0.018, σ̂_c = 0.048,
		// σ̂_f/Rf = 0.06, σ̂_c/Rc = 0.08, √(0.0036 + 0.0064) = 0.1, IS = 0.5,
		// σ_IS = 0.05, CI = 0.5 ± 0.098. The percentile intervals need not
		// be centred on the estimates: only their half-widths count.
		{"interior", 0.3, 0.6, CI{0.28, 0.35056}, CI{0.5, 0.68816}, CI{0.402, 0.598}},
		// IS = 1, σ̂_f/Rf = σ̂_c/Rc = (0.1/1.96)/0.9, σ_IS = √2·0.1/(1.96·0.9),
		// lower bound 1 − √2·0.1/0.9 = 0.842865…, upper 1.157… clipped to 1.
		{"clipped above at 1", 0.9, 0.9, CI{0.8, 1}, CI{0.8, 1}, CI{1 - math.Sqrt2*0.1/0.9, 1}},
		// Rf = 0: σ_IS = σ̂_f/Rc = (0.0196/1.96)/0.5 = 0.02; 0 ± 0.0392,
		// the lower bound clipped to 0.
		{"Rf = 0 clipped below at 0", 0, 0.5, CI{0, 0.0392}, CI{0.4, 0.6}, CI{0, 0.0392}},
		// Rc = 0: IS = 0 and so is every resample's: [0, 0].
		{"Rc = 0", 0.1, 0, CI{0.05, 0.15}, CI{0, 0}, CI{0, 0}},
		// IS = 1.2 with zero-width intervals: [1.2, 1.2] clipped to [1, 1].
		{"IS above 1", 0.6, 0.5, CI{0.6, 0.6}, CI{0.5, 0.5}, CI{1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := InternalizationCI(tc.rf, tc.rc, tc.rfCI, tc.rcCI)
			if math.Abs(got.Lo-tc.want.Lo) > 1e-12 || math.Abs(got.Hi-tc.want.Hi) > 1e-12 {
				t.Errorf("InternalizationCI(%v, %v, %+v, %+v) = %+v, want %+v", tc.rf, tc.rc, tc.rfCI, tc.rcCI, got, tc.want)
			}
			if got.Lo < 0 || got.Hi > 1 {
				t.Errorf("InternalizationCI = %+v, not within [0, 1]", got)
			}
		})
	}
}

func TestInternalizationCIWithoutBootstrapIntervalsIsNaN(t *testing.T) {
	nan := math.NaN()
	got := InternalizationCI(0.3, 0.6, CI{nan, nan}, CI{0.5, 0.7})
	if !math.IsNaN(got.Lo) || !math.IsNaN(got.Hi) {
		t.Errorf("InternalizationCI with a NaN interval = %+v, want NaN bounds", got)
	}
}
