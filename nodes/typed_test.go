package nodes_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/parquet-go/parquet-go"
)

type declared struct {
	Name string   `parquet:"name"`
	Size int64    `parquet:"size"`
	Tags []string `parquet:"tags,list"`
}

type staticType struct {
	nodes.Static[struct{}, declared]
}

func (staticType) Name() string                         { return "static" }
func (staticType) Version() string                      { return "1" }
func (staticType) Run(context.Context, nodes.Run) error { return nil }

type dynamicType struct{ nodes.Dynamic[struct{}] }

func (dynamicType) Name() string                         { return "dynamic" }
func (dynamicType) Version() string                      { return "1" }
func (dynamicType) Run(context.Context, nodes.Run) error { return nil }
func (dynamicType) Schema() nodes.Schema                 { return nodes.Schema{Dynamic: "inferred"} }

var (
	_ nodes.Typed = staticType{}
	_ nodes.Typed = dynamicType{}
)

// TestCheckOutputNamesTheTypeAndEveryDifference: a declared schema admits
// exactly itself; any other names the type and each column that is
// missing, undeclared or of another type; dynamic types admit any schema.
func TestCheckOutputNamesTheTypeAndEveryDifference(t *testing.T) {
	for _, c := range []struct {
		name   string
		t      nodes.Type
		schema *parquet.Schema
		want   []string // parts of the error; nil for none
	}{
		{"the declared schema", staticType{}, artifacts.SchemaOf[declared](), nil},
		{"missing and undeclared columns", staticType{}, artifacts.SchemaOf[struct {
			Name string   `parquet:"name"`
			Sise int64    `parquet:"sise"`
			Tags []string `parquet:"tags,list"`
		}](), []string{"node type static", "missing column size (INT64, required)", "undeclared column sise (INT64, required)"}},
		{"another type", staticType{}, artifacts.SchemaOf[struct {
			Name string   `parquet:"name"`
			Size int32    `parquet:"size"`
			Tags []string `parquet:"tags,list"`
		}](), []string{"column size is INT32, required, declared INT64, required"}},
		{"optional instead of required", staticType{}, artifacts.SchemaOf[struct {
			Name *string  `parquet:"name,optional"`
			Size int64    `parquet:"size"`
			Tags []string `parquet:"tags,list"`
		}](), []string{"column name is STRING, optional, declared STRING, required"}},
		{"dynamic", dynamicType{}, artifacts.SchemaOf[struct{ X int64 }](), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := nodes.CheckOutput(c.t, c.schema)
			if c.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestColumnsDescribeNestingAndRepetition: lists show their element type,
// groups their fields, and each column whether it is required, optional
// or repeated.
func TestColumnsDescribeNestingAndRepetition(t *testing.T) {
	type inner struct {
		Lang string `parquet:"lang"`
	}
	s := artifacts.SchemaOf[struct {
		ID    string   `parquet:"id"`
		Score *float64 `parquet:"score,optional"`
		Tags  []string `parquet:"tags,list"`
		Raw   []int32  `parquet:"raw"`
		Meta  inner    `parquet:"meta"`
		Items []inner  `parquet:"items,list"`
		Spec  string   `parquet:"spec,json"`
	}]()
	var got []string
	var walk func(prefix string, cols []nodes.Column)
	walk = func(prefix string, cols []nodes.Column) {
		for _, c := range cols {
			got = append(got, prefix+c.Name+" "+c.Type+" "+c.Repetition)
			walk(prefix+c.Name+".", c.Fields)
		}
	}
	walk("", nodes.Columns(s))
	want := []string{
		"id STRING required",
		"score DOUBLE optional",
		"tags LIST<STRING> required",
		"raw INT32 repeated",
		"meta GROUP required",
		"meta.lang STRING required",
		"items LIST<GROUP> required",
		"items.lang STRING required",
		"spec JSON required",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("columns:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
