package tasks

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
)

// FilterRow is a task with the verdict of a model-dependent filter (c2,
// c3): the samples of the task it counted, and whether the task is kept.
// A task the filters before it dropped stays with their Keep = false and
// Reason; a `filter` node with where = row.keep keeps the rest.
type FilterRow struct {
	Row
	Samples int32  `parquet:"samples"` // samples of the task counted
	Passed  int32  `parquet:"passed"`  // ... that passed the harness
	Keep    bool   `parquet:"keep"`
	Reason  string `parquet:"reason"`
}

// taskState is a task read from a table of tasks, with the verdict of the
// filters that made the table (kept, with no reason, for a tasks node's
// output).
type taskState struct {
	Row
	Keep   bool
	Reason string
}

// readTaskStates reads the tasks of any table that has every column of
// Row: a tasks node's output, or a filter's (c1, c2, c3), whose keep and
// reason columns it reads too.
func readTaskStates(r nodes.Run, ref nodes.Ref) ([]taskState, error) {
	in, err := r.Input(ref)
	if err != nil {
		return nil, err
	}
	rows, err := project[Row](in)
	if err != nil {
		return nil, fmt.Errorf("tasks (%s): %w; tasks must come from a tasks node or a filter of its rows (c1, c2, c3)", ref, err)
	}
	out := make([]taskState, len(rows))
	for i, t := range rows {
		out[i] = taskState{Row: t, Keep: true}
	}
	if _, ok := in.Schema().Lookup("keep"); !ok {
		return out, nil
	}
	verdicts, err := project[struct {
		Keep   bool   `parquet:"keep"`
		Reason string `parquet:"reason"`
	}](in)
	if err != nil {
		return nil, fmt.Errorf("tasks (%s): %w", ref, err)
	}
	for i, v := range verdicts {
		out[i].Keep, out[i].Reason = v.Keep, v.Reason
	}
	return out, nil
}

// project reads in's rows as T, a struct of parquet-tagged scalar fields
// (embedded structs flattened), each from the column of its name: in may
// have other columns too. A missing column, or one of another type, is an
// error that names it.
func project[T any](in *artifacts.Reader) ([]T, error) {
	want := artifacts.SchemaOf[T]()
	for _, f := range want.Fields() {
		col, ok := in.Schema().Lookup(f.Name())
		if !ok {
			return nil, fmt.Errorf("no column %s", f.Name())
		}
		if got, w := col.Node.Type(), f.Type(); !f.Leaf() || got.Kind() != w.Kind() || fmt.Sprint(got.LogicalType()) != fmt.Sprint(w.LogicalType()) {
			return nil, fmt.Errorf("column %s is %s, not %s", f.Name(), got, w)
		}
	}
	out := make([]T, in.NumRows())
	for i, row := range in.Rows() {
		var v any
		if err := in.Schema().Reconstruct(&v, row); err != nil {
			return nil, fmt.Errorf("row %d: %w", i, err)
		}
		m, _ := v.(map[string]any)
		if err := setFields(reflect.ValueOf(&out[i]).Elem(), m); err != nil {
			return nil, fmt.Errorf("row %d: %w", i, err)
		}
	}
	return out, nil
}

// setFields sets the tagged fields of the struct s from m, by column name.
func setFields(s reflect.Value, m map[string]any) error {
	for i := 0; i < s.NumField(); i++ {
		f := s.Type().Field(i)
		if f.Anonymous {
			if err := setFields(s.Field(i), m); err != nil {
				return err
			}
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("parquet"), ",")
		if name == "" || name == "-" {
			continue
		}
		v := reflect.ValueOf(m[name])
		if !v.IsValid() {
			continue // a null: the zero value
		}
		if !v.Type().ConvertibleTo(f.Type) {
			return fmt.Errorf("column %s holds %s, not %s", name, v.Type(), f.Type)
		}
		s.Field(i).Set(v.Convert(f.Type))
	}
	return nil
}

// verdict judges a task kept so far on its samples: n of them, passed
// passing; cells are the knowledge cells they were written in.
type verdict func(t Row, n, passed int, cells []string) (keep bool, reason string, err error)

// filterCounts is what a filter saw, for its note.
type filterCounts struct {
	in, kept, noSamples int // tasks kept before it, ... it keeps, ... without samples
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
	states, err := readTaskStates(r, tasksRef)
	if err != nil {
		return nil, counts, err
	}
	in, err := r.Input(samplesRef)
	if err != nil {
		return nil, counts, err
	}
	samples, err := project[sampleVerdict](in)
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
		if len(models) > 1 {
			return nil, counts, fmt.Errorf("samples: solutions of several models (%s): the filter judges one model's", strings.Join(sortedKeys(models), ", "))
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
				if row.Keep, row.Reason, err = judge(st.Row, t.n, t.passed, sortedKeys(t.cells)); err != nil {
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
