package generic

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/parquet-go/parquet-go"
	"github.com/zclconf/go-cty/cty"
)

// A where that fails at run time (its input's columns were not known
// before: an import of a large JSON file) reads as the load-time
// diagnostics do: FILE:LINE:COL, and the closest column for one the rows
// do not have.
func TestWhereErrorAtRunTimeNamesPositionAndClosestColumn(t *testing.T) {
	expr, diags := hclsyntax.ParseExpression([]byte(`row.nmae == "x"`), "p.hcl", hcl.Pos{Line: 5, Column: 11, Byte: 40})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	row := cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("grep"), "size": cty.NumberIntVal(3)})
	_, diags = expr.Value(&hcl.EvalContext{Variables: map[string]cty.Value{"row": row}})
	if !diags.HasErrors() {
		t.Fatal("no error evaluating an unknown column")
	}
	schema := parquet.NewSchema("row", parquet.Group{"name": parquet.String(), "size": parquet.Int(64)})
	got := whereError(diags, 7, schema).Error()
	want := `p.hcl:5:14: Unsupported attribute: This object does not have an attribute named "nmae". Did you mean "name"? (where, row 7)`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
