package tasks_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes/filters"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/nodes/tasks/taskstest"
	"github.com/lacuna-dev/lacuna/novelapibench/pyharness"
)

// TestLLMGeneratorMakesPythonTasksAndFallsBackToEasyVariants runs the
// llm generator on the Python fixture with a scripted model
// (taskstest.PyGraded, PyVariants): scale and Pair keep all three
// levels, clamp loses its hard task (its description names the API),
// ordered its medium (the span never calls it), and box, whose medium
// reference fails before its call and whose hard script marks no span,
// is asked again for three easy variants, which replace its easy task.
// Every task has the cut tasks' shape (spec, context, observed
// expectation) and C1 runs on all of them.
func TestLLMGeneratorMakesPythonTasksAndFallsBackToEasyVariants(t *testing.T) {
	taskstest.OfflinePyStats(t)
	srv := taskstest.GeneratorServer(t, taskstest.PyGraded, taskstest.PyVariants)
	dir := nodetest.StoreDir(t)
	src := taskstest.PyLLMTasksPipeline(srv.URL())
	run := nodetest.Run(t, dir, src)
	rows := nodetest.Read[tasks.Row](t, run, "node.tasks.stats")
	made := map[string][]string{}
	count := map[string]int{}
	missing := map[string]string{}
	for _, r := range rows {
		made[r.Qualified] = append(made[r.Qualified], r.Difficulty)
		count[r.Difficulty]++
		missing[r.Qualified] = r.Missing
		var spec pyharness.Task
		if err := json.Unmarshal([]byte(r.Spec), &spec); err != nil {
			t.Fatalf("%s: spec: %v", taskstest.Name(r), err)
		}
		ref, _, _ := spec.ReferenceProgram()
		name := spec.Target.Name()
		switch {
		case r.Generator != "llm" || r.Ecosystem != "python" || r.VNewEnv == "" || r.Kind == "":
			t.Errorf("%s: generator %q ecosystem %q env %q kind %q", taskstest.Name(r), r.Generator, r.Ecosystem, r.VNewEnv, r.Kind)
		case r.Expect == "" || r.ObserveError != "":
			t.Errorf("%s: not observed: %s", taskstest.Name(r), r.ObserveError)
		case spec.Difficulty != r.Difficulty || spec.Target.ID != r.APIID || r.Context != spec.Context() || r.Mask != spec.Reference || r.Reference != ref:
			t.Errorf("%s: the row's program columns are not its spec's:\n%s\nspec %+v", taskstest.Name(r), r.Context, spec)
		case pyharness.NamesTarget(r.Description, spec.Target) || pyharness.NamesTarget(r.Context, spec.Target):
			t.Errorf("%s: names %s:\n%s\n%s", taskstest.Name(r), name, r.Description, r.Context)
		case !strings.Contains(r.Description, "pystats") || !strings.Contains(r.Description, " returns `"+spec.Site.Returns+"`") ||
			!strings.Contains(r.Description, "Answer with the body of `solve`"):
			t.Errorf("%s: description %q", taskstest.Name(r), r.Description)
		}
	}
	want := map[string]string{
		"pystats.Pair":    "easy,hard,medium",
		"pystats.box":     "easy,easy,easy",
		"pystats.clamp":   "easy,medium",
		"pystats.ordered": "easy,hard",
		"pystats.scale":   "easy,hard,medium",
	}
	for api, w := range want {
		got := made[api]
		sort.Strings(got)
		if strings.Join(got, ",") != w {
			t.Errorf("%s: tasks %v, want %s", api, got, w)
		}
	}
	if len(made) != len(want) {
		t.Errorf("tasks for %d APIs, want %d: %v", len(made), len(want), made)
	}
	if got := fmt.Sprint(count); got != "map[easy:7 hard:3 medium:3]" {
		t.Errorf("tasks by difficulty %s, want easy 7, medium 3, hard 3", got)
	}
	for api, wants := range map[string][]string{
		"pystats.clamp":   {"hard: its description names clamp"},
		"pystats.ordered": {"medium: malformed program: the scenario its marked span never calls pystats.ordered"},
		"pystats.box": {"medium: reference failed: reference run 0 never calls the target directly",
			"hard: malformed program: the scenario marks no span", "easy: replaced by the easy-variant fallback"},
	} {
		for _, w := range wants {
			if !strings.Contains(missing[api], w) {
				t.Errorf("%s: missing %q lacks %q", api, missing[api], w)
			}
		}
	}
	for _, api := range []string{"pystats.scale", "pystats.Pair"} {
		if missing[api] != "" {
			t.Errorf("%s: missing %q", api, missing[api])
		}
	}
	wantNote := "13 tasks from 5 bundles by generator llm (easy 7, medium 3, hard 3; 6 model calls, 1 easy-variant fallbacks); " +
		"14 references observed (3 runs each), 0 inputs dropped (perturbed ones that tell nothing apart); 5 generated tasks dropped " +
		"(its description names clamp 1, malformed program 2, reference failed 1, replaced by the easy-variant fallback (no medium or hard task was kept) 1)"
	if n := run.Notes(engine.EventDone)["node.tasks.stats"]; n != wantNote {
		t.Errorf("tasks note\n%q, want\n%q", n, wantNote)
	}

	// Six calls, each made once: five graded, box's fallback.
	calls := srv.Calls()
	if len(calls) != 6 {
		t.Errorf("%d distinct calls, want 6", len(calls))
	}
	for _, c := range calls {
		if c.Requests != 1 || c.Request.Temperature == nil || *c.Request.Temperature != 0 || len(c.Request.Schema) == 0 {
			t.Errorf("call %s: %d requests, temperature %v, schema %s", c.ID, c.Requests, c.Request.Temperature, c.Request.Schema)
		}
	}

	// C1 runs on every task.
	c1 := nodetest.Read[filters.C1Row](t, run, "node.c1.stats")
	if len(c1) != len(rows) {
		t.Fatalf("c1 saw %d tasks of %d", len(c1), len(rows))
	}
	kept := map[string]int{}
	var dropped []string
	for _, c := range c1 {
		if c.Keep {
			kept[c.Difficulty]++
		} else {
			dropped = append(dropped, taskstest.Name(c.Row)+": "+c.Reason)
		}
	}
	sort.Strings(dropped)
	t.Logf("llm generator on the Python fixture: %v of %d tasks; C1 keeps %v (hard share %d/%d); drops %q", count, len(rows), kept, kept["hard"], kept["easy"]+kept["medium"]+kept["hard"], dropped)
	if got := fmt.Sprint(kept); got != "map[easy:7 hard:3 medium:3]" {
		t.Errorf("C1 keeps %s, want easy 7, medium 3, hard 3", got)
	}
}
