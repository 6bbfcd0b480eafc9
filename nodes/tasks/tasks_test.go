package tasks_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/runners/golang/proxytest"

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
node "filter" "c1" {
  input   = node.tasks.shapes
  check   = "c1"
  samples = node.solve.calibration
}
node "judge" "calibration" {
  tasks   = node.tasks.shapes
  samples = node.solve.calibration
}
`

func run(t *testing.T) (*artifacts.Store, map[string]*engine.Result) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	proxy, dir := t.TempDir(), t.TempDir()
	if err := proxytest.WriteTrees(proxy, "example.com/shapes", "../../runners/golang/testdata/shapes",
		map[string]string{"v1.0.0": "2024-01-10", "v1.1.0": "2024-09-01"}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOPROXY", "file://"+proxy)
	t.Setenv("GOSUMDB", "off")
	t.Setenv("GOFLAGS", "")
	if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
		t.Setenv("LACUNA_GOCACHE", strings.TrimSpace(string(out)))
	}
	g, diags := engine.ExpandSource(filepath.Join(dir, "p.hcl"), []byte(pipeline), dir, engine.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	st, err := artifacts.Open(filepath.Join(dir, ".lacuna"))
	if err != nil {
		t.Fatal(err)
	}
	x := &engine.Executor{Store: st, Jobs: 2, Pipeline: filepath.Join(dir, "p.hcl")}
	res, _, err := x.Run(context.Background(), g, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*engine.Result{}
	for i, r := range res {
		out[i.Addr] = r
	}
	return st, out
}

func read[T any](t *testing.T, st *artifacts.Store, r *engine.Result) []T {
	t.Helper()
	rd, err := st.Open(r.Output)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := artifacts.ReadAll[T](rd)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestTasksC1AuditAndJudgeOnTheFixture(t *testing.T) {
	st, res := run(t)
	ts := read[tasks.Row](t, st, res["node.tasks.shapes"])
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
	samples := read[tasks.SampleRow](t, st, res["node.solve.calibration"])
	for _, s := range samples {
		task := byTask[s.TaskID]
		shouldPass := s.Kind == "reference" || (s.Kind == "perturb" && weak[task.Qualified+" "+task.Difficulty])
		if shouldPass != s.Passed {
			t.Errorf("%s %s %s: passed=%v layers %v compile %q runtime %q", task.Qualified, task.Difficulty, s.Kind, s.Passed, s.FailedLayers, s.CompileError, s.RuntimeError)
		}
	}
	c1 := read[tasks.C1Row](t, st, res["node.filter.c1"])
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
	for _, j := range read[tasks.JudgeRow](t, st, res["node.judge.calibration"]) {
		if w, ok := want[j.Kind]; ok && j.Class != w {
			t.Errorf("%s %s judged %s (%s), want %s", j.TaskID, j.Kind, j.Class, j.Rule, w)
		}
	}
}
