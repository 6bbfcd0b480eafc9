package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
)

var cmdCat = newCommand("cat", "[PIPELINE] ADDR|DIGEST",
	"print an artifact's rows", `
Cat prints an artifact's rows as a table, one record at a time with values
in full, CSV or JSON lines. Arguments are as for show. --columns picks and
orders columns and --where keeps the rows whose column has a value, so a
wide table prints as the view wanted, e.g. the paper's Table 1 from a
metrics node:

  lacuna cat pipelines/novelapibench.hcl node.metrics.table \
    --where difficulty=all --where library=all \
    --columns model,cell,tasks,pass_at_1,pass_at_5,api_acc,param_corr,sem`)

var catFlags struct {
	pipelineFlags
	format  string
	limit   int
	columns string
	where   multiFlag
}

func init() {
	catFlags.pipelineFlags.add(cmdCat.Flag)
	cmdCat.Flag.StringVar(&catFlags.format, "format", "table", "table, record (one field a line, values in full), csv or jsonl")
	cmdCat.Flag.IntVar(&catFlags.limit, "limit", -1, "print at most this many rows (default: 20 for table, all otherwise)")
	cmdCat.Flag.StringVar(&catFlags.columns, "columns", "", "print only these columns, in this order (comma-separated)")
	cmdCat.Flag.Var(&catFlags.where, "where", "keep rows whose column has this value: COLUMN=VALUE (repeatable; all must hold)")
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
		if err := catRows(os.Stdout, r, catView{format: catFlags.format, limit: limit, columns: catFlags.columns, where: catFlags.where}); err != nil {
			return err
		}
	}
	return nil
}

// catView is what cat prints of an artifact.
type catView struct {
	format  string
	limit   int
	columns string   // comma-separated; "" for all
	where   []string // COLUMN=VALUE, all must hold
}

// catRows prints rows as a table, CSV or JSON lines.
func catRows(w io.Writer, r *artifacts.Reader, v catView) error {
	format, limit := v.format, v.limit
	var cols []string
	have := map[string]bool{}
	for _, f := range r.Schema().Fields() {
		cols = append(cols, f.Name())
		have[f.Name()] = true
	}
	if v.columns != "" {
		cols = strings.Split(v.columns, ",")
		for i, c := range cols {
			cols[i] = strings.TrimSpace(c)
			if !have[cols[i]] {
				return fmt.Errorf("--columns: no column %q%s", cols[i], didYouMeanColumn(cols[i], have))
			}
		}
	}
	type cond struct{ col, val string }
	var where []cond
	for _, kv := range v.where {
		k, val, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("--where %q: want COLUMN=VALUE", kv)
		}
		if !have[k] {
			return fmt.Errorf("--where: no column %q%s", k, didYouMeanColumn(k, have))
		}
		where = append(where, cond{k, val})
	}
	var records []map[string]any
	total := 0
	for _, row := range r.Rows() {
		if len(where) == 0 && len(records) == limit {
			total = r.NumRows() // no filter: the rest need no decoding
			break
		}
		var v any
		if err := r.Schema().Reconstruct(&v, row); err != nil {
			return err
		}
		rec, _ := v.(map[string]any)
		keep := true
		for _, c := range where {
			keep = keep && cell(rec[c.col]) == c.val
		}
		if !keep {
			continue
		}
		total++
		if len(records) < limit {
			records = append(records, rec)
		}
	}
	rows := records
	switch format {
	case "jsonl":
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for _, rec := range records {
			// JSON has no NaN or infinity (a metric over no rows, a
			// loss never logged): they are written null.
			for k, x := range rec {
				rec[k] = jsonSafe(x)
			}
			if v.columns != "" {
				// Only the columns asked for, in their order.
				var b bytes.Buffer
				b.WriteByte('{')
				for i, c := range cols {
					if i > 0 {
						b.WriteByte(',')
					}
					k, _ := json.Marshal(c)
					val, err := json.Marshal(rec[c])
					if err != nil {
						return err
					}
					b.Write(k)
					b.WriteByte(':')
					b.Write(val)
				}
				b.WriteString("}\n")
				if _, err := w.Write(b.Bytes()); err != nil {
					return err
				}
				continue
			}
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
				if rec[c] == nil {
					s = "-" // null
				}
				if rs := []rune(s); len(rs) > 40 {
					s = string(rs[:39]) + "…"
				}
				line[i] = s
			}
			t.row(line...)
		}
		t.print(w)
		if total > len(rows) {
			fmt.Fprintf(w, "(%d of %s rows; --limit N for more)\n", len(rows), commas(int64(total)))
		}
	case "record":
		for i, rec := range records {
			fmt.Fprintf(w, "── row %d ──\n", i+1)
			for _, c := range cols {
				writeField(w, "", c, rec[c])
			}
		}
		if total > len(rows) {
			fmt.Fprintf(w, "(%d of %s rows; --limit N for more)\n", len(rows), commas(int64(total)))
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

// didYouMeanColumn suggests the column closest to name.
func didYouMeanColumn(name string, have map[string]bool) string {
	names := make([]string, 0, len(have))
	for c := range have {
		names = append(names, c)
	}
	sort.Strings(names)
	if s := engine.Suggest(name, names); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return " (columns: " + strings.Join(names, ", ") + ")"
}

// jsonSafe is v with every NaN or infinite float (also inside lists and
// objects) replaced by nil, which JSON writes as null.
func jsonSafe(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil
		}
	case []any:
		for i := range x {
			x[i] = jsonSafe(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = jsonSafe(x[k])
		}
	}
	return v
}
