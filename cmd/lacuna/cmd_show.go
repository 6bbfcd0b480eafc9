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
	"github.com/lacuna-dev/lacuna/nodes"
)

var cmdShow = newCommand("show", "[PIPELINE] ADDR|DIGEST",
	"provenance, digest, schema and row count of an artifact", `
Show prints what the store knows about a node's artifact: the action that
made it (type, logic version, inputs, identity, configuration, the node's
reports such as a model's usage: calls, cached, retries, tokens, latency
percentiles; logs), its
content digest, row count and schema; for a failed node, its error and
logs. Give PIPELINE ADDR for a node (every instance of a for_each node when
ADDR has no key), or an action key or content digest alone, or any prefix
of one of at least 4 hex digits that names one thing in the store (as
plan and run print them); a content digest shows the action that wrote
it. The schema is a column list: name, type, and whether the column is
required, nullable or repeated (a group's fields indented below it).
Times are RFC 3339 in UTC.`)

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
			m["columns"] = nodes.Columns(r.Schema())
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
		kv("computed", fmt.Sprintf("%s on %s in %.3fs by %s", formatStamp(a.Started), a.Host, a.Seconds, a.Tool))
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
		kv("failed", fmt.Sprintf("%s on %s after %.3fs", formatStamp(f.Started), f.Host, f.Seconds))
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
		cols, _ := m["columns"].([]nodes.Column)
		fmt.Fprintf(w, "  %-9s %d\n", "columns", len(cols))
		printColumns(w, cols, "    ")
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
	if list, ok := v.([]any); ok && hasObjects(list) {
		for i, el := range list {
			fmt.Fprintf(w, "%s[%d]\n", indent, i)
			printOrdered(w, el, indent+"  ")
		}
		return
	}
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
		if list, ok := m.value.([]any); ok && hasObjects(list) {
			// A list of records (per-model usage, per-arm results):
			// each element below the name, its members one a line.
			fmt.Fprintf(w, "%s%s\n", indent, m.name)
			printOrdered(w, list, indent+"  ")
			continue
		}
		fmt.Fprintf(w, "%s%-*s  %s\n", indent, width, m.name, reportValue(m.value))
	}
}

// hasObjects reports whether a list holds an object, or a list of them.
func hasObjects(list []any) bool {
	for _, el := range list {
		switch el := el.(type) {
		case []member:
			return true
		case []any:
			if hasObjects(el) {
				return true
			}
		}
	}
	return false
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
		// An object among scalars: inline, members in their order.
		parts := make([]string, len(v))
		for n, m := range v {
			parts[n] = m.name + ": " + reportValue(m.value)
		}
		return "{" + strings.Join(parts, ", ") + "}"
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
		if isHex(pos[1]) { // a digest, as plan and run print them
			s, err := lookupDigest(l.store, pos[1])
			if err != nil {
				return nil, nil, err
			}
			return l.store, []subject{s}, nil
		}
		out, err := resolveAddr(ctx, l, pos[1])
		return l.store, out, err
	case len(pos) == 1 && isHex(pos[0]):
		st, err := pf.openHere()
		if err != nil {
			return nil, nil, err
		}
		s, err := lookupDigest(st, pos[0])
		if err != nil {
			return nil, nil, err
		}
		return st, []subject{s}, nil
	}
	return nil, nil, usageError(fmt.Sprintf("usage: lacuna %s PIPELINE ADDR, or lacuna %s DIGEST (an action key or content digest, or a prefix of one of at least %d hex digits; with --store or LACUNA_STORE when not ./.lacuna)", cmd.Name, cmd.Name, artifacts.MinPrefix))
}

// isHex reports whether s is hex digits only, as a digest or a prefix
// of one is.
func isHex(s string) bool {
	return s != "" && strings.Trim(s, "0123456789abcdefABCDEF") == ""
}

// lookupDigest finds what an action key, content digest or a unique
// prefix of one (as plan and run print them) names in the store: an
// action (and its output), a failed action, or an object, with the
// action that wrote it when the store still holds its entry.
func lookupDigest(st *artifacts.Store, ref string) (subject, error) {
	prefix := strings.ToLower(ref)
	if len(prefix) < artifacts.MinPrefix {
		return subject{}, usageError(fmt.Sprintf("digest prefix %q is too short: give at least %d hex digits", ref, artifacts.MinPrefix))
	}
	if len(prefix) > 16 {
		return subject{}, usageError(fmt.Sprintf("%q is not a digest: digests are 16 hex digits", ref))
	}
	matches, err := st.MatchPrefix(prefix)
	if err != nil {
		return subject{}, err
	}
	kinds := map[artifacts.Digest]map[string]bool{}
	var names []artifacts.Digest
	for _, m := range matches {
		if kinds[m.Digest] == nil {
			kinds[m.Digest] = map[string]bool{}
			names = append(names, m.Digest)
		}
		kinds[m.Digest][m.Kind] = true
	}
	switch {
	case len(names) == 0:
		return subject{}, fmt.Errorf("no action key or content digest in %s begins with %s", relPath(st.Root()), prefix)
	case len(names) > 1:
		var b strings.Builder
		for i, d := range names {
			if i == 8 {
				fmt.Fprintf(&b, "\n  ... and %d more", len(names)-i)
				break
			}
			fmt.Fprintf(&b, "\n  %s  %s", d, describeDigest(st, d, kinds[d]))
		}
		return subject{}, fmt.Errorf("digest prefix %s is ambiguous: %d names in %s begin with it; give more digits:%s", prefix, len(names), relPath(st.Root()), b.String())
	}
	d, kind := names[0], kinds[names[0]]
	if kind[artifacts.KindAction] {
		a, err := st.GetAction(d)
		switch {
		case err == nil:
			return subject{node: a.Node, action: a, object: a.Output}, nil
		case !errors.Is(err, artifacts.ErrNotFound):
			return subject{}, err
		}
	}
	if kind[artifacts.KindFailure] {
		if f, err := st.GetFailure(d); err == nil {
			return subject{node: f.Node, failure: f, pending: "failed"}, nil
		}
	}
	if kind[artifacts.KindObject] {
		s := subject{object: artifacts.Object{Digest: d}}
		writers, err := st.Writers(d)
		if err != nil {
			return subject{}, err
		}
		for _, k := range writers {
			if a, err := st.GetAction(k); err == nil && a.Output.Digest == d {
				s.node, s.action, s.object = a.Node, a, a.Output
				break
			}
		}
		return s, nil
	}
	return subject{}, fmt.Errorf("%s is gone from %s", d, relPath(st.Root()))
}

// describeDigest says what a name of the store is, for a list of
// candidates: "action of node.x", "object of node.y", "failed action of
// node.z".
func describeDigest(st *artifacts.Store, d artifacts.Digest, kind map[string]bool) string {
	switch {
	case kind[artifacts.KindAction]:
		if a, err := st.GetAction(d); err == nil {
			return "action key of " + a.Node
		}
		return "action key"
	case kind[artifacts.KindFailure]:
		if f, err := st.GetFailure(d); err == nil {
			return "failed action of " + f.Node
		}
		return "failed action"
	}
	if ws, _ := st.Writers(d); len(ws) > 0 {
		if a, err := st.GetAction(ws[0]); err == nil {
			return fmt.Sprintf("content digest of %s (%s rows)", a.Node, commas(a.Output.Rows))
		}
	}
	return "content digest"
}

// resolveAddr turns an address of a loaded pipeline into its subjects:
// one for an instance, every instance for a for_each node's address.
func resolveAddr(ctx context.Context, l *loaded, addr string) ([]subject, error) {
	entries, err := l.reader().Plan(ctx, l.graph, []string{addr})
	if err != nil {
		return nil, err
	}
	var out []subject
	for _, e := range entries {
		if e.Node != addr && !strings.HasPrefix(e.Node, addr+"[") {
			continue
		}
		s := subject{node: e.Node}
		if e.Status == engine.PlanCached {
			a, err := l.store.GetAction(e.Key)
			if err != nil {
				return nil, err
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
					return nil, err
				}
				s.failure = f
			}
		}
		out = append(out, s)
	}
	return out, nil
}
