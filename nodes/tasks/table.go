package tasks

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
)

// State is a task read from a table of tasks, with the verdict of the
// filters that made the table (kept, with no reason, for a tasks node's
// output).
type State struct {
	Row
	Keep   bool
	Reason string
}

// ReadStates reads the tasks of any table that has every column of
// Row: a tasks node's output, or a filter's (c1, c2, c3), whose keep and
// reason columns it reads too.
func ReadStates(r nodes.Run, ref nodes.Ref) ([]State, error) {
	in, err := r.Input(ref)
	if err != nil {
		return nil, err
	}
	rows, err := Project[Row](in)
	if err != nil {
		return nil, fmt.Errorf("tasks (%s): %w; tasks must come from a tasks node or a filter of its rows (c1, c2, c3)", ref, err)
	}
	out := make([]State, len(rows))
	for i, t := range rows {
		out[i] = State{Row: t, Keep: true}
	}
	if _, ok := in.Schema().Lookup("keep"); !ok {
		return out, nil
	}
	verdicts, err := Project[struct {
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

// Project reads in's rows as T, a struct of parquet-tagged scalar fields
// (embedded structs flattened), each from the column of its name: in may
// have other columns too. A missing column, or one of another type, is an
// error that names it.
func Project[T any](in *artifacts.Reader) ([]T, error) {
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
