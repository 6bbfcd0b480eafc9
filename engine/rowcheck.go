package engine

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/parquet-go/parquet-go"
	"github.com/zclconf/go-cty/cty"
)

// checkRowExprs checks, before anything runs, every expression field
// tagged `row:"ATTR"` (filter's where): its row is a row of the artifact
// in attribute ATTR, so where that artifact's schema is known (declared
// by the producing type, read before the run by a nodes.SchemaReader such
// as import, or derived from these through filter, sample and concat) a
// reference to a column the rows do not have, or an expression whose
// value can never be true or false, is an error at the expression. Where
// the schema is known only at run time (a large JSON file) the expression
// is not checked here.
func checkRowExprs(g *Graph) hcl.Diagnostics {
	ctx, cancel := context.WithTimeout(context.Background(), schemaReadBudget)
	defer cancel()
	sc := &schemas{ctx: ctx, g: g, memo: map[*Instance]*parquet.Schema{}}
	done := map[checked]bool{}
	byType := map[string][]rowExpr{}
	var diags hcl.Diagnostics
	for _, inst := range g.Instances {
		exprs, ok := byType[inst.Decl.TypeName]
		if !ok {
			exprs = rowExprs(inst.Type())
			byType[inst.Decl.TypeName] = exprs
		}
		for _, re := range exprs {
			cfg := reflect.ValueOf(inst.Config).Elem()
			expr := cfg.Field(re.expr).Interface().(nodes.Expr)
			ref := cfg.Field(re.input).Interface().(nodes.Ref)
			if expr.Expr == nil || ref.Node == "" {
				continue
			}
			in, ok := g.Lookup(ref.Node)
			if !ok {
				continue
			}
			schema := sc.of(in)
			if schema == nil {
				continue
			}
			// Instances of one block share the expression: check it once
			// per input schema (an expression whose type changed with
			// each.value would still fail at run time).
			k := checked{expr.Expr.Range(), schema}
			if done[k] {
				continue
			}
			done[k] = true
			diags = append(diags, checkRowExpr(expr, schema, in.Addr)...)
		}
	}
	return diags
}

type checked struct {
	expr   hcl.Range
	schema *parquet.Schema
}

// rowExpr is an expression field whose row is a row of an input field.
type rowExpr struct{ expr, input int }

// rowExprs finds t's config fields tagged `row:"ATTR"` where ATTR is an
// artifact attribute.
func rowExprs(t nodes.Type) []rowExpr {
	fields, _ := configFields(t)
	rt := reflect.TypeOf(t.NewConfig()).Elem()
	var out []rowExpr
	for _, f := range fields {
		attr := rt.Field(f.Index).Tag.Get("row")
		if f.Type != exprGoType || attr == "" {
			continue
		}
		for _, in := range fields {
			if in.Name == attr && in.Type == refGoType {
				out = append(out, rowExpr{f.Index, in.Index})
			}
		}
	}
	return out
}

// schemaReadBudget bounds the time one load spends reading schemas from
// outside the pipeline (nodes.SchemaReader): past it, the inputs left are
// checked at run time only.
const schemaReadBudget = 5 * time.Second

// schemas finds the output schemas known before the run.
type schemas struct {
	ctx  context.Context // the budget of SchemaReaders
	g    *Graph
	memo map[*Instance]*parquet.Schema
}

// of is inst's output schema, or nil when it is known only at run time.
func (sc *schemas) of(inst *Instance) *parquet.Schema {
	if s, ok := sc.memo[inst]; ok {
		return s
	}
	sc.memo[inst] = nil // a cycle cannot reach here, but stay finite
	var s *parquet.Schema
	if t, ok := inst.Type().(nodes.Typed); ok {
		sr, reads := inst.Type().(nodes.SchemaReader)
		switch d := t.Schema(); {
		case d.Rows != nil:
			s = d.Rows
		case reads:
			if sc.ctx.Err() == nil {
				s = sr.ReadSchema(sc.ctx, inst.Config, inst.Decl.Dir())
			}
		case d.Derive != nil:
			s = d.Derive(inst.Config, func(ref nodes.Ref) *parquet.Schema {
				in, ok := sc.g.Lookup(ref.Node)
				if !ok {
					return nil
				}
				return sc.of(in)
			})
		}
	}
	sc.memo[inst] = s
	return s
}

// checkRowExpr checks expr's references to row against schema, then its
// type with row unknown: what is an error for every row is reported now.
func checkRowExpr(expr nodes.Expr, schema *parquet.Schema, producer string) hcl.Diagnostics {
	rowTy := rowType(schema.Fields())
	var diags hcl.Diagnostics
	for _, tr := range expr.Expr.Variables() {
		if tr.RootName() != "row" {
			continue
		}
		ty, path := rowTy, "row"
		for i := 1; i < len(tr) && ty.IsObjectType(); i++ {
			name, ok := attrStep(tr, i)
			if !ok {
				break
			}
			if !ty.HasAttribute(name) {
				cols := make([]string, 0, len(ty.AttributeTypes()))
				for c := range ty.AttributeTypes() {
					cols = append(cols, c)
				}
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Unknown column",
					Detail:   fmt.Sprintf("%s has no column %q.%s The rows of %s have %s.", path, name, didYouMean(name, cols), producer, columnList(cols)),
					Subject:  tr.SourceRange().Ptr(),
				})
				break
			}
			ty, path = ty.AttributeType(name), path+"."+name
		}
	}
	if diags.HasErrors() {
		return diags
	}
	v, d := expr.Eval(map[string]cty.Value{"row": cty.UnknownVal(rowTy)})
	if d.HasErrors() {
		return d
	}
	if ty := v.Type(); ty != cty.Bool && ty != cty.DynamicPseudoType {
		rng := expr.Expr.Range()
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Predicate is not true or false",
			Detail:   fmt.Sprintf("This expression is a %s for every row of %s; it must be true or false (a comparison such as row.x == \"y\").", ty.FriendlyName(), producer),
			Subject:  &rng,
		})
	}
	return diags
}

func columnList(cols []string) string {
	sort.Strings(cols)
	if len(cols) > 12 {
		return fmt.Sprintf("%s and %d more", strings.Join(cols[:12], ", "), len(cols)-12)
	}
	return strings.Join(cols, ", ")
}

// rowType is the cty type a row of these fields has when filter hands it
// to its predicate (nodes/generic.toCty over the reconstructed row):
// numbers (timestamps included) are numbers, byte arrays strings, groups
// objects; lists, maps and JSON values have a type that depends on the
// value.
func rowType(fields []parquet.Field) cty.Type {
	attrs := make(map[string]cty.Type, len(fields))
	for _, f := range fields {
		attrs[f.Name()] = fieldType(f)
	}
	return cty.Object(attrs)
}

func fieldType(f parquet.Field) cty.Type {
	if f.Repeated() {
		return cty.DynamicPseudoType
	}
	if lt := f.Type().LogicalType(); lt != nil {
		switch s := lt.String(); {
		case s == "JSON", s == "LIST", s == "MAP", s == "BSON", s == "VARIANT":
			return cty.DynamicPseudoType
		}
	}
	if !f.Leaf() {
		return rowType(f.Fields())
	}
	switch f.Type().Kind() {
	case parquet.Boolean:
		return cty.Bool
	case parquet.Int32, parquet.Int64, parquet.Float, parquet.Double:
		return cty.Number
	case parquet.ByteArray, parquet.FixedLenByteArray:
		return cty.String
	}
	return cty.DynamicPseudoType
}
