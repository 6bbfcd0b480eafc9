package report

import (
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/lacuna-dev/lacuna/analysis"
	"github.com/lacuna-dev/lacuna/annotations"
	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
)

// NovelAPIBench's judge: its agreement with the calibration classes and
// how it decided the model's samples.

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
