package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
)

var cmdCat = newCommand("cat", "[PIPELINE] ADDR|DIGEST",
	"print an artifact's rows", `
Cat prints an artifact's rows as a table, one record at a time with values
in full, CSV or JSON Lines (--json is --format jsonl: one JSON object a
row). Arguments are as for show: PIPELINE ADDR, or an action key or
content digest, or any unique prefix of one of at least 4 hex digits.
Timestamps print as RFC 3339 in UTC, dates as YYYY-MM-DD, in every format.

--columns picks and orders columns and --where keeps the rows whose column
has a value, so a wide table prints as the view wanted, e.g. the paper's
Table 1 from a metrics node:

  lacuna cat pipelines/novelapibench.hcl node.metrics.table \
    --where difficulty=all --where library=all \
    --columns model,cell,tasks,pass_at_1,pass_at_5,api_acc,param_corr,sem

An ADDR without a key names every instance of a for_each node: table and
record output print a header line with each instance's address; csv and
jsonl add a first column "_node" holding it. An instance with no artifact
for its current inputs is reported on stderr and the others are still
printed; cat then exits 1.`)

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
	cmdCat.Flag.IntVar(&catFlags.limit, "limit", -1, "print at most this many rows of each artifact (default: 20 for table, all otherwise)")
	cmdCat.Flag.StringVar(&catFlags.columns, "columns", "", "print only these columns, in this order (comma-separated)")
	cmdCat.Flag.Var(&catFlags.where, "where", "keep rows whose column has this value: COLUMN=VALUE (repeatable; all must hold)")
	cmdCat.Run = runCat
}

// instanceColumn is the column csv and jsonl output add to tell the
// instances of a for_each node apart.
const instanceColumn = "_node"

func runCat(ctx context.Context, cmd *Command, args []string) error {
	format := catFlags.format
	if catFlags.json {
		if flagSet(cmd, "format") && format != "jsonl" {
			return usageError(fmt.Sprintf("--json prints JSON Lines; it cannot be combined with --format %s", format))
		}
		format = "jsonl"
	}
	switch format {
	case "table", "record", "csv", "jsonl":
	default:
		return usageError(fmt.Sprintf("--format %q: want table, record, csv or jsonl", format))
	}
	st, subjects, err := resolve(ctx, &catFlags.pipelineFlags, args, cmd)
	if err != nil {
		return err
	}
	limit := catFlags.limit
	if limit < 0 {
		limit = 1 << 62
		if format == "table" {
			limit = 20
		}
	}
	// The instances of a for_each node are labelled; a single artifact
	// is not.
	labelled := false
	for _, s := range subjects {
		labelled = labelled || len(args) == 2 && s.node != args[1]
	}
	p := &catPrinter{w: os.Stdout, view: catView{format: format, limit: limit, columns: catFlags.columns, where: catFlags.where}, labelled: labelled}
	var missing []string
	for _, s := range subjects {
		if s.object.Digest == "" {
			if !labelled {
				return fmt.Errorf("%s: %s", s.node, s.pending)
			}
			fmt.Fprintf(os.Stderr, "lacuna cat: %s: %s\n", s.node, s.pending)
			missing = append(missing, s.node)
			continue
		}
		r, err := st.Open(s.object)
		if err != nil {
			return err
		}
		if err := p.print(s.node, r); err != nil {
			return err
		}
	}
	switch {
	case len(missing) == len(subjects):
		return fmt.Errorf("none of the %d instances of %s has an artifact for its current inputs (run the pipeline first)", len(subjects), args[1])
	case len(missing) > 0:
		return fmt.Errorf("%d of %d instances of %s have no artifact (above); the others are printed", len(missing), len(subjects), args[1])
	}
	return nil
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(cmd *Command, name string) bool {
	set := false
	cmd.Flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// catView is what cat prints of an artifact.
type catView struct {
	format  string
	limit   int
	columns string   // comma-separated; "" for all
	where   []string // COLUMN=VALUE, all must hold
}

// catPrinter prints the rows of one or more artifacts in one format.
// With labelled, each artifact's rows carry its node's address: a header
// line in table and record output, a first column instanceColumn in csv
// and jsonl (whose header csv writes once).
type catPrinter struct {
	w        io.Writer
	view     catView
	labelled bool
	csvHead  []string // the header csv wrote, nil before the first
}

// print prints the rows of r, the artifact of node.
func (p *catPrinter) print(node string, r *artifacts.Reader) error {
	w, v := p.w, p.view
	limit := v.limit
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
		rec, err := record(r, row)
		if err != nil {
			return err
		}
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
	more := func() {
		if total > len(records) {
			fmt.Fprintf(w, "(%d of %s rows; --limit N for more)\n", len(records), commas(int64(total)))
		}
	}
	switch v.format {
	case "jsonl":
		var b bytes.Buffer
		for _, rec := range records {
			// Members in column order. JSON has no NaN or infinity (a
			// metric over no rows, a loss never logged): they are
			// written null.
			b.Reset()
			b.WriteByte('{')
			if p.labelled {
				k, _ := json.Marshal(instanceColumn)
				val, _ := json.Marshal(node)
				b.Write(k)
				b.WriteByte(':')
				b.Write(val)
			}
			for i, c := range cols {
				if i > 0 || p.labelled {
					b.WriteByte(',')
				}
				k, _ := json.Marshal(c)
				val, err := marshalJSON(artifacts.JSONSafe(rec[c]))
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
		}
	case "csv":
		cw := csv.NewWriter(w)
		head := cols
		if p.labelled {
			head = append([]string{instanceColumn}, cols...)
		}
		switch {
		case p.csvHead == nil:
			cw.Write(head)
			p.csvHead = head
		case !slices.Equal(p.csvHead, head):
			return fmt.Errorf("%s has other columns than the instances before it: use --format jsonl, or --columns", node)
		}
		for _, rec := range records {
			var line []string
			if p.labelled {
				line = append(line, node)
			}
			for _, c := range cols {
				line = append(line, cell(rec[c]))
			}
			cw.Write(line)
		}
		cw.Flush()
		return cw.Error()
	case "table":
		if p.labelled {
			fmt.Fprintf(w, "── %s (%s rows) ──\n", node, commas(int64(r.NumRows())))
		}
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
		more()
		if p.labelled {
			fmt.Fprintln(w)
		}
	case "record":
		if p.labelled {
			fmt.Fprintf(w, "══ %s (%s rows) ══\n", node, commas(int64(r.NumRows())))
		}
		for i, rec := range records {
			fmt.Fprintf(w, "── row %d ──\n", i+1)
			for _, c := range cols {
				writeField(w, "", c, rec[c])
			}
		}
		more()
	default:
		return errors.New("--format: want table, record, csv or jsonl")
	}
	return nil
}

// marshalJSON is json.Marshal without HTML escaping.
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
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
