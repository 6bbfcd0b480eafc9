package analysis

import "math"

// ChoiceShares is the share of answers equal to each of labels, in labels'
// order: how often a model predicted each option letter (its positional
// bias) or each gold letter occurs. An answer that is none of the labels
// (unparseable, "") counts in the denominator only, so the shares sum to
// less than 1 when there are such answers. NaN shares for no answers.
func ChoiceShares(answers, labels []string) []float64 {
	out := make([]float64, len(labels))
	if len(answers) == 0 {
		for i := range out {
			out[i] = math.NaN()
		}
		return out
	}
	idx := make(map[string]int, len(labels))
	for i, l := range labels {
		idx[l] = i
	}
	for _, a := range answers {
		if i, ok := idx[a]; ok {
			out[i]++
		}
	}
	for i := range out {
		out[i] /= float64(len(answers))
	}
	return out
}
