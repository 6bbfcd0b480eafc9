package generic

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/parquet-go/parquet-go"
)

func init() { nodes.Register(concatType{}) }

// concatConfig: `node "concat" "all" { inputs = values(node.sample.tiers) }`.
type concatConfig struct {
	Inputs []nodes.Ref `hcl:"inputs"`
	// SourceColumn, when set, adds a column holding each row's producing
	// node address (e.g. to tell for_each instances apart).
	SourceColumn string `hcl:"source_column,optional"`
}

type concatType struct{}

func (concatType) Name() string    { return "concat" }
func (concatType) Version() string { return "1" }
func (concatType) NewConfig() any  { return &concatConfig{} }
func (concatType) Doc() string {
	return "Union of artifacts with one schema, in the order of `inputs`; `source_column` records where each row came from."
}

func (concatType) Validate(cfg any) error {
	if len(cfg.(*concatConfig).Inputs) == 0 {
		return nodes.Errorf("inputs", "No inputs", "concat needs at least one input artifact.")
	}
	return nil
}

func (concatType) Run(ctx context.Context, r nodes.Run) error {
	c := r.Config().(*concatConfig)
	readers, err := readAll(ctx, r, c.Inputs)
	if err != nil {
		return err
	}
	var total int64
	first := artifacts.SchemaFingerprint(readers[0].Schema())
	for i, in := range readers {
		if i > 0 && artifacts.SchemaFingerprint(in.Schema()) != first {
			return fmt.Errorf("%s has a different schema from %s:\n%s\nversus\n%s", c.Inputs[i].Node, c.Inputs[0].Node, in.Schema(), readers[0].Schema())
		}
		total += int64(in.NumRows())
	}
	schema := readers[0].Schema()
	if c.SourceColumn == "" {
		w, err := r.Output(schema)
		if err != nil {
			return err
		}
		var done int64
		for _, in := range readers {
			if err := w.WriteRows(in.Rows()); err != nil {
				return err
			}
			done += int64(in.NumRows())
			r.Progress(done, total)
		}
		return nil
	}
	for _, f := range schema.Fields() {
		if f.Name() == c.SourceColumn {
			return nodes.Errorf("source_column", "Column exists", "the inputs already have a column %q.", c.SourceColumn)
		}
	}
	outSchema, add := withStringColumn(schema, c.SourceColumn)
	w, err := r.Output(outSchema)
	if err != nil {
		return err
	}
	for i, in := range readers {
		rows := make([]parquet.Row, in.NumRows())
		for j, row := range in.Rows() {
			rows[j] = add(row, c.Inputs[i].Node)
		}
		if err := w.WriteRows(rows); err != nil {
			return err
		}
	}
	return nil
}

// readAll opens inputs on every core: a fan-in of thousands of small
// artifacts is bound by per-file decoding, not by disk.
func readAll(ctx context.Context, r nodes.Run, refs []nodes.Ref) ([]*artifacts.Reader, error) {
	readers := make([]*artifacts.Reader, len(refs))
	errs := make([]error, len(refs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(refs) || ctx.Err() != nil {
					return
				}
				readers[i], errs[i] = r.Input(refs[i])
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return readers, nil
}

// withStringColumn returns schema plus a required string column, and a
// function that rewrites a row of schema into a row of the new schema.
// Parquet groups order fields by name, so the new column can land between
// existing ones: values are moved to their new column indexes rather than
// decoded and re-encoded, which keeps every value (JSON included) as is.
func withStringColumn(schema *parquet.Schema, name string) (*parquet.Schema, func(parquet.Row, string) parquet.Row) {
	group := parquet.Group{}
	for _, f := range schema.Fields() {
		group[f.Name()] = f
	}
	group[name] = parquet.String()
	out := parquet.NewSchema(schema.Name(), group)
	newIndex := map[string]int{}
	for i, path := range out.Columns() {
		newIndex[strings.Join(path, "\x00")] = i
	}
	remap := make([]int, len(schema.Columns()))
	for i, path := range schema.Columns() {
		remap[i] = newIndex[strings.Join(path, "\x00")]
	}
	added := newIndex[name]
	return out, func(row parquet.Row, value string) parquet.Row {
		res := make(parquet.Row, 0, len(row)+1)
		inserted := false
		for _, v := range row {
			col := remap[v.Column()]
			if !inserted && col > added {
				res = append(res, parquet.ValueOf(value).Level(0, 0, added))
				inserted = true
			}
			res = append(res, v.Level(v.RepetitionLevel(), v.DefinitionLevel(), col))
		}
		if !inserted {
			res = append(res, parquet.ValueOf(value).Level(0, 0, added))
		}
		return res
	}
}
