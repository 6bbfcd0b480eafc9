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
	"github.com/lacuna-dev/lacuna/artifacts"
	ts "github.com/lacuna-dev/lacuna/toolsense"
	"github.com/parquet-go/parquet-go"
)

// CatalogRow is one tool of a catalog, the catalog node's row: its type
// is toolsense.CatalogRow, which every step of the benchmark reads a tool
// as.
type CatalogRow = ts.CatalogRow

// columns is artifacts.Reader.Columns.
func columns(in *artifacts.Reader, names ...string) ([][]parquet.Value, error) {
	return in.Columns(names...)
}

// text is artifacts.Text.
func text(v parquet.Value) string { return artifacts.Text(v) }
