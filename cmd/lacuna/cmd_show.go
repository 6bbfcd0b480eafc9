package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
)

var cmdShow = newCommand("show", "[PIPELINE] ADDR|DIGEST",
	"provenance, digest, schema and row count of an artifact", `
Show prints what the store knows about a node's artifact: the action that
made it (type, logic version, inputs, identity, configuration, the node's
reports such as a model's usage: calls, cached, retries, tokens, latency
percentiles; logs), its
content digest, row count and schema; for a failed node, its error and
logs. Give PIPELINE ADDR for a node (every instance of a for_each node when
ADDR has no key), or an action key or content digest alone.`)

var showFlags pipelineFlags

func init() {
	showFlags.add(cmdShow.Flag)
	cmdShow.Run = runShow
}

func runShow(ctx context.Context, cmd *Command, args []string) error {
	st, subjects, err := resolve(ctx, &showFlags, args, cmd)
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
	if showFlags.json {
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
		printShow(os.Stdout, m)
	}
	return nil
}

func printShow(w io.Writer, m map[string]any) {
	if n, _ := m["node"].(string); n != "" {
		fmt.Fprintln(w, n)
	}
	kv := func(k, v string) { fmt.Fprintf(w, "  %-9s %s\n", k, v) }
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
		printReports(w, a.Reports)
		if a.Logs != "" {
			fmt.Fprintln(w, "  logs")
			fmt.Fprintln(w, indent(a.Logs))
		}
	}
	if p, ok := m["pending"].(string); ok {
		kv("status", p)
	}
	if f, ok := m["failure"].(*artifacts.Failure); ok {
		kv("failed", fmt.Sprintf("%s on %s after %.3fs", f.Started.Format("2006-01-02 15:04:05Z"), f.Host, f.Seconds))
		fmt.Fprintln(w, "  error")
		fmt.Fprintln(w, indent(f.Error))
		printReports(w, f.Reports)
		if f.Logs != "" {
			fmt.Fprintln(w, "  logs")
			fmt.Fprintln(w, indent(f.Logs))
		}
	}
	if o, ok := m["object"].(artifacts.Object); ok {
		kv("digest", string(o.Digest))
		kv("rows", commas(o.Rows))
		kv("file", fmt.Sprintf("%s bytes, xxhash64 %s", commas(o.Size), o.FileSum))
		fmt.Fprintln(w, "  schema")
		fmt.Fprintln(w, indent(m["schema"].(string)))
	}
}

// printReports prints a node's reports under "report NAME", by name.
func printReports(w io.Writer, reports map[string]json.RawMessage) {
	for _, name := range slices.Sorted(maps.Keys(reports)) {
		fmt.Fprintf(w, "  %-9s %s\n", "report", name)
		printReport(w, reports[name], "    ")
	}
}

// printReport prints a node's JSON report (Run.Report) readably: an
// object's members one a line in their recorded order, name then value,
// nested objects indented below their name, integers with thousands
// separators and other numbers to three significant digits. What is not an
// object is printed as compact JSON.
func printReport(w io.Writer, raw json.RawMessage, indent string) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeOrdered(dec)
	if err != nil {
		fmt.Fprintf(w, "%s%s\n", indent, raw)
		return
	}
	printOrdered(w, v, indent)
}

// member is one member of a JSON object, in its order.
type member struct {
	name  string
	value any // json.Number, string, bool, nil, []member, []any
}

// decodeOrdered decodes one JSON value keeping the order of object members.
func decodeOrdered(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		obj := []member{}
		for dec.More() {
			name, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := decodeOrdered(dec)
			if err != nil {
				return nil, err
			}
			obj = append(obj, member{name.(string), v})
		}
		_, err := dec.Token()
		return obj, err
	case json.Delim('['):
		arr := []any{}
		for dec.More() {
			v, err := decodeOrdered(dec)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := dec.Token()
		return arr, err
	}
	return tok, nil
}

func printOrdered(w io.Writer, v any, indent string) {
	obj, ok := v.([]member)
	if !ok {
		fmt.Fprintf(w, "%s%s\n", indent, reportValue(v))
		return
	}
	width := 0
	for _, m := range obj {
		width = max(width, len(m.name))
	}
	for _, m := range obj {
		if sub, ok := m.value.([]member); ok && len(sub) > 0 {
			fmt.Fprintf(w, "%s%s\n", indent, m.name)
			printOrdered(w, sub, indent+"  ")
			continue
		}
		fmt.Fprintf(w, "%s%-*s  %s\n", indent, width, m.name, reportValue(m.value))
	}
}

// reportValue writes one value of a report.
func reportValue(v any) string {
	switch v := v.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return commas(n)
		}
		f, err := v.Float64()
		if err != nil {
			return v.String()
		}
		if math.Abs(f) >= 1000 {
			return commas(int64(math.Round(f)))
		}
		return strconv.FormatFloat(f, 'g', 3, 64)
	case string:
		return v
	case nil:
		return "-"
	case bool:
		return strconv.FormatBool(v)
	case []member:
		return "{}"
	case []any:
		parts := make([]string, len(v))
		for n, el := range v {
			parts[n] = reportValue(el)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(v)
}

// subject is one artifact that show or cat is about.
type subject struct {
	node    string
	action  *artifacts.Action // nil for a bare object digest
	failure *artifacts.Failure
	object  artifacts.Object
	pending string // why it has no artifact yet
}

// resolve turns [PIPELINE] ADDR|DIGEST into subjects.
func resolve(ctx context.Context, pf *pipelineFlags, pos []string, cmd *Command) (*artifacts.Store, []subject, error) {
	switch {
	case len(pos) == 2 && isPipelinePath(pos[0]):
		l, err := pf.load(pos[0])
		if err != nil {
			return nil, nil, err
		}
		entries, err := l.reader().Plan(ctx, l.graph, []string{pos[1]})
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
				if e.Reason != "" { // a last-known result
					fmt.Fprintf(os.Stderr, "note: %s: %s\n", e.Node, e.Reason)
				}
				s.action, s.object = a, a.Output
			} else {
				s.pending = fmt.Sprintf("not computed with its current inputs (plan: %s, %s)", e.Status, e.Reason)
				if _, err := l.store.GetAction(e.Key); e.Key != "" && errors.Is(err, artifacts.ErrDamagedAction) {
					s.pending = err.Error()
				}
				if e.Key != "" {
					f, err := l.store.GetFailure(e.Key)
					if err != nil && !errors.Is(err, artifacts.ErrNotFound) {
						return nil, nil, err
					}
					s.failure = f
				}
			}
			out = append(out, s)
		}
		return l.store, out, nil
	case len(pos) == 1 && artifacts.Digest(pos[0]).Valid():
		st, err := pf.openHere()
		if err != nil {
			return nil, nil, err
		}
		d := artifacts.Digest(pos[0])
		a, err := st.GetAction(d)
		switch {
		case err == nil:
			return st, []subject{{node: a.Node, action: a, object: a.Output}}, nil
		case errors.Is(err, artifacts.ErrDamagedAction):
			return nil, nil, err
		}
		if f, err := st.GetFailure(d); err == nil {
			return st, []subject{{node: f.Node, failure: f, pending: "failed"}}, nil
		}
		if _, err := os.Stat(st.ObjectPath(d)); err == nil {
			return st, []subject{{object: artifacts.Object{Digest: d}}}, nil
		}
		return nil, nil, fmt.Errorf("%s is neither an action key nor an object in %s", d, st.Root())
	}
	return nil, nil, usageError(fmt.Sprintf("usage: lacuna %s PIPELINE ADDR, or lacuna %s DIGEST (an action key or content digest, with --store or LACUNA_STORE when not ./.lacuna)", cmd.Name, cmd.Name))
}
