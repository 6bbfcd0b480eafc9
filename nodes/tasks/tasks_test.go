package tasks_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/novelapibench/goharness"

	_ "github.com/lacuna-dev/lacuna/nodes/bundle"
	_ "github.com/lacuna-dev/lacuna/nodes/generic"
)

// pipeline runs stages 1-3 on the offline fixture; tests add the nodes
// they are about.
const pipeline = nodetest.ShapesHead + `node "surface_diff" "shapes" { versions = node.version_resolve.shapes }
node "bundle" "shapes" { apis = node.surface_diff.shapes }
node "tasks" "shapes" { bundles = node.bundle.shapes }
`

const calibration = `
node "solve" "calibration" {
  tasks       = node.tasks.shapes
  calibration = true
}
`

// runFixture runs pipeline plus extra in dir (a new one when dir is "").
func runFixture(t *testing.T, dir, extra string) *nodetest.Result {
	t.Helper()
	nodetest.OfflineShapes(t)
	if dir == "" {
		dir = t.TempDir()
	}
	return nodetest.Run(t, dir, pipeline+extra)
}

// weak are the two easy harnesses that cannot tell a perturbed argument
// from the reference: Clamp(16, 0, 10) clamps to 10 like Clamp(15, 0, 10),
// and pushing "ax" instead of "a" leaves the length the example prints.
var weak = map[string]bool{"shapes.Clamp easy": true, "shapes.Stack.Push easy": true}

func name(t tasks.Row) string { return t.Qualified + " " + t.Difficulty }

func readTasks(t *testing.T, run *nodetest.Result) map[string]tasks.Row {
	t.Helper()
	rows := nodetest.Read[tasks.Row](t, run, "node.tasks.shapes")
	byID := map[string]tasks.Row{}
	for _, task := range rows {
		byID[task.TaskID] = task
	}
	if len(rows) == 0 || len(byID) != len(rows) {
		t.Fatalf("%d tasks, %d distinct ids", len(rows), len(byID))
	}
	return byID
}

func TestTasksAreCutFromValidatedExamplesAndObserved(t *testing.T) {
	run := runFixture(t, "", "")
	byTask := readTasks(t, run)
	levels := map[string][]string{}
	count := map[string]int{}
	for _, task := range byTask {
		levels[task.Qualified] = append(levels[task.Qualified], task.Difficulty)
		count[task.Difficulty]++
		target := task.Qualified[strings.LastIndex(task.Qualified, ".")+1:]
		if strings.Contains(task.Description, target) {
			t.Errorf("%s: description names the target: %q", name(task), task.Description)
		}
		if task.Expect == "" || task.Harness == "" || task.ObserveError != "" {
			t.Errorf("%s: not observed (harness %d bytes): %s", name(task), len(task.Harness), task.ObserveError)
		}
		_, span := goharness.SplitAnswer(task.Mask)
		if !strings.Contains(task.Context, "<MASK>") || !strings.Contains(task.Reference, span) {
			t.Errorf("%s: context %q, mask %q", name(task), task.Context, task.Mask)
		}
		// The solver writes the target's import unless the context's own
		// code uses the package.
		if !strings.Contains(task.Context, "shapes.") && strings.Contains(task.Context, `"example.com/shapes"`) {
			t.Errorf("%s: the context imports the target's package it does not use:\n%s", name(task), task.Context)
		}
	}
	if got := fmt.Sprint(count); got != "map[easy:6 medium:3]" {
		t.Errorf("tasks by difficulty %s, want easy 6, medium 3", got)
	}
	for api, want := range map[string]string{"shapes.Stack.Push": "easy,medium", "shapes.Clamp": "easy"} {
		got := levels[api]
		sort.Strings(got)
		if strings.Join(got, ",") != want {
			t.Errorf("%s: levels %v, want %s", api, got, want)
		}
	}
}
