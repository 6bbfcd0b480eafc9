package tasks_test

import (
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks"

	_ "github.com/lacuna-dev/lacuna/nodes/bundle"
	_ "github.com/lacuna-dev/lacuna/nodes/generic"
)

const pipeline = `
model "m" {
  id     = "example/model"
  cutoff = "2024-06-01"
}
library "shapes" {
  ecosystem = "go"
  name      = "example.com/shapes"
}
node "version_resolve" "shapes" {
  library = library.shapes
  cutoff  = model.m.cutoff
}
node "surface_diff" "shapes" { versions = node.version_resolve.shapes }
node "bundle" "shapes" { apis = node.surface_diff.shapes }
node "tasks" "shapes" { bundles = node.bundle.shapes }
node "solve" "calibration" {
  tasks       = node.tasks.shapes
  calibration = true
}
node "c1" "shapes" {
  tasks   = node.tasks.shapes
  samples = node.solve.calibration
}
node "judge" "calibration" {
  tasks   = node.tasks.shapes
  samples = node.solve.calibration
}
`

func TestTasksC1AuditAndJudgeOnTheFixture(t *testing.T) {
	nodetest.OfflineShapes(t)
	run := nodetest.Run(t, t.TempDir(), pipeline)
	ts := nodetest.Read[tasks.Row](t, run, "node.tasks.shapes")
	byAPI := map[string][]string{}
	for _, task := range ts {
		byAPI[task.Qualified] = append(byAPI[task.Qualified], task.Difficulty)
		if strings.Contains(task.Description, strings.TrimPrefix(task.Qualified[strings.LastIndex(task.Qualified, "."):], ".")) {
			t.Errorf("%s: description names the target: %q", task.TaskID, task.Description)
		}
		if task.Expect == "" {
			t.Errorf("%s %s: not observed: %s", task.Qualified, task.Difficulty, task.ObserveError)
		}
	}
	if got := strings.Join(byAPI["shapes.Stack.Push"], ","); got != "easy,medium" {
		t.Errorf("Stack.Push tasks: %s", got)
	}
	// Two easy harnesses cannot tell a perturbed argument from the
	// reference: Clamp(16, 0, 10) clamps to 10 like Clamp(15, 0, 10), and
	// pushing "ax" instead of "a" leaves the length the example prints.
	// The audit must catch exactly those.
	weak := map[string]bool{"shapes.Clamp easy": true, "shapes.Stack.Push easy": true}
	byTask := map[string]tasks.Row{}
	for _, task := range ts {
		byTask[task.TaskID] = task
	}
	samples := nodetest.Read[tasks.SampleRow](t, run, "node.solve.calibration")
	for _, s := range samples {
		task := byTask[s.TaskID]
		shouldPass := s.Kind == "reference" || (s.Kind == "perturb" && weak[task.Qualified+" "+task.Difficulty])
		if shouldPass != s.Passed {
			t.Errorf("%s %s %s: passed=%v layers %v compile %q runtime %q", task.Qualified, task.Difficulty, s.Kind, s.Passed, s.FailedLayers, s.CompileError, s.RuntimeError)
		}
	}
	c1 := nodetest.Read[tasks.C1Row](t, run, "node.c1.shapes")
	for _, c := range c1 {
		name := c.Qualified + " " + c.Difficulty
		if c.Keep == weak[name] || !c.C1Passed {
			t.Errorf("%s: keep=%v c1=%v: %s", name, c.Keep, c.C1Passed, c.Reason)
		}
		if weak[name] && (c.Reason != "audit: the harness accepts perturb" || c.AuditRun < 4 || c.AuditKill != c.AuditRun-1) {
			t.Errorf("%s: reason %q discrimination %v", name, c.Reason, c.Discrimination)
		}
	}
	want := map[string]string{"reference": "OK", "syntax": "WrongSyntax", "import": "WrongImport", "sibling": "WrongAPISelection", "null": "needs_llm"}
	for _, j := range nodetest.Read[tasks.JudgeRow](t, run, "node.judge.calibration") {
		if w, ok := want[j.Kind]; ok && j.Class != w {
			t.Errorf("%s %s judged %s (%s), want %s", j.TaskID, j.Kind, j.Class, j.Rule, w)
		}
	}
}
