package tasks_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/engine"
	_ "github.com/lacuna-dev/lacuna/nodes/bundle"
	_ "github.com/lacuna-dev/lacuna/nodes/discovery"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/runners/pypi/pypitest"
)

// pyStats are the releases of the fixture project "py-stats" (package
// pystats): 2.0.0 adds scale (a doctest with a literal argument), clamp
// (the shipped docs/usage.md calls it through the module), ordered (a
// doctest that sets up its data first, then composes the call with
// total), mean (a doctest that fails) and total (no example).
var pyStats = map[string]map[string]string{
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
from pystats._core import add, scale, mean, clamp, total, ordered

__all__ = ["add", "scale", "mean", "clamp", "total", "ordered"]
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
`,
		"pystats/docs/usage.md": "# Usage\n\n```pycon\n>>> import pystats\n>>> pystats.clamp(5, 0, 3)\n3\n```\n",
	},
}

const pyTasksPipeline = `
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

// TestPythonTasksAndC1FromBundles runs the Python chain on a loopback
// index through tasks and c1.
func TestPythonTasksAndC1FromBundles(t *testing.T) {
	ix := pypitest.NewIndex()
	var rs []pypitest.Release
	for v, day := range map[string]string{"1.0.0": "2024-01-10", "2.0.0": "2024-09-01"} {
		rs = append(rs, pypitest.Release{Version: v, Uploaded: pypitest.Day(day), Files: pyStats[v], Metadata: []string{"License-Expression: MIT"}})
	}
	if err := ix.Publish("py-stats", rs...); err != nil {
		t.Fatal(err)
	}
	nodetest.OfflinePython(t, ix)
	dir := nodetest.StoreDir(t)
	run := nodetest.Run(t, dir, pyTasksPipeline)
	notes := run.Notes(engine.EventDone)
	rows := nodetest.Read[tasks.Row](t, run, "node.tasks.stats")
	var got []string
	for _, r := range rows {
		got = append(got, r.Qualified+"/"+r.Difficulty)
		t.Logf("%s %s\n%s\nmissing %s\nobserve %s\nexpect %s", r.Qualified, r.Difficulty, r.Description, r.Missing, r.ObserveError, r.Expect)
	}
	sort.Strings(got)
	t.Logf("tasks %s; note %q", strings.Join(got, " "), notes["node.tasks.stats"])
	for _, c := range nodetest.Read[tasks.C1Row](t, run, "node.c1.stats") {
		t.Logf("c1 %s/%s keep %v reason %q killed %d/%d survivors %v", c.Qualified, c.Difficulty, c.Keep, c.Reason, c.AuditKill, c.AuditRun, c.Survivors)
	}
	t.Logf("c1 note %q", notes["node.c1.stats"])
}
