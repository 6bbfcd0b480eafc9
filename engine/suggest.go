package engine

import "github.com/agext/levenshtein"

// Suggest returns the candidate closest to given, or "" when none is close
// enough to be a plausible typo.
func Suggest(given string, candidates []string) string {
	best, bestDist := "", 1<<30
	for _, c := range candidates {
		d := levenshtein.Distance(given, c, nil)
		if d < bestDist {
			best, bestDist = c, d
		}
	}
	if bestDist <= 3 && bestDist < len(given) {
		return best
	}
	return ""
}
