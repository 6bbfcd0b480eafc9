// Package calls compares the arguments the solver's calls of a task's
// target received with the reference's, as both harnesses (goharness,
// pyharness) record them: one rendering per distinct argument tuple, the
// arguments joined by Sep. It is the input layer's verdict: a solution
// must call the target on the task's data.
package calls

import (
	"fmt"
	"slices"
	"strings"
)

// Sep joins the arguments of one tuple.
const Sep = "\x1f"

// Diff compares got with want as sets of tuples and says how they differ
// ("" when they agree): a tuple want lacks is a call on data that is not
// the task's (allowed when more is set: a whole program's calls include
// its context's), one got lacks means the task's data never reached the
// target. Safe for concurrent use.
func Diff(want, got []string, more bool) string {
	var extra, missing []string
	for _, a := range got {
		if !slices.Contains(want, a) {
			extra = append(extra, a)
		}
	}
	for _, a := range want {
		if !slices.Contains(got, a) {
			missing = append(missing, a)
		}
	}
	switch {
	case len(extra) > 0 && !more:
		return fmt.Sprintf("the target was called on data that is not the task's: %s (the reference's calls received %s)", Show(extra), Show(want))
	case len(missing) > 0:
		return fmt.Sprintf("the target was never called on the task's data: %s", Show(missing))
	}
	return ""
}

// Show writes up to three tuples for a message.
func Show(tuples []string) string {
	out := make([]string, 0, 4)
	for _, t := range tuples[:min(3, len(tuples))] {
		t = strings.ReplaceAll(t, Sep, ", ")
		if len(t) > 200 {
			t = t[:200] + "…"
		}
		out = append(out, "("+t+")")
	}
	if len(tuples) > 3 {
		out = append(out, fmt.Sprintf("and %d more", len(tuples)-3))
	}
	return strings.Join(out, "; ")
}
