package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
)

var cmdDiff = newCommand("diff", "[PIPELINE] A B",
	"compare two artifacts: schema, rows added, removed, changed", `
Diff compares two artifacts. A and B are action keys or content digests
(or unique prefixes of at least 4 hex digits, as plan and run print them)
of the store, or, after PIPELINE, node instance addresses of that
pipeline (its current results).

It reports schema changes (columns added, removed, or of another type),
then rows: added, removed and changed, each with a sample of at most
--sample rows. Rows are matched by key columns: --key COLS, else the
natural key of the node type when it has one (metrics: model, cell,
difficulty, library; judge and solve: task_id, sample_id; ...) and it is
unique in both, else by whole-row identity (rows are then only added or
removed). Columns only one side has are left out of the comparison.

For two metrics artifacts (types metrics, probe_metrics, retrieval_eval)
it prints every metric side by side, A, B and the delta B − A, per key
(--columns picks the metrics; by default metrics' confidence bounds and
counts, the columns ending in _lo, _hi and _n, are left out). --where-a
and --where-b keep only some rows of each side, which compares two
models' rows of one metrics table; a key column both filter on is
dropped from the key:

  lacuna diff pipelines/novelapibench.hcl node.metrics.table node.metrics.table \
    --where-a model=qwen-7b --where-b model=qwen-32b

--json prints the comparison as one JSON object. Diff exits 0 whether or
not the artifacts differ, unless --exit-code: then 1 when they differ.`)

var diffFlags struct {
	pipelineFlags
	key      string
	columns  string
	sample   int
	whereA   multiFlag
	whereB   multiFlag
	exitCode bool
}

func init() {
	diffFlags.pipelineFlags.add(cmdDiff.Flag)
	cmdDiff.Flag.StringVar(&diffFlags.key, "key", "", "match rows by these columns (comma-separated; default: the node type's natural key, else whole rows)")
	cmdDiff.Flag.StringVar(&diffFlags.columns, "columns", "", "metrics to print side by side (comma-separated; default: every numeric column but the key's)")
	cmdDiff.Flag.IntVar(&diffFlags.sample, "sample", 5, "rows to print of each of added, removed and changed")
	cmdDiff.Flag.Var(&diffFlags.whereA, "where-a", "compare only A's rows whose column has this value: COLUMN=VALUE (repeatable)")
	cmdDiff.Flag.Var(&diffFlags.whereB, "where-b", "compare only B's rows whose column has this value: COLUMN=VALUE (repeatable)")
	cmdDiff.Flag.BoolVar(&diffFlags.exitCode, "exit-code", false, "exit 1 when the artifacts differ")
	cmdDiff.Run = runDiff
}

// naturalKeys are the columns that identify a row of a node type's
// output, for the types whose rows have such a key.
var naturalKeys = map[string][]string{
	"metrics":         {"model", "cell", "difficulty", "library"},
	"probe_metrics":   {"eval", "benchmark", "model"},
	"retrieval_eval":  {"retrieve", "retriever", "tier", "k"},
	"tasks":           {"task_id"},
	"generate":        {"task_id", "sample_id"},
	"solve":           {"task_id", "sample_id"},
	"judge":           {"task_id", "sample_id"},
	"surface_diff":    {"library", "api_id"},
	"version_resolve": {"library"},
}

// metricsTypes are the node types whose rows are metrics: diff prints
// their numeric columns side by side.
var metricsTypes = map[string]bool{"metrics": true, "probe_metrics": true, "retrieval_eval": true}

// diffSide is one artifact diff compares.
type diffSide struct {
	Ref    string           `json:"ref"`
	Node   string           `json:"node,omitempty"`
	Type   string           `json:"type,omitempty"`
	Digest artifacts.Digest `json:"digest"`
	Rows   int              `json:"rows"` // after --where-a/-b
	reader *artifacts.Reader
	recs   []map[string]any
}

// diffResult is what `lacuna diff --json` prints.
type diffResult struct {
	A, B   *diffSide    `json:"-"`
	Sides  [2]*diffSide `json:"sides"`
	Same   bool         `json:"same"` // same rows (and schema)
	Schema schemaDiff   `json:"schema"`
	// Key is the columns rows were matched by; KeyFrom says where it
	// came from: "--key", "natural key of TYPE", or "whole rows".
	Key     []string         `json:"key"`
	KeyFrom string           `json:"key_from"`
	Note    string           `json:"note,omitempty"`
	Counts  diffCounts       `json:"counts"`
	Added   []map[string]any `json:"added"`
	Removed []map[string]any `json:"removed"`
	Changed []rowChange      `json:"changed"`
	Metrics []metricDelta    `json:"metrics,omitempty"`
}

type schemaDiff struct {
	Added   []nodes.Column `json:"added"`
	Removed []nodes.Column `json:"removed"`
	Changed []typeChange   `json:"changed"`
}

type typeChange struct {
	Column string `json:"column"`
	A      string `json:"a"`
	B      string `json:"b"`
}

type diffCounts struct {
	Added   int `json:"added"`
	Removed int `json:"removed"`
	Changed int `json:"changed"`
	Same    int `json:"same"`
}

// rowChange is a row both sides have (by key) with other values.
type rowChange struct {
	Key     map[string]any    `json:"key"`
	Columns map[string][2]any `json:"columns"` // column → [A, B]
	order   []string
}

// metricDelta is one metric of one key, side by side.
type metricDelta struct {
	Key    map[string]any `json:"key"`
	Metric string         `json:"metric"`
	A      *float64       `json:"a"`
	B      *float64       `json:"b"`
	Delta  *float64       `json:"delta"`
}

func runDiff(ctx context.Context, cmd *Command, args []string) error {
	var a, b *diffSide
	switch {
	case len(args) == 3 && isPipelinePath(args[0]):
		l, err := diffFlags.load(args[0])
		if err != nil {
			return err
		}
		if a, err = diffRef(ctx, l, l.store, args[1]); err != nil {
			return err
		}
		if b, err = diffRef(ctx, l, l.store, args[2]); err != nil {
			return err
		}
	case len(args) == 2 && isHex(args[0]) && isHex(args[1]):
		st, err := diffFlags.openHere()
		if err != nil {
			return err
		}
		if a, err = diffRef(ctx, nil, st, args[0]); err != nil {
			return err
		}
		if b, err = diffRef(ctx, nil, st, args[1]); err != nil {
			return err
		}
	default:
		return usageError("usage: lacuna diff DIGEST DIGEST, or lacuna diff PIPELINE ADDR ADDR (digests, or prefixes of at least 4 hex digits, may stand for addresses)")
	}
	res, err := compare(a, b, diffOptions{key: splitList(diffFlags.key), columns: splitList(diffFlags.columns), sample: diffFlags.sample, whereA: diffFlags.whereA, whereB: diffFlags.whereB})
	if err != nil {
		return err
	}
	if diffFlags.json {
		// JSON has no NaN or infinity: the samples write them null.
		for _, rows := range [][]map[string]any{res.Added, res.Removed} {
			for i, r := range rows {
				rows[i] = artifacts.JSONSafe(r).(map[string]any)
			}
		}
		for i, ch := range res.Changed {
			for c, v := range ch.Columns {
				ch.Columns[c] = [2]any{artifacts.JSONSafe(v[0]), artifacts.JSONSafe(v[1])}
			}
			res.Changed[i].Key = artifacts.JSONSafe(ch.Key).(map[string]any)
		}
		enc := json.NewEncoder(os.Stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		printDiff(os.Stdout, res)
	}
	if diffFlags.exitCode && !res.Same {
		return exitError(1)
	}
	return nil
}

// diffRef opens what ref names: an address of l's pipeline (one
// instance), or a digest or prefix in st.
func diffRef(ctx context.Context, l *loaded, st *artifacts.Store, ref string) (*diffSide, error) {
	var s subject
	switch {
	case isHex(ref):
		var err error
		if s, err = lookupDigest(st, ref); err != nil {
			return nil, err
		}
	default:
		subs, err := resolveAddr(ctx, l, ref)
		if err != nil {
			return nil, err
		}
		switch {
		case len(subs) == 0:
			return nil, fmt.Errorf("%s: no such node instance", ref)
		case len(subs) > 1:
			return nil, fmt.Errorf("%s names %d instances (a for_each node): give one, such as %s", ref, len(subs), subs[0].node)
		}
		s = subs[0]
	}
	if s.object.Digest == "" {
		why := s.pending
		if why == "" {
			why = "no artifact"
		}
		return nil, fmt.Errorf("%s: %s", ref, why)
	}
	r, err := st.Open(s.object)
	if err != nil {
		return nil, err
	}
	side := &diffSide{Ref: ref, Node: s.node, Digest: s.object.Digest, reader: r, Type: r.Meta()[artifacts.MetaType]}
	if s.action != nil {
		side.Type = s.action.Type
	}
	if side.Node == "" {
		side.Node = r.Meta()[artifacts.MetaNode]
	}
	return side, nil
}

type diffOptions struct {
	key, columns   []string
	sample         int
	whereA, whereB []string
}

// compare compares two artifacts.
func compare(a, b *diffSide, o diffOptions) (*diffResult, error) {
	res := &diffResult{A: a, B: b, Sides: [2]*diffSide{a, b}, Added: []map[string]any{}, Removed: []map[string]any{}, Changed: []rowChange{}}
	colsA, colsB := nodes.Columns(a.reader.Schema()), nodes.Columns(b.reader.Schema())
	res.Schema = diffSchema(colsA, colsB)
	var common []string // columns both sides have, in A's order
	inB := map[string]bool{}
	for _, c := range colsB {
		inB[c.Name] = true
	}
	for _, c := range colsA {
		if inB[c.Name] {
			common = append(common, c.Name)
		}
	}
	var err error
	if a.recs, err = sideRecords(a, o.whereA, "--where-a"); err != nil {
		return nil, err
	}
	if b.recs, err = sideRecords(b, o.whereB, "--where-b"); err != nil {
		return nil, err
	}
	a.Rows, b.Rows = len(a.recs), len(b.recs)

	// The key: --key, else the type's natural key, less the columns
	// both sides' filters fix.
	fixed := map[string]bool{}
	for _, wa := range o.whereA {
		for _, wb := range o.whereB {
			ca, _, _ := strings.Cut(wa, "=")
			cb, _, _ := strings.Cut(wb, "=")
			fixed[ca] = fixed[ca] || ca == cb
		}
	}
	switch {
	case len(o.key) > 0:
		for _, k := range o.key {
			if !slices.Contains(common, k) {
				return nil, usageError(fmt.Sprintf("--key %s: both artifacts must have the column (common columns: %s)", k, strings.Join(common, ", ")))
			}
		}
		res.Key, res.KeyFrom = o.key, "--key"
		if dup := duplicateKey(a.recs, o.key); dup != "" {
			return nil, fmt.Errorf("--key %s does not identify A's rows: %s is there twice", strings.Join(o.key, ","), dup)
		}
		if dup := duplicateKey(b.recs, o.key); dup != "" {
			return nil, fmt.Errorf("--key %s does not identify B's rows: %s is there twice", strings.Join(o.key, ","), dup)
		}
	case a.Type != "" && a.Type == b.Type && naturalKeys[a.Type] != nil:
		var key []string
		for _, k := range naturalKeys[a.Type] {
			if !fixed[k] {
				key = append(key, k)
			}
		}
		ok := len(key) > 0
		for _, k := range key {
			ok = ok && slices.Contains(common, k)
		}
		if ok && duplicateKey(a.recs, key) == "" && duplicateKey(b.recs, key) == "" {
			res.Key, res.KeyFrom = key, "natural key of "+a.Type
		} else {
			res.Note = fmt.Sprintf("the natural key of %s (%s) does not identify these rows: matched by whole rows", a.Type, strings.Join(key, ", "))
		}
	}
	if res.Key == nil {
		res.Key, res.KeyFrom = []string{}, "whole rows"
	}
	if len(common) < len(colsA) || len(common) < len(colsB) {
		note := "columns only one side has are left out of the comparison"
		if res.Note != "" {
			note = res.Note + "; " + note
		}
		res.Note = note
	}

	if len(res.Key) == 0 {
		diffWholeRows(res, common, o.sample)
	} else {
		diffKeyed(res, common, o.sample)
		if metricsTypes[a.Type] && metricsTypes[b.Type] {
			if err := diffMetrics(res, common, o.columns); err != nil {
				return nil, err
			}
		}
	}
	res.Same = res.Counts.Added+res.Counts.Removed+res.Counts.Changed == 0 &&
		len(res.Schema.Added)+len(res.Schema.Removed)+len(res.Schema.Changed) == 0
	return res, nil
}

// sideRecords decodes a side's rows, keeping those every COLUMN=VALUE
// of where holds for.
func sideRecords(s *diffSide, where []string, flagName string) ([]map[string]any, error) {
	type cond struct{ col, val string }
	var conds []cond
	have := map[string]bool{}
	for _, f := range s.reader.Schema().Fields() {
		have[f.Name()] = true
	}
	for _, kv := range where {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, usageError(fmt.Sprintf("%s %q: want COLUMN=VALUE", flagName, kv))
		}
		if !have[k] {
			return nil, fmt.Errorf("%s: %s has no column %q%s", flagName, s.Ref, k, didYouMeanColumn(k, have))
		}
		conds = append(conds, cond{k, v})
	}
	var out []map[string]any
	for _, row := range s.reader.Rows() {
		rec, err := record(s.reader, row)
		if err != nil {
			return nil, err
		}
		keep := true
		for _, c := range conds {
			keep = keep && cell(rec[c.col]) == c.val
		}
		if keep {
			out = append(out, rec)
		}
	}
	return out, nil
}

func diffSchema(a, b []nodes.Column) schemaDiff {
	d := schemaDiff{Added: []nodes.Column{}, Removed: []nodes.Column{}, Changed: []typeChange{}}
	byName := map[string]nodes.Column{}
	for _, c := range a {
		byName[c.Name] = c
	}
	seen := map[string]bool{}
	for _, c := range b {
		seen[c.Name] = true
		old, ok := byName[c.Name]
		switch {
		case !ok:
			d.Added = append(d.Added, c)
		case columnSig(old) != columnSig(c):
			d.Changed = append(d.Changed, typeChange{c.Name, columnSig(old), columnSig(c)})
		}
	}
	for _, c := range a {
		if !seen[c.Name] {
			d.Removed = append(d.Removed, c)
		}
	}
	return d
}

// columnSig is a column's type and mode, its fields' included.
func columnSig(c nodes.Column) string {
	s := columnType(c.Type) + " " + columnMode(c.Repetition)
	if len(c.Fields) > 0 {
		parts := make([]string, len(c.Fields))
		for i, f := range c.Fields {
			parts[i] = f.Name + ": " + columnSig(f)
		}
		s += " {" + strings.Join(parts, ", ") + "}"
	}
	return s
}

// encode is a value's canonical text, for comparing values and rows.
func encode(v any) string {
	b, err := marshalJSON(artifacts.JSONSafe(v))
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func keyOf(rec map[string]any, key []string) string {
	parts := make([]string, len(key))
	for i, k := range key {
		parts[i] = encode(rec[k])
	}
	return strings.Join(parts, "\x00")
}

// duplicateKey returns a key that two of recs share, written k=v, or "".
func duplicateKey(recs []map[string]any, key []string) string {
	seen := map[string]bool{}
	for _, r := range recs {
		k := keyOf(r, key)
		if seen[k] {
			return keyText(project(r, key), key)
		}
		seen[k] = true
	}
	return ""
}

func project(rec map[string]any, cols []string) map[string]any {
	out := make(map[string]any, len(cols))
	for _, c := range cols {
		out[c] = rec[c]
	}
	return out
}

// keyText writes a key as k=v, k=v.
func keyText(k map[string]any, key []string) string {
	parts := make([]string, len(key))
	for i, c := range key {
		parts[i] = c + "=" + cell(k[c])
	}
	return strings.Join(parts, " ")
}

// diffWholeRows compares rows as multisets of their common columns.
func diffWholeRows(res *diffResult, common []string, sample int) {
	count := map[string]int{}
	for _, r := range res.A.recs {
		count[keyOf(r, common)]++
	}
	var added []map[string]any
	for _, r := range res.B.recs {
		k := keyOf(r, common)
		if count[k] > 0 {
			count[k]--
			res.Counts.Same++
			continue
		}
		added = append(added, r)
	}
	countB := map[string]int{}
	for _, r := range res.B.recs {
		countB[keyOf(r, common)]++
	}
	var removed []map[string]any
	for _, r := range res.A.recs {
		k := keyOf(r, common)
		if countB[k] > 0 {
			countB[k]--
			continue
		}
		removed = append(removed, r)
	}
	res.Counts.Added, res.Counts.Removed = len(added), len(removed)
	for _, r := range added[:min(sample, len(added))] {
		res.Added = append(res.Added, project(r, common))
	}
	for _, r := range removed[:min(sample, len(removed))] {
		res.Removed = append(res.Removed, project(r, common))
	}
}

// diffKeyed matches rows by res.Key.
func diffKeyed(res *diffResult, common []string, sample int) {
	inA := map[string]map[string]any{}
	for _, r := range res.A.recs {
		inA[keyOf(r, res.Key)] = r
	}
	inB := map[string]bool{}
	for _, rb := range res.B.recs {
		k := keyOf(rb, res.Key)
		inB[k] = true
		ra, ok := inA[k]
		if !ok {
			res.Counts.Added++
			if len(res.Added) < sample {
				res.Added = append(res.Added, project(rb, common))
			}
			continue
		}
		ch := rowChange{Key: project(rb, res.Key), Columns: map[string][2]any{}}
		for _, c := range common {
			if encode(ra[c]) != encode(rb[c]) {
				ch.Columns[c] = [2]any{ra[c], rb[c]}
				ch.order = append(ch.order, c)
			}
		}
		if len(ch.order) == 0 {
			res.Counts.Same++
			continue
		}
		res.Counts.Changed++
		if len(res.Changed) < sample {
			res.Changed = append(res.Changed, ch)
		}
	}
	for _, ra := range res.A.recs {
		if !inB[keyOf(ra, res.Key)] {
			res.Counts.Removed++
			if len(res.Removed) < sample {
				res.Removed = append(res.Removed, project(ra, common))
			}
		}
	}
}

// diffMetrics puts the numeric columns of the rows both sides have side
// by side, key by key in B's order.
func diffMetrics(res *diffResult, common, pick []string) error {
	numeric := map[string]bool{}
	for _, c := range nodes.Columns(res.A.reader.Schema()) {
		switch c.Type {
		case "INT32", "INT64", "FLOAT", "DOUBLE", "INT8", "INT16", "UINT8", "UINT16", "UINT32", "UINT64":
			numeric[c.Name] = c.Repetition != "repeated"
		}
	}
	var metrics []string
	if len(pick) > 0 {
		for _, m := range pick {
			if !slices.Contains(common, m) || !numeric[m] {
				return usageError(fmt.Sprintf("--columns %s: not a numeric column of both artifacts", m))
			}
		}
		metrics = pick
	} else {
		for _, c := range common {
			if !numeric[c] || slices.Contains(res.Key, c) {
				continue
			}
			if res.A.Type == "metrics" && (strings.HasSuffix(c, "_lo") || strings.HasSuffix(c, "_hi") || strings.HasSuffix(c, "_n")) {
				continue
			}
			metrics = append(metrics, c)
		}
	}
	inA := map[string]map[string]any{}
	for _, r := range res.A.recs {
		inA[keyOf(r, res.Key)] = r
	}
	for _, rb := range res.B.recs {
		ra, ok := inA[keyOf(rb, res.Key)]
		if !ok {
			continue
		}
		for _, m := range metrics {
			d := metricDelta{Key: project(rb, res.Key), Metric: m, A: number(ra[m]), B: number(rb[m])}
			if d.A != nil && d.B != nil {
				v := *d.B - *d.A
				d.Delta = &v
			}
			res.Metrics = append(res.Metrics, d)
		}
	}
	return nil
}

// number is a numeric value as a float64; nil for a null or NaN.
func number(v any) *float64 {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case float32:
		f = float64(x)
	case int64:
		f = float64(x)
	case int32:
		f = float64(x)
	case int:
		f = float64(x)
	case uint64:
		f = float64(x)
	case uint32:
		f = float64(x)
	default:
		return nil
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

func printDiff(w io.Writer, res *diffResult) {
	for i, s := range res.Sides {
		name := s.Node
		if name == "" {
			name = "-"
		}
		typ := ""
		if s.Type != "" {
			typ = " (" + s.Type + ")"
		}
		fmt.Fprintf(w, "%s  %s%s  %s  %s rows\n", "AB"[i:i+1], name, typ, s.Digest, commas(int64(s.Rows)))
	}
	if res.A.Digest == res.B.Digest && res.Same {
		fmt.Fprintln(w, "\nsame artifact")
		return
	}
	sd := res.Schema
	if len(sd.Added)+len(sd.Removed)+len(sd.Changed) == 0 {
		fmt.Fprintln(w, "\nschema: same columns")
	} else {
		fmt.Fprintln(w, "\nschema:")
		for _, c := range sd.Added {
			fmt.Fprintf(w, "  + %s  %s\n", c.Name, columnSig(c))
		}
		for _, c := range sd.Removed {
			fmt.Fprintf(w, "  - %s  %s\n", c.Name, columnSig(c))
		}
		for _, c := range sd.Changed {
			fmt.Fprintf(w, "  ~ %s  %s → %s\n", c.Column, c.A, c.B)
		}
	}
	by := res.KeyFrom
	if len(res.Key) > 0 {
		by = strings.Join(res.Key, ", ") + " (" + res.KeyFrom + ")"
	}
	c := res.Counts
	fmt.Fprintf(w, "rows matched by %s: %s added, %s removed, %s changed, %s same\n", by, commas(int64(c.Added)), commas(int64(c.Removed)), commas(int64(c.Changed)), commas(int64(c.Same)))
	if res.Note != "" {
		fmt.Fprintf(w, "note: %s\n", res.Note)
	}
	rowLine := func(r map[string]any) string {
		keys := make([]string, 0, len(r))
		for _, col := range res.order(r) {
			keys = append(keys, col+"="+clip(strings.ReplaceAll(cell(r[col]), "\n", "⏎"), 40))
		}
		return strings.Join(keys, " ")
	}
	if len(res.Added) > 0 {
		fmt.Fprintf(w, "\nadded (%d of %s):\n", len(res.Added), commas(int64(c.Added)))
		for _, r := range res.Added {
			fmt.Fprintf(w, "  + %s\n", rowLine(r))
		}
	}
	if len(res.Removed) > 0 {
		fmt.Fprintf(w, "\nremoved (%d of %s):\n", len(res.Removed), commas(int64(c.Removed)))
		for _, r := range res.Removed {
			fmt.Fprintf(w, "  - %s\n", rowLine(r))
		}
	}
	if len(res.Changed) > 0 && len(res.Metrics) == 0 {
		fmt.Fprintf(w, "\nchanged (%d of %s):\n", len(res.Changed), commas(int64(c.Changed)))
		for _, ch := range res.Changed {
			fmt.Fprintf(w, "  ~ %s\n", keyText(ch.Key, res.Key))
			for _, col := range ch.order {
				v := ch.Columns[col]
				fmt.Fprintf(w, "      %s: %s → %s\n", col, clip(cell(v[0]), 60), clip(cell(v[1]), 60))
			}
		}
	}
	if len(res.Metrics) > 0 {
		fmt.Fprintln(w, "\nmetrics (A, B, delta B − A):")
		t := newTable(append(slices.Clone(res.Key), "METRIC", "A", "B", "DELTA")...)
		for _, m := range res.Metrics {
			var line []string
			for _, k := range res.Key {
				line = append(line, cell(m.Key[k]))
			}
			line = append(line, m.Metric, fmtMetric(m.A), fmtMetric(m.B), fmtDelta(m.Delta))
			t.row(line...)
		}
		var b bytes.Buffer
		t.print(&b)
		fmt.Fprintln(w, indentText(strings.TrimSuffix(b.String(), "\n"), "  "))
	}
}

// order is the columns of a sampled row: A's column order, then B's.
func (res *diffResult) order(r map[string]any) []string {
	var out []string
	for _, s := range res.Sides {
		for _, f := range s.reader.Schema().Fields() {
			if _, ok := r[f.Name()]; ok && !slices.Contains(out, f.Name()) {
				out = append(out, f.Name())
			}
		}
	}
	return out
}

func fmtMetric(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.4g", *v)
}

func fmtDelta(v *float64) string {
	if v == nil {
		return "-"
	}
	if *v == 0 {
		return "0"
	}
	return fmt.Sprintf("%+.4g", *v)
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
