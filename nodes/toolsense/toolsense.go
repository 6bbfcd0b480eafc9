// Package toolsense holds the node types of ToolSense (seed 002): tool
// catalogs (catalog), retrieval over them (retrieve) and its evaluation
// (retrieval_eval).
package toolsense

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/parquet-go/parquet-go"
)

// Tool is a tool object in the ToolSense / ToolGen shape, as the released
// benchmarks and catalogs write it. A field that is absent, JSON null or
// the literal "None" is missing.
type Tool struct {
	ToolName        *string `json:"tool_name"`
	ToolTitle       *string `json:"tool_title"`
	ToolDescription *string `json:"tool_description"`
	APITitle        *string `json:"api_title"`
	APIDescription  *string `json:"api_description"`
}

// CatalogRow is one tool of a catalog.
type CatalogRow struct {
	// ToolName is "<tool_title>&&<api_title>", the byte-exact key.
	ToolName        string `parquet:"tool_name"`
	ToolTitle       string `parquet:"tool_title"`
	ToolDescription string `parquet:"tool_description"`
	APITitle        string `parquet:"api_title"`
	APIDescription  string `parquet:"api_description"`
	// Service is tool_title, or the part of tool_name before its first
	// "&&" when tool_title is missing.
	Service string `parquet:"service"`
	// Missing names the fields that were absent, null, "None" or empty
	// (they are empty strings in the row).
	Missing []string `parquet:"missing,list"`
	// Position is the tool's 0-based place in the catalog: ties in a
	// ranking are broken by it.
	Position int64 `parquet:"position"`
}

// row turns a decoded tool into a catalog row (Position unset). It fails
// when tool_name is missing or has no "&&".
func (t Tool) row() (CatalogRow, error) {
	var r CatalogRow
	get := func(name string, p *string, dst *string) {
		if p == nil || *p == "None" || *p == "" {
			r.Missing = append(r.Missing, name)
			return
		}
		*dst = *p
	}
	get("tool_name", t.ToolName, &r.ToolName)
	get("tool_title", t.ToolTitle, &r.ToolTitle)
	get("tool_description", t.ToolDescription, &r.ToolDescription)
	get("api_title", t.APITitle, &r.APITitle)
	get("api_description", t.APIDescription, &r.APIDescription)
	if r.ToolName == "" {
		return r, fmt.Errorf("tool_name is missing")
	}
	service, _, ok := strings.Cut(r.ToolName, "&&")
	if !ok {
		return r, fmt.Errorf("tool_name %q has no \"&&\" between the tool title and the API title", r.ToolName)
	}
	r.Service = r.ToolTitle
	if r.Service == "" {
		r.Service = service
	}
	return r, nil
}

// sameContent reports whether two rows of one tool_name agree.
func sameContent(a, b CatalogRow) bool {
	return a.ToolTitle == b.ToolTitle && a.ToolDescription == b.ToolDescription &&
		a.APITitle == b.APITitle && a.APIDescription == b.APIDescription
}

// decodeTools reads one JSON value holding a tool object or a list of
// them (an RRB row's `tool`: an object for easy rows, a list otherwise).
func decodeTools(raw []byte) ([]Tool, error) {
	s := strings.TrimSpace(string(raw))
	if strings.HasPrefix(s, "[") {
		var ts []Tool
		if err := json.Unmarshal(raw, &ts); err != nil {
			return nil, err
		}
		return ts, nil
	}
	var t Tool
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, err
	}
	return []Tool{t}, nil
}

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
