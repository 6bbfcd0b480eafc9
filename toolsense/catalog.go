package toolsense

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
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

// CatalogRow is one tool of a catalog: the catalog node's output row, and
// what every other step of the benchmark reads a tool as.
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

// Row turns a decoded tool into a catalog row (Position unset). It fails
// when tool_name is missing or has no "&&".
func (t Tool) Row() (CatalogRow, error) {
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

// DecodeTools reads one JSON value holding a tool object or a list of
// them (an RRB row's `tool`: an object for easy rows, a list otherwise).
func DecodeTools(raw []byte) ([]Tool, error) {
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

// Source is one tool object and where it came from ("tools.jsonl:3",
// "row 7 (sample_id X) analyzed_tools"), for BuildCatalog's errors.
type Source struct {
	Tool  Tool
	Where string
}

// ReadToolsJSONL decodes a JSONL file of tool objects (a line may hold a
// list of them); blank lines are skipped. name is the file's name in
// Where and in errors; invalid UTF-8 or JSON is an error naming the line.
func ReadToolsJSONL(name string, b []byte) ([]Source, error) {
	var out []Source
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<30)
	for line := 1; sc.Scan(); line++ {
		l := bytes.TrimSpace(sc.Bytes())
		if len(l) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", name, line)
		if !utf8.Valid(l) {
			return nil, fmt.Errorf("%s: invalid UTF-8", where)
		}
		ts, err := DecodeTools(l)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		for _, t := range ts {
			out = append(out, Source{t, where})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// CatalogStats counts what BuildCatalog saw.
type CatalogStats struct {
	Tools    int // rows in the catalog
	Services int // distinct Service values
	// EmptyDescriptions counts the tools with an empty or missing
	// tool_description or api_description.
	EmptyDescriptions int
	// Repeats counts the tool objects dropped as a repeat of an earlier
	// tool_name with the same content.
	Repeats int
}

// BuildCatalog keys the tools by tool_name in first-occurrence order,
// setting each row's Position. A tool_name repeated with the same content
// is kept once (counted in Repeats); with different content, or a tool
// that Row refuses, is an error naming where the tools came from.
func BuildCatalog(srcs []Source) ([]CatalogRow, CatalogStats, error) {
	var rows []CatalogRow
	var st CatalogStats
	first := map[string]int{} // tool_name → index in rows
	from := map[string]string{}
	for _, s := range srcs {
		row, err := s.Tool.Row()
		if err != nil {
			return nil, st, fmt.Errorf("%s: %w", s.Where, err)
		}
		if i, ok := first[row.ToolName]; ok {
			if !sameContent(rows[i], row) {
				return nil, st, fmt.Errorf("tool %q is at %s and at %s with different content", row.ToolName, from[row.ToolName], s.Where)
			}
			st.Repeats++
			continue
		}
		row.Position = int64(len(rows))
		first[row.ToolName] = len(rows)
		from[row.ToolName] = s.Where
		if row.ToolDescription == "" || row.APIDescription == "" {
			st.EmptyDescriptions++
		}
		rows = append(rows, row)
	}
	services := map[string]bool{}
	for _, r := range rows {
		services[r.Service] = true
	}
	st.Tools, st.Services = len(rows), len(services)
	return rows, st, nil
}

// ReadRRB reads a Realistic Retrieval Benchmark file (JSONL, as released)
// into its queries, in file order, and the catalog `catalog { from_rrb }`
// builds from it: each row's analyzed_tools, then its answer tools, keyed
// by tool_name in first-occurrence order (the released file gives 4,901
// tools). name is the file's name in errors. Benchmarks and parity tests
// read the released data through it, so that they index exactly the
// catalog (and, through DocText, the documents) the retrieve node does.
func ReadRRB(r io.Reader, name string) (queries []string, catalog []CatalogRow, err error) {
	var srcs []Source
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	for line := 1; sc.Scan(); line++ {
		if !utf8.Valid(sc.Bytes()) {
			return nil, nil, fmt.Errorf("%s:%d: invalid UTF-8", name, line)
		}
		var row struct {
			Query         string          `json:"query"`
			AnalyzedTools json.RawMessage `json:"analyzed_tools"`
			Tool          json.RawMessage `json:"tool"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		queries = append(queries, row.Query)
		for _, f := range []struct {
			field string
			raw   json.RawMessage
		}{{"analyzed_tools", row.AnalyzedTools}, {"tool", row.Tool}} {
			where := fmt.Sprintf("%s:%d %s", name, line, f.field)
			ts, err := DecodeTools(f.raw)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", where, err)
			}
			for _, t := range ts {
				srcs = append(srcs, Source{t, where})
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	catalog, _, err = BuildCatalog(srcs)
	return queries, catalog, err
}

// ServiceOf is the service of a tool: its tool_name up to the first "&&"
// (the stratum StratifiedSeeds draws it from).
func ServiceOf(toolName string) string {
	s, _, _ := strings.Cut(toolName, "&&")
	return s
}

// DocText is the text BM25 indexes and the dense retriever embeds for a
// tool: tool_title, api_title,
// tool_description and api_description joined by single spaces, missing
// (empty) fields skipped.
func DocText(t CatalogRow) string {
	var parts []string
	for _, f := range []string{t.ToolTitle, t.APITitle, t.ToolDescription, t.APIDescription} {
		if f != "" {
			parts = append(parts, f)
		}
	}
	return strings.Join(parts, " ")
}

// Description is a tool's description: tool_description and
// api_description joined by a space, a missing one left out. It is what
// the RRB prompts show of a tool and the neighbors node's default text.
func Description(t CatalogRow) string {
	return joinNonEmpty(t.ToolDescription, t.APIDescription)
}

func joinNonEmpty(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}

// ToolObject is a catalog tool as the released files write it, missing
// fields "None": the object of an RRB row's tool and analyzed_tools
// (json.Marshal writes its keys sorted).
func ToolObject(t CatalogRow) map[string]string {
	none := func(s string) string {
		if s == "" {
			return "None"
		}
		return s
	}
	return map[string]string{"tool_name": t.ToolName, "tool_title": none(t.ToolTitle), "tool_description": none(t.ToolDescription),
		"api_title": none(t.APITitle), "api_description": none(t.APIDescription)}
}
