package trainingdata

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
)

func init() { nodes.Register(taskSplitType{}) }

// Split modes.
const (
	SplitRandom = "random"
	SplitLOLO   = "leave_one_library_out"
)

// Defaults of task_split: the paper's single 80/20 task-level split.
const defaultTestFraction = 0.2

// splitConfig:
//
//	node "task_split" "study" {                   # the paper's 80/20
//	  tasks                = values(node.c1.lib)  # every library's C1 rows
//	  test_fraction        = 0.2
//	  train_fraction       = 0.25                 # the data-scaling probe
//	  train_sample         = 150                  # train_sample150
//	  test_sample_fraction = 0.3                  # test_sample30 (123 of 399)
//	  seed                 = 0
//	}
//	node "task_split" "swe" {                     # leave-one-library-out
//	  tasks   = values(node.c1.lib)
//	  split   = "leave_one_library_out"
//	  holdout = ["fastapi", "flask"]
//	}
type splitConfig struct {
	// Tasks are tables of tasks (a tasks node's, a filter's or c1's rows):
	// those kept (keep, when there is such a column) are split.
	Tasks []nodes.Ref `hcl:"tasks"`
	// Split is "random" (default) or "leave_one_library_out".
	Split string `hcl:"split,optional"`
	// TestFraction is the random split's share of test units (default 0.2).
	TestFraction *float64 `hcl:"test_fraction,optional"`
	// Unit is what the random split keeps together: "task" (default, the
	// paper's task-level split) or "api" (every task of an API on one
	// side, so that no test API was trained on).
	Unit string `hcl:"unit,optional"`
	// Holdout are the libraries (tasks' library column) whose tasks are the
	// test split of leave_one_library_out.
	Holdout []string `hcl:"holdout,optional"`
	// TrainFraction is the share of the train split trained on (default
	// 1): nested, so a smaller fraction's tasks are a subset of a larger
	// one's.
	TrainFraction *float64 `hcl:"train_fraction,optional"`
	// TrainSample and TestSample are the sizes of uniform samples of the
	// train split (the whole of it, whatever train_fraction) and the test
	// split; the *SampleFraction attributes give them as shares instead.
	TrainSample         *int     `hcl:"train_sample,optional"`
	TestSample          *int     `hcl:"test_sample,optional"`
	TrainSampleFraction *float64 `hcl:"train_sample_fraction,optional"`
	TestSampleFraction  *float64 `hcl:"test_sample_fraction,optional"`
	Seed                int64    `hcl:"seed,optional"`
}

// sampleSize is the size of a sample of a split of n tasks: count, or
// fraction of n rounded half up, at most n; ok is false when neither is
// set.
func sampleSize(count *int, fraction *float64, n int) (size int, ok bool) {
	switch {
	case count != nil:
		return min(*count, n), true
	case fraction != nil:
		return roundHalfUp(*fraction, n), true
	}
	return 0, false
}

func (c *splitConfig) split() string {
	if c.Split == "" {
		return SplitRandom
	}
	return c.Split
}

func (c *splitConfig) unit() string {
	if c.Unit == "" {
		return "task"
	}
	return c.Unit
}

// SplitRow is a task in one set of a split: the task's row whole (so that
// a filter of one set, where = row.split == "test", is a table of tasks
// the generate, solve and judge nodes take), with the set it is in. A
// task is in one of train and test, or in neither when train_fraction
// leaves it out, and may also be in train_sample or test_sample: one row
// per set it is in.
type SplitRow struct {
	// Split is the set: train, test, train_sample or test_sample.
	Split string `parquet:"split"`
	tasks.Row
}

type taskSplitType struct {
	nodes.Static[splitConfig, SplitRow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed      = taskSplitType{}
	_ nodes.Documented = taskSplitType{}
	_ nodes.Validator  = taskSplitType{}
)

func (taskSplitType) Name() string    { return "task_split" }
func (taskSplitType) Version() string { return "1" }
func (taskSplitType) Doc() string {
	return "Splits the kept tasks of every tasks input (c1 or filter rows; keep = false rows are left out) into the parametric " +
		"study's sets, one row per task and set it is in, the task's row whole with its set in column split: " +
		"split = \"random\" (default) draws test_fraction (0.2: the paper's task-level 80/20) of the tasks, or with unit = \"api\" of " +
		"the APIs (every task of an API on one side), as test and leaves the rest train; split = \"leave_one_library_out\" makes " +
		"the tasks of the holdout libraries test and the others train (to train on some libraries only, list only those and the " +
		"holdout in tasks). train_fraction (default 1) keeps that share of the train split as set train, nested: the tasks of a " +
		"smaller fraction are a subset of a larger one's at the same seed (the data-scaling probe's 12, 25, 50 and 100 %). " +
		"train_sample = N and test_sample = N (or train_sample_fraction and test_sample_fraction, shares) add sets train_sample " +
		"(drawn from the whole train split, whatever train_fraction, so every fraction is evaluated on the same sample: " +
		"train_sample150) and test_sample (test_sample30, 123 of the paper's 399 test tasks: test_sample_fraction = 0.3). Every draw ranks tasks " +
		"by a hash of seed and task id (the test draw with unit = \"api\": API ids), sizes round half up: the sets depend on no input order, and " +
		"adding or removing a task changes the membership of at most one other task per draw. Downstream nodes take split = " +
		"node.task_split.NAME and which = SET; for evaluation, a filter with where = row.split == \"test\" is a table of tasks " +
		"generate and solve take."
}

func (taskSplitType) Validate(cfg any) error {
	c := cfg.(*splitConfig)
	lolo := c.split() == SplitLOLO
	switch {
	case len(c.Tasks) == 0:
		return nodes.Errorf("tasks", "No tasks", "set tasks = [node.c1.NAME, ...] (or a filter of kept tasks).")
	case c.split() != SplitRandom && !lolo:
		return nodes.Errorf("split", "Unknown split", "split must be %q or %q, not %q.", SplitRandom, SplitLOLO, c.Split)
	case lolo && c.TestFraction != nil:
		return nodes.Errorf("test_fraction", "Not a random split", "test_fraction is the random split's; leave_one_library_out tests on the holdout libraries.")
	case lolo && c.Unit != "":
		return nodes.Errorf("unit", "Not a random split", "unit is the random split's; leave_one_library_out keeps each library on one side.")
	case lolo && len(c.Holdout) == 0:
		return nodes.Errorf("split", "No holdout", "leave_one_library_out needs holdout = [\"LIBRARY\", ...]: the libraries tested on.")
	case !lolo && len(c.Holdout) > 0:
		return nodes.Errorf("holdout", "Not a leave-one-library-out split", "holdout is for split = %q.", SplitLOLO)
	case c.TestFraction != nil && !(*c.TestFraction > 0 && *c.TestFraction < 1):
		return nodes.Errorf("test_fraction", "Invalid test_fraction", "test_fraction must be between 0 and 1 (exclusive); got %g.", *c.TestFraction)
	case c.unit() != "task" && c.unit() != "api":
		return nodes.Errorf("unit", "Unknown unit", "unit must be \"task\" or \"api\", not %q.", c.Unit)
	case c.TrainFraction != nil && !(*c.TrainFraction > 0 && *c.TrainFraction <= 1):
		return nodes.Errorf("train_fraction", "Invalid train_fraction", "train_fraction must be in (0, 1]; got %g.", *c.TrainFraction)
	case c.TrainSample != nil && *c.TrainSample < 1:
		return nodes.Errorf("train_sample", "Invalid train_sample", "train_sample must be at least 1.")
	case c.TestSample != nil && *c.TestSample < 1:
		return nodes.Errorf("test_sample", "Invalid test_sample", "test_sample must be at least 1.")
	case c.TrainSample != nil && c.TrainSampleFraction != nil:
		return nodes.Errorf("train_sample_fraction", "Conflicting sample size", "set train_sample (tasks) or train_sample_fraction, not both.")
	case c.TestSample != nil && c.TestSampleFraction != nil:
		return nodes.Errorf("test_sample_fraction", "Conflicting sample size", "set test_sample (tasks) or test_sample_fraction, not both.")
	case c.TrainSampleFraction != nil && !(*c.TrainSampleFraction > 0 && *c.TrainSampleFraction <= 1):
		return nodes.Errorf("train_sample_fraction", "Invalid train_sample_fraction", "train_sample_fraction must be in (0, 1]; got %g.", *c.TrainSampleFraction)
	case c.TestSampleFraction != nil && !(*c.TestSampleFraction > 0 && *c.TestSampleFraction <= 1):
		return nodes.Errorf("test_sample_fraction", "Invalid test_sample_fraction", "test_sample_fraction must be in (0, 1]; got %g.", *c.TestSampleFraction)
	}
	seen := map[string]bool{}
	for _, h := range c.Holdout {
		switch {
		case strings.TrimSpace(h) == "":
			return nodes.Errorf("holdout", "Empty library name", "holdout lists library names, as the tasks' library column has them.")
		case seen[h]:
			return nodes.Errorf("holdout", "A library twice", "holdout lists %q twice.", h)
		}
		seen[h] = true
	}
	return nil
}

func (t taskSplitType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	byID := map[string]tasks.Row{}
	dropped := 0
	for _, ref := range c.Tasks {
		states, err := tasks.ReadStates(r, ref)
		if err != nil {
			return err
		}
		for _, s := range states {
			if !s.Keep {
				dropped++
				continue
			}
			if _, dup := byID[s.TaskID]; dup {
				return fmt.Errorf("task %s is in the tasks twice (%s): list each library's tasks once", s.TaskID, ref)
			}
			byID[s.TaskID] = s.Row
		}
	}
	ids := tasks.SortedKeys(byID)
	var train, test []string
	var how string
	switch c.split() {
	case SplitLOLO:
		libs := map[string]int{}
		for _, id := range ids {
			libs[byID[id].Library]++
		}
		for _, h := range c.Holdout {
			if libs[h] == 0 {
				return nodes.Errorf("holdout", "Library without tasks", "no kept task is of library %q; the tasks' libraries are %s.", h, orNone(tasks.SortedKeys(libs)))
			}
		}
		for _, id := range ids {
			if slices.Contains(c.Holdout, byID[id].Library) {
				test = append(test, id)
			} else {
				train = append(train, id)
			}
		}
		how = "held out " + strings.Join(c.Holdout, ", ")
	default:
		unitOf := func(id string) string { return id }
		if c.unit() == "api" {
			unitOf = func(id string) string { return byID[id].APIID }
		}
		units := map[string]bool{}
		for _, id := range ids {
			units[unitOf(id)] = true
		}
		f := orFloat(c.TestFraction, defaultTestFraction)
		order := rank(c.Seed, "test", tasks.SortedKeys(units))
		testUnits := map[string]bool{}
		for _, u := range order[:roundHalfUp(f, len(order))] {
			testUnits[u] = true
		}
		for _, id := range ids {
			if testUnits[unitOf(id)] {
				test = append(test, id)
			} else {
				train = append(train, id)
			}
		}
		how = fmt.Sprintf("random %g test of %d %ss", f, len(order), c.unit())
	}
	members := map[string][]string{SetTest: test}
	tf := orFloat(c.TrainFraction, 1)
	members[SetTrain] = sorted(rank(c.Seed, "train_fraction", train)[:roundHalfUp(tf, len(train))])
	if k, ok := sampleSize(c.TrainSample, c.TrainSampleFraction, len(train)); ok {
		members[SetTrainSample] = sorted(rank(c.Seed, "train_sample", train)[:k])
	}
	if k, ok := sampleSize(c.TestSample, c.TestSampleFraction, len(test)); ok {
		members[SetTestSample] = sorted(rank(c.Seed, "test_sample", test)[:k])
	}
	var rows []SplitRow
	var counts []string
	for _, s := range sets {
		if _, ok := members[s]; !ok {
			continue
		}
		for _, id := range members[s] {
			rows = append(rows, SplitRow{Split: s, Row: byID[id]})
		}
		counts = append(counts, fmt.Sprintf("%s %d", s, len(members[s])))
	}
	note := fmt.Sprintf("%d kept tasks (%s): %s", len(ids), how, strings.Join(counts, ", "))
	if tf < 1 {
		note += fmt.Sprintf(" (train_fraction %g of %d)", tf, len(train))
	}
	if dropped > 0 {
		r.Logf("%d tasks the filters dropped are left out", dropped)
	}
	for _, w := range []struct {
		set  string
		want *int
		pool int
	}{{SetTrainSample, c.TrainSample, len(train)}, {SetTestSample, c.TestSample, len(test)}} {
		if w.want != nil && *w.want > w.pool {
			note += fmt.Sprintf("; warning: %s is all %d tasks, fewer than %d", w.set, w.pool, *w.want)
		}
	}
	for _, s := range []string{SetTrain, SetTest} {
		if len(members[s]) == 0 {
			note = "warning: set " + s + " is empty; " + note
			r.Logf("warning: set %s is empty", s)
		}
	}
	r.Note("%s", note)
	return t.Write(r, rows)
}

func sorted(ss []string) []string {
	out := slices.Clone(ss)
	sort.Strings(out)
	return out
}
