package cells

import "sort"

// ExampleLimits bound what E shows of a bundle's examples: at most Max
// examples, and at most Bytes of code and output together.
type ExampleLimits struct {
	Max   int
	Bytes int
}

// DefaultExampleLimits are E's bounds unless a node sets others: two
// examples (the paper's E is "canonical usage examples", a few, not a
// library's test suite) within 6000 bytes, M_code's order of size (a Go
// Example function is a few hundred bytes; a table-driven test cut to
// the API's cases, with its fixtures, can be five thousand).
var DefaultExampleLimits = ExampleLimits{Max: 2, Bytes: 6000}

// kindRank orders E's kinds, most canonical first: the API's own
// examples, its documentation's, other APIs' examples that call it, then
// the module's tests and benchmarks.
var kindRank = map[string]int{"": 0, "example": 0, "readme": 1, "other_example": 2, "test": 3, "benchmark": 4}

// SelectExamples is the rule E is rendered by, from a bundle's valid
// examples (in the bundle's order) for a task cut from the example named
// source ("" for none):
//
//  1. the task's source never appears: no example named source, nor any
//     example with the same program (it holds the task's answer);
//  2. the rest are ranked by kind (the API's own examples, then
//     documentation blocks, then other APIs' examples, then tests, then
//     benchmarks; an unknown kind last) and, within a kind, shortest
//     program first (ties keep the bundle's order);
//  3. they are taken in that order, at most lim.Max of them, passing over
//     one whose code and output would take the total past lim.Bytes;
//     a program already taken is not taken twice.
//
// A zero field of lim is DefaultExampleLimits' value.
func SelectExamples(all []Example, source string, lim ExampleLimits) []Example {
	if lim.Max <= 0 {
		lim.Max = DefaultExampleLimits.Max
	}
	if lim.Bytes <= 0 {
		lim.Bytes = DefaultExampleLimits.Bytes
	}
	banned := map[string]bool{}
	if source != "" {
		for _, e := range all {
			if e.Name == source {
				banned[e.Code] = true
			}
		}
	}
	var cand []Example
	for _, e := range all {
		if !banned[e.Code] {
			cand = append(cand, e)
		}
	}
	rank := func(k string) int {
		if r, ok := kindRank[k]; ok {
			return r
		}
		return len(kindRank)
	}
	sort.SliceStable(cand, func(i, j int) bool {
		if ri, rj := rank(cand[i].Kind), rank(cand[j].Kind); ri != rj {
			return ri < rj
		}
		return len(cand[i].Code) < len(cand[j].Code)
	})
	var out []Example
	used := 0
	taken := map[string]bool{}
	for _, e := range cand {
		if len(out) == lim.Max {
			break
		}
		size := len(e.Code) + len(e.Output)
		if used+size > lim.Bytes || taken[e.Code] {
			continue
		}
		used += size
		taken[e.Code] = true
		out = append(out, e)
	}
	return out
}
