package judge_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/judge"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/nodes/tasks/taskstest"
	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
)

// calibrationReport reads a judge node's "calibration" report.
func calibrationReport(t *testing.T, run *nodetest.Result, addr string) (judge.CalibrationReport, string) {
	t.Helper()
	a, err := run.Store.GetAction(run.Nodes[addr].Key)
	if err != nil {
		t.Fatal(err)
	}
	var rep judge.CalibrationReport
	if err := json.Unmarshal(a.Reports["calibration"], &rep); err != nil {
		t.Fatalf("calibration report %s: %v", a.Reports["calibration"], err)
	}
	return rep, a.Logs
}

// fmtCorr prints a param_corr, "null" for none.
func fmtCorr(p *float64) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

// TestJudgeClassifiesCalibrationSolutions: without a judge model every
// sample gets OK or one of the six classes, from the fast path's rules or
// the fallback's; each kind of calibration solution lands in the class it
// stands for by construction, except where a weak harness lets a mutant
// pass; the calibration report counts exactly that.
func TestJudgeClassifiesCalibrationSolutions(t *testing.T) {
	run := taskstest.Run(t, "", taskstest.Calibration+`
node "judge" "calibration" {
  tasks   = node.tasks.shapes
  samples = node.solve.calibration
}
`)
	samples := nodetest.Read[tasks.SampleRow](t, run, "node.solve.calibration")
	rows := nodetest.Read[judge.JudgeRow](t, run, "node.judge.calibration")
	if len(rows) == 0 || len(rows) != len(samples) {
		t.Fatalf("%d judgements of %d samples", len(rows), len(samples))
	}
	byTask := taskstest.ReadTasks(t, run)
	classes := append([]string{goharness.ClassOK}, goharness.FailureClasses...)
	byKind := map[string][]judge.JudgeRow{}
	agree, passedMutants := 0, 0
	for i, j := range rows {
		s := samples[i]
		if j.TaskID != s.TaskID || j.SampleID != s.SampleID || j.Passed != s.Passed || j.SpyDirect != s.SpyDirect {
			t.Errorf("row %d judges %s/%s, sample is %s/%s", i, j.TaskID, j.SampleID, s.TaskID, s.SampleID)
		}
		task := byTask[j.TaskID]
		if j.Library != task.Library || j.Difficulty != task.Difficulty || j.Library == "" {
			t.Errorf("%s: library %q difficulty %q, task has %q %q", j.TaskID, j.Library, j.Difficulty, task.Library, task.Difficulty)
		}
		if !slices.Contains(classes, j.Class) || j.Rule == "" || (j.Path != judge.PathRule && j.Path != judge.PathFallback) || j.Sem != nil {
			t.Errorf("%s %s: class %q rule %q path %q sem %v", j.TaskID, j.Kind, j.Class, j.Rule, j.Path, j.Sem)
		}
		if exp, _ := goharness.ExpectedClass(j.Kind); j.Expected != exp || exp == "" {
			t.Errorf("%s %s: expected %q, want %q", j.TaskID, j.Kind, j.Expected, exp)
		}
		if j.Class == j.Expected {
			agree++
		}
		if j.Passed && j.Kind != "reference" {
			passedMutants++
		}
		byKind[j.Kind] = append(byKind[j.Kind], j)
	}
	for _, c := range []struct{ kind, class, path string }{
		{"reference", goharness.ClassOK, judge.PathRule},
		{goharness.MutantSyntax, goharness.ClassWrongSyntax, judge.PathRule},
		{goharness.MutantImport, goharness.ClassWrongImport, judge.PathRule},
		{goharness.MutantSibling, goharness.ClassWrongAPISelection, judge.PathRule},
		{goharness.MutantNull, goharness.ClassWrongAPISelection, judge.PathRule}, // the solver's code never calls the target
		{goharness.MutantHardcoded, goharness.ClassWrongAPISelection, judge.PathRule},
		{goharness.MutantPerturb, goharness.ClassWrongParam, judge.PathFallback}, // the call's argument differs from the reference's
		{goharness.MutantExit, goharness.ClassWrongLogic, judge.PathFallback},    // the reference's call, the program cut short
	} {
		t.Run(c.kind, func(t *testing.T) {
			if len(byKind[c.kind]) == 0 {
				t.Fatalf("no %s samples judged", c.kind)
			}
			for _, j := range byKind[c.kind] {
				if j.Passed && c.kind == goharness.MutantPerturb && taskstest.Weak[taskstest.Name(byTask[j.TaskID])] {
					continue // a weak harness lets it pass: judged OK
				}
				if j.Class != c.class || j.Path != c.path {
					t.Errorf("%s %s judged %s by %s (rule %q), want %s by %s", j.TaskID, j.Kind, j.Class, j.Path, j.Rule, c.class, c.path)
				}
			}
		})
	}
	for _, j := range byKind[goharness.MutantPerturb] {
		if j.ParamCorr == nil || *j.ParamCorr >= 1 { // one argument of the call changed
			t.Errorf("%s perturb: param_corr %v", j.TaskID, fmtCorr(j.ParamCorr))
		}
	}
	for _, j := range byKind["reference"] {
		if j.ParamCorr == nil || *j.ParamCorr != 1 || !j.APICalled {
			t.Errorf("%s reference: param_corr %v, api_called %v", j.TaskID, fmtCorr(j.ParamCorr), j.APICalled)
		}
	}
	rep, logs := calibrationReport(t, run, "node.judge.calibration")
	if rep.Samples != len(rows) || rep.Agree != agree || rep.Agreement != float64(agree)/float64(len(rows)) {
		t.Errorf("report: %d of %d agree, counted %d of %d", rep.Agree, rep.Samples, agree, len(rows))
	}
	// The only disagreements are mutants a weak harness let pass.
	if rep.Samples-rep.Agree != passedMutants {
		t.Errorf("%d disagreements, %d mutants passed; confusion %v", rep.Samples-rep.Agree, passedMutants, rep.Confusion)
	}
	if rep.ByPath[judge.PathRule].Samples+rep.ByPath[judge.PathFallback].Samples != rep.Samples || rep.ByPath[judge.PathLLM] != nil {
		t.Errorf("by path: %+v", rep.ByPath)
	}
	if !strings.Contains(logs, "calibration:") || !strings.Contains(logs, "expected") {
		t.Errorf("log lacks the confusion table:\n%s", logs)
	}
}

// TestJudgeLeavesParamCorrUndefinedWithoutAReferenceCall judges the
// Calibration samples against tasks whose reference answer calls no API of
// the package (the mask replaced): param_corr is null on every row, and a
// perturbed argument that fails is no longer called WrongParam for
// differing from a reference call that does not exist.
func TestJudgeLeavesParamCorrUndefinedWithoutAReferenceCall(t *testing.T) {
	dir := t.TempDir()
	run := taskstest.Run(t, dir, taskstest.Calibration)
	rd, err := run.Store.Open(run.Nodes["node.tasks.shapes"].Output)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, row := range rd.Rows() {
		var v any
		if err := rd.Schema().Reconstruct(&v, row); err != nil {
			t.Fatal(err)
		}
		m := v.(map[string]any)
		m["mask"] = "_ = 0"
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(filepath.Join(dir, "tasks.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run = taskstest.Run(t, dir, taskstest.Calibration+`
node "import" "tasks" { path = "tasks.jsonl" }
node "judge" "noref" {
  tasks   = node.import.tasks
  samples = node.solve.calibration
}
`)
	rows := nodetest.Read[judge.JudgeRow](t, run, "node.judge.noref")
	perturbed := 0
	for _, j := range rows {
		if j.ParamCorr != nil {
			t.Errorf("%s %s: param_corr %v, want null", j.TaskID, j.Kind, *j.ParamCorr)
		}
		if j.Kind == goharness.MutantPerturb && !j.Passed {
			perturbed++
			if j.Class != goharness.ClassWrongLogic || j.Path != judge.PathFallback || !strings.Contains(j.Rule, "arguments not compared") {
				t.Errorf("%s perturb: %s by %s (%q), want WrongLogic by the fallback, arguments not compared", j.TaskID, j.Class, j.Path, j.Rule)
			}
		}
	}
	if len(rows) == 0 || perturbed == 0 {
		t.Errorf("%d rows, %d failing perturbed arguments", len(rows), perturbed)
	}
}
