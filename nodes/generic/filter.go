package generic

import (
	"context"
	"fmt"
	"math"
	"math/big"

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
		"Where the input's schema is declared, `where` is checked against it before the run."
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
			return fmt.Errorf("%s: where, row %d: %s", c.Where.Expr.Range(), i, diags.Error())
		}
		if ok.Type() != cty.Bool || ok.IsNull() || !ok.IsKnown() {
			return fmt.Errorf("%s: where must be true or false, got %s at row %d", c.Where.Expr.Range(), ok.Type().FriendlyName(), i)
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
