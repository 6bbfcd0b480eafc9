// Package taskstest holds the fixtures the tests of NovelAPIBench's model
// half share: the offline shapes pipeline and its runs, the Python
// pipelines, and a scripted model that knows some tasks' answers.
package taskstest

import (
	// Every node family the shared pipelines use registers here, so a
	// test of one stage can run the stages before it.
	_ "github.com/lacuna-dev/lacuna/nodes/bundle"
	_ "github.com/lacuna-dev/lacuna/nodes/discovery"
	_ "github.com/lacuna-dev/lacuna/nodes/experiments"
	_ "github.com/lacuna-dev/lacuna/nodes/generic"
	_ "github.com/lacuna-dev/lacuna/nodes/judge"
	_ "github.com/lacuna-dev/lacuna/nodes/metrics"
	_ "github.com/lacuna-dev/lacuna/nodes/trainingdata"

	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/filters"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
	"github.com/lacuna-dev/lacuna/runners/pypi/pypitest"
)

// Pipeline runs stages 1-3 on the offline fixture; tests add the nodes
// they are about.
const Pipeline = nodetest.ShapesHead + `node "surface_diff" "shapes" { versions = node.version_resolve.shapes }
node "bundle" "shapes" { apis = node.surface_diff.shapes }
node "tasks" "shapes" { bundles = node.bundle.shapes }
`

const Calibration = `
node "solve" "calibration" {
  tasks       = node.tasks.shapes
  calibration = true
}
`

// Run runs Pipeline plus extra in dir (a new one when dir is "").
func Run(t *testing.T, dir, extra string) *nodetest.Result {
	t.Helper()
	nodetest.OfflineShapes(t)
	if dir == "" {
		dir = t.TempDir()
	}
	return nodetest.Run(t, dir, Pipeline+extra)
}

// Weak are the harnesses that cannot tell a perturbed argument from the
// reference: none since the harness compares the arguments the target
// receives with the reference's (goharness.Expectation.Args). Before,
// Clamp(16, 0, 10) clamped to 10 like Clamp(15, 0, 10), and pushing "ax"
// instead of "a" left the length the example prints.
var Weak = map[string]bool{}

// Independent are the tasks whose asserted values do not follow the
// target's work on the task's data, which C1 drops: pushing "b" instead of
// "a" (Push substituted) leaves the length the example prints.
var Independent = map[string]bool{"shapes.Stack.Push easy": true}

func Name(t tasks.Row) string { return t.Qualified + " " + t.Difficulty }

func ReadTasks(t *testing.T, run *nodetest.Result) map[string]tasks.Row {
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

// PyStats are the releases of the fixture project "py-stats" (package
// pystats): 2.0.0 adds scale (a doctest with a literal argument), clamp
// (the shipped docs/usage.md calls it through the module), ordered (a
// doctest that sets up its data first, then composes the call with
// total), mean (a doctest that fails) and total (no example).
var PyStats = map[string]map[string]string{
	"1.0.0": {
		"pystats/__init__.py": `"""Stats: a fixture package for tasks."""
from pystats._core import add

__all__ = ["add"]
`,
		"pystats/_core.py": `def add(a, b):
    """Return the sum of a and b, for any two numbers."""
    return a + b
`,
	},
	"2.0.0": {
		"pystats/__init__.py": `"""Stats: a fixture package for tasks."""
from pystats._core import add, scale, mean, clamp, total, ordered, Pair, box

__all__ = ["add", "scale", "mean", "clamp", "total", "ordered", "Pair", "box"]
`,
		"pystats/_core.py": `def add(a, b):
    """Return the sum of a and b, for any two numbers."""
    return a + b


def scale(xs, k=2):
    """Multiply every number of a list by the factor k.

    >>> scale([1, 2, 3])
    [2, 4, 6]
    """
    return [x * k for x in xs]


def ordered(xs, reverse=False):
    """Return the numbers of a list from the smallest to the largest.

    >>> data = [3, 1, 2]
    >>> ordered(data)
    [1, 2, 3]
    >>> total(ordered(data))
    6
    """
    return sorted(xs, reverse=reverse)


def mean(xs):
    """Return the arithmetic mean of a non-empty list of numbers.

    >>> mean([1, 2])
    2
    """
    return sum(xs) / len(xs)


def clamp(v, lo, hi):
    """Limit the value v to the closed interval from lo to hi."""
    return max(lo, min(v, hi))


def total(xs):
    """Return the sum of all the numbers of a list, zero when empty."""
    return sum(xs)


def box(v):
    """Wrap the value v in a list of one item.

    >>> box(3) is not None
    True
    """
    return [v]


class Pair:
    """Hold two values side by side, first and second.

    >>> Pair(1, 2)
    Pair(1, 2)
    """

    def __init__(self, a, b):
        self.a, self.b = a, b

    def __repr__(self):
        return f"Pair({self.a}, {self.b})"
`,
		"pystats/docs/usage.md": "# Usage\n\n```pycon\n>>> import pystats\n>>> pystats.clamp(5, 0, 3)\n3\n```\n",
	},
}

const PyTasksPipeline = `
model "m" {
  id     = "example/model"
  cutoff = "2024-06-01"
}
library "stats" {
  ecosystem = "python"
  name      = "py-stats"
}
node "version_resolve" "stats" {
  library = library.stats
  cutoff  = model.m.cutoff
}
node "surface_diff" "stats" {
  versions  = node.version_resolve.stats
  ecosystem = "python"
}
node "bundle" "stats" {
  apis      = node.surface_diff.stats
  ecosystem = "python"
}
node "tasks" "stats" {
  bundles   = node.bundle.stats
  ecosystem = "python"
}
node "c1" "stats" {
  tasks     = node.tasks.stats
  ecosystem = "python"
}
`

// PySolvePipeline solves the fixture's tasks with the solutions
// WriteSolutions wrote.
const PySolvePipeline = PyTasksPipeline + `
node "import" "solutions" { path = "solutions.jsonl" }
node "solve" "model" {
  tasks     = node.tasks.stats
  solutions = node.import.solutions
  ecosystem = "python"
}
`

// OfflinePyStats publishes the fixture project py-stats (PyStats: 1.0.0
// before the model's cutoff, 2.0.0 after) on a loopback index and points
// the run's Python at it.
func OfflinePyStats(t *testing.T) {
	t.Helper()
	mit := []string{"License-Expression: MIT"}
	nodetest.OfflinePython(t, pypitest.Published(t, "py-stats",
		pypitest.Release{Version: "1.0.0", Uploaded: pypitest.Day("2024-01-10"), Files: PyStats["1.0.0"], Metadata: mit},
		pypitest.Release{Version: "2.0.0", Uploaded: pypitest.Day("2024-09-01"), Files: PyStats["2.0.0"], Metadata: mit}))
}

// PyScaleTask runs the Python fixture's chain through tasks in a store the
// sandbox's user can reach, and returns the store and the easy task of
// pystats.scale.
func PyScaleTask(t *testing.T) (dir string, scale tasks.Row) {
	t.Helper()
	OfflinePyStats(t)
	dir = nodetest.StoreDir(t)
	run := nodetest.Run(t, dir, PyTasksPipeline)
	for _, r := range nodetest.Read[tasks.Row](t, run, "node.tasks.stats") {
		if r.Qualified == "pystats.scale" && r.Difficulty == "easy" {
			scale = r
		}
	}
	if scale.TaskID == "" || scale.Expect == "" {
		t.Fatalf("no observed easy task for pystats.scale")
	}
	return dir, scale
}

// WriteSolutions writes solutions.jsonl in dir: solutions of task, given
// as sample ID, code, sample ID, code, ...
func WriteSolutions(t *testing.T, dir, task string, sols ...string) {
	t.Helper()
	var lines []string
	for i := 0; i+1 < len(sols); i += 2 {
		b, err := json.Marshal(map[string]string{"task_id": task, "sample_id": sols[i], "solution": sols[i+1]})
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(filepath.Join(dir, "solutions.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ModelBlock is a model served by an llmtest server at url.
func ModelBlock(url string) string {
	return fmt.Sprintf(`
model "coder" {
  id          = "example/coder"
  endpoint    = %q
  served_name = "test-model"
  concurrency = 4
}
`, url)
}

const C1Node = `
node "c1" "shapes" { tasks = node.tasks.shapes }
`

// KeptByC1 runs stages 1-3 and C1 in dir and returns the tasks C1 keeps,
// in task_id order, and every task C1 saw.
func KeptByC1(t *testing.T, dir string) (kept []tasks.Row, all []filters.C1Row) {
	t.Helper()
	run := Run(t, dir, C1Node)
	all = nodetest.Read[filters.C1Row](t, run, "node.c1.shapes")
	for _, c := range all {
		if c.Keep {
			kept = append(kept, c.Row)
		}
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].TaskID < kept[j].TaskID })
	if len(kept) < 7 {
		t.Fatalf("C1 keeps %d tasks, the test needs 7", len(kept))
	}
	return kept, all
}

// Scripted is a model that knows the answers of some tasks: it answers
// task k's request with the reference mask (fenced, after a <think> block)
// when solves(k, cell, seed) says so, and with junk otherwise. It finds the
// task by the description and the context program the prompt holds.
type Scripted struct {
	Tasks  []tasks.Row
	Solves func(k int, full bool, seed int64) bool

	mu     sync.Mutex
	errors []string // requests it could not place
}

const Thought = "The description names the library; the call goes where <MASK> is."

func (s *Scripted) Reply(q llmtest.Request) string {
	text := q.Text()
	k := -1
	for i, t := range s.Tasks {
		if strings.Contains(text, "Task ("+t.Difficulty+"): "+t.Description+"\n") && strings.Contains(text, "```go\n"+strings.TrimRight(t.Context, "\n")+"\n```\n\nWrite") {
			if k >= 0 {
				s.Fail("two tasks match a request")
			}
			k = i
		}
	}
	if k < 0 {
		s.Fail("no task matches a request: " + text)
		return "?"
	}
	var seed int64 = -1
	if q.Seed != nil {
		seed = *q.Seed
	}
	if s.Solves(k, strings.Contains(text, "## Signature (S)"), seed) {
		return "<think>\n" + Thought + "\n</think>\nHere is the code:\n\n```go\n" + s.Tasks[k].Mask + "\n```\n"
	}
	if k%2 == 0 {
		return "<think>I have not seen this API.</think>\nI do not know this library."
	}
	return "```go\nresult := library.DoIt(\n```"
}

func (s *Scripted) Fail(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errors = append(s.errors, msg)
}

func (s *Scripted) Check(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.errors {
		t.Error(e)
	}
}
