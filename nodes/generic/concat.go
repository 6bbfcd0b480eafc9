package generic

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
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

// metaInputs records, in a concat's output, each input's digest and row
// count in order, so that the next run can reuse the rows of inputs that
// did not change instead of decoding them again.
const metaInputs = "lacuna.concat.inputs"

func (concatType) Run(ctx context.Context, r nodes.Run) error {
	c := r.Config().(*concatConfig)
	reuse := reusableSlices(r, c)
	var toRead []nodes.Ref
	for _, ref := range c.Inputs {
		if _, ok := reuse[ref.Node]; !ok {
			toRead = append(toRead, ref)
		}
	}
	readers, err := readAll(ctx, r, toRead)
	if err != nil {
		return err
	}
	rows := map[string][]parquet.Row{}
	var schema *parquet.Schema
	var from string // the input that fixed the schema, for messages
	for node, sl := range reuse {
		rows[node], schema, from = sl.rows, sl.schema, node
	}
	for i, in := range readers {
		if schema == nil {
			schema, from = in.Schema(), toRead[i].Node
		}
		if artifacts.SchemaFingerprint(in.Schema()) != artifacts.SchemaFingerprint(schema) {
			return fmt.Errorf("%s has a different schema from %s:\n%s\nversus\n%s", toRead[i].Node, from, in.Schema(), schema)
		}
		rows[toRead[i].Node] = in.Rows()
	}
	if len(reuse) > 0 {
		r.Logf("reused the rows of %d unchanged inputs from the previous output; read %d", len(reuse), len(readers))
	}
	outSchema := schema
	add := func(row parquet.Row, _ string) parquet.Row { return row }
	if c.SourceColumn != "" {
		for _, f := range schema.Fields() {
			if f.Name() == c.SourceColumn {
				return nodes.Errorf("source_column", "Column exists", "the inputs already have a column %q.", c.SourceColumn)
			}
		}
		outSchema, add = withStringColumn(schema, c.SourceColumn)
	}
	w, err := r.Output(outSchema)
	if err != nil {
		return err
	}
	var record strings.Builder
	var total, done int64
	for _, rs := range rows {
		total += int64(len(rs))
	}
	digests := inputDigests(r, c)
	for i, ref := range c.Inputs {
		in := rows[ref.Node]
		if c.SourceColumn != "" {
			out := make([]parquet.Row, len(in))
			for j, row := range in {
				out[j] = add(row, ref.Node)
			}
			in = out
		}
		if err := w.WriteRows(in); err != nil {
			return err
		}
		if i > 0 {
			record.WriteByte(',')
		}
		fmt.Fprintf(&record, "%s:%d", digests[i], len(rows[ref.Node]))
		done += int64(len(in))
		r.Progress(done, total)
	}
	if c.SourceColumn == "" {
		w.SetMeta(metaInputs, record.String())
	}
	return nil
}

// inputDigests are the content digests of the inputs, in order.
func inputDigests(r nodes.Run, c *concatConfig) []artifacts.Digest {
	out := make([]artifacts.Digest, len(c.Inputs))
	for i, ref := range c.Inputs {
		out[i] = r.InputDigest(ref)
	}
	return out
}

type slice struct {
	schema *parquet.Schema
	rows   []parquet.Row
}

// reusableSlices finds, in the previous output, the rows of every input
// whose digest is unchanged. A slice is used only if its rows, hashed with
// the output's schema, give the input's digest: the rows are then exactly
// the input's rows, without decoding the input.
func reusableSlices(r nodes.Run, c *concatConfig) map[string]slice {
	if c.SourceColumn != "" {
		return nil
	}
	prev, ok := r.Previous()
	if !ok {
		return nil
	}
	type span struct{ start, n int }
	spans := map[artifacts.Digest]span{}
	at := 0
	for _, item := range strings.Split(prev.Meta()[metaInputs], ",") {
		d, n, ok := strings.Cut(item, ":")
		count, err := strconv.Atoi(n)
		if !ok || err != nil || at+count > prev.NumRows() {
			return nil
		}
		if _, seen := spans[artifacts.Digest(d)]; !seen {
			spans[artifacts.Digest(d)] = span{at, count}
		}
		at += count
	}
	if at != prev.NumRows() {
		return nil
	}
	out := map[string]slice{}
	for i, d := range inputDigests(r, c) {
		sp, ok := spans[d]
		if !ok {
			continue
		}
		rows := prev.Rows()[sp.start : sp.start+sp.n]
		h := artifacts.NewContentHasher(prev.Schema())
		for _, row := range rows {
			h.Add(row)
		}
		if h.Digest() == d {
			out[c.Inputs[i].Node] = slice{prev.Schema(), rows}
		}
	}
	return out
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
