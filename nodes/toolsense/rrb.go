package toolsense

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"
)

// ReadRRB reads a Realistic Retrieval Benchmark file (JSONL, as released)
// into its queries, in file order, and the catalog `catalog { from_rrb }`
// builds from it: each row's analyzed_tools, then its answer tools, keyed
// by tool_name in first-occurrence order (the released file gives 4,901
// tools). name is the file's name in errors. Benchmarks and parity tests
// read the released data through it, so that they index exactly the
// catalog (and, through DocText, the documents) the retrieve node does.
func ReadRRB(r io.Reader, name string) (queries []string, catalog []CatalogRow, err error) {
	var srcs []source
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
			ts, err := decodeTools(f.raw)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", where, err)
			}
			for _, t := range ts {
				srcs = append(srcs, source{t, where})
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	catalog, _, err = buildCatalog(srcs)
	return queries, catalog, err
}
