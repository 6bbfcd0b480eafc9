package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
)

var cmdCat = newCommand("cat", "[PIPELINE] ADDR|DIGEST",
	"print an artifact's rows", `
Cat prints an artifact's rows as a table, one record at a time with values
in full, CSV or JSON lines. Arguments are as for show.`)

var catFlags struct {
	pipelineFlags
	format string
	limit  int
}

func init() {
	catFlags.pipelineFlags.add(cmdCat.Flag)
	cmdCat.Flag.StringVar(&catFlags.format, "format", "table", "table, record (one field a line, values in full), csv or jsonl")
	cmdCat.Flag.IntVar(&catFlags.limit, "limit", -1, "print at most this many rows (default: 20 for table, all otherwise)")
	cmdCat.Run = runCat
}

func runCat(ctx context.Context, cmd *Command, args []string) error {
	st, subjects, err := resolve(ctx, &catFlags.pipelineFlags, args, cmd)
	if err != nil {
		return err
	}
	limit := catFlags.limit
	if limit < 0 {
		limit = 1 << 62
		if catFlags.format == "table" {
			limit = 20
		}
	}
	for _, s := range subjects {
		if s.object.Digest == "" {
			return fmt.Errorf("%s: %s", s.node, s.pending)
		}
		r, err := st.Open(s.object)
		if err != nil {
			return err
		}
		if err := catRows(os.Stdout, r, catFlags.format, limit); err != nil {
			return err
		}
	}
	return nil
}

// catRows prints rows as a table, CSV or JSON lines.
func catRows(w io.Writer, r *artifacts.Reader, format string, limit int) error {
	var cols []string
	for _, f := range r.Schema().Fields() {
		cols = append(cols, f.Name())
	}
	rows := r.Rows()
	if len(rows) > limit {
		rows = rows[:limit]
	}
	records := make([]map[string]any, len(rows))
	for i, row := range rows {
		var v any
		if err := r.Schema().Reconstruct(&v, row); err != nil {
			return err
		}
		records[i], _ = v.(map[string]any)
	}
	switch format {
	case "jsonl":
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for _, rec := range records {
			if err := enc.Encode(rec); err != nil {
				return err
			}
		}
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write(cols)
		for _, rec := range records {
			line := make([]string, len(cols))
			for i, c := range cols {
				line[i] = cell(rec[c])
			}
			cw.Write(line)
		}
		cw.Flush()
		return cw.Error()
	case "table":
		t := newTable(cols...)
		for _, rec := range records {
			line := make([]string, len(cols))
			for i, c := range cols {
				s := strings.ReplaceAll(cell(rec[c]), "\n", "⏎")
				if rs := []rune(s); len(rs) > 40 {
					s = string(rs[:39]) + "…"
				}
				line[i] = s
			}
			t.row(line...)
		}
		t.print(w)
		if r.NumRows() > len(rows) {
			fmt.Fprintf(w, "(%d of %s rows; --limit N for more)\n", len(rows), commas(int64(r.NumRows())))
		}
	case "record":
		for i, rec := range records {
			fmt.Fprintf(w, "── row %d ──\n", i+1)
			for _, c := range cols {
				writeField(w, "", c, rec[c])
			}
		}
		if r.NumRows() > len(rows) {
			fmt.Fprintf(w, "(%d of %s rows; --limit N for more)\n", len(rows), commas(int64(r.NumRows())))
		}
	default:
		return errors.New("--format: want table, record, csv or jsonl")
	}
	return nil
}

// writeField prints one value of a record: scalars on the line, text of
// several lines indented below it, lists and groups field by field, so
// that code and prose inside a row read as written.
func writeField(w io.Writer, indent, name string, v any) {
	switch v := v.(type) {
	case string:
		if strings.Contains(v, "\n") {
			fmt.Fprintf(w, "%s%s: |\n", indent, name)
			for _, line := range strings.Split(strings.TrimRight(v, "\n"), "\n") {
				fmt.Fprintf(w, "%s    %s\n", indent, line)
			}
			return
		}
		fmt.Fprintf(w, "%s%s: %s\n", indent, name, v)
	case []any:
		if len(v) == 0 {
			fmt.Fprintf(w, "%s%s: []\n", indent, name)
			return
		}
		fmt.Fprintf(w, "%s%s:\n", indent, name)
		for i, e := range v {
			writeField(w, indent+"  ", fmt.Sprintf("[%d]", i), e)
		}
	case map[string]any:
		fmt.Fprintf(w, "%s%s:\n", indent, name)
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			writeField(w, indent+"  ", k, v[k])
		}
	default:
		fmt.Fprintf(w, "%s%s: %s\n", indent, name, cell(v))
	}
}

func cell(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case []byte:
		return string(v)
	case map[string]any, []any:
		b, _ := json.Marshal(v)
		return string(b)
	}
	return fmt.Sprint(v)
}
