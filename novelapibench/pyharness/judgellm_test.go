package pyharness

import (
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
)

func TestPythonJudgePromptShowsCallsAndEvidenceBounded(t *testing.T) {
	scale := Target{ID: "pystats._impl:scale", Paths: []string{"pystats.scale"}}
	calls := TargetCalls("from pystats import scale\nreturn scale(xs, 3)\n", scale)
	ref := TargetCalls("from pystats import scale\nreturn scale(xs, 2)\n", scale)[0]
	many := make([]Call, 25)
	for tc, in := range map[string]JudgeInput{
		"a short one": {Target: scale, Description: "Scale xs.", Context: "def solve(xs):\n    <MASK>", Solution: "from pystats import scale\nreturn scale(xs, 3)\n",
			Recorded: true, Calls: []Call{{Args: 2}}, ReferenceCalls: []Call{{Args: 1, Kwargs: []string{"factor"}}}, Source: calls, Reference: &ref,
			Evidence: "harness: comparative: input 0: 3 != 2\nexception: ValueError: bad\n" + strings.Repeat("  File \"x.py\", line 1\n", 1000)},
		"everything long": {Target: scale, Description: strings.Repeat("d", 10000), Context: strings.Repeat("c", 10000), Solution: strings.Repeat("s", 10000),
			Recorded: true, Calls: many, ReferenceCalls: []Call{{Args: 1, Kwargs: []string{"factor"}}}, Source: calls, Reference: &ref, Evidence: strings.Repeat("e", 10000)},
	} {
		t.Run(tc, func(t *testing.T) {
			system, user := JudgePrompt(in)
			for _, want := range []string{"Python coding task", "- WrongSyntax: the code is not valid Python", "an exception raised inside the library's code", `{"class": "...", "rationale": "one sentence"}`} {
				if !strings.Contains(system, want) {
					t.Errorf("system lacks %q:\n%s", want, system)
				}
			}
			for _, c := range goharness.FailureClasses {
				if !strings.Contains(system, "- "+c+": ") {
					t.Errorf("system lacks class %s", c)
				}
			}
			for _, bad := range []string{"Go", "panic", "```go"} {
				if strings.Contains(system+user, bad) {
					t.Errorf("the Python prompt says %q", bad)
				}
			}
			for _, want := range []string{"Target API: pystats.scale [defined as pystats._impl.scale] (package pystats)", "```python\n", "- scale(xs, 3)\n", "The reference solution calls: scale(xs, 2)",
				"recorded the same way:\n- scale(_, factor=_)\n", "Failure:\n"} {
				if !strings.Contains(user, want) {
					t.Errorf("prompt lacks %q", want)
				}
			}
			if len(in.Calls) == 1 && !strings.Contains(user, "ran (positional arguments _, keywords by name):\n- scale(_, _)\n") {
				t.Errorf("prompt lacks the recorded call:\n%s", user)
			}
			if len(in.Calls) == 25 && !strings.Contains(user, "- ... and 15 more\n") {
				t.Errorf("25 recorded calls not cut to 10:\n%s", user)
			}
			if !strings.Contains(user, "[... truncated]") {
				t.Error("the long evidence is not cut")
			}
			if limit := 3*goharness.MaxPromptCode + 2*goharness.MaxPromptFailure + 2000; len(user) > limit {
				t.Errorf("prompt of %d bytes, over %d", len(user), limit)
			}
		})
	}
	_, user := JudgePrompt(JudgeInput{Target: Target{ID: "pystats:scale"}, Evidence: "harness: integrity: no record"})
	for _, want := range []string{"Target API: pystats.scale (package pystats)\n", "in the solution (from its source):\n- none\n", "The reference solution calls: (none found)", "ran: unknown (the program left no record)"} {
		if !strings.Contains(user, want) {
			t.Errorf("prompt without calls or record lacks %q:\n%s", want, user)
		}
	}
}

// The sem prompt is Go's, worded for Python: it names no target (the
// reference shows the call), as Go's does not.
func TestPythonSemPromptIsGosInPython(t *testing.T) {
	system, user := SemPrompt("Scale xs.", "def solve(xs):\n    <MASK>", "return sorted(xs)", "from pystats import scale\nreturn scale(xs)")
	gsys, guser := goharness.SemPrompt("Scale xs.", "def solve(xs):\n    <MASK>", "return sorted(xs)", "from pystats import scale\nreturn scale(xs)")
	if want := strings.Replace(gsys, "a Go coding task", "a Python coding task", 1); system != want {
		t.Errorf("system %q, want %q", system, want)
	}
	if want := strings.ReplaceAll(guser, "```go\n", "```python\n"); user != want {
		t.Errorf("user %q, want %q", user, want)
	}
	if strings.Contains(system+user, "Target API") || strings.Contains(system+user, "```go") {
		t.Errorf("sem prompt names the target or Go:\n%s\n%s", system, user)
	}
}

// Each language's prompt says what every failure class means, and names
// no class the taxonomy lacks.
func TestEveryLanguageDefinesEveryFailureClass(t *testing.T) {
	for _, l := range []goharness.Lang{goharness.GoLang, PythonLang} {
		for _, c := range goharness.FailureClasses {
			if strings.TrimSpace(l.Classes[c]) == "" {
				t.Errorf("%s: class %s has no meaning", l.Name, c)
			}
		}
		if len(l.Classes) != len(goharness.FailureClasses) {
			t.Errorf("%s: %d classes, want %d", l.Name, len(l.Classes), len(goharness.FailureClasses))
		}
	}
}
