package analysis

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
