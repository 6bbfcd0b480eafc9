// Package generic holds the node types every pipeline needs regardless of
// benchmark: import, sample, concat and filter.
package generic

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
	"github.com/lacuna-dev/lacuna/internal/regfile"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/parquet-go/parquet-go"
)

func init() { nodes.Register(importType{}) }

// importConfig: `node "import" "tools" { path = "tools.jsonl" }`.
type importConfig struct {
	Path string `hcl:"path" path:"file"`
	// Format is jsonl (which also reads a JSON array of objects), csv or
	// parquet; by default it follows the extension.
	Format string `hcl:"format,optional"`
	// Columns declares the schema (name → string, int64, double, bool or
	// json) and keeps only those columns. Without it the schema is inferred.
	Columns map[string]string `hcl:"columns,optional"`
}

type importType struct{ nodes.Dynamic[importConfig] }

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed      = importType{}
	_ nodes.Documented = importType{}
	_ nodes.Validator  = importType{}
	_ nodes.Resolver   = importType{}
)

func (importType) Name() string    { return "import" }
func (importType) Version() string { return "2" }
func (importType) Doc() string {
	return "Reads a JSONL, JSON, CSV or Parquet file into an artifact. The file's content digest is part of the key; " +
		"the schema is inferred (nested or mixed JSON values become JSON columns, mixed CSV columns strings) or declared with `columns`. " +
		"JSON is a stream of objects (one per line) or one array of objects. Data is kept exactly or refused with file:line:col: " +
		"duplicate keys or CSV columns, invalid UTF-8 and escaped lone surrogates are errors; numbers keep their text, " +
		"integers that fit int64 stay int64, and a number goes into a double column only if the double reads back as the same decimal " +
		"(else declare the column string or json). A UTF-8 byte-order mark at the start of a file is skipped in every format. " +
		"Only regular files are read, streaming (twice when the schema is inferred); one record may take at most 1 GiB."
}

func (importType) Schema() nodes.Schema {
	return nodes.Schema{Dynamic: "inferred from the file, or declared by columns"}
}

var columnKinds = map[string]bool{"string": true, "int64": true, "double": true, "bool": true, "json": true}

func (importType) Validate(cfg any) error {
	c := cfg.(*importConfig)
	var errs []error
	if c.Format != "" && c.Format != "jsonl" && c.Format != "csv" && c.Format != "parquet" {
		errs = append(errs, nodes.Errorf("format", "Unknown import format", "%q is not one of jsonl, csv, parquet.", c.Format))
	}
	if c.Format == "" && formatOf(c.Path) == "" {
		errs = append(errs, nodes.Errorf("path", "Cannot tell the file format", "%q has no .jsonl, .json, .ndjson, .csv or .parquet extension; set format.", c.Path))
	}
	for _, k := range slices.Sorted(maps.Keys(c.Columns)) {
		if !columnKinds[c.Columns[k]] {
			errs = append(errs, nodes.Errorf("columns", "Unknown column type", "column %q has type %q; use string, int64, double, bool or json.", k, c.Columns[k]))
		}
	}
	return errors.Join(errs...)
}

func formatOf(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".ndjson", ".json":
		return "jsonl"
	case ".csv":
		return "csv"
	case ".parquet":
		return "parquet"
	}
	return ""
}

func (c *importConfig) abs(dir string) string {
	if filepath.IsAbs(c.Path) {
		return c.Path
	}
	return filepath.Join(dir, c.Path)
}

// Resolve pins the file's content: its digest is in the key (editing the
// file re-imports it, touching it does not), and Run checks that every
// pass over the file read exactly those bytes, so rows are never cached
// under the key of a file edited between the two.
func (importType) Resolve(_ context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	c := r.Config().(*importConfig)
	f, err := regfile.Open(c.abs(r.Dir()))
	if err != nil {
		return nil, nodes.Errorf("path", "Cannot read the import file", "%v", err)
	}
	defer f.Close()
	h := xxhash.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, fmt.Errorf("import %s: %w", c.Path, err)
	}
	return &nodes.Pinned{Identity: map[string]string{"file": fileDigest(h.Sum64())}, Value: h.Sum64()}, nil
}

func fileDigest(sum uint64) string { return fmt.Sprintf("%016x", sum) }

// checkPinned fails when a pass over the file read other bytes than the
// ones Resolve put in the key.
func checkPinned(r nodes.Run, name string, read uint64) error {
	pinned, ok := r.Pinned().(uint64)
	if !ok {
		return fmt.Errorf("import %s: the file's digest was not resolved", name)
	}
	if pinned != read {
		return fmt.Errorf("%s changed while it was imported (read %s, planned %s); run again", name, fileDigest(read), fileDigest(pinned))
	}
	return nil
}

// Run streams the file into the output: once to infer the schema (only
// per-column counts are kept; values are checked, never held), once to
// write rows, so memory stays that of one record and the writer's buffers
// whatever the file's size. Reading a JSON record holds at most about
// twice its size (its longest value in chunks, then whole). A file whose
// bytes differ from those Resolve pinned, in either pass, is an error.
func (t importType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	path := c.abs(r.Dir())
	format := c.Format
	if format == "" {
		format = formatOf(path)
	}
	if format == "parquet" {
		return importParquet(path, c.Path, r)
	}
	cols := declaredColumns(c.Columns)
	if len(cols) == 0 {
		var digest uint64
		var err error
		if cols, digest, err = inferColumns(ctx, path, c.Path, format); err != nil {
			return err
		}
		if err := checkPinned(r, c.Path, digest); err != nil {
			return err
		}
	}
	w, err := r.Output(schemaOf(cols))
	if err != nil {
		return err
	}
	row := map[string]any{}
	records := 0
	digest, err := eachRecord(ctx, path, c.Path, format, false, r.Progress, func(rec map[string]any, line int) error {
		clear(row)
		for _, col := range cols {
			v, err := col.convert(rec[col.name])
			if err != nil {
				return fmt.Errorf("%s:%d: column %q: %w", c.Path, line, col.name, err)
			}
			row[col.name] = v
		}
		if err := w.Write(row); err != nil {
			return fmt.Errorf("%s:%d: %w", c.Path, line, err)
		}
		records++
		return nil
	})
	if err != nil {
		return err
	}
	if err := checkPinned(r, c.Path, digest); err != nil {
		return err
	}
	r.Logf("imported %d records, %d columns from %s", records, len(cols), c.Path)
	return nil
}

// declaredColumns are the columns of a columns attribute, by name.
func declaredColumns(declared map[string]string) []column {
	var cols []column
	for _, name := range slices.Sorted(maps.Keys(declared)) {
		cols = append(cols, column{name: name, kind: declared[name]})
	}
	return cols
}

// inferColumns reads a JSON or CSV file once and returns the columns its
// records have, each of the narrowest kind that holds all its values, and
// the digest of the bytes it read.
func inferColumns(ctx context.Context, path, name, format string) ([]column, uint64, error) {
	counts := map[string]*kindCount{}
	digest, err := eachRecord(ctx, path, name, format, true, nil, func(rec map[string]any, line int) error {
		for k, v := range rec {
			n := counts[k]
			if n == nil {
				if len(counts) == maxInferredColumns {
					return fmt.Errorf("%s:%d: more than %d distinct keys: every row is written with every column, so the table would be mostly nulls and its size rows × columns. Declare the columns you want (columns = {...}) or keep such records in one json column", name, line, maxInferredColumns)
				}
				n = &kindCount{}
				counts[k] = n
			}
			n.add(v)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	var cols []column
	for _, k := range slices.Sorted(maps.Keys(counts)) { // Parquet orders a group's fields by name
		cols = append(cols, column{name: k, kind: counts[k].kind(format == "csv")})
	}
	return cols, digest, nil
}

// schemaOf is the output schema of columns cols.
func schemaOf(cols []column) *parquet.Schema {
	group := parquet.Group{}
	for _, col := range cols {
		group[col.name] = col.node()
	}
	return parquet.NewSchema("row", group)
}

// maxInferredColumns bounds the columns import infers: a small file whose
// records each have other keys would otherwise make a table of rows ×
// columns nulls (20,000 one-key lines: 5 GB).
const maxInferredColumns = 4096

// utf8BOM is skipped at the start of a JSON or CSV file.
const utf8BOM = "\xef\xbb\xbf"

// eachRecord streams the records of a JSON or CSV file to fn with the line
// each starts on, reporting progress in bytes when progress is not nil, and
// returns the digest of the file's bytes as read. With kinds, fn needs only
// the kinds of JSON values (jsonRecords.kinds).
func eachRecord(ctx context.Context, path, name, format string, kinds bool, progress func(done, total int64), fn func(map[string]any, int) error) (uint64, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	h := xxhash.New()
	cr := &countingReader{r: io.TeeReader(f, h)}
	br := bufio.NewReaderSize(cr, 1<<20)
	if b, _ := br.Peek(len(utf8BOM)); string(b) == utf8BOM {
		br.Discard(len(utf8BOM))
	}
	var next func() (map[string]any, int, error)
	if format == "csv" {
		cs, err := newCSVRecords(br, name)
		if err != nil {
			return 0, err
		}
		next = cs.next
	} else {
		next = newJSONRecords(br, name, kinds).next
	}
	for i := 0; ; i++ {
		rec, line, err := next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
		if err := fn(rec, line); err != nil {
			return 0, err
		}
		if i%1000 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			if progress != nil {
				progress(cr.n, st.Size())
			}
		}
	}
	return h.Sum64(), nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// csvRecords reads CSV rows as records keyed by the header's column names,
// refusing what would change the data: a duplicate column name, invalid
// UTF-8, a record over maxRecord bytes.
type csvRecords struct {
	cr     *csv.Reader
	name   string
	header []string
	end    int64 // offset of the end of the last record
}

func newCSVRecords(r io.Reader, name string) (*csvRecords, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", name, err)
	}
	c := &csvRecords{cr: cr, name: name, header: slices.Clone(header), end: cr.InputOffset()}
	if err := c.check(header); err != nil {
		return nil, err
	}
	for i, h := range c.header {
		if j := slices.Index(c.header[:i], h); j >= 0 {
			line, col := cr.FieldPos(i)
			return nil, fmt.Errorf("%s:%d:%d: duplicate column %q (columns %d and %d); rename one", name, line, col, h, j+1, i+1)
		}
	}
	return c, nil
}

// check refuses fields that are not UTF-8 and records that are too long.
func (c *csvRecords) check(rec []string) error {
	line, _ := c.cr.FieldPos(0)
	if off := c.cr.InputOffset(); off-c.end > maxRecord {
		return fmt.Errorf("%s:%d: record larger than %d bytes (the limit for one record)", c.name, line, maxRecord)
	}
	c.end = c.cr.InputOffset()
	for i, f := range rec {
		if !utf8.ValidString(f) {
			line, col := c.cr.FieldPos(i)
			return fmt.Errorf("%s:%d:%d: invalid UTF-8; Parquet strings must be UTF-8: convert the file to UTF-8 (e.g. iconv -f LATIN1 -t UTF-8)", c.name, line, col)
		}
	}
	return nil
}

func (c *csvRecords) next() (map[string]any, int, error) {
	rec, err := c.cr.Read()
	if err == io.EOF {
		return nil, 0, err
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", c.name, err)
	}
	if err := c.check(rec); err != nil {
		return nil, 0, err
	}
	line, _ := c.cr.FieldPos(0)
	m := make(map[string]any, len(c.header))
	for i, h := range c.header {
		if rec[i] != "" {
			m[h] = csvValue(rec[i])
		}
	}
	return m, line, nil
}

// csvValue types a CSV cell the way inference expects JSON values: a cell
// is a number only when written as a JSON number (so 007, +1, 0x10, NaN
// and Inf stay text), a bool only when true or false.
func csvValue(s string) any {
	if isJSONNumber([]byte(s)) {
		return json.Number(s)
	}
	if s == "true" || s == "false" {
		return s == "true"
	}
	return s
}

func importParquet(path, name string, r nodes.Run) error {
	f, err := regfile.Open(path)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	// Parquet is read at random: check the pinned bytes before and after.
	pinned := func() error {
		h := xxhash.New()
		if _, err := io.Copy(h, io.NewSectionReader(f, 0, st.Size()+1)); err != nil {
			return fmt.Errorf("import %s: %w", name, err)
		}
		return checkPinned(r, name, h.Sum64())
	}
	if err := pinned(); err != nil {
		return err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	w, err := r.Output(pf.Schema())
	if err != nil {
		return err
	}
	rd := parquet.NewReader(pf)
	defer rd.Close()
	buf := make([]parquet.Row, 256)
	for {
		n, err := rd.ReadRows(buf)
		if n > 0 {
			if err := w.WriteRows(buf[:n]); err != nil {
				return err
			}
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("%s: %w", name, err) // never commit a partial file
		}
		if err == io.EOF || n == 0 {
			return pinned()
		}
	}
}

type column struct {
	name string
	kind string // string, int64, double, bool, json
}

func (c column) node() parquet.Node {
	switch c.kind {
	case "int64":
		return parquet.Optional(parquet.Int(64))
	case "double":
		return parquet.Optional(parquet.Leaf(parquet.DoubleType))
	case "bool":
		return parquet.Optional(parquet.Leaf(parquet.BooleanType))
	case "json":
		return parquet.Optional(parquet.JSON())
	}
	return parquet.Optional(parquet.String())
}

// kindCount counts the kinds of value one key holds across the records.
type kindCount struct{ s, i, f, b, other int }

func (n *kindCount) add(v any) {
	switch v := v.(type) {
	case nil:
	case string:
		n.s++
	case bool:
		n.b++
	case json.Number:
		if _, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			n.i++
		} else {
			n.f++ // a double column, which refuses what a double cannot hold
		}
	default:
		n.other++
	}
}

// kind picks the narrowest type that holds every value of a key: bool,
// int64, double or string; objects, arrays and mixed kinds become JSON
// columns, which DuckDB and pandas read as JSON text. A CSV cell is text,
// so a mixed CSV column is a string column holding each cell as written.
func (n *kindCount) kind(csv bool) string {
	switch {
	case n.other > 0:
		return "json"
	case n.s > 0 && n.i+n.f+n.b == 0:
		return "string"
	case n.b > 0 && n.s+n.i+n.f == 0:
		return "bool"
	case n.i > 0 && n.s+n.f+n.b == 0:
		return "int64"
	case n.i+n.f > 0 && n.s+n.b == 0:
		return "double"
	case n.s+n.i+n.f+n.b == 0, csv:
		return "string"
	}
	return "json"
}

func (c column) convert(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch c.kind {
	case "string":
		switch v := v.(type) {
		case string:
			return v, nil
		case json.Number:
			return v.String(), nil
		case bool:
			return strconv.FormatBool(v), nil
		}
	case "int64":
		if n, ok := v.(json.Number); ok {
			i, err := strconv.ParseInt(string(n), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s is not an int64", n)
			}
			return i, nil
		}
	case "double":
		if n, ok := v.(json.Number); ok {
			f, err := exactFloat(n)
			if err != nil {
				return nil, fmt.Errorf("%s cannot be stored exactly: %w, and it is not an int64; declare the column \"string\" or \"json\" in columns to keep its digits", n, err)
			}
			return f, nil
		}
	case "bool":
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case "json":
		switch v := v.(type) {
		case rawJSON:
			return []byte(v), nil
		case json.Number:
			return []byte(v), nil
		}
		return json.Marshal(v)
	}
	if raw, ok := v.(rawJSON); ok {
		v = string(raw)
		if len(raw) > 40 {
			v = string(raw[:40]) + "..."
		}
	}
	return nil, fmt.Errorf("value %v does not fit a %s column", v, c.kind)
}
