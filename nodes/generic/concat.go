package generic

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
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

type concatType struct{ nodes.Dynamic[concatConfig] }

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed      = concatType{}
	_ nodes.Documented = concatType{}
	_ nodes.Validator  = concatType{}
	_ nodes.Resolver   = concatType{}
)

func (concatType) Name() string    { return "concat" }
func (concatType) Version() string { return "1" }
func (concatType) Doc() string {
	return "Union of artifacts with one schema, in the order of `inputs`; `source_column` records where each row came from."
}

// Schema: the inputs' common schema, plus source_column when set.
func (concatType) Schema() nodes.Schema {
	return nodes.Schema{
		Dynamic: "same as inputs (all alike), plus source_column (STRING) when set",
		Derive: func(cfg any, input func(nodes.Ref) *parquet.Schema) *parquet.Schema {
			c := cfg.(*concatConfig)
			var first *parquet.Schema
			for _, ref := range c.Inputs {
				s := input(ref)
				if s == nil || first != nil && artifacts.SchemaFingerprint(s) != artifacts.SchemaFingerprint(first) {
					return nil
				}
				first = s
			}
			if first == nil || c.SourceColumn == "" {
				return first
			}
			if _, ok := first.Lookup(c.SourceColumn); ok {
				return nil
			}
			out, _ := withStringColumn(first, c.SourceColumn)
			return out
		},
	}
}

func (concatType) Validate(cfg any) error {
	if len(cfg.(*concatConfig).Inputs) == 0 {
		return nodes.Errorf("inputs", "No inputs", "concat needs at least one input artifact.")
	}
	return nil
}

// Resolve pins the addresses source_column writes into rows. Inputs enter
// the key as content digests only (renaming a node recomputes nothing), so
// without this a renamed node would leave its old name in a cached
// artifact.
func (concatType) Resolve(_ context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	c := r.Config().(*concatConfig)
	if c.SourceColumn == "" {
		return nil, nil
	}
	h := xxhash.New()
	for _, in := range c.Inputs {
		h.WriteString(in.Node)
		h.WriteString("\x00")
	}
	return &nodes.Pinned{Identity: map[string]string{"source_names": fmt.Sprintf("%016x", h.Sum64())}}, nil
}

// metaInputs records, in a concat's output, each input's digest and row
// count in order, so that the next run can reuse the rows of inputs that
// did not change instead of decoding them again.
const metaInputs = "lacuna.concat.inputs"

func (t concatType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	reuse := reusableSlices(r, c)
	if len(reuse) > 0 {
		r.Logf("reused the rows of %d unchanged inputs from the previous output; read %d", len(reuse), len(c.Inputs)-len(reuse))
	}
	next, stop := inOrder(ctx, r, c.Inputs, reuse)
	defer stop()
	var schema *parquet.Schema
	var w *artifacts.Writer
	add := func(row parquet.Row, _ string) parquet.Row { return row }
	var record strings.Builder
	digests := inputDigests(r, c)
	for i, ref := range c.Inputs {
		in, err := next()
		if err != nil {
			return err
		}
		if schema == nil {
			schema = in.schema
			outSchema := schema
			if c.SourceColumn != "" {
				for _, f := range schema.Fields() {
					if f.Name() == c.SourceColumn {
						return nodes.Errorf("source_column", "Column exists", "the inputs already have a column %q.", c.SourceColumn)
					}
				}
				outSchema, add = withStringColumn(schema, c.SourceColumn)
			}
			if w, err = r.Output(outSchema); err != nil {
				return err
			}
		}
		if artifacts.SchemaFingerprint(in.schema) != artifacts.SchemaFingerprint(schema) {
			return fmt.Errorf("%s has a different schema from %s:\n%s\nversus\n%s", ref.Node, c.Inputs[0].Node, in.schema, schema)
		}
		rows := in.rows
		if c.SourceColumn != "" {
			rows = make([]parquet.Row, len(in.rows))
			for j, row := range in.rows {
				rows[j] = add(row, ref.Node)
			}
		}
		if err := w.WriteRows(rows); err != nil {
			return err
		}
		if i > 0 {
			record.WriteByte(',')
		}
		fmt.Fprintf(&record, "%s:%d", digests[i], len(in.rows))
		r.Progress(int64(i+1), int64(len(c.Inputs)))
	}
	if c.SourceColumn == "" {
		w.SetMeta(metaInputs, record.String())
	}
	return nil
}

// inOrder returns the inputs' rows one by one, in order, reading ahead on
// every core within a bounded window: a fan-in of thousands of small
// artifacts is bound by per-file decoding, and holding all of them at once
// would cost memory for nothing. Reused slices are returned without reading.
func inOrder(ctx context.Context, r nodes.Run, refs []nodes.Ref, reuse map[string]slice) (next func() (slice, error), stop func()) {
	type result struct {
		s   slice
		err error
	}
	const window = 64
	results := make([]chan result, len(refs))
	for i := range results {
		results[i] = make(chan result, 1)
	}
	slots := make(chan struct{}, window)
	var taken atomic.Int64
	done := make(chan struct{})
	var once sync.Once
	stop = func() { once.Do(func() { close(done) }) }
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		go func() {
			for {
				select {
				case slots <- struct{}{}:
				case <-done:
					return
				}
				i := int(taken.Add(1)) - 1
				if i >= len(refs) {
					return
				}
				if sl, ok := reuse[refs[i].Node]; ok {
					results[i] <- result{s: sl}
					continue
				}
				if err := ctx.Err(); err != nil {
					results[i] <- result{err: err}
					continue
				}
				in, err := r.Input(refs[i])
				if err != nil {
					results[i] <- result{err: err}
					continue
				}
				results[i] <- result{s: slice{in.Schema(), in.Rows()}}
			}
		}()
	}
	i := 0
	next = func() (slice, error) {
		res := <-results[i]
		results[i] = nil
		i++
		<-slots
		return res.s, res.err
	}
	return next, stop
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
