package analysis_test

import (
	"math"
	"reflect"
	"testing"

	"github.com/lacuna-dev/lacuna/analysis"
)

func TestChoiceSharesCountsUnknownAnswersInTheDenominatorOnly(t *testing.T) {
	labels := []string{"A", "B", "C", "D"}
	for _, tc := range []struct {
		name    string
		answers []string
		want    []float64
	}{
		{"all A", []string{"A", "A", "A", "A"}, []float64{1, 0, 0, 0}},
		{"spread", []string{"A", "B", "C", "D"}, []float64{0.25, 0.25, 0.25, 0.25}},
		{"unparseable and unknown", []string{"B", "", "E", "B"}, []float64{0, 0.5, 0, 0}},
	} {
		if got := analysis.ChoiceShares(tc.answers, labels); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: ChoiceShares = %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, s := range analysis.ChoiceShares(nil, labels) {
		if !math.IsNaN(s) {
			t.Errorf("no answers: share %v, want NaN", s)
		}
	}
}
