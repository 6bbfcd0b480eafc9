package trainingdata_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/trainingdata"
)

// manyAPIs are n Go APIs of library lib, each with three tasks.
func manyAPIs(lib string, n int) []api {
	var out []api
	for i := 0; i < n; i++ {
		out = append(out, api{lib: lib, name: fmt.Sprintf("Fn%02d", i), prose: fmt.Sprintf("Fn%02d does thing %d.", i, i)})
	}
	return out
}

// TestTaskSplitDrawsSeededExactNestedSets: the random split draws
// test_fraction of the kept tasks (rounded half up) and trains on the
// rest, cut to train_fraction; smaller fractions are subsets of larger
// ones; samples are drawn from the whole train split (the same at every
// fraction) and from the test split; tasks C1 dropped are in no set; the
// same seed draws the same sets, another seed others.
func TestTaskSplitDrawsSeededExactNestedSets(t *testing.T) {
	dir := t.TempDir()
	head, kept := fixture(t, dir, append(manyAPIs("alpha", 20), manyAPIs("beta", 14)...))
	n := len(kept) // 102: test 20.4 → 20, train 82
	cases := []struct {
		name, body string
		sizes      map[string]int
	}{
		{"the paper's 80/20", ``, map[string]int{"test": 20, "train": n - 20}},
		{"train fraction 0.12", `train_fraction = 0.12`, map[string]int{"test": 20, "train": 10}}, // 9.84
		{"train fraction 0.25", `train_fraction = 0.25`, map[string]int{"test": 20, "train": 21}}, // 20.5
		{"train fraction 0.5", `train_fraction = 0.5`, map[string]int{"test": 20, "train": 41}},
		{"samples", "train_sample = 15\n  test_sample = 6", map[string]int{"test": 20, "train": n - 20, "train_sample": 15, "test_sample": 6}},
		{"samples at a fraction", "train_fraction = 0.25\n  train_sample = 15\n  test_sample = 6", map[string]int{"test": 20, "train": 21, "train_sample": 15, "test_sample": 6}},
		{"a sample larger than its split", "test_sample = 50", map[string]int{"test": 20, "train": n - 20, "test_sample": 20}},
		{"another seed", "seed = 7", map[string]int{"test": 20, "train": n - 20}},
		{"sample fractions", "train_sample_fraction = 0.1\n  test_sample_fraction = 0.3", map[string]int{"test": 20, "train": n - 20, "train_sample": 8, "test_sample": 6}}, // 8.2, 6
		{"a third test", "test_fraction = 0.3", map[string]int{"test": 31, "train": n - 31}},                                                                                // 30.6
	}
	src := head
	for i, c := range cases {
		src += fmt.Sprintf("node \"task_split\" \"c%d\" {\n  tasks = [node.import.tasks]\n  %s\n}\n", i, c.body)
	}
	run := nodetest.Run(t, dir, src)
	sets := make([]map[string][]string, len(cases))
	for i, c := range cases {
		rows := nodetest.Read[trainingdata.SplitRow](t, run, fmt.Sprintf("node.task_split.c%d", i))
		sets[i] = bySet(rows)
		t.Run(c.name, func(t *testing.T) {
			got := map[string]int{}
			for s, ids := range sets[i] {
				got[s] = len(ids)
				if !slices.IsSorted(ids) {
					t.Errorf("set %s is not in task_id order", s)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(c.sizes) {
				t.Errorf("set sizes %v, want %v", got, c.sizes)
			}
			for _, id := range sets[i]["test"] {
				if slices.Contains(sets[i]["train"], id) || slices.Contains(sets[i]["train_sample"], id) {
					t.Errorf("test task %s is also trained on or in the train sample", id)
				}
			}
			for _, id := range sets[i]["test_sample"] {
				if !slices.Contains(sets[i]["test"], id) {
					t.Errorf("test_sample task %s is not a test task", id)
				}
			}
			for _, r := range rows {
				if r.Description == "" || r.Harness == "" || r.Mask == "" {
					t.Errorf("row %s of set %s lacks the task's columns: %+v", r.TaskID, r.Split, r.Row)
				}
			}
		})
	}
	t.Run("train is nested across fractions and the samples do not move", func(t *testing.T) {
		full, at25, at12, at50 := sets[0]["train"], sets[2]["train"], sets[1]["train"], sets[3]["train"]
		for _, sub := range []struct {
			small, large []string
			what         string
		}{{at12, at25, "0.12 ⊂ 0.25"}, {at25, at50, "0.25 ⊂ 0.5"}, {at50, full, "0.5 ⊂ 1"}} {
			for _, id := range sub.small {
				if !slices.Contains(sub.large, id) {
					t.Errorf("%s: %s is in the smaller fraction only", sub.what, id)
				}
			}
		}
		if !slices.Equal(sets[4]["train_sample"], sets[5]["train_sample"]) || !slices.Equal(sets[4]["test_sample"], sets[5]["test_sample"]) {
			t.Errorf("the samples differ with train_fraction: %v / %v", sets[4], sets[5])
		}
		trainPool := append(slices.Clone(full), sets[0]["test"]...)
		for _, id := range sets[5]["train_sample"] {
			if slices.Contains(sets[0]["test"], id) || !slices.Contains(trainPool, id) {
				t.Errorf("train_sample task %s is not of the train split", id)
			}
		}
		if !slices.Equal(sets[0]["test"], sets[4]["test"]) {
			t.Errorf("the same seed drew another test split")
		}
		if slices.Equal(sets[0]["test"], sets[7]["test"]) {
			t.Errorf("seed 7 drew seed 0's test split")
		}
		if slices.Contains(append(sets[0]["train"], sets[0]["test"]...), "alpha-apply-hard") {
			t.Errorf("a task C1 dropped is in a set")
		}
	})
}

// TestTaskSplitMovesAtMostOneTaskWhenATaskIsAdded: the draws depend on
// each task's hash, not on the input's order or on the other tasks, so
// adding one task to the input changes the membership of at most one
// other task per draw.
func TestTaskSplitMovesAtMostOneTaskWhenATaskIsAdded(t *testing.T) {
	apis := manyAPIs("alpha", 30)
	const node = `node "task_split" "s" {
  tasks          = [node.import.tasks]
  train_fraction = 0.5
  test_sample    = 5
}
`
	split := func(apis []api) map[string][]string {
		dir := t.TempDir()
		head, _ := fixture(t, dir, apis)
		return bySet(nodetest.Read[trainingdata.SplitRow](t, nodetest.Run(t, dir, head+node), "node.task_split.s"))
	}
	before := split(apis[:29])
	after := split(apis) // three tasks more: one API
	added := map[string]bool{}
	for _, d := range levels {
		added[apis[29].task(d).TaskID] = true
	}
	for _, set := range []string{"test", "train", "test_sample"} {
		moved := 0
		for _, id := range symmetricDiff(before[set], after[set]) {
			if !added[id] {
				moved++
			}
		}
		t.Logf("set %s: %d → %d tasks, %d old tasks moved", set, len(before[set]), len(after[set]), moved)
		// Three tasks added, and train depends on test: at most one
		// move per added task and draw.
		if limit := map[string]int{"test": 3, "train": 6, "test_sample": 6}[set]; moved > limit {
			t.Errorf("set %s: %d old tasks changed membership, want at most %d", set, moved, limit)
		}
	}
}

func symmetricDiff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			out = append(out, x)
		}
	}
	return out
}

// TestTaskSplitKeepsLibrariesOrAPIsTogether: leave_one_library_out tests
// on exactly the holdout libraries' tasks; unit = "api" puts all of an
// API's tasks on one side.
func TestTaskSplitKeepsLibrariesOrAPIsTogether(t *testing.T) {
	dir := t.TempDir()
	head, kept := fixture(t, dir, append(append(manyAPIs("alpha", 10), manyAPIs("beta", 6)...), libraries[10:]...))
	src := head + `node "task_split" "lolo" {
  tasks   = [node.import.tasks]
  split   = "leave_one_library_out"
  holdout = ["beta", "gamma"]
  test_sample = 4
}
node "task_split" "api" {
  tasks = [node.import.tasks]
  unit  = "api"
}
node "filter" "test" {
  input = node.task_split.lolo
  where = row.split == "test"
}
`
	run := nodetest.Run(t, dir, src)
	lolo := bySet(nodetest.Read[trainingdata.SplitRow](t, run, "node.task_split.lolo"))
	lib := map[string]string{}
	api := map[string]string{}
	for _, k := range kept {
		lib[k.TaskID], api[k.TaskID] = k.Library, k.APIID
	}
	for _, id := range lolo["test"] {
		if lib[id] == "alpha" {
			t.Errorf("lolo: test task %s is of a trained library", id)
		}
	}
	for _, id := range lolo["train"] {
		if lib[id] != "alpha" {
			t.Errorf("lolo: train task %s is of a holdout library", id)
		}
	}
	if len(lolo["train"])+len(lolo["test"]) != len(kept) || len(lolo["test"]) != 6*3+2*3 || len(lolo["test_sample"]) != 4 {
		t.Errorf("lolo: %d train, %d test, %d test_sample of %d kept tasks", len(lolo["train"]), len(lolo["test"]), len(lolo["test_sample"]), len(kept))
	}
	// A filter of one set is a table of tasks.
	var filtered []string
	for _, s := range nodetest.Read[trainingdata.SplitRow](t, run, "node.filter.test") {
		filtered = append(filtered, s.TaskID)
	}
	if !slices.Equal(filtered, lolo["test"]) {
		t.Errorf("filter of set test: %v, want %v", filtered, lolo["test"])
	}

	byAPI := bySet(nodetest.Read[trainingdata.SplitRow](t, run, "node.task_split.api"))
	side := map[string]string{}
	for _, set := range []string{"train", "test"} {
		for _, id := range byAPI[set] {
			if s, ok := side[api[id]]; ok && s != set {
				t.Errorf("unit api: API %s has tasks in train and test", api[id])
			}
			side[api[id]] = set
		}
	}
	if n := len(byAPI["test"]); n == 0 || n%3 != 0 {
		t.Errorf("unit api: %d test tasks", n)
	}
}

// TestTaskSplitConfigErrorsNameTheAttribute: each misconfiguration is an
// error at its attribute, before anything runs.
func TestTaskSplitConfigErrorsNameTheAttribute(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"an unknown split", `split = "kfold"`, `p.hcl:3,11-18: Unknown split; split must be "random" or "leave_one_library_out", not "kfold".`},
		{"a test fraction of 1", `test_fraction = 1`, `p.hcl:3,19-20: Invalid test_fraction`},
		{"a test fraction with lolo", "split = \"leave_one_library_out\"\n  holdout = [\"x\"]\n  test_fraction = 0.2", `p.hcl:5,19-22: Not a random split`},
		{"lolo without holdout", `split = "leave_one_library_out"`, `p.hcl:3,11-34: No holdout`},
		{"a holdout with the random split", `holdout = ["x"]`, `p.hcl:3,13-18: Not a leave-one-library-out split`},
		{"a holdout twice", "split = \"leave_one_library_out\"\n  holdout = [\"x\", \"x\"]", `p.hcl:4,13-23: A library twice; holdout lists "x" twice.`},
		{"a train fraction of 0", `train_fraction = 0`, `p.hcl:3,20-21: Invalid train_fraction; train_fraction must be in (0, 1]`},
		{"a train fraction above 1", `train_fraction = 1.5`, `p.hcl:3,20-23: Invalid train_fraction`},
		{"an empty sample", `test_sample = 0`, `p.hcl:3,17-18: Invalid test_sample`},
		{"an unknown unit", `unit = "library"`, `p.hcl:3,10-19: Unknown unit`},
		{"a sample twice", "test_sample = 3\n  test_sample_fraction = 0.3", `p.hcl:4,26-29: Conflicting sample size`},
		{"a sample fraction of 0", "train_sample_fraction = 0", `p.hcl:3,27-28: Invalid train_sample_fraction`},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := fmt.Sprintf("node \"task_split\" \"x\" {\n  tasks = [node.import.tasks]\n  %s\n}", c.body)
			if got := configError(t, src); !strings.Contains(got, c.want) {
				t.Errorf("diagnostics %q, want %q", got, c.want)
			}
		})
	}
}

// TestTaskSplitRunErrors: a holdout library without tasks, and a task in
// two inputs, fail the run with what to fix.
func TestTaskSplitRunErrors(t *testing.T) {
	dir := t.TempDir()
	head, _ := fixture(t, dir, libraries)
	for _, c := range []struct{ name, body, want string }{
		{"a holdout library without tasks", "tasks = [node.import.tasks]\n  split = \"leave_one_library_out\"\n  holdout = [\"delta\"]",
			`Library without tasks: no kept task is of library "delta"; the tasks' libraries are alpha, beta, gamma.`},
		{"a task twice", "tasks = [node.import.tasks, node.import.tasks]", "is in the tasks twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := runErr(t, dir, head+"node \"task_split\" \"x\" {\n  "+c.body+"\n}\n", "node.task_split.x"); !strings.Contains(got, c.want) {
				t.Errorf("error %q, want %q", got, c.want)
			}
		})
	}
}
