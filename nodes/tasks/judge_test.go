package tasks_test

import (
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
)

// TestJudgeClassifiesCalibrationSolutions: each kind of calibration
// solution lands in the class its mutation stands for; a null mutant
// compiles and calls nothing wrong, so it waits for the LLM judge.
func TestJudgeClassifiesCalibrationSolutions(t *testing.T) {
	run := runFixture(t, "", calibration+`
node "judge" "calibration" {
  tasks   = node.tasks.shapes
  samples = node.solve.calibration
}
`)
	samples := nodetest.Read[tasks.SampleRow](t, run, "node.solve.calibration")
	rows := nodetest.Read[tasks.JudgeRow](t, run, "node.judge.calibration")
	if len(rows) == 0 || len(rows) != len(samples) {
		t.Fatalf("%d judgements of %d samples", len(rows), len(samples))
	}
	byKind := map[string][]tasks.JudgeRow{}
	for i, j := range rows {
		if j.TaskID != samples[i].TaskID || j.SampleID != samples[i].SampleID || j.Passed != samples[i].Passed {
			t.Errorf("row %d judges %s/%s, sample is %s/%s", i, j.TaskID, j.SampleID, samples[i].TaskID, samples[i].SampleID)
		}
		byKind[j.Kind] = append(byKind[j.Kind], j)
	}
	for _, c := range []struct{ kind, class string }{
		{"reference", "OK"},
		{"syntax", "WrongSyntax"},
		{"import", "WrongImport"},
		{"sibling", "WrongAPISelection"},
		{"null", "WrongAPISelection"}, // the solver's code never calls the target
	} {
		t.Run(c.kind, func(t *testing.T) {
			if len(byKind[c.kind]) == 0 {
				t.Fatalf("no %s samples judged", c.kind)
			}
			for _, j := range byKind[c.kind] {
				if j.Class != c.class || j.Rule == "" {
					t.Errorf("%s %s judged %s (rule %q), want %s", j.TaskID, j.Kind, j.Class, j.Rule, c.class)
				}
			}
		})
	}
}
