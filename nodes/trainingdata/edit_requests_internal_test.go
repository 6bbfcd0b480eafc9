package trainingdata

import (
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/bundle"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
)

// TestSubjectDescribesTheAPIWithoutNamingIt: the subject is the first
// sentence of the documentation, a leading name dropped and its verb made
// infinitive, lower-cased unless an acronym, at most maxSubjectWords
// words; without documentation, a task's description.
func TestSubjectDescribesTheAPIWithoutNamingIt(t *testing.T) {
	task := []tasks.Row{{Description: "Split the numbers into pairs and print them. Use the library."}}
	for _, c := range []struct {
		name, qualified, prose string
		tasks                  []tasks.Row
		subject, from          string
	}{
		{"a Go doc comment", "lo.Chunk", "Chunk returns an array of elements split into groups the length of size.\nIf array can't be split evenly, the final chunk will be the remaining elements.",
			nil, "return an array of elements split into groups the length of size", "prose"},
		{"a method", "lo.Set.Add", "Add adds v to the set, if absent.", nil, "add v to the set, if absent", "prose"},
		{"-ies", "lo.Apply", "Apply applies f to every element.", nil, "apply f to every element", "prose"},
		{"-shes", "lo.Push", "Push pushes v.", nil, "push v", "prose"},
		{"has", "lo.Has", "Has has no side effects e.g. none at all.", nil, "have no side effects e.g", "prose"},
		{"a backquoted name", "lo.Sum", "`Sum` sums the values.", nil, "sum the values", "prose"},
		{"a Python docstring", "pyshapes.geometry.dist", "Return the distance between two points.\n\nBoth are tuples.", nil, "return the distance between two points", "prose"},
		{"an acronym", "web.Parse", "URL parsing, strictly.", nil, "URL parsing, strictly", "prose"},
		{"no documentation", "lo.Mean", "", task, "split the numbers into pairs and print them", "task"},
		{"only the name", "lo.Mean", "Mean.", task, "split the numbers into pairs and print them", "task"},
		{"nothing at all", "lo.Mean", "", nil, "", ""},
		{"a long sentence", "lo.Long", "Long does a b c d e f g h i j k l m n o p q r s t u v w x y z", nil, "do a b c d e f g h i j k l m n o p q r s t u v w", "prose"},
	} {
		t.Run(c.name, func(t *testing.T) {
			subject, from := subjectOf(bundle.Row{Qualified: c.qualified, MProse: c.prose}, c.tasks)
			if subject != c.subject || from != c.from {
				t.Errorf("subject %q (from %q), want %q (from %q)", subject, from, c.subject, c.from)
			}
		})
	}
}

// TestTargetTrueIsTheOtherNameTheAnswersUseMost: names of the target's
// package the solutions use, one count per solution, neither the target
// nor one a reference or context uses; Go by pkg.Name, Python by dotted
// path and from-imports.
func TestTargetTrueIsTheOtherNameTheAnswersUseMost(t *testing.T) {
	goAPI := bundle.Row{Qualified: "lo.Chunk", Ecosystem: "go"}
	pyAPI := bundle.Row{Qualified: "pyshapes.geometry.dist", Ecosystem: "python"}
	goTasks := []tasks.Row{{Mask: "out := lo.Chunk(lo.Map(xs, f), 2)", Context: "ys := lo.Keys(m)\n<MASK>"}}
	for _, c := range []struct {
		name      string
		b         bundle.Row
		solutions []string
		tasks     []tasks.Row
		want      string
	}{
		{"the most used other name", goAPI, []string{"lo.Split(xs, 2)\nlo.Split(ys, 2)", "lo.Split(xs, 2)", "lo.Batch(xs, 2)"}, goTasks, "lo.Split"},
		{"ties by name", goAPI, []string{"lo.Split(xs, 2)", "lo.Batch(xs, 2)"}, goTasks, "lo.Batch"},
		{"names the reference uses do not count", goAPI, []string{"lo.Map(xs, f)", "lo.Keys(m)", "lo.Map(xs, g)\nlo.Chunk(xs, 2)"}, goTasks, ""},
		{"other packages do not count", goAPI, []string{"slices.Chunk(xs, 2)", "xlo.Split(xs)"}, goTasks, ""},
		{"no answers", goAPI, nil, goTasks, ""},
		{"a Python dotted path", pyAPI, []string{"import pyshapes\nreturn pyshapes.dist(a, b)", "return pyshapes.geometry.dist(a, b)"}, nil, "pyshapes.dist"},
		{"a Python from-import", pyAPI, []string{"from pyshapes.metrics import (distance, norm)\nreturn distance(a, b)", "from pyshapes.metrics import distance"}, nil, "pyshapes.metrics.distance"},
		{"a from-import ends with its line", pyAPI, []string{"from pyshapes.metrics import norm\nfoo, bar = 1, 2", "from pyshapes.metrics import norm as n"}, nil, "pyshapes.metrics.norm"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := targetTrue(c.b, c.solutions, c.tasks); got != c.want {
				t.Errorf("target_true %q, want %q", got, c.want)
			}
		})
	}
}
