// Package generic holds the node types every pipeline needs regardless of
// benchmark: import, sample, concat and filter.
package generic

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/parquet-go/parquet-go"
)

func init() { nodes.Register(importType{}) }

// importConfig: `node "import" "tools" { path = "tools.jsonl" }`.
type importConfig struct {
	Path string `hcl:"path"`
	// Format is jsonl, csv or parquet; by default it follows the extension.
	Format string `hcl:"format,optional"`
	// Columns declares the schema (name → string, int64, double, bool or
	// json) and keeps only those columns. Without it the schema is inferred.
	Columns map[string]string `hcl:"columns,optional"`
}

type importType struct{}

func (importType) Name() string    { return "import" }
func (importType) Version() string { return "1" }
func (importType) NewConfig() any  { return &importConfig{} }
func (importType) Doc() string {
	return "Reads a JSONL, CSV or Parquet file into an artifact. The file's content digest is part of the key; " +
		"the schema is inferred (nested or mixed JSON values become JSON columns) or declared with `columns`."
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

// Identity makes the file's content part of the key: editing the file
// re-imports it, touching it does not.
func (importType) Identity(_ context.Context, cfg any, dir string) (map[string]string, error) {
	c := cfg.(*importConfig)
	f, err := os.Open(c.abs(dir))
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	h := xxhash.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, fmt.Errorf("import %s: %w", c.Path, err)
	}
	return map[string]string{"file": fmt.Sprintf("%016x", h.Sum64())}, nil
}

func (importType) Run(ctx context.Context, r nodes.Run) error {
	c := r.Config().(*importConfig)
	path := c.abs(r.Dir())
	format := c.Format
	if format == "" {
		format = formatOf(path)
	}
	if format == "parquet" {
		return importParquet(path, r)
	}
	var recs []map[string]any
	var order []string
	var err error
	if format == "csv" {
		recs, order, err = readCSV(path)
	} else {
		recs, order, err = readJSONL(path)
	}
	if err != nil {
		return err
	}
	var cols []column
	if len(c.Columns) > 0 {
		for _, name := range slices.Sorted(maps.Keys(c.Columns)) {
			cols = append(cols, column{name: name, kind: c.Columns[name]})
		}
	} else {
		cols = inferColumns(recs, order)
	}
	group := parquet.Group{}
	for _, col := range cols {
		group[col.name] = col.node()
	}
	w, err := r.Output(parquet.NewSchema("row", group))
	if err != nil {
		return err
	}
	row := map[string]any{}
	for i, rec := range recs {
		clear(row)
		for _, col := range cols {
			v, err := col.convert(rec[col.name])
			if err != nil {
				return fmt.Errorf("%s: record %d, column %q: %w", c.Path, i+1, col.name, err)
			}
			row[col.name] = v
		}
		if err := w.Write(row); err != nil {
			return fmt.Errorf("%s: record %d: %w", c.Path, i+1, err)
		}
		if i%1000 == 0 {
			r.Progress(int64(i), int64(len(recs)))
		}
	}
	r.Logf("imported %d records, %d columns from %s", len(recs), len(cols), c.Path)
	return nil
}

func importParquet(path string, r nodes.Run) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
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
		if err == io.EOF || n == 0 {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
}

// readJSONL decodes one JSON object per line, keeping numbers exact.
func readJSONL(path string) ([]map[string]any, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var recs []map[string]any
	var order []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var rec map[string]any
		if err := d.Decode(&rec); err != nil {
			return nil, nil, fmt.Errorf("%s:%d: not a JSON object: %v", filepath.Base(path), line, err)
		}
		for k := range rec {
			if !seen[k] {
				seen[k] = true
				order = append(order, k)
			}
		}
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s:%d: %w", filepath.Base(path), line+1, err)
	}
	sort.Strings(order) // Parquet groups order their fields by name
	return recs, order, nil
}

func readCSV(path string) ([]map[string]any, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	cr := csv.NewReader(f)
	header, err := cr.Read()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: header: %w", filepath.Base(path), err)
	}
	var recs []map[string]any
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
		m := make(map[string]any, len(header))
		for i, h := range header {
			if i < len(rec) && rec[i] != "" {
				m[h] = csvValue(rec[i])
			}
		}
		recs = append(recs, m)
	}
	return recs, header, nil
}

// csvValue types a CSV cell the way inference expects JSON values.
func csvValue(s string) any {
	if _, err := strconv.ParseInt(s, 10, 64); err == nil {
		return json.Number(s)
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return json.Number(s)
	}
	if s == "true" || s == "false" {
		return s == "true"
	}
	return s
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

// inferColumns picks the narrowest type that holds every value of a key:
// bool, int64, double or string; objects, arrays and mixed kinds become
// JSON columns, which DuckDB and pandas read as JSON text.
func inferColumns(recs []map[string]any, order []string) []column {
	cols := make([]column, 0, len(order))
	for _, name := range order {
		var s, i, f, b, other int
		for _, rec := range recs {
			switch v := rec[name].(type) {
			case nil:
			case string:
				s++
			case bool:
				b++
			case json.Number:
				if _, err := v.Int64(); err == nil {
					i++
				} else {
					f++
				}
			default:
				other++
			}
		}
		kind := "json"
		switch {
		case other > 0:
		case s > 0 && i+f+b == 0:
			kind = "string"
		case b > 0 && s+i+f == 0:
			kind = "bool"
		case i > 0 && s+f+b == 0:
			kind = "int64"
		case i+f > 0 && s+b == 0:
			kind = "double"
		case s+i+f+b == 0:
			kind = "string"
		}
		cols = append(cols, column{name: name, kind: kind})
	}
	return cols
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
			i, err := n.Int64()
			if err != nil {
				return nil, fmt.Errorf("%s is not an int64", n)
			}
			return i, nil
		}
	case "double":
		if n, ok := v.(json.Number); ok {
			return n.Float64()
		}
	case "bool":
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case "json":
		return json.Marshal(v)
	}
	return nil, fmt.Errorf("value %v does not fit a %s column", v, c.kind)
}
