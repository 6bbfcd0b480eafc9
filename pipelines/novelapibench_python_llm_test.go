package pipelines_test

import (
	"fmt"
	"os"
	"os/exec"
	"sort"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/filters"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/nodes/tasks/taskstest"
	"github.com/lacuna-dev/lacuna/runners/pypi/pypitest"
)

// TestNovelAPIBenchPythonLLMGeneratorBesideTheCutter makes the Python
// fixture's tasks (pyStats: scale, clamp, ordered, box; mean fails and
// total has no example) both ways in one store, each through C1: the
// example cutter, and the llm generator asking a scripted model
// (taskstest.PyGraded and PyVariants: clamp loses its hard task, ordered
// its medium, and box falls back to three easy variants). The cutter's
// six tasks hold one hard (C1 keeps five: box's cannot tell a throwaway
// call); the generator's ten hold two, all kept by C1, so the hard share
// of the kept tasks goes from 1/5 to 2/10. A second run of the generator's
// pipeline is cached and asks the model nothing.
func TestNovelAPIBenchPythonLLMGeneratorBesideTheCutter(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("bubblewrap not found: %v", err)
		}
		t.Skipf("bubblewrap not found: %v (the test fails instead under CI=true)", err)
	}
	mit := []string{"License-Expression: MIT"}
	nodetest.OfflinePython(t, pypitest.Published(t, "py-stats",
		pypitest.Release{Version: "1.0.0", Uploaded: pypitest.Day("2024-01-10"), Files: pyStats["1.0.0"], Metadata: mit},
		pypitest.Release{Version: "2.0.0", Uploaded: pypitest.Day("2024-09-01"), Files: pyStats["2.0.0"], Metadata: mit}))
	srv := taskstest.GeneratorServer(t, taskstest.PyGraded, taskstest.PyVariants)
	dir := nodetest.StoreDir(t)

	type counts struct{ made, kept map[string]int }
	generate := func(src string) counts {
		t.Helper()
		run := nodetest.Run(t, dir, src)
		rows := nodetest.Read[tasks.Row](t, run, "node.tasks.stats")
		c1 := nodetest.Read[filters.C1Row](t, run, "node.c1.stats")
		if len(c1) != len(rows) {
			t.Fatalf("c1 saw %d tasks of %d", len(c1), len(rows))
		}
		c := counts{made: map[string]int{}, kept: map[string]int{}}
		for _, r := range rows {
			c.made[r.Difficulty]++
			if r.Expect == "" || r.ObserveError != "" {
				t.Errorf("%s (%s): not observed: %s", taskstest.Name(r), r.Generator, r.ObserveError)
			}
		}
		var dropped []string
		for _, r := range c1 {
			if r.Keep {
				c.kept[r.Difficulty]++
			} else {
				dropped = append(dropped, taskstest.Name(r.Row)+": "+r.Reason)
			}
		}
		sort.Strings(dropped)
		t.Logf("%s: tasks %v, C1 keeps %v, drops %q", rows[0].Generator, c.made, c.kept, dropped)
		return c
	}
	share := func(m map[string]int) string {
		return fmt.Sprintf("%d/%d", m["hard"], m["easy"]+m["medium"]+m["hard"])
	}

	cutter := generate(taskstest.PyTasksPipeline)
	llm := generate(taskstest.PyLLMTasksPipeline(srv.URL()))
	for _, tc := range []struct {
		name                   string
		got                    counts
		made, kept, hardShared string
	}{
		{"cutter", cutter, "map[easy:4 hard:1 medium:1]", "map[easy:3 hard:1 medium:1]", "1/5"},
		{"llm", llm, "map[easy:6 hard:2 medium:2]", "map[easy:6 hard:2 medium:2]", "2/10"},
	} {
		if got := fmt.Sprint(tc.got.made); got != tc.made {
			t.Errorf("%s: tasks %s, want %s", tc.name, got, tc.made)
		}
		if got := fmt.Sprint(tc.got.kept); got != tc.kept {
			t.Errorf("%s: C1 keeps %s, want %s", tc.name, got, tc.kept)
		}
		if got := share(tc.got.kept); got != tc.hardShared {
			t.Errorf("%s: hard share of the kept tasks %s, want %s", tc.name, got, tc.hardShared)
		}
	}
	// Five calls: four graded, box's fallback.
	if n := len(srv.Calls()); n != 5 {
		t.Errorf("%d distinct calls, want 5", n)
	}

	again := nodetest.Run(t, dir, taskstest.PyLLMTasksPipeline(srv.URL()))
	for addr, r := range again.Nodes {
		if r.State != "cached" {
			t.Errorf("second run: %s %s", addr, r.State)
		}
	}
	for _, c := range srv.Calls() {
		if c.Requests != 1 {
			t.Errorf("call %s: %d requests, want 1", c.ID, c.Requests)
		}
	}
}
