package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
)

// subject is one artifact that show or cat is about.
type subject struct {
	node    string
	action  *artifacts.Action // nil for a bare object digest
	failure *artifacts.Failure
	object  artifacts.Object
	pending string // why it has no artifact yet
}

// resolve turns [PIPELINE] ADDR|DIGEST into subjects.
func resolve(ctx context.Context, pf *pipelineFlags, pos []string, cmd string) (*artifacts.Store, []subject, error) {
	switch {
	case len(pos) == 2 && isPipelinePath(pos[0]):
		l, err := pf.load(pos[0])
		if err != nil {
			return nil, nil, err
		}
		entries, err := l.executor().Plan(ctx, l.graph, []string{pos[1]})
		if err != nil {
			return nil, nil, err
		}
		var out []subject
		for _, e := range entries {
			if e.Node != pos[1] && !strings.HasPrefix(e.Node, pos[1]+"[") {
				continue
			}
			s := subject{node: e.Node}
			if e.Status == engine.PlanCached {
				a, err := l.store.GetAction(e.Key)
				if err != nil {
					return nil, nil, err
				}
				s.action, s.object = a, a.Output
			} else {
				s.pending = fmt.Sprintf("not computed with its current inputs (plan: %s, %s)", e.Status, e.Reason)
				if e.Key != "" {
					s.failure, _ = l.store.GetFailure(e.Key)
				}
			}
			out = append(out, s)
		}
		return l.store, out, nil
	case len(pos) == 1 && artifacts.Digest(pos[0]).Valid():
		wd, _ := os.Getwd()
		st, err := openStore(pf.store, wd)
		if err != nil {
			return nil, nil, err
		}
		d := artifacts.Digest(pos[0])
		if a, err := st.GetAction(d); err == nil {
			return st, []subject{{node: a.Node, action: a, object: a.Output}}, nil
		}
		if f, err := st.GetFailure(d); err == nil {
			return st, []subject{{node: f.Node, failure: f, pending: "failed"}}, nil
		}
		if _, err := os.Stat(st.ObjectPath(d)); err == nil {
			return st, []subject{{object: artifacts.Object{Digest: d}}}, nil
		}
		return nil, nil, fmt.Errorf("%s is neither an action key nor an object in %s", d, st.Root())
	}
	return nil, nil, fmt.Errorf("usage: lacuna %s PIPELINE ADDR, or lacuna %s DIGEST (an action key or content digest, with --store or LACUNA_STORE when not ./.lacuna)", cmd, cmd)
}

func cmdShow(ctx context.Context, args []string) error {
	var pf pipelineFlags
	fs := newFlags("show", "[PIPELINE] ADDR|DIGEST")
	pf.register(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	st, subjects, err := resolve(ctx, &pf, pos, "show")
	if err != nil {
		return err
	}
	var out []map[string]any
	for _, s := range subjects {
		m := map[string]any{"node": s.node}
		if s.action != nil {
			m["action"] = s.action
		}
		if s.failure != nil {
			m["failure"] = s.failure
		}
		if s.pending != "" {
			m["pending"] = s.pending
		}
		if s.object.Digest != "" {
			r, err := st.Open(s.object)
			if err != nil {
				return err
			}
			m["object"] = r.Object
			m["schema"] = r.Schema().String()
			m["metadata"] = r.Meta()
		}
		out = append(out, m)
	}
	if pf.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if len(out) == 1 {
			return enc.Encode(out[0])
		}
		return enc.Encode(out)
	}
	for i, m := range out {
		if i > 0 {
			fmt.Println()
		}
		printShow(m)
	}
	return nil
}

func printShow(m map[string]any) {
	if n, _ := m["node"].(string); n != "" {
		fmt.Println(n)
	}
	kv := func(k, v string) { fmt.Printf("  %-9s %s\n", k, v) }
	if a, ok := m["action"].(*artifacts.Action); ok {
		kv("type", fmt.Sprintf("%s (logic version %s)", a.Type, a.Version))
		kv("key", string(a.Key))
		kv("computed", fmt.Sprintf("%s on %s in %.3fs by %s", a.Started.Format("2006-01-02 15:04:05Z"), a.Host, a.Seconds, a.Tool))
		for _, in := range a.Inputs {
			kv("input", fmt.Sprintf("%s ← %s (%s)", in.Name, in.Node, in.Digest))
		}
		for _, k := range slices.Sorted(maps.Keys(a.Identity)) {
			kv("identity", k+" = "+a.Identity[k])
		}
		var cfg bytes.Buffer
		if json.Compact(&cfg, a.Config) != nil {
			cfg.Reset()
			cfg.Write(a.Config)
		}
		kv("config", cfg.String())
		if a.Note != "" {
			kv("result", a.Note)
		}
		if a.Logs != "" {
			fmt.Println("  logs")
			fmt.Println(indent(a.Logs))
		}
	}
	if p, ok := m["pending"].(string); ok {
		kv("status", p)
	}
	if f, ok := m["failure"].(*artifacts.Failure); ok {
		kv("failed", fmt.Sprintf("%s on %s after %.3fs", f.Started.Format("2006-01-02 15:04:05Z"), f.Host, f.Seconds))
		fmt.Println("  error")
		fmt.Println(indent(f.Error))
		if f.Logs != "" {
			fmt.Println("  logs")
			fmt.Println(indent(f.Logs))
		}
	}
	if o, ok := m["object"].(artifacts.Object); ok {
		kv("digest", string(o.Digest))
		kv("rows", commas(o.Rows))
		kv("file", fmt.Sprintf("%s bytes, xxhash64 %s", commas(o.Size), o.FileSum))
		fmt.Println("  schema")
		fmt.Println(indent(m["schema"].(string)))
	}
}

func cmdCat(ctx context.Context, args []string) error {
	var pf pipelineFlags
	fs := newFlags("cat", "[PIPELINE] ADDR|DIGEST")
	pf.register(fs)
	format := fs.String("format", "table", "table, record (one field a line, values in full), csv or jsonl")
	limit := fs.Int("limit", -1, "print at most this many rows (default: 20 for table, all otherwise)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	st, subjects, err := resolve(ctx, &pf, pos, "cat")
	if err != nil {
		return err
	}
	if *limit < 0 {
		*limit = 1 << 62
		if *format == "table" {
			*limit = 20
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
		if err := catRows(os.Stdout, r, *format, *limit); err != nil {
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
