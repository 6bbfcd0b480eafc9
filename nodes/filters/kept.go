package filters

import (
	"fmt"
	"strings"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
)

// FilterRow is a task with the verdict of a model-dependent filter (c2,
// c3): the samples of the task it counted, and whether the task is kept.
// A task the filters before it dropped stays with their Keep = false and
// Reason; a `filter` node with where = row.keep keeps the rest.
type FilterRow struct {
	tasks.Row
	Samples int32  `parquet:"samples"` // samples of the task counted
	Passed  int32  `parquet:"passed"`  // ... that passed the harness
	Keep    bool   `parquet:"keep"`
	Reason  string `parquet:"reason"`
}

// verdict judges a task kept so far on its samples: n of them, passed
// passing; cells are the knowledge cells they were written in.
type verdict func(t tasks.Row, n, passed int, cells []string) (keep bool, reason string, err error)

// filterCounts is what a filter saw, for its note.
type filterCounts struct {
	in, kept, noSamples int    // tasks kept before it, ... it keeps, ... without samples
	model               string // the model that wrote the samples ("" for none named)
}

// sampleVerdict is what a filter reads of a sample's run: SampleRow's
// columns it needs, so that samples may come from any table that has them
// (a solve node's rows, or an evaluation imported from elsewhere).
type sampleVerdict struct {
	TaskID string `parquet:"task_id"`
	Kind   string `parquet:"kind"`
	Model  string `parquet:"model"`
	Cell   string `parquet:"cell"`
	Passed bool   `parquet:"passed"`
}

// filterBySamples is c2 and c3: it reads the tasks (a tasks node's or a
// filter's output) and the runs of one model's solutions (a solve node's
// rows, or any table with their task_id, kind, model, cell and passed),
// and judges every task kept so far on its samples. Tasks without
// samples are dropped ("no samples"); tasks dropped before keep their
// reason. Rows keep the order of the tasks.
func filterBySamples(r nodes.Run, tasksRef, samplesRef nodes.Ref, judge verdict) ([]FilterRow, filterCounts, error) {
	var counts filterCounts
	states, err := tasks.ReadStates(r, tasksRef)
	if err != nil {
		return nil, counts, err
	}
	in, err := r.Input(samplesRef)
	if err != nil {
		return nil, counts, err
	}
	samples, err := tasks.Project[sampleVerdict](in)
	if err != nil {
		return nil, counts, fmt.Errorf("samples (%s): %w; samples must come from a solve node run on a generate node's answers", samplesRef, err)
	}
	type tally struct {
		n, passed int
		cells     map[string]bool
	}
	byTask := map[string]*tally{}
	models := map[string]bool{}
	for _, s := range samples {
		if s.Kind != "model" {
			return nil, counts, fmt.Errorf("samples: task %s has a %s sample: samples must be a model's solutions run by solve, not calibration runs", s.TaskID, s.Kind)
		}
		models[s.Model] = true
		counts.model = s.Model
		if len(models) > 1 {
			return nil, counts, fmt.Errorf("samples: solutions of several models (%s): the filter judges one model's", strings.Join(tasks.SortedKeys(models), ", "))
		}
		t := byTask[s.TaskID]
		if t == nil {
			t = &tally{cells: map[string]bool{}}
			byTask[s.TaskID] = t
		}
		t.n++
		if s.Passed {
			t.passed++
		}
		t.cells[s.Cell] = true
	}
	out := make([]FilterRow, len(states))
	for i, st := range states {
		row := FilterRow{Row: st.Row, Keep: st.Keep, Reason: st.Reason}
		if st.Keep {
			counts.in++
			switch t := byTask[st.TaskID]; {
			case t == nil:
				row.Keep, row.Reason = false, "no samples"
				counts.noSamples++
			default:
				row.Samples, row.Passed = int32(t.n), int32(t.passed)
				if row.Keep, row.Reason, err = judge(st.Row, t.n, t.passed, tasks.SortedKeys(t.cells)); err != nil {
					return nil, counts, err
				}
			}
			if row.Keep {
				counts.kept++
			}
		}
		out[i] = row
	}
	return out, counts, nil
}
