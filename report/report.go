package report

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/lacuna-dev/lacuna/addrs"
	"github.com/lacuna-dev/lacuna/annotations"
	"github.com/lacuna-dev/lacuna/artifacts"
)

// Node is one node instance of the pipeline as the report sees it: where
// its artifact is, or why it has none.
type Node struct {
	// Addr is the instance's address: node.metrics.table,
	// node.judge.greedy["m/lib/S"].
	Addr string
	// Type is its node type (metrics, judge, retrieval_eval, ...).
	Type string
	// Object is its artifact; Object.Digest is "" when it has none for
	// its current inputs.
	Object artifacts.Object
	// Config is the configuration its action recorded (JSON), from which
	// the report reads how intervals were computed (ci, bootstrap, seed).
	Config json.RawMessage
	// Pending says why there is no artifact (the plan's status and
	// reason), when Object.Digest is "".
	Pending string
	// LastKnown marks an artifact that is a last run's result, or computed
	// from such, because the node's key cannot be computed now (a model
	// server down): the report says so beside it.
	LastKnown bool
}

func (n Node) computed() bool { return n.Object.Digest != "" }

// Input is what a report is built from.
type Input struct {
	// Title heads the page: the pipeline's name.
	Title string
	// Run is the command that computes what is missing, shown beside
	// every node not computed: "lacuna run pipelines/quickstart.hcl".
	Run string
	// Store holds the artifacts; Build opens (and so verifies) each one
	// it reads.
	Store *artifacts.Store
	// Nodes are the pipeline's instances, in the plan's order.
	Nodes []Node
	// Labels are people's labels of the pipeline's rows (package
	// annotations: annotations.Load), compared with the judge's classes
	// and summed up; none: no such section.
	Labels []annotations.Label
}

// Report is a built report, ready to write. It is not safe for concurrent
// use.
type Report struct {
	Title string
	// Run is the command that computes what is missing (Input.Run).
	Run      string
	Sections []*Section
	// Artifacts are the artifacts the report read, by address.
	Artifacts []ArtifactRef
	// NotComputed are the instances of the types the report reads that
	// have no artifact yet.
	NotComputed []Pending
}

// ArtifactRef names one artifact the report read.
type ArtifactRef struct {
	Node      string `json:"node"`
	Type      string `json:"type"`
	Digest    string `json:"digest"`
	Rows      int64  `json:"rows"`
	LastKnown bool   `json:"last_known,omitempty"`
}

// Pending is a node instance with no artifact, and why.
type Pending struct {
	Node   string `json:"node"`
	Type   string `json:"type"`
	Reason string `json:"reason"`
}

// A Section is one part of the report: paragraphs, tables and figures in
// order, and the nodes it would read that are not computed.
type Section struct {
	ID      string
	Title   string
	Blocks  []Block
	Missing []Pending
}

// A Block is one paragraph, table or figure of a section.
type Block struct {
	Text   string
	Table  *Table
	Figure *Figure
}

func (s *Section) textf(format string, args ...any) {
	s.para(fmt.Sprintf(format, args...))
}

func (s *Section) para(text string) { s.Blocks = append(s.Blocks, Block{Text: text}) }

func (s *Section) table(t *Table)   { s.Blocks = append(s.Blocks, Block{Table: t}) }
func (s *Section) figure(f *Figure) { s.Blocks = append(s.Blocks, Block{Figure: f}) }

func (s *Section) empty() bool { return len(s.Blocks) == 0 && len(s.Missing) == 0 }

// Build reads the artifacts of in.Nodes and lays out the report. A node
// whose artifact cannot be read (corrupt, missing) fails the build; a
// node whose rows lack a column a section needs is named in that section
// and left out of it.
func Build(in Input) (*Report, error) {
	if in.Store == nil {
		return nil, fmt.Errorf("report: no store")
	}
	b := &builder{in: in, rows: map[string][]record{}, cols: map[string][]string{}, ids: map[string]int{}, used: map[string]ArtifactRef{}}
	b.rep = &Report{Title: in.Title, Run: in.Run}
	for i, part := range []func() error{
		b.tasksSection,
		b.table1Section,
		b.compositionSection,
		b.breakdownSections,
		b.ragSection,
		b.judgeSection,
		b.retrievalSection,
		b.internalizationSection,
		b.probesSection,
		b.rrbSection,
	} {
		if err := guard(part); err != nil {
			return nil, fmt.Errorf("report: part %d: %w", i+1, err)
		}
	}
	for _, n := range in.Nodes {
		if !n.computed() && reads[n.Type] {
			b.rep.NotComputed = append(b.rep.NotComputed, Pending{n.Addr, n.Type, n.Pending})
		}
	}
	addrs := make([]string, 0, len(b.used))
	for a := range b.used {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	for _, a := range addrs {
		b.rep.Artifacts = append(b.rep.Artifacts, b.used[a])
	}
	return b.rep, nil
}

// guard runs f, turning a panic (a plotting library's, on data it cannot
// draw) into an error: bad input is an error, never a crash.
func guard(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	return f()
}

// reads are the node types the report reads.
var reads = map[string]bool{
	"version_resolve": true, "surface_diff": true, "bundle": true, "tasks": true, "c1": true,
	"metrics": true, "judge": true, "retrieval_eval": true, "probe_metrics": true,
}

// builder holds what Build has read so far.
type builder struct {
	in   Input
	rep  *Report
	rows map[string][]record // by address
	cols map[string][]string // by address: the artifact's columns in order
	used map[string]ArtifactRef
	ids  map[string]int // file stems given out
	// names are the libraries' names (tasksSection), for the library
	// breakdown.
	names libNames
}

// record is one artifact row, column name → value as parquet-go
// reconstructs it (string, bool, int32, int64, float64, []any, nil).
type record map[string]any

// nodesOf are the instances of type typ, computed and not, in plan order.
func (b *builder) nodesOf(typ string) (computed []Node, missing []Pending) {
	for _, n := range b.in.Nodes {
		if n.Type != typ {
			continue
		}
		if n.computed() {
			computed = append(computed, n)
		} else {
			missing = append(missing, Pending{n.Addr, n.Type, n.Pending})
		}
	}
	return computed, missing
}

// read returns a computed node's rows.
func (b *builder) read(n Node) ([]record, error) {
	if rows, ok := b.rows[n.Addr]; ok {
		return rows, nil
	}
	r, err := b.in.Store.Open(n.Object)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", n.Addr, err)
	}
	maps, err := r.Maps()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", n.Addr, err)
	}
	rows := make([]record, len(maps))
	for i, m := range maps {
		rows[i] = record(m)
	}
	b.rows[n.Addr] = rows
	for _, f := range r.Schema().Fields() {
		b.cols[n.Addr] = append(b.cols[n.Addr], f.Name())
	}
	b.used[n.Addr] = ArtifactRef{Node: n.Addr, Type: n.Type, Digest: string(n.Object.Digest), Rows: int64(len(rows)), LastKnown: n.LastKnown}
	return rows, nil
}

// readWith reads n's rows and checks they have cols (a node of another
// version, or a table of another shape, may not); missing says which are
// absent ("" when none).
func (b *builder) readWith(n Node, cols ...string) (rows []record, missing string, err error) {
	r, err := b.in.Store.Open(n.Object)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", n.Addr, err)
	}
	have := map[string]bool{}
	for _, f := range r.Schema().Fields() {
		have[f.Name()] = true
	}
	var absent []string
	for _, c := range cols {
		if !have[c] {
			absent = append(absent, c)
		}
	}
	if len(absent) > 0 {
		return nil, fmt.Sprintf("%s has no column %s: left out", n.Addr, strings.Join(absent, ", ")), nil
	}
	rows, err = b.read(n)
	return rows, "", err
}

// id is a table's file stem for name (see stem).
func (b *builder) id(name string) string { return b.stem("table", name) }

// stem is a file stem for name, unique among those of kind (tables and
// figures live in directories of their own, and their anchors in the page
// are prefixed with their kind): lower-case letters, digits and dashes, a
// counter appended when taken.
func (b *builder) stem(kind, name string) string {
	stem := strings.Trim(nonStem.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if stem == "" {
		stem = "x"
	}
	b.ids[kind+"/"+stem]++
	if n := b.ids[kind+"/"+stem]; n > 1 {
		return stem + "-" + strconv.Itoa(n)
	}
	return stem
}

var nonStem = regexp.MustCompile(`[^a-z0-9]+`)

// newSection starts a section; it is kept (added to the report) only when
// it has something to show.
func (b *builder) newSection(id, title string) *Section {
	return &Section{ID: id, Title: title}
}

func (b *builder) keep(s *Section) {
	if !s.empty() {
		b.rep.Sections = append(b.rep.Sections, s)
	}
}

// figure makes a Figure of a plot.
func (b *builder) figure(name, title, caption string, series []string, sources []string, p plotAndSize) *Figure {
	return newFigure(b.stem("figure", name), title, caption, series, sources, p)
}

// Column readers: a missing or null value reads as the zero value (text),
// NaN (numbers) or false.

func (r record) str(col string) string {
	switch v := r[col].(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

func (r record) num(col string) float64 {
	switch v := r[col].(type) {
	case float64:
		return v
	case float32:
		return float64(v)
	case int64:
		return float64(v)
	case int32:
		return float64(v)
	case int:
		return float64(v)
	}
	return math.NaN()
}

func (r record) boolean(col string) bool {
	v, _ := r[col].(bool)
	return v
}

func (r record) strings(col string) []string {
	l, _ := r[col].([]any)
	out := make([]string, 0, len(l))
	for _, v := range l {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}

func (r record) nums(col string) []float64 {
	l, _ := r[col].([]any)
	out := make([]float64, 0, len(l))
	for _, v := range l {
		out = append(out, record{"v": v}.num("v"))
	}
	return out
}

// configOf reads a node's recorded configuration as JSON values.
func configOf(n Node) map[string]any {
	var m map[string]any
	if json.Unmarshal(n.Config, &m) != nil {
		return nil
	}
	return m
}

// short is an address without its "node." prefix, for tables.
func short(addr string) string { return strings.TrimPrefix(addr, "node.") }

// label is an address as a figure's axis or legend names it: the node's
// name and its key without quotes (released[mcq]); the address without
// "node." when it does not parse.
func label(addr string) string {
	i, err := addrs.ParseInstance(addr)
	if err != nil {
		return short(addr)
	}
	if k, ok := i.Key.Value(); ok {
		return i.Node.Name + "[" + k + "]"
	}
	return i.Node.Name
}

// uniq appends s to list unless present.
func uniq(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// nan is a slice of n NaNs.
func nan(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
	}
	return out
}
