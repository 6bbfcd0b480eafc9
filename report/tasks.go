package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/lacuna-dev/lacuna/addrs"
)

// NovelAPIBench's model-free stages: versions, APIs, bundles, tasks and
// what C1 kept.

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
