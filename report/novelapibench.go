package report

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/lacuna-dev/lacuna/addrs"
	"github.com/lacuna-dev/lacuna/analysis"
	"github.com/lacuna-dev/lacuna/annotations"
	"github.com/lacuna-dev/lacuna/novelapibench/cells"
	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
)

// NovelAPIBench's sections: the model-free stages' tables (versions, APIs,
// bundles, tasks and what C1 kept), then what metrics and judge nodes
// computed.

// all is the metrics node's value for a pooled level.
const all = "all"

// tasksSection: per library, the versions, APIs, bundles and tasks of the
// model-free stages, and the tasks C1 and the audit keep by difficulty and
// by the target's kind (the README's headline table), with the reasons for
// every drop.
func (b *builder) tasksSection() error {
	s := b.newSection("tasks", "NovelAPIBench tasks: discovery, bundles, tasks and C1")
	types := []string{"version_resolve", "surface_diff", "bundle", "tasks", "c1"}
	have := map[string][]Node{}
	found := false
	for _, t := range types {
		c, m := b.nodesOf(t)
		have[t] = c
		s.Missing = append(s.Missing, m...)
		found = found || len(c) > 0 || len(m) > 0
	}
	if !found {
		return nil
	}
	defer b.keep(s)

	var libs []string
	type counts struct {
		versions                         string
		apis, novel, kept, bundles       int
		tasks, c1kept                    int
		hasDiff, hasBundle, hasTasks, c1 bool
	}
	per := map[string]*counts{}
	lib := func(name string) *counts {
		if per[name] == nil {
			per[name] = &counts{}
			libs = append(libs, name)
		}
		return per[name]
	}
	var sources []string
	need := map[string][]string{
		"version_resolve": {"library", "v_old", "v_new"},
		"surface_diff":    {"library", "api_id", "novel", "keep", "kind"},
		"bundle":          {"library"},
		"tasks":           {"library", "task_id"},
		"c1":              {"library", "task_id", "difficulty", "api_id", "keep", "reason"},
	}
	kinds := map[[2]string]string{} // (library, api_id) → the API's kind, from surface_diff
	var c1Rows []record
	var c1Nodes []string
	names := &b.names
	for _, t := range types {
		for _, n := range have[t] {
			rows, skip, err := b.readWith(n, need[t]...)
			if err != nil {
				return err
			}
			if skip != "" {
				s.para(skip)
				continue
			}
			sources = append(sources, n.Addr)
			names.add(n.Addr, distinct(rows, "library"))
			for _, r := range rows {
				c := lib(r.str("library"))
				switch t {
				case "version_resolve":
					c.versions = r.str("v_old") + " → " + r.str("v_new")
				case "surface_diff":
					c.hasDiff = true
					if r.str("api_id") == "" {
						continue // a library or package that could not be listed
					}
					c.apis++
					if r.boolean("novel") {
						c.novel++
					}
					if r.boolean("keep") {
						c.kept++
					}
					kinds[[2]string{r.str("library"), r.str("api_id")}] = r.str("kind")
				case "bundle":
					c.hasBundle = true
					c.bundles++
				case "tasks":
					c.hasTasks = true
					c.tasks++
				case "c1":
					c.c1 = true
					if r.boolean("keep") {
						c.c1kept++
					}
				}
			}
			if t == "c1" {
				c1Rows = append(c1Rows, rows...)
				c1Nodes = append(c1Nodes, n.Addr)
			}
		}
	}
	if len(libs) == 0 {
		return nil
	}
	// A node with no rows holds no library name: it counts 0 for the
	// library its for_each key names (tasks of a library with no bundle).
	for _, t := range types {
		for _, n := range have[t] {
			i, err := addrs.ParseInstance(n.Addr)
			k, keyed := i.Key.Value()
			if err != nil || !keyed || len(b.rows[n.Addr]) > 0 {
				continue
			}
			for _, l := range libs {
				if names.of(l) != k {
					continue
				}
				switch t {
				case "surface_diff":
					per[l].hasDiff = true
				case "bundle":
					per[l].hasBundle = true
				case "tasks":
					per[l].hasTasks = true
				case "c1":
					per[l].c1 = true
				}
			}
		}
	}
	s.textf("Counts of the rows of the model-free stages' artifacts, per library (named by its nodes' for_each key where each of them holds one library, else by the rows' library column): " +
		"version_resolve's versions, surface_diff's APIs (novel: new since the cutoff; kept: past its filters), " +
		"bundle's rows, tasks' rows and the tasks c1 keeps (C1 and the harness audit). No intervals: these are counts.")
	disc := &Table{ID: b.id("tasks-discovery"), Title: "Versions, APIs, bundles and tasks per library", Sources: sources,
		Columns: []Column{{Name: "library"}, {Name: "versions"}, {Name: "apis", Title: "APIs"}, {Name: "novel"}, {Name: "kept"},
			{Name: "bundles"}, {Name: "tasks"}, {Name: "c1_kept", Title: "kept by C1 + audit"}}}
	opt := func(ok bool, n int) Cell {
		if !ok {
			return Cell{}
		}
		return intCell(n)
	}
	for _, l := range libs {
		c := per[l]
		disc.Rows = append(disc.Rows, []Cell{textCell(names.of(l)), textCell(c.versions), opt(c.hasDiff, c.apis), opt(c.hasDiff, c.novel),
			opt(c.hasDiff, c.kept), opt(c.hasBundle, c.bundles), opt(c.hasTasks, c.tasks), opt(c.c1, c.c1kept)})
	}
	s.table(disc)
	if len(c1Rows) > 0 {
		if err := b.c1Tables(s, c1Rows, c1Nodes, kinds, sources, names.of); err != nil {
			return err
		}
	}
	return nil
}

// c1Tables: the tasks kept per library by difficulty and the target's
// kind, as kept/made, and the drops by reason.
func (b *builder) c1Tables(s *Section, rows []record, nodes []string, kinds map[[2]string]string, sources []string, name func(string) string) error {
	type tally struct{ kept, made int }
	type libTally struct {
		all  tally
		diff map[string]*tally
		kind map[string]*tally
	}
	var libs []string
	per := map[string]*libTally{}
	var diffs []string
	add := func(m map[string]*tally, k string, keep bool) {
		if m[k] == nil {
			m[k] = &tally{}
		}
		m[k].made++
		if keep {
			m[k].kept++
		}
	}
	total := &libTally{diff: map[string]*tally{}, kind: map[string]*tally{}}
	knownKinds := false
	for _, r := range rows {
		l := r.str("library")
		if per[l] == nil {
			per[l] = &libTally{diff: map[string]*tally{}, kind: map[string]*tally{}}
			libs = append(libs, l)
		}
		keep := r.boolean("keep")
		d := r.str("difficulty")
		diffs = uniq(diffs, d)
		k := kindClass(kinds[[2]string{l, r.str("api_id")}])
		knownKinds = knownKinds || k != ""
		for _, t := range []*libTally{per[l], total} {
			t.all.made++
			if keep {
				t.all.kept++
			}
			add(t.diff, d, keep)
			if k != "" {
				add(t.kind, k, keep)
			}
		}
	}
	diffs = orderDifficulties(diffs)
	cols := []Column{{Name: "library"}, {Name: "tasks"}, {Name: "kept", Title: "kept by C1 + audit"}}
	for _, d := range diffs {
		cols = append(cols, Column{Name: d})
	}
	if knownKinds {
		cols = append(cols, Column{Name: "functions"}, Column{Name: "methods"})
	}
	t := &Table{ID: b.id("tasks-kept"), Title: "Tasks made and kept by C1 + audit", Columns: cols, Sources: append([]string(nil), nodes...)}
	if knownKinds {
		for _, src := range sources {
			if strings.HasPrefix(src, "node.surface_diff.") {
				t.Sources = uniq(t.Sources, src)
			}
		}
	}
	frac := func(x *tally) Cell {
		if x == nil {
			return textCell("–")
		}
		return textCell(fmt.Sprintf("%d/%d", x.kept, x.made))
	}
	row := func(label string, lt *libTally) []Cell {
		pct := "–"
		if lt.all.made > 0 {
			pct = strconv.Itoa(int(math.Round(100*float64(lt.all.kept)/float64(lt.all.made)))) + "%"
		}
		r := []Cell{textCell(label), intCell(lt.all.made), textCell(fmt.Sprintf("%d (%s)", lt.all.kept, pct))}
		for _, d := range diffs {
			r = append(r, frac(lt.diff[d]))
		}
		if knownKinds {
			r = append(r, frac(lt.kind["function"]), frac(lt.kind["method"]))
		}
		return r
	}
	for _, l := range libs {
		t.Rows = append(t.Rows, row(name(l), per[l]))
	}
	if len(libs) > 1 {
		t.Rows = append(t.Rows, row(all, total))
	}
	t.Caption = "From the c1 rows (keep). Cells are kept/made; the kind of a task's target (function or method) is its api_id's kind in the library's surface_diff rows" +
		" (types and other kinds are in neither column)."
	if !knownKinds {
		t.Caption = "From the c1 rows (keep). Cells are kept/made."
	}
	s.table(t)

	// The share kept per difficulty, with Wilson's interval.
	cats := append(slices.Clone(diffs), all)
	var series []seriesCI
	var labels []string
	for _, l := range libs {
		ser := seriesCI{Name: name(l), Y: nan(len(cats)), Lo: nan(len(cats)), Hi: nan(len(cats))}
		for i, d := range cats {
			x := per[l].diff[d]
			if d == all {
				x = &per[l].all
			}
			if x == nil || x.made == 0 {
				continue
			}
			lo, hi, _ := wilson95(x.kept, x.made)
			ser.Y[i], ser.Lo[i], ser.Hi[i] = 100*float64(x.kept)/float64(x.made), lo, hi
		}
		series = append(series, ser)
		labels = append(labels, ser.Name)
	}
	p, w, err := dotCIFigure("Tasks kept by C1 + audit", "kept (%)", cats, series)
	if err != nil {
		return err
	}
	s.figure(b.figure("tasks-kept", "Share of the tasks kept by C1 + audit, per difficulty and library",
		"Points: kept / made from the c1 rows, per library and difficulty (all: every difficulty); bars: Wilson's 95% interval, computed here from the counts.",
		labels, slices.Clone(nodes), plotAndSize{p, w, figureHeight}))

	// Drops by reason.
	type reasonKey struct{ lib, reason string }
	count := map[reasonKey]int{}
	var keys []reasonKey
	for _, r := range rows {
		if r.boolean("keep") {
			continue
		}
		k := reasonKey{r.str("library"), reasonClass(r.str("reason"))}
		if count[k] == 0 {
			keys = append(keys, k)
		}
		count[k]++
	}
	if len(keys) == 0 {
		return nil
	}
	sort.SliceStable(keys, func(i, j int) bool {
		if li, lj := slices.Index(libs, keys[i].lib), slices.Index(libs, keys[j].lib); li != lj {
			return li < lj
		}
		if count[keys[i]] != count[keys[j]] {
			return count[keys[i]] > count[keys[j]]
		}
		return keys[i].reason < keys[j].reason
	})
	drops := &Table{ID: b.id("tasks-dropped"), Title: "Tasks dropped by C1 + audit, by reason", Sources: append([]string(nil), nodes...),
		Caption: "The c1 rows with keep = false, counted by their reason (its text up to the first colon or parenthesis; an audit drop keeps the mutants its harness accepts).",
		Columns: []Column{{Name: "library"}, {Name: "reason"}, {Name: "tasks"}}}
	for _, k := range keys {
		drops.Rows = append(drops.Rows, []Cell{textCell(name(k.lib)), textCell(k.reason), intCell(count[k])})
	}
	s.table(drops)
	return nil
}

// libNames names libraries as the pipeline does: by the for_each key of
// the nodes that hold them (lo for node.c1.lib["lo"], whose rows say
// github.com/samber/lo), where every such node holds one library and no
// key names two libraries; else by the rows' library column.
type libNames struct {
	key  map[string]string          // library → key
	bad  map[string]bool            // libraries whose key is ambiguous
	libs map[string]map[string]bool // key → libraries
}

func (n *libNames) add(addr string, libs []string) {
	if n.key == nil {
		n.key, n.bad, n.libs = map[string]string{}, map[string]bool{}, map[string]map[string]bool{}
	}
	i, err := addrs.ParseInstance(addr)
	k, keyed := i.Key.Value()
	if len(libs) == 0 {
		return
	}
	if err != nil || !keyed || len(libs) > 1 {
		for _, l := range libs {
			n.bad[l] = true
		}
		return
	}
	l := libs[0]
	if old, ok := n.key[l]; ok && old != k {
		n.bad[l] = true
	}
	n.key[l] = k
	if n.libs[k] == nil {
		n.libs[k] = map[string]bool{}
	}
	n.libs[k][l] = true
}

func (n *libNames) of(lib string) string {
	k, ok := n.key[lib]
	if !ok || n.bad[lib] || len(n.libs[k]) > 1 {
		return lib
	}
	return k
}

// kindClass sorts an API kind (Go's func or method; Python's function,
// method, classmethod, staticmethod, property) into function or method;
// "" for other kinds (types, classes) and unknown APIs.
func kindClass(kind string) string {
	switch kind {
	case "func", "function":
		return "function"
	case "method", "classmethod", "staticmethod", "property":
		return "method"
	}
	return ""
}

// orderDifficulties puts easy, medium and hard first, the rest after in
// their order.
func orderDifficulties(ds []string) []string {
	rank := func(d string) int {
		if i := slices.Index([]string{"easy", "medium", "hard"}, d); i >= 0 {
			return i
		}
		return 3
	}
	out := slices.Clone(ds)
	sort.SliceStable(out, func(i, j int) bool { return rank(out[i]) < rank(out[j]) })
	return out
}

// reasonClass is the gist of a c1 drop reason: an audit drop as it is
// ("audit: the harness accepts perturb"), another up to its first colon
// or parenthesis.
func reasonClass(reason string) string {
	if strings.HasPrefix(reason, "audit:") {
		return reason
	}
	if strings.HasPrefix(reason, "C1:") {
		r := strings.TrimSpace(strings.TrimPrefix(reason, "C1:"))
		if i := strings.Index(r, " ("); i >= 0 {
			r = r[:i]
		}
		return "C1: " + r
	}
	cut := len(reason)
	for _, sep := range []string{":", " ("} {
		if i := strings.Index(reason, sep); i >= 0 && i < cut {
			cut = i
		}
	}
	if reason == "" {
		return "(no reason given)"
	}
	return reason[:cut]
}

// metricsTable is one metrics node's artifact, with the columns it has.
type metricsTable struct {
	node Node
	rows []record
	pass []string // pass@ columns in order: pass_at_1, pass_at_1_sampled, pass_at_K
	comp []string // composition columns, in the paper's order
	ci   string   // how its intervals were computed
}

var passCol = regexp.MustCompile(`^pass_at_([0-9]+|1_sampled)$`)

// compositionOrder are the composition columns of both definitions.
var compositionOrder = []string{"wrong_syntax", "wrong_api_selection", "wrong_import", "wrong_param", "wrong_shape_dtype", "wrong_logic", "unclassified"}

// metricsTables reads every computed metrics node; those not computed are
// added to s.Missing.
func (b *builder) metricsTables(s *Section) ([]metricsTable, error) {
	computed, missing := b.nodesOf("metrics")
	s.Missing = append(s.Missing, missing...)
	var out []metricsTable
	for _, n := range computed {
		rows, skip, err := b.readWith(n, "model", "cell", "difficulty", "library", "tasks")
		if err != nil {
			return nil, err
		}
		if skip != "" {
			s.para(skip)
			continue
		}
		m := metricsTable{node: n, rows: rows, ci: metricsCI(n)}
		have := map[string]bool{}
		for _, c := range b.cols[n.Addr] {
			have[c] = true
			if passCol.MatchString(c) {
				m.pass = append(m.pass, c)
			}
		}
		prefix := ""
		if !have["wrong_syntax"] && have["samples_wrong_syntax"] {
			prefix = "samples_"
			m.comp = append(m.comp, "samples_ok")
		}
		for _, c := range compositionOrder {
			if have[prefix+c] {
				m.comp = append(m.comp, prefix+c)
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// metricsCI says how a metrics node computed its intervals, from its
// recorded configuration.
func metricsCI(n Node) string {
	cfg := configOf(n)
	ci, _ := cfg["ci"].(string)
	switch ci {
	case "", "score":
		return "95% score intervals as the metrics artifact holds them (ci = \"score\": analysis.MeanCI, Wilson's interval on 0/1 values, a quasi-binomial score interval on fractions)"
	case "bootstrap":
		boot, seed := "1000", "1"
		if v, ok := cfg["bootstrap"].(float64); ok {
			boot = strconv.FormatFloat(v, 'f', -1, 64)
		}
		if v, ok := cfg["seed"].(float64); ok {
			seed = strconv.FormatFloat(v, 'f', -1, 64)
		}
		return "95% percentile bootstrap intervals over tasks as the metrics artifact holds them (ci = \"bootstrap\", " + boot + " resamples, seed " + seed + ")"
	case "none":
		return "no intervals: the metrics node computed none (ci = \"none\")"
	}
	return "intervals as the metrics artifact holds them (ci = " + strconv.Quote(ci) + ")"
}

// metricTitle is a metrics column's header.
func metricTitle(col string) string {
	switch col {
	case "pass_at_1_sampled":
		return "pass@1 (sampled)"
	case "api_acc":
		return "API_acc"
	case "param_corr":
		return "Param_corr"
	case "sem":
		return "Sem"
	case "samples_ok":
		return "OK"
	case "unclassified", "samples_unclassified":
		return "unclassified"
	}
	if k, ok := strings.CutPrefix(col, "pass_at_"); ok {
		return "pass@" + k
	}
	c := strings.TrimPrefix(col, "samples_")
	if strings.HasPrefix(c, "wrong_") {
		var b strings.Builder
		for _, w := range strings.Split(c, "_") {
			switch w {
			case "api":
				b.WriteString("API")
			default:
				b.WriteString(strings.ToUpper(w[:1]) + w[1:])
			}
		}
		return b.String()
	}
	return col
}

// ciOf is a metrics row's column with its _lo and _hi.
func ciOf(r record, col string) Cell {
	return ciCell(r.num(col), r.num(col+"_lo"), r.num(col+"_hi"))
}

// pooled are the rows of one model × cell over all difficulties and
// libraries (Table 1's), in cellOrder.
func pooled(rows []record) []record {
	var out []record
	for _, r := range rows {
		if r.str("difficulty") == all && r.str("library") == all {
			out = append(out, r)
		}
	}
	return byCell(out)
}

// cellRank is a cell's place in the paper's order (novelapibench/cells):
// its base cell's, a retriever's arm (CELL@RETRIEVER) after the oracle's;
// a cell the paper does not name after all of those.
func cellRank(cell string) (int, bool) {
	base, _, arm := strings.Cut(cell, "@")
	names := cells.Names()
	i := slices.Index(names, base)
	if i < 0 {
		i = len(names)
	}
	return i, arm
}

// cellOrder sorts cells by cellRank, keeping the order they came in
// otherwise.
func cellOrder(cs []string) []string {
	out := slices.Clone(cs)
	sort.SliceStable(out, func(i, j int) bool { return lessCell(out[i], out[j]) })
	return out
}

func lessCell(a, b string) bool {
	ra, aa := cellRank(a)
	rb, ab := cellRank(b)
	if ra != rb {
		return ra < rb
	}
	return !aa && ab
}

// byCell sorts metrics rows by model (as first seen), then cell
// (cellOrder), keeping their order otherwise.
func byCell(rows []record) []record {
	models := distinct(rows, "model")
	out := slices.Clone(rows)
	sort.SliceStable(out, func(i, j int) bool {
		mi, mj := slices.Index(models, out[i].str("model")), slices.Index(models, out[j].str("model"))
		if mi != mj {
			return mi < mj
		}
		return lessCell(out[i].str("cell"), out[j].str("cell"))
	})
	return out
}

// distinct lists a column's values in row order.
func distinct(rows []record, col string) []string {
	var out []string
	for _, r := range rows {
		out = uniq(out, r.str(col))
	}
	return out
}

// table1Section: pass@1 and pass@k per model × cell with their intervals,
// API_acc, Param_corr and Sem, and a figure of each pass@ column.
func (b *builder) table1Section() error {
	s := b.newSection("table1", "NovelAPIBench Table 1: pass@1 and pass@k per model × cell")
	ms, err := b.metricsTables(s)
	if err != nil {
		return err
	}
	defer b.keep(s)
	for _, m := range ms {
		rows := pooled(m.rows)
		s.textf("%s: the rows over all difficulties and libraries (difficulty = all, library = all), values in percent; %s. tasks counts the tasks whose samples ran.%s",
			short(m.node.Addr), m.ci, lastKnown(m.node))
		cols := []Column{{Name: "model"}, {Name: "cell"}, {Name: "tasks"}}
		metricCols := append(slices.Clone(m.pass), "api_acc", "param_corr", "sem")
		for _, c := range metricCols {
			cols = append(cols, Column{Name: c, Title: metricTitle(c)})
		}
		t := &Table{ID: b.id("table1-" + short(m.node.Addr)), Title: "Table 1 (" + short(m.node.Addr) + ")", Columns: cols, Sources: []string{m.node.Addr},
			Caption: "Pooled rows of " + m.node.Addr + "; " + m.ci + "."}
		for _, r := range rows {
			line := []Cell{textCell(r.str("model")), textCell(r.str("cell")), numCell(r.num("tasks"))}
			for _, c := range metricCols {
				line = append(line, ciOf(r, c))
			}
			t.Rows = append(t.Rows, line)
		}
		s.table(t)
		cells, models := distinct(rows, "cell"), distinct(rows, "model")
		for _, pc := range m.pass {
			var series []seriesCI
			for _, model := range models {
				ser := seriesCI{Name: model, Y: nan(len(cells)), Lo: nan(len(cells)), Hi: nan(len(cells))}
				for _, r := range rows {
					if r.str("model") == model {
						i := slices.Index(cells, r.str("cell"))
						ser.Y[i], ser.Lo[i], ser.Hi[i] = r.num(pc), r.num(pc+"_lo"), r.num(pc+"_hi")
					}
				}
				series = append(series, ser)
			}
			p, w, err := dotCIFigure(metricTitle(pc)+" per cell ("+short(m.node.Addr)+")", metricTitle(pc)+" (%)", cells, series)
			if err != nil {
				return err
			}
			s.figure(b.figure("table1-"+short(m.node.Addr)+"-"+pc, metricTitle(pc)+" per cell, by model",
				"Points: "+metricTitle(pc)+" of the pooled rows of "+m.node.Addr+"; bars: their intervals ("+m.ci+").",
				models, []string{m.node.Addr}, plotAndSize{p, w, figureHeight}))
		}
	}
	return nil
}

// lastKnown is a sentence for an artifact that is a last run's result.
func lastKnown(n Node) string {
	if !n.LastKnown {
		return ""
	}
	return " This artifact is a last run's result (or computed from one): its key cannot be checked now (a model server down?)."
}

// compositionSection: each failure class's share per model × cell as
// stacked bars, with the table.
func (b *builder) compositionSection() error {
	s := b.newSection("composition", "NovelAPIBench failure composition per cell")
	ms, err := b.metricsTables(&Section{}) // missing nodes are listed under Table 1
	if err != nil {
		return err
	}
	defer b.keep(s)
	for _, m := range ms {
		if len(m.comp) == 0 {
			continue
		}
		rows := pooled(m.rows)
		samples := strings.HasPrefix(m.comp[0], "samples_")
		what := "each failure class's share of the pass@1 failures (the composition the paper plots; failures counts them)"
		if samples {
			what = "each class's share of all the pass@1 samples, OK included (composition = \"all_samples\")"
		}
		s.textf("%s: %s, from the pooled rows; %s.%s", short(m.node.Addr), what, m.ci, lastKnown(m.node))
		cols := []Column{{Name: "model"}, {Name: "cell"}, {Name: "failures"}}
		for _, c := range m.comp {
			cols = append(cols, Column{Name: c, Title: metricTitle(c)})
		}
		t := &Table{ID: b.id("composition-" + short(m.node.Addr)), Title: "Failure composition (" + short(m.node.Addr) + ")", Columns: cols,
			Sources: []string{m.node.Addr}, Caption: "Percent of " + map[bool]string{false: "the pass@1 failures", true: "the pass@1 samples"}[samples] + "; " + m.ci + "."}
		models := distinct(rows, "model")
		var cats []string
		for _, r := range rows {
			line := []Cell{textCell(r.str("model")), textCell(r.str("cell")), numCell(r.num("failures"))}
			for _, c := range m.comp {
				line = append(line, ciOf(r, c))
			}
			t.Rows = append(t.Rows, line)
			cats = append(cats, catName(models, r.str("model"), r.str("cell")))
		}
		s.table(t)
		var series []seriesCI
		var names []string
		for _, c := range m.comp {
			ser := seriesCI{Name: metricTitle(c), Y: nan(len(rows)), Lo: nan(len(rows)), Hi: nan(len(rows))}
			for i, r := range rows {
				ser.Y[i] = r.num(c)
			}
			series = append(series, ser)
			names = append(names, ser.Name)
		}
		p, w, err := barsFigure("Failure composition per cell ("+short(m.node.Addr)+")", "share (%)", cats, series, true)
		if err != nil {
			return err
		}
		s.figure(b.figure("composition-"+short(m.node.Addr), "Failure composition per cell",
			"Stacked bars: "+what+", per "+map[bool]string{false: "cell", true: "model · cell"}[len(models) > 1]+", read from "+m.node.Addr+
				"; a cell with no failures has no bar.", names, []string{m.node.Addr}, plotAndSize{p, w, figureHeight}))
	}
	return nil
}

// catName labels a model × cell category: the cell alone when there is one
// model.
func catName(models []string, model, cell string) string {
	if len(models) > 1 {
		return model + " · " + cell
	}
	return cell
}

// breakdownSections: pass@ per cell by difficulty and by library.
func (b *builder) breakdownSections() error {
	for _, by := range []struct{ col, other, id, title string }{
		{"difficulty", "library", "difficulty", "NovelAPIBench by difficulty"},
		{"library", "difficulty", "library", "NovelAPIBench by library"},
	} {
		s := b.newSection(by.id, by.title)
		ms, err := b.metricsTables(&Section{})
		if err != nil {
			return err
		}
		for _, m := range ms {
			var rows []record
			for _, r := range m.rows {
				if r.str(by.other) == all && r.str(by.col) != all {
					rows = append(rows, r)
				}
			}
			if len(rows) == 0 || len(m.pass) == 0 {
				continue
			}
			rows = byCell(rows)
			named := ""
			if by.col == "library" {
				named = " (a library named as in the tasks section)"
			}
			s.textf("%s: the rows over all %s (%s = all) per %s%s; %s.%s", short(m.node.Addr), map[string]string{"library": "libraries", "difficulty": "difficulties"}[by.other],
				by.other, by.col, named, m.ci, lastKnown(m.node))
			cols := []Column{{Name: "model"}, {Name: "cell"}, {Name: by.col}, {Name: "tasks"}}
			for _, c := range m.pass {
				cols = append(cols, Column{Name: c, Title: metricTitle(c)})
			}
			t := &Table{ID: b.id(by.id + "-" + short(m.node.Addr)), Title: "pass@ by " + by.col + " (" + short(m.node.Addr) + ")", Columns: cols,
				Sources: []string{m.node.Addr}, Caption: "Rows of " + m.node.Addr + " with " + by.other + " = all; " + m.ci + "."}
			group := func(r record) string {
				if by.col == "library" {
					return b.names.of(r.str("library"))
				}
				return r.str(by.col)
			}
			for _, r := range rows {
				line := []Cell{textCell(r.str("model")), textCell(r.str("cell")), textCell(group(r)), numCell(r.num("tasks"))}
				for _, c := range m.pass {
					line = append(line, ciOf(r, c))
				}
				t.Rows = append(t.Rows, line)
			}
			s.table(t)
			var groups []string
			for _, r := range rows {
				groups = uniq(groups, group(r))
			}
			if by.col == "difficulty" {
				groups = orderDifficulties(groups)
			}
			pc := m.pass[0]
			for _, model := range distinct(rows, "model") {
				var mine []record
				for _, r := range rows {
					if r.str("model") == model {
						mine = append(mine, r)
					}
				}
				cells := distinct(mine, "cell")
				var series []seriesCI
				for _, g := range groups {
					ser := seriesCI{Name: g, Y: nan(len(cells)), Lo: nan(len(cells)), Hi: nan(len(cells))}
					for _, r := range mine {
						if group(r) == g {
							i := slices.Index(cells, r.str("cell"))
							ser.Y[i], ser.Lo[i], ser.Hi[i] = r.num(pc), r.num(pc+"_lo"), r.num(pc+"_hi")
						}
					}
					series = append(series, ser)
				}
				p, w, err := dotCIFigure(metricTitle(pc)+" by "+by.col+" ("+model+")", metricTitle(pc)+" (%)", cells, series)
				if err != nil {
					return err
				}
				s.figure(b.figure(by.id+"-"+short(m.node.Addr)+"-"+model, metricTitle(pc)+" per cell by "+by.col+", "+model,
					"Points: "+metricTitle(pc)+" of "+m.node.Addr+"'s rows with "+by.other+" = all; bars: their intervals ("+m.ci+").",
					groups, []string{m.node.Addr}, plotAndSize{p, w, figureHeight}))
			}
		}
		b.keep(s)
	}
	return nil
}

// ragSection: each cell with the oracle's prepend beside the same cell
// with a real retriever's chunks (cells named CELL@RETRIEVER).
func (b *builder) ragSection() error {
	s := b.newSection("rag", "NovelAPIBench: oracle bundle against retrieval (RAG)")
	ms, err := b.metricsTables(&Section{})
	if err != nil {
		return err
	}
	defer b.keep(s)
	for _, m := range ms {
		if len(m.pass) == 0 {
			continue
		}
		pc := m.pass[0]
		rows := pooled(m.rows)
		retrievers := []string{"oracle"}
		bases := map[string][]string{} // model → cells with a retriever arm
		var models []string
		for _, r := range rows {
			if base, retr, ok := strings.Cut(r.str("cell"), "@"); ok {
				retrievers = uniq(retrievers, retr)
				models = uniq(models, r.str("model"))
				bases[r.str("model")] = uniq(bases[r.str("model")], base)
			}
		}
		if len(models) == 0 {
			continue
		}
		for m, cs := range bases {
			bases[m] = cellOrder(cs)
		}
		s.textf("%s: %s of each cell with the task's own bundle prepended (oracle, the cell's plain name) and with a retriever's top chunks in its place "+
			"(CELL@RETRIEVER), from the pooled rows; %s. Δ is the retriever's value less the oracle's, computed here from the two point values (no interval).%s",
			short(m.node.Addr), metricTitle(pc), m.ci, lastKnown(m.node))
		cols := []Column{{Name: "model"}, {Name: "cell"}}
		for _, r := range retrievers {
			cols = append(cols, Column{Name: r, Title: metricTitle(pc) + " " + r})
		}
		for _, r := range retrievers[1:] {
			cols = append(cols, Column{Name: "delta_" + r, Title: "Δ " + r})
		}
		t := &Table{ID: b.id("rag-" + short(m.node.Addr)), Title: "Oracle against retrieval (" + short(m.node.Addr) + ")", Columns: cols,
			Sources: []string{m.node.Addr}, Caption: metricTitle(pc) + " in percent; " + m.ci + "; Δ computed here."}
		find := func(model, cell string) record {
			for _, r := range rows {
				if r.str("model") == model && r.str("cell") == cell {
					return r
				}
			}
			return nil
		}
		for _, model := range models {
			var series []seriesCI
			cells := bases[model]
			for _, retr := range retrievers {
				series = append(series, seriesCI{Name: retr, Y: nan(len(cells)), Lo: nan(len(cells)), Hi: nan(len(cells))})
			}
			for i, base := range cells {
				line := []Cell{textCell(model), textCell(base)}
				oracle := find(model, base)
				var deltas []Cell
				for j, retr := range retrievers {
					cell := base
					if retr != "oracle" {
						cell = base + "@" + retr
					}
					r := find(model, cell)
					if r == nil {
						line = append(line, Cell{})
						if j > 0 {
							deltas = append(deltas, Cell{})
						}
						continue
					}
					line = append(line, ciOf(r, pc))
					series[j].Y[i], series[j].Lo[i], series[j].Hi[i] = r.num(pc), r.num(pc+"_lo"), r.num(pc+"_hi")
					if j > 0 {
						if oracle != nil {
							deltas = append(deltas, numCell(math.Round((r.num(pc)-oracle.num(pc))*100)/100))
						} else {
							deltas = append(deltas, Cell{})
						}
					}
				}
				t.Rows = append(t.Rows, append(line, deltas...))
			}
			p, w, err := dotCIFigure(metricTitle(pc)+": oracle against retrieval ("+model+")", metricTitle(pc)+" (%)", cells, series)
			if err != nil {
				return err
			}
			s.figure(b.figure("rag-"+short(m.node.Addr)+"-"+model, metricTitle(pc)+", oracle against retrieval, "+model,
				"Points: "+metricTitle(pc)+" per cell with the oracle prepend and with each retriever ("+m.node.Addr+"); bars: their intervals ("+m.ci+").",
				retrievers, []string{m.node.Addr}, plotAndSize{p, w, figureHeight}))
		}
		s.table(t)
	}
	return nil
}

// classOrder sorts classes as the paper does: OK, the six failure classes,
// then any other (NotRun, an old judge's) by name.
func classOrder(classes []string) []string {
	order := append([]string{goharness.ClassOK}, goharness.FailureClasses...)
	out := slices.Clone(classes)
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := slices.Index(order, out[i]), slices.Index(order, out[j])
		if ri < 0 {
			ri = len(order)
		}
		if rj < 0 {
			rj = len(order)
		}
		if ri != rj {
			return ri < rj
		}
		return out[i] < out[j]
	})
	return out
}

// notRun is the class of a Python sample never run: nothing was judged.
const notRun = "NotRun"

// wilson95 is Wilson's 95% score interval for k of n, in percent
// (analysis.MeanCI on 0/1 values is Wilson's interval).
func wilson95(k, n int) (lo, hi float64, ok bool) {
	vals := make([]float64, n)
	for i := range k {
		vals[i] = 1
	}
	ci, ok := analysis.MeanCI(vals, 0.95)
	return 100 * ci.Lo, 100 * ci.Hi, ok
}

// judgeSection: the judge's agreement with the classes calibration
// solutions have by construction (per node and path, Wilson intervals
// computed here), the pooled confusion matrix, and how the model samples
// were decided.
func (b *builder) judgeSection() error {
	s := b.newSection("judge", "NovelAPIBench judge: calibration agreement and confusion matrix")
	computed, missing := b.nodesOf("judge")
	s.Missing = missing
	if len(computed) == 0 && len(missing) == 0 && !hasKind(b.in.Labels, annotations.KindFailureClass) {
		return nil
	}
	defer b.keep(s)
	type agree struct{ n, ok int }
	type nodeCal struct {
		addr   string
		total  agree
		byPath map[string]*agree
	}
	var cals []nodeCal
	var paths []string
	confusion := map[[2]string]int{}
	var expected, assigned []string
	pool := nodeCal{addr: all, byPath: map[string]*agree{}}
	type verdicts struct {
		addr    string
		n       int
		classes map[string]int
		paths   map[string]int
	}
	var models []verdicts
	var modelClasses []string
	var calSources, modelSources []string
	for _, n := range computed {
		rows, skip, err := b.readWith(n, "kind", "class", "path", "expected")
		if err != nil {
			return err
		}
		if skip != "" {
			s.para(skip)
			continue
		}
		c := nodeCal{addr: n.Addr, byPath: map[string]*agree{}}
		v := verdicts{addr: n.Addr, classes: map[string]int{}, paths: map[string]int{}}
		for _, r := range rows {
			class, exp, path := r.str("class"), r.str("expected"), r.str("path")
			if r.str("kind") == "model" {
				v.n++
				v.classes[class]++
				v.paths[path]++
				modelClasses = uniq(modelClasses, class)
				paths = uniq(paths, path)
			}
			if exp == "" || class == notRun {
				continue
			}
			hit := 0
			if class == exp {
				hit = 1
			}
			for _, a := range []*nodeCal{&c, &pool} {
				a.total.n++
				a.total.ok += hit
				if a.byPath[path] == nil {
					a.byPath[path] = &agree{}
				}
				a.byPath[path].n++
				a.byPath[path].ok += hit
			}
			paths = uniq(paths, path)
			confusion[[2]string{exp, class}]++
			expected = uniq(expected, exp)
			assigned = uniq(assigned, class)
		}
		if c.total.n > 0 {
			cals = append(cals, c)
			calSources = append(calSources, n.Addr)
		}
		if v.n > 0 {
			models = append(models, v)
			modelSources = append(modelSources, n.Addr)
		}
	}
	paths = orderPaths(paths)
	if len(cals) > 0 {
		s.para("Calibration samples (the reference and the mutants, whose class is known by construction: the judge rows' expected column, NotRun left out): " +
			"how often the judge assigned that class. Agreement intervals are Wilson's 95% score interval, computed here from the counts.")
		cols := []Column{{Name: "judge"}, {Name: "samples"}, {Name: "agree"}, {Name: "agreement", Title: "agreement (%)"}}
		for _, p := range paths {
			cols = append(cols, Column{Name: "path_" + p, Title: p + " (agree/samples)"})
		}
		t := &Table{ID: b.id("judge-agreement"), Title: "Judge agreement with the calibration classes", Columns: cols, Sources: calSources,
			Caption: "Per judge node and pooled; agreement = agree / samples in percent with Wilson's 95% interval (computed here); per deciding path (rule, llm, fallback) as agree/samples."}
		rowsOf := cals
		if len(cals) > 1 {
			rowsOf = append(rowsOf, pool)
		}
		for _, c := range rowsOf {
			lo, hi, _ := wilson95(c.total.ok, c.total.n)
			line := []Cell{textCell(short(c.addr)), intCell(c.total.n), intCell(c.total.ok), ciCell(100*float64(c.total.ok)/float64(c.total.n), lo, hi)}
			for _, p := range paths {
				if a := c.byPath[p]; a != nil {
					line = append(line, textCell(fmt.Sprintf("%d/%d", a.ok, a.n)))
				} else {
					line = append(line, Cell{})
				}
			}
			t.Rows = append(t.Rows, line)
		}
		s.table(t)

		expected, assigned = classOrder(expected), classOrder(assigned)
		cm := &Table{ID: b.id("judge-confusion"), Title: "Calibration confusion matrix (expected class × assigned class)", Sources: calSources,
			Caption: "Counts of calibration samples over every judge node above: rows the class by construction, columns the judge's class."}
		cm.Columns = []Column{{Name: "expected"}}
		for _, a := range assigned {
			cm.Columns = append(cm.Columns, Column{Name: a})
		}
		cm.Columns = append(cm.Columns, Column{Name: "samples"}, Column{Name: "agree"})
		counts := make([][]int, len(expected))
		for i, e := range expected {
			line := []Cell{textCell(e)}
			tot := 0
			counts[i] = make([]int, len(assigned))
			for j, a := range assigned {
				counts[i][j] = confusion[[2]string{e, a}]
				tot += counts[i][j]
				line = append(line, intCell(counts[i][j]))
			}
			cm.Rows = append(cm.Rows, append(line, intCell(tot), intCell(confusion[[2]string{e, e}])))
		}
		s.table(cm)
		p, w, h, err := heatmapFigure("Calibration confusion matrix", "assigned class", "expected class", expected, assigned, counts)
		if err != nil {
			return err
		}
		s.figure(b.figure("judge-confusion", "Calibration confusion matrix",
			"Each cell counts the calibration samples of its expected class (row) the judge assigned its class (column), over "+strconv.Itoa(len(calSources))+" judge node(s).",
			nil, calSources, plotAndSize{p, w, h}))
	}
	if len(models) > 0 {
		modelClasses = classOrder(modelClasses)
		s.para("The model's samples (kind = model): the classes the judge assigned and the path that decided each (rule: the deterministic fast path; llm: the judge model; fallback: the deterministic fallback), counted from the judge rows.")
		cols := []Column{{Name: "judge"}, {Name: "samples"}}
		for _, c := range modelClasses {
			cols = append(cols, Column{Name: c})
		}
		for _, p := range paths {
			cols = append(cols, Column{Name: "path_" + p, Title: "by " + p})
		}
		t := &Table{ID: b.id("judge-verdicts"), Title: "Judge verdicts on the model's samples", Columns: cols, Sources: modelSources}
		for _, v := range models {
			line := []Cell{textCell(short(v.addr)), intCell(v.n)}
			for _, c := range modelClasses {
				line = append(line, intCell(v.classes[c]))
			}
			for _, p := range paths {
				line = append(line, intCell(v.paths[p]))
			}
			t.Rows = append(t.Rows, line)
		}
		s.table(t)
	}
	return b.humanJudge(s, computed)
}

// hasKind reports whether any label is of kind.
func hasKind(ls []annotations.Label, kind string) bool {
	return slices.ContainsFunc(ls, func(l annotations.Label) bool { return l.Kind == kind })
}

// orderPaths puts rule, llm and fallback first.
func orderPaths(ps []string) []string {
	rank := func(p string) int {
		if i := slices.Index([]string{"rule", "llm", "fallback"}, p); i >= 0 {
			return i
		}
		return 3
	}
	out := slices.Clone(ps)
	sort.SliceStable(out, func(i, j int) bool {
		if rank(out[i]) != rank(out[j]) {
			return rank(out[i]) < rank(out[j])
		}
		return out[i] < out[j]
	})
	return out
}
