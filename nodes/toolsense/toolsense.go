// Package toolsense holds the node types of ToolSense (seed 002): tool
// catalogs (catalog), hard-negative pools (neighbors), the Realistic
// Retrieval Benchmark's generation (rrb_generate), the MCQ and QA probes
// (mcq_generate, qa_generate, probe_eval, probe_metrics), retrieval over
// a catalog (retrieve, retrieve_parametric) and its evaluation
// (retrieval_eval). Each node type is a config, a row type, Resolve and
// Run; the benchmark's own logic they call (prompts, validators, answer
// parsers, virtual tokens, the beam search) is in the toolsense package
// at the repository's top level.
package toolsense

import (
	"fmt"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	ts "github.com/lacuna-dev/lacuna/toolsense"
	"github.com/parquet-go/parquet-go"
)

// CatalogRow is one tool of a catalog, the catalog node's row: its type
// is toolsense.CatalogRow, which every step of the benchmark reads a tool
// as.
type CatalogRow = ts.CatalogRow

// columns reads the named top-level columns of an artifact whose schema
// is not fixed (an import's): one value per row and name, null where the
// column is optional and empty. A missing or repeated column is an error
// naming the columns there are.
func columns(in *artifacts.Reader, names ...string) ([][]parquet.Value, error) {
	idx := make([]int, len(names))
	for i, name := range names {
		leaf, ok := in.Schema().Lookup(name)
		if !ok || leaf.Node.Repeated() || len(leaf.Path) != 1 {
			var cols []string
			for _, f := range in.Schema().Fields() {
				cols = append(cols, f.Name())
			}
			return nil, fmt.Errorf("no top-level column %q; the input has %s", name, strings.Join(cols, ", "))
		}
		idx[i] = leaf.ColumnIndex
	}
	out := make([][]parquet.Value, len(in.Rows()))
	for r, row := range in.Rows() {
		vals := make([]parquet.Value, len(names))
		for i := range vals {
			vals[i] = parquet.NullValue()
		}
		for _, v := range row {
			for i, c := range idx {
				if v.Column() == c {
					vals[i] = v
				}
			}
		}
		out[r] = vals
	}
	return out, nil
}

// text is a value as text: a string or JSON column's bytes, or the value
// formatted (an int64 sample_id); "" for null.
func text(v parquet.Value) string {
	if v.IsNull() {
		return ""
	}
	if v.Kind() == parquet.ByteArray || v.Kind() == parquet.FixedLenByteArray {
		return string(v.ByteArray())
	}
	return v.String()
}
