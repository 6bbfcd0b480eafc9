package tasks_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
	_ "github.com/lacuna-dev/lacuna/nodes/bundle"
	_ "github.com/lacuna-dev/lacuna/nodes/discovery"
	"github.com/lacuna-dev/lacuna/nodes/filters"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/nodes/tasks/taskstest"
	"github.com/lacuna-dev/lacuna/novelapibench/pyharness"
)

// TestPythonTasksAndC1FromBundles runs the Python chain on a loopback
// index through tasks and c1: scale and clamp (its example is the shipped
// usage.md's) and box have an easy task only, ordered all three levels;
// Pair's example gives no task, mean's fails and total has none (no
// bundles). Every reference passes its harness. C1 keeps the five whose
// harness rejects each of their six mutants (seven for clamp: a perturb
// mutant changing hi, the parameter whose change changes the outcome)
// and drops box: its example
// shows box(3) is not None, which a mock gives too, so the throwaway
// mutant passes. A second run computes nothing. With the environments
// deleted from the store's cache, a tasks node that runs again rebuilds
// v_new's from its kept lock; with the locks deleted too, a new one fails
// saying how to rebuild them.
func TestPythonTasksAndC1FromBundles(t *testing.T) {
	taskstest.OfflinePyStats(t)
	dir := nodetest.StoreDir(t)
	run := nodetest.Run(t, dir, taskstest.PyTasksPipeline)
	notes := run.Notes(engine.EventDone)
	rows := nodetest.Read[tasks.Row](t, run, "node.tasks.stats")
	var got []string
	for _, r := range rows {
		got = append(got, r.Qualified+"/"+r.Difficulty)
		if r.Ecosystem != "python" || r.Kind != "function" || r.VNewEnv == "" || r.Expect == "" || r.ObserveError != "" || r.Description == "" || r.Generator != "examples" {
			t.Errorf("%s/%s: ecosystem %q env %q expect %q observe error %q", r.Qualified, r.Difficulty, r.Ecosystem, r.VNewEnv, r.Expect, r.ObserveError)
		}
		var spec pyharness.Task
		if err := json.Unmarshal([]byte(r.Spec), &spec); err != nil {
			t.Fatalf("%s/%s: spec: %v", r.Qualified, r.Difficulty, err)
		}
		ref, _, _ := spec.ReferenceProgram()
		if spec.Difficulty != r.Difficulty || spec.Target.ID != r.APIID || r.Context != spec.Context() || !strings.Contains(r.Context, pyharness.MaskMarker) ||
			r.Mask != spec.Reference || r.Reference != ref || len(spec.Inputs) == 0 {
			t.Errorf("%s/%s: the row's program columns are not its spec's:\n%s\nspec %+v", r.Qualified, r.Difficulty, r.Context, spec)
		}
		if strings.Contains(r.Description, r.Qualified[strings.LastIndex(r.Qualified, ".")+1:]+"(") {
			t.Errorf("%s/%s: the description names the target:\n%s", r.Qualified, r.Difficulty, r.Description)
		}
	}
	sort.Strings(got)
	if want := "pystats.box/easy pystats.clamp/easy pystats.ordered/easy pystats.ordered/hard pystats.ordered/medium pystats.scale/easy"; strings.Join(got, " ") != want {
		t.Errorf("tasks %s, want %s", strings.Join(got, " "), want)
	}
	wantNote := "6 tasks from 5 bundles (easy 4, medium 1, hard 1); 6 references observed (3 runs each), 3 inputs dropped (perturbed ones that tell nothing apart, class spans' repeats); 1 bundles without a task"
	if n := notes["node.tasks.stats"]; n != wantNote {
		t.Errorf("tasks note %q, want %q", n, wantNote)
	}
	c1 := nodetest.Read[filters.C1Row](t, run, "node.c1.stats")
	if len(c1) != len(rows) {
		t.Fatalf("%d c1 rows for %d tasks", len(c1), len(rows))
	}
	for i, c := range c1 {
		if c.Row != rows[i] {
			t.Errorf("%s: c1's task columns differ from the task's", c.TaskID)
		}
		if c.Qualified == "pystats.box" {
			if c.Keep || !c.C1Passed || c.Reason != "no outcome depends on the target: substituting its result changes nothing, so a throwaway call cannot be told apart" ||
				c.AuditRun != 6 || c.AuditKill != 5 || strings.Join(c.Survivors, ",") != "throwaway" {
				t.Errorf("c1 box: keep %v passed %v reason %q killed %d/%d survivors %v, want dropped, the throwaway mutant surviving", c.Keep, c.C1Passed, c.Reason, c.AuditKill, c.AuditRun, c.Survivors)
			}
			continue
		}
		mutants := int32(6)
		if c.Qualified == "pystats.clamp" {
			mutants = 7 // and a perturb mutant: hi matters
		}
		if !c.Keep || !c.C1Passed || c.Reason != "" || c.AuditRun != mutants || c.AuditKill != mutants || c.Discrimination != 1 || len(c.Survivors) != 0 {
			t.Errorf("c1 %s/%s: keep %v passed %v reason %q killed %d/%d survivors %v", c.Qualified, c.Difficulty, c.Keep, c.C1Passed, c.Reason, c.AuditKill, c.AuditRun, c.Survivors)
		}
	}
	if n := notes["node.c1.stats"]; n != "5 of 6 tasks pass C1 and the audit" {
		t.Errorf("c1 note %q", n)
	}

	again := nodetest.Run(t, dir, taskstest.PyTasksPipeline)
	for addr, r := range again.Nodes {
		if r.State != "cached" {
			t.Errorf("second run: %s %s", addr, r.State)
		}
	}
	if n := again.Notes(engine.EventCached)["node.tasks.stats"]; n != wantNote {
		t.Errorf("cached note %q", n)
	}

	// With the environments deleted from the store's cache by an rm -rf
	// interrupted half-way (v_new's is left without pystats/_core.py), a
	// tasks node that runs again (a new key: generator written out) does
	// not use what is left but rebuilds v_new's from its kept lock, to the
	// same digest, and makes the same tasks.
	cache := filepath.Join(dir, ".lacuna", "cache", "python")
	envs, err := os.ReadDir(filepath.Join(cache, "envs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range envs {
		if e.Name() != rows[0].VNewEnv {
			if err := os.RemoveAll(filepath.Join(cache, "envs", e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	core, _ := filepath.Glob(filepath.Join(cache, "envs", rows[0].VNewEnv, "lib", "python*", "site-packages", "pystats", "_core.py"))
	if len(core) != 1 {
		t.Fatalf("v_new's environment holds %v, want one pystats/_core.py", core)
	}
	if err := os.Remove(core[0]); err != nil {
		t.Fatal(err)
	}
	healed := nodetest.Run(t, dir, strings.Replace(taskstest.PyTasksPipeline, "bundles   = node.bundle.stats", "bundles   = node.bundle.stats\n  generator = \"examples\"", 1))
	if s := healed.Nodes["node.bundle.stats"].State; s != engine.StateCached {
		t.Errorf("bundle %s, want cached", s)
	}
	res := healed.Nodes["node.tasks.stats"]
	if res.State != engine.StateDone {
		t.Fatalf("tasks after deleting the environments: %s, want done", res.State)
	}
	if again := nodetest.Read[tasks.Row](t, healed, "node.tasks.stats"); !reflect.DeepEqual(again, rows) {
		t.Errorf("tasks from the rebuilt environment differ from the first run's")
	}
	a, err := healed.Store.GetAction(res.Key)
	if err != nil {
		t.Fatal(err)
	}
	if line := fmt.Sprintf("rebuilding environment py-stats==2.0.0 (%.12s) from its lock: pyenv: environment %s is incomplete", rows[0].VNewEnv, rows[0].VNewEnv); !strings.Contains(a.Logs, line) {
		t.Errorf("log lacks %q:\n%s", line, a.Logs)
	}
	if _, err := os.Stat(filepath.Join(cache, "envs", rows[0].VNewEnv)); err != nil {
		t.Errorf("the environment was not rebuilt under its digest: %v", err)
	}

	// With the locks deleted too, a new tasks node fails, stores nothing
	// and says how to rebuild them.
	for _, d := range []string{"envs", "locks"} {
		if err := os.RemoveAll(filepath.Join(cache, d)); err != nil {
			t.Fatal(err)
		}
	}
	gone := nodetest.RunErr(t, dir, taskstest.PyTasksPipeline+`
node "filter" "scale" {
  input = node.bundle.stats
  where = row.qualified_name == "pystats.scale"
}
node "tasks" "scale" {
  bundles   = node.filter.scale
  ecosystem = "python"
}
`)
	res = gone.Nodes["node.tasks.scale"]
	if res.State != engine.StateFailed || res.Err == nil {
		t.Fatalf("tasks without environments and locks: %s %v, want failed", res.State, res.Err)
	}
	for _, want := range []string{"py-stats==2.0.0: environment ", "is no longer in the store's Python cache, nor its lock", "upstream of node.filter.scale", "lacuna run --recompute node.surface_diff."} {
		if !strings.Contains(res.Err.Error(), want) {
			t.Errorf("error %q, want %q", res.Err, want)
		}
	}
	if _, err := gone.Store.GetAction(res.Key); !errors.Is(err, artifacts.ErrNotFound) {
		t.Errorf("a failed tasks node stored a result")
	}
}

// TestPythonTasksAndC1RejectBadAttributesAtTheirPosition: an unknown
// ecosystem is an error at the attribute's file:line:col.
func TestPythonTasksAndC1RejectBadAttributesAtTheirPosition(t *testing.T) {
	for _, tc := range []struct{ old, new, pos, msg string }{
		{"bundles   = node.bundle.stats\n  ecosystem = \"python\"", "bundles   = node.bundle.stats\n  ecosystem = \"rust\"", "p.hcl:24,15-21", `not "rust"`},
		{"tasks     = node.tasks.stats\n  ecosystem = \"python\"", "tasks     = node.tasks.stats\n  ecosystem = \"cobol\"", "p.hcl:28,15-22", `not "cobol"`},
	} {
		dir := t.TempDir()
		src := strings.Replace(taskstest.PyTasksPipeline, tc.old, tc.new, 1)
		_, diags := engine.ExpandSource(filepath.Join(dir, "p.hcl"), []byte(src), dir, engine.Options{})
		if got := diags.Error(); !diags.HasErrors() || !strings.Contains(got, tc.pos) || !strings.Contains(got, tc.msg) {
			t.Errorf("diagnostics %q, want %s and %q", got, tc.pos, tc.msg)
		}
	}
}

// TestPythonTasksAsRootRefuseAStoreTheSandboxUserCannotReach: as root, the
// harness runs samples as uid 65534 from the host, so a store under a
// private directory fails tasks when it is planned, at its ecosystem
// attribute, saying what to do, though bundle (which mounts as root) runs.
func TestPythonTasksAsRootRefuseAStoreTheSandboxUserCannotReach(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root's sandbox drops to uid 65534 from the host")
	}
	taskstest.OfflinePyStats(t)
	dir := nodetest.StoreDir(t)
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	run := nodetest.RunErr(t, dir, taskstest.PyTasksPipeline)
	res := run.Nodes["node.tasks.stats"]
	if res == nil || res.State != engine.StateFailed || res.Err == nil {
		t.Fatalf("tasks in a private store as root: %+v, want failed", res)
	}
	for _, want := range []string{"p.hcl:24:15", "uid 65534", "a path others can read", "LACUNA_PY_UNSANDBOXED=1"} {
		if !strings.Contains(res.Err.Error(), want) {
			t.Errorf("error %q, want %q", res.Err, want)
		}
	}
}
