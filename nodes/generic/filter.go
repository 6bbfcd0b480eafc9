package generic

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strings"

	"github.com/agext/levenshtein"
	"github.com/hashicorp/hcl/v2"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/parquet-go/parquet-go"
	"github.com/zclconf/go-cty/cty"
)

func init() { nodes.Register(filterType{}) }

// filterConfig: `node "filter" "hard" { input = ...  where = row.complexity == "hard" }`.
type filterConfig struct {
	Input nodes.Ref `hcl:"input"`
	// Where is evaluated for every row, with the row's columns as row.*
	// (JSON columns as nested values); rows where it is true are kept.
	Where nodes.Expr `hcl:"where,optional" roots:"row" row:"input"`
	// Check and Samples were the named-check mode (check = "c1"), now the
	// node type c1. They stay declared so that using them is a config
	// error at the attribute (the engine reports the removed tag), and so
	// that every filter's key stays what it was; `lacuna types` hides them.
	Check   string    `hcl:"check,optional" removed:"use node \"c1\" \"NAME\" { tasks = ...  samples = ... } for the C1 check; a filter takes a row predicate (where = ...)."`
	Samples nodes.Ref `hcl:"samples,optional" removed:"samples belonged to the removed check mode: use node \"c1\" \"NAME\" { tasks = ...  samples = ... }."`
}

type filterType struct{ nodes.Dynamic[filterConfig] }

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed      = filterType{}
	_ nodes.Documented = filterType{}
	_ nodes.Validator  = filterType{}
)

func (filterType) Name() string    { return "filter" }
func (filterType) Version() string { return "1" }
func (filterType) Doc() string {
	return "Keeps the rows where `where`, an expression over row.* (and any variable), is true. " +
		"Where the input's schema is known before the run (declared by its type, or read from an imported file), " +
		"`where` is checked against it when the pipeline loads."
}

func (filterType) Schema() nodes.Schema {
	return nodes.SameAsInput(func(c *filterConfig) nodes.Ref { return c.Input })
}

func (filterType) Validate(cfg any) error {
	c := cfg.(*filterConfig)
	if c.Where.Expr == nil {
		return nodes.Errorf("", "Nothing to filter on", "set where = <expression over row.*>.")
	}
	return nil
}

func (t filterType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	in, err := r.Input(c.Input)
	if err != nil {
		return err
	}
	schema := in.Schema()
	var keep []parquet.Row
	for i, row := range in.Rows() {
		var v any
		if err := schema.Reconstruct(&v, row); err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
		ok, diags := c.Where.Eval(map[string]cty.Value{"row": toCty(v)})
		if diags.HasErrors() {
			return whereError(diags, i, schema)
		}
		if ok.Type() != cty.Bool || ok.IsNull() || !ok.IsKnown() {
			return fmt.Errorf("%s: where must be true or false, got %s at row %d", position(c.Where.Expr.Range()), ok.Type().FriendlyName(), i)
		}
		if ok.True() {
			keep = append(keep, row)
		}
		if i%1000 == 0 {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.Progress(int64(i), int64(in.NumRows()))
		}
	}
	r.Logf("kept %d of %d rows", len(keep), in.NumRows())
	w, err := r.Output(schema)
	if err != nil {
		return err
	}
	return w.WriteRows(keep)
}

// position is where a range starts, as FILE:LINE:COL: the form of every
// diagnostic lacuna prints.
func position(r hcl.Range) string {
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

// unsupported names the attribute of HCL's "Unsupported attribute".
var unsupported = regexp.MustCompile(`does not have an attribute named "([^"]+)"`)

// whereError is where's failure at row n as the engine's diagnostics
// read (FILE:LINE:COL: SUMMARY: DETAIL, one line each), a column the
// rows do not have with the closest that they do. Columns are checked
// before the run wherever the input's schema can be known then; this is
// for the rest (an import of a large JSON file).
func whereError(diags hcl.Diagnostics, n int, schema *parquet.Schema) error {
	var lines []string
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		if m := unsupported.FindStringSubmatch(d.Detail); m != nil {
			var cols []string
			for _, f := range schema.Fields() {
				cols = append(cols, f.Name())
			}
			if s := closest(m[1], cols); s != "" {
				msg += fmt.Sprintf(" Did you mean %q?", s)
			}
		}
		if d.Subject != nil {
			msg = position(*d.Subject) + ": " + msg
		}
		lines = append(lines, msg+fmt.Sprintf(" (where, row %d)", n))
	}
	return errors.New(strings.Join(lines, "\n"))
}

// closest is the candidate nearest to given when it is a plausible typo
// (as the engine's suggestions: at most three edits), else "".
func closest(given string, candidates []string) string {
	best, dist := "", 4
	for _, c := range candidates {
		if d := levenshtein.Distance(given, c, nil); d < dist && d < len(given) {
			best, dist = c, d
		}
	}
	return best
}

// toCty converts a reconstructed row value to cty: maps become objects,
// slices tuples, numbers exact numbers.
func toCty(v any) cty.Value {
	switch v := v.(type) {
	case nil:
		return cty.NullVal(cty.DynamicPseudoType)
	case string:
		return cty.StringVal(v)
	case []byte:
		return cty.StringVal(string(v))
	case bool:
		return cty.BoolVal(v)
	case int:
		return cty.NumberIntVal(int64(v))
	case int32:
		return cty.NumberIntVal(int64(v))
	case int64:
		return cty.NumberIntVal(v)
	case uint32:
		return cty.NumberUIntVal(uint64(v))
	case uint64:
		return cty.NumberUIntVal(v)
	case float32:
		return toCty(float64(v))
	case float64:
		switch {
		case math.IsNaN(v):
			return cty.NullVal(cty.Number)
		case math.IsInf(v, 1):
			return cty.PositiveInfinity
		case math.IsInf(v, -1):
			return cty.NegativeInfinity
		}
		return cty.NumberVal(new(big.Float).SetFloat64(v))
	case map[string]any:
		if len(v) == 0 {
			return cty.EmptyObjectVal
		}
		m := make(map[string]cty.Value, len(v))
		for k, e := range v {
			m[k] = toCty(e)
		}
		return cty.ObjectVal(m)
	case []any:
		if len(v) == 0 {
			return cty.EmptyTupleVal
		}
		out := make([]cty.Value, len(v))
		for i, e := range v {
			out[i] = toCty(e)
		}
		return cty.TupleVal(out)
	}
	return cty.StringVal(fmt.Sprint(v))
}
