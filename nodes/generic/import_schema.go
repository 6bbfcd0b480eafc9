package generic

import (
	"bufio"
	"context"
	"slices"
	"time"

	"github.com/lacuna-dev/lacuna/internal/regfile"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/parquet-go/parquet-go"
)

var _ nodes.SchemaReader = importType{}

// schemaReadLimit bounds the JSON and CSV files ReadSchema infers a
// schema from by reading them whole, as Run does: loading a pipeline must
// stay quick. A larger CSV file gives its header's names; a larger JSON
// file no schema.
const schemaReadLimit = 16 << 20

// schemaReadTime bounds the time ReadSchema spends inferring one file.
const schemaReadTime = 2 * time.Second

// ReadSchema is the output schema an import will write, when it can be
// read before the run: the columns it declares; a Parquet file's own
// schema (its footer); a JSON or CSV file's inferred columns when the file
// is at most schemaReadLimit bytes; a larger CSV file's header, its
// columns typed JSON (their types are inferred from every row). Nil when
// none can: a larger JSON file, or a file that cannot be read (Resolve
// says why).
func (importType) ReadSchema(ctx context.Context, cfg any, dir string) *parquet.Schema {
	c := cfg.(*importConfig)
	if cols := declaredColumns(c.Columns); len(cols) > 0 {
		return schemaOf(cols)
	}
	path := c.abs(dir)
	format := c.Format
	if format == "" {
		format = formatOf(path)
	}
	f, err := regfile.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	switch {
	case format == "parquet":
		pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
		if err != nil {
			return nil
		}
		return pf.Schema()
	case st.Size() <= schemaReadLimit:
		ctx, cancel := context.WithTimeout(ctx, schemaReadTime)
		defer cancel()
		cols, _, err := inferColumns(ctx, path, c.Path, format)
		if err != nil {
			return nil
		}
		return schemaOf(cols)
	case format == "csv":
		br := bufio.NewReader(f)
		if b, _ := br.Peek(len(utf8BOM)); string(b) == utf8BOM {
			br.Discard(len(utf8BOM))
		}
		cs, err := newCSVRecords(br, c.Path)
		if err != nil {
			return nil
		}
		var cols []column
		for _, name := range slices.Sorted(slices.Values(cs.header)) {
			cols = append(cols, column{name: name, kind: "json"})
		}
		return schemaOf(cols)
	}
	return nil
}
