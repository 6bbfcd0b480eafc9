package nodes

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// Typed types declare their output schema, once: the engine fails a run
// whose Output asks for another schema (CheckOutput), `lacuna types`
// prints it, and expressions over the rows of an input (filter's where)
// are checked against it before anything runs.
//
// Embed Static[C, R] to get it from the row struct R, or Dynamic[C] and
// declare Schema yourself when the schema depends on the run.
type Typed interface {
	Schema() Schema
}

// SchemaReader is implemented by types whose output schema depends on
// something outside the pipeline that can be read cheaply before the run
// (import: the columns it declares, or its file's). ReadSchema returns it
// for one instance's config, dir being the pipeline's directory, or nil
// when it cannot be known before the run, or not before ctx is done (the
// engine bounds the time loading a pipeline spends on them). A column
// whose values' type is not known before the run may be given as JSON
// (any value). It is used to check expressions over the rows (filter's
// where) at load time; problems with the file are left to Resolve and Run
// to report. It may be called from many goroutines at once.
type SchemaReader interface {
	ReadSchema(ctx context.Context, cfg any, dir string) *parquet.Schema
}

// Schema is a node type's declared output schema.
type Schema struct {
	// Rows is the schema of every output of the type; nil when it
	// depends on the inputs or the data.
	Rows *parquet.Schema
	// Dynamic says, when Rows is nil, where the schema comes from ("same
	// as input", "inferred from the file"), for `lacuna types`.
	Dynamic string
	// Derive, when set with a nil Rows, computes an instance's output
	// schema from its config and its inputs' schemas (input returns nil
	// for an input whose schema is not known before the run). It returns
	// nil when the schema is not known before the run either.
	Derive func(cfg any, input func(Ref) *parquet.Schema) *parquet.Schema
	// Volatile names the top-level columns whose values may differ
	// between two runs of one action: wall-clock timings and latencies
	// measured while the work was done. Static takes them from R's
	// fields tagged `volatile:"WHY"`. Every other column must be
	// reproducible from the config, the inputs and what Resolve pinned:
	// `lacuna verify` compares those, and reports differences in these
	// apart, as information rather than a mismatch.
	Volatile []string
}

// VolatileColumns is the Volatile of t's declared schema, nil for a type
// that declares none.
func VolatileColumns(t Type) []string {
	if ty, ok := t.(Typed); ok {
		return ty.Schema().Volatile
	}
	return nil
}

// Static is the skeleton of a node type whose config struct is C and
// whose output rows are R (a struct with parquet tags, the artifact's
// schema). Embed it: it provides NewConfig and Schema, and typed access
// to the config and the output. The zero value is ready to use.
//
//	type judgeType struct{ nodes.Static[judgeConfig, JudgeRow] }
type Static[C, R any] struct{}

// NewConfig returns a new zero C.
func (Static[C, R]) NewConfig() any { return new(C) }

// Schema is R's schema, with its fields tagged `volatile:"WHY"` as
// Volatile.
func (Static[C, R]) Schema() Schema { return Schema{Rows: schemaOf[R](), Volatile: volatileOf[R]()} }

// Config is the run's decoded config.
func (Static[C, R]) Config(r Run) *C { return r.Config().(*C) }

// Write creates the output with R's schema and writes rows to it, in
// order. Call it once per run (it calls r.Output).
func (Static[C, R]) Write(r Run, rows []R) error {
	w, err := r.Output(schemaOf[R]())
	if err != nil {
		return err
	}
	for i := range rows {
		if err := w.Write(rows[i]); err != nil {
			return err
		}
	}
	return nil
}

// Dynamic is the skeleton of a node type whose config struct is C and
// whose output schema depends on the run: the embedding type declares
// Schema with Rows nil, saying where the schema comes from.
type Dynamic[C any] struct{}

// NewConfig returns a new zero C.
func (Dynamic[C]) NewConfig() any { return new(C) }

// Config is the run's decoded config.
func (Dynamic[C]) Config(r Run) *C { return r.Config().(*C) }

// SameAsInput is the Schema of a type whose output keeps the schema of its
// input attribute (filter, sample).
func SameAsInput[C any](input func(*C) Ref) Schema {
	return Schema{
		Dynamic: "same as input",
		Derive: func(cfg any, schema func(Ref) *parquet.Schema) *parquet.Schema {
			return schema(input(cfg.(*C)))
		},
	}
}

var schemaCache sync.Map // reflect.Type → *parquet.Schema

// schemaOf is artifacts.SchemaOf[R], built once per type: parquet-go
// builds a schema by reflection, and Write and the engine's check ask for
// it on every run.
func schemaOf[R any]() *parquet.Schema {
	key := reflect.TypeFor[R]()
	if s, ok := schemaCache.Load(key); ok {
		return s.(*parquet.Schema)
	}
	s, _ := schemaCache.LoadOrStore(key, artifacts.SchemaOf[R]())
	return s.(*parquet.Schema)
}

var volatileCache sync.Map // reflect.Type → []string

// volatileOf lists the columns of R's fields tagged `volatile:"WHY"`
// (those of embedded structs included), by their parquet names.
func volatileOf[R any]() []string {
	key := reflect.TypeFor[R]()
	if v, ok := volatileCache.Load(key); ok {
		return v.([]string)
	}
	var out []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("parquet"), ",")
			switch {
			case name == "-" || !f.IsExported():
			case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
				walk(f.Type)
			case f.Tag.Get("volatile") != "":
				if name == "" {
					name = f.Name
				}
				out = append(out, name)
			}
		}
	}
	if key.Kind() == reflect.Struct {
		walk(key)
	}
	v, _ := volatileCache.LoadOrStore(key, out)
	return v.([]string)
}

// CheckOutput checks that schema is the output schema t declares. Types
// that are not Typed, or declare a dynamic schema, accept any schema. The
// error names the type and every column that differs.
func CheckOutput(t Type, schema *parquet.Schema) error {
	ty, ok := t.(Typed)
	if !ok {
		return nil
	}
	want := ty.Schema().Rows
	if want == nil || artifacts.SchemaFingerprint(want) == artifacts.SchemaFingerprint(schema) {
		return nil
	}
	return fmt.Errorf("node type %s wrote an output schema other than the one it declares: %s", t.Name(), schemaDiff(want, schema))
}

// schemaDiff lists, one clause per column, how got differs from want.
func schemaDiff(want, got *parquet.Schema) string {
	w, g := leaves(Columns(want)), leaves(Columns(got))
	var diffs []string
	for _, path := range sortedKeys(w) {
		switch gv, ok := g[path]; {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("missing column %s (%s)", path, w[path]))
		case gv != w[path]:
			diffs = append(diffs, fmt.Sprintf("column %s is %s, declared %s", path, gv, w[path]))
		}
	}
	for _, path := range sortedKeys(g) {
		if _, ok := w[path]; !ok {
			diffs = append(diffs, fmt.Sprintf("undeclared column %s (%s)", path, g[path]))
		}
	}
	if len(diffs) == 0 {
		return fmt.Sprintf("the columns' nesting differs:\n%s\nversus declared\n%s", got, want)
	}
	return strings.Join(diffs, "; ")
}

func leaves(cols []Column) map[string]string {
	out := map[string]string{}
	var walk func(prefix string, cols []Column)
	walk = func(prefix string, cols []Column) {
		for _, c := range cols {
			name := prefix + c.Name
			if len(c.Fields) > 0 {
				walk(name+".", c.Fields)
				continue
			}
			out[name] = c.Type + ", " + c.Repetition
		}
	}
	walk("", cols)
	return out
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Column describes one field of a Parquet schema, for `lacuna types` and
// error messages.
type Column struct {
	Name string `json:"name"`
	// Type is the logical type when there is one (STRING, JSON,
	// TIMESTAMP(...), INT32 for INT(32,true)), else the physical type
	// (INT64, DOUBLE, BOOLEAN, BYTE_ARRAY); a list is LIST<element type>,
	// a group GROUP.
	Type string `json:"type"`
	// Repetition is required, optional or repeated.
	Repetition string `json:"repetition"`
	// Fields are a group's fields (or a list's element's, when they are
	// groups).
	Fields []Column `json:"fields,omitempty"`
}

// Columns describes the top-level fields of a schema, in schema order.
func Columns(s *parquet.Schema) []Column {
	var out []Column
	for _, f := range s.Fields() {
		out = append(out, column(f))
	}
	return out
}

func column(f parquet.Field) Column {
	c := Column{Name: f.Name(), Repetition: "required"}
	switch {
	case f.Optional():
		c.Repetition = "optional"
	case f.Repeated():
		c.Repetition = "repeated"
	}
	if f.Leaf() {
		c.Type = leafType(f)
		return c
	}
	if lt := f.Type().LogicalType(); lt != nil && lt.String() == "LIST" && len(f.Fields()) == 1 && len(f.Fields()[0].Fields()) == 1 {
		el := column(f.Fields()[0].Fields()[0])
		if len(el.Fields) > 0 {
			c.Type, c.Fields = "LIST<GROUP>", el.Fields
		} else {
			c.Type = "LIST<" + el.Type + ">"
		}
		return c
	}
	c.Type = "GROUP"
	for _, sub := range f.Fields() {
		c.Fields = append(c.Fields, column(sub))
	}
	return c
}

func leafType(n parquet.Node) string {
	t := n.Type()
	lt := t.LogicalType()
	if lt == nil {
		return t.Kind().String()
	}
	if it, ok := lt.Value.(*format.IntType); ok {
		if it.IsSigned {
			return fmt.Sprintf("INT%d", it.BitWidth)
		}
		return fmt.Sprintf("UINT%d", it.BitWidth)
	}
	return lt.String()
}
