package tasks_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes/judge"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/nodes/tasks/taskstest"
)

// TestPythonSolveAndJudgeClassifyEachSolution runs solutions of the
// fixture's scale task (TestPythonTasksAndC1FromBundles) through solve
// and judge with ecosystem = "python": the reference passes (OK, rule);
// a syntax break, an import of a missing module of the package and a
// call of a name the package does not have fail and are decided by the
// fast path; a call of the target whose result is altered fails the
// comparative layer, is left undecided and the fallback calls it
// WrongLogic.
func TestPythonSolveAndJudgeClassifyEachSolution(t *testing.T) {
	dir, scale := taskstest.PyScaleTask(t)
	if want := "from pystats import scale\nreturn scale(xs)"; strings.TrimRight(scale.Mask, "\n") != want {
		t.Fatalf("easy task for pystats.scale: mask %q, want %q", scale.Mask, want)
	}
	cases := []struct {
		sampleID, solution string
		passed             bool
		class, path        string
	}{
		{"correct", scale.Mask, true, "OK", judge.PathRule},
		{"syntax", "return scale(xs\n", false, "WrongSyntax", judge.PathRule},
		{"import", "from pystats.nothere import scale\nreturn scale(xs)\n", false, "WrongImport", judge.PathRule},
		{"api", "import pystats\nreturn pystats.scaled(xs)\n", false, "WrongAPISelection", judge.PathRule},
		{"value", "from pystats import scale\nreturn [v + 1 for v in scale(xs)]\n", false, "WrongLogic", judge.PathFallback},
	}
	var sols []string
	for _, c := range cases {
		sols = append(sols, c.sampleID, c.solution)
	}
	taskstest.WriteSolutions(t, dir, scale.TaskID, sols...)
	run := nodetest.Run(t, dir, taskstest.PySolvePipeline+`
node "judge" "model" {
  tasks   = node.tasks.stats
  samples = node.solve.model
}
`)
	samples := nodetest.Read[tasks.SampleRow](t, run, "node.solve.model")
	judged := nodetest.Read[judge.JudgeRow](t, run, "node.judge.model")
	if len(samples) != len(cases) || len(judged) != len(cases) {
		t.Fatalf("%d samples and %d judged, want %d", len(samples), len(judged), len(cases))
	}
	for i, c := range cases {
		s, j := samples[i], judged[i]
		if s.SampleID != c.sampleID || s.Passed != c.passed || s.Program == "" || s.Observation == "" || (s.Passed != (len(s.FailedLayers) == 0)) {
			t.Errorf("%s: sample %s passed %v (want %v) layers %v failures %q program %q", c.sampleID, s.SampleID, s.Passed, c.passed, s.FailedLayers, s.Failures, s.Program)
		}
		if j.SampleID != c.sampleID || j.Passed != c.passed || j.Class != c.class || j.Path != c.path || j.Library != scale.Library || j.Difficulty != "easy" {
			t.Errorf("%s: judged %s passed %v class %s (want %s) path %s (want %s) rule %q\nsolution:\n%s\nfailures %q compile %q runtime %q",
				c.sampleID, j.SampleID, j.Passed, j.Class, c.class, j.Path, c.path, j.Rule, c.solution, s.Failures, s.CompileError, s.RuntimeError)
		}
	}
	if s := samples[0]; s.SpyDirect == 0 || !judged[0].APICalled {
		t.Errorf("correct: spy direct %d, api_called %v", s.SpyDirect, judged[0].APICalled)
	}
	if s := samples[1]; s.CompileError == "" || s.SpyDirect != 0 {
		t.Errorf("syntax: compile error %q, spy direct %d", s.CompileError, s.SpyDirect)
	}
	if s := samples[4]; len(s.FailedLayers) != 1 || s.FailedLayers[0] != "comparative" || s.SpyDirect == 0 {
		t.Errorf("value: layers %v spy direct %d", s.FailedLayers, s.SpyDirect)
	}
	if r := judged[4].Rule; !strings.HasPrefix(r, "calls scale; the outcome is wrong: comparative: ") || !strings.HasSuffix(r, "(undecided: calls the target; the outcome is wrong)") {
		t.Errorf("value: rule %q", r)
	}
}

// TestPythonSolveRejectsBadAttributesAtTheirPosition: an unknown
// ecosystem, and neither or both of solutions and calibration, are errors
// at the attribute's file:line:col.
func TestPythonSolveRejectsBadAttributesAtTheirPosition(t *testing.T) {
	for _, tc := range []struct{ attrs, pos, msg string }{
		{"solutions = node.tasks.stats\n  ecosystem = \"rust\"", "p.hcl:33,15-21", `not "rust"`},
		{"calibration = true\n  solutions = node.tasks.stats\n  ecosystem = \"python\"", "p.hcl:33,15-31", "set exactly one of solutions"},
	} {
		dir := t.TempDir()
		src := taskstest.PyTasksPipeline + "node \"solve\" \"s\" {\n  tasks = node.tasks.stats\n  " + tc.attrs + "\n}\n"
		_, diags := engine.ExpandSource(filepath.Join(dir, "p.hcl"), []byte(src), dir, engine.Options{})
		if got := diags.Error(); !diags.HasErrors() || !strings.Contains(got, tc.pos) || !strings.Contains(got, tc.msg) {
			t.Errorf("diagnostics %q, want %s and %q", got, tc.pos, tc.msg)
		}
	}
}
