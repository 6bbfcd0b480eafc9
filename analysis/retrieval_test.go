package analysis

import "testing"

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
