package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/lacuna-dev/lacuna/annotations"
)

// People's labels (package annotations): the failure class a person gives
// a judged sample, against the judge's class (Cohen's κ, as NovelAPIBench
// validates its judge), and the verdicts people give RRB items.

// pairs are two raters' labels of the same items, a[i] and b[i] of item i.
type pairs struct{ a, b []string }

func (p *pairs) add(a, b string) { p.a, p.b = append(p.a, a), append(p.b, b) }

func (p *pairs) agree() int {
	n := 0
	for i := range p.a {
		if p.a[i] == p.b[i] {
			n++
		}
	}
	return n
}

// kappaCell is Cohen's κ of p (annotations.Kappa), empty when undefined.
func kappaCell(p *pairs) Cell {
	k, _ := annotations.Kappa(p.a, p.b)
	return numCell(k)
}

// byNode groups labels of one kind by the node they label, the nodes and
// each node's annotators sorted.
func byNode(labels []annotations.Label, kind string) (map[string][]annotations.Label, []string) {
	out := map[string][]annotations.Label{}
	var nodes []string
	for _, l := range labels {
		if l.Kind != kind {
			continue
		}
		if out[l.Node] == nil {
			nodes = append(nodes, l.Node)
		}
		out[l.Node] = append(out[l.Node], l)
	}
	sort.Strings(nodes)
	return out, nodes
}

func annotatorsOf(ls []annotations.Label) []string {
	var out []string
	for _, l := range ls {
		out = uniq(out, l.Annotator)
	}
	sort.Strings(out)
	return out
}

// humanJudge adds to s the agreement of people's failure classes with the
// judge's, per judge node and annotator, with Cohen's κ, the people's
// agreement among themselves, and the human × judge confusion matrix.
func (b *builder) humanJudge(s *Section, judges []Node) error {
	labels, nodes := byNode(b.in.Labels, annotations.KindFailureClass)
	if len(nodes) == 0 {
		return nil
	}
	computed := map[string]Node{}
	for _, n := range judges {
		computed[n.Addr] = n
	}
	t := &Table{ID: b.id("judge-human"), Title: "The judge against people's labels (Cohen's κ)",
		Caption: "Per judge node and annotator: the samples both labelled, how many classes agree, the agreement in percent with Wilson's 95% interval " +
			"and Cohen's κ (annotations.Kappa: unweighted, chance from each rater's class frequencies; empty when undefined), all computed here from the judge rows and the labels.",
		Columns: []Column{{Name: "judge"}, {Name: "annotator"}, {Name: "samples"}, {Name: "agree"}, {Name: "agreement", Title: "agreement (%)"}, {Name: "kappa", Title: "Cohen's κ", Decimals: 3}}}
	inter := &Table{ID: b.id("judge-inter-annotator"), Title: "People's agreement among themselves (Cohen's κ)",
		Caption: "Per judge node and pair of annotators: the samples both labelled, how many agree, and Cohen's κ, computed here from the labels.",
		Columns: []Column{{Name: "judge"}, {Name: "annotator_a", Title: "annotator"}, {Name: "annotator_b", Title: "annotator"}, {Name: "samples"}, {Name: "agree"}, {Name: "kappa", Title: "Cohen's κ", Decimals: 3}}}
	confusion := map[[2]string]int{}
	var humanClasses, judgeClasses []string
	var stray []string
	unmatched := 0
	for _, node := range nodes {
		n, ok := computed[node]
		if !ok {
			stray = append(stray, fmt.Sprintf("%s (%d labels)", node, len(labels[node])))
			continue
		}
		rows, skip, err := b.readWith(n, "task_id", "sample_id", "model", "cell", "class")
		if err != nil {
			return err
		}
		if skip != "" {
			s.para(skip)
			continue
		}
		classOf := map[string]string{}
		for _, r := range rows {
			classOf[annotations.JudgeItem(r.str("task_id"), r.str("sample_id"), r.str("model"), r.str("cell"))] = r.str("class")
		}
		t.Sources = uniq(t.Sources, node)
		by := map[string]map[string]string{} // annotator → item → label
		pooled := &pairs{}
		for _, l := range labels[node] {
			_, ok := classOf[l.Item]
			if !ok {
				unmatched++
				continue
			}
			if by[l.Annotator] == nil {
				by[l.Annotator] = map[string]string{}
			}
			by[l.Annotator][l.Item] = l.Label
		}
		names := annotatorsOf(labels[node])
		for _, who := range names {
			p := &pairs{}
			items := sortedKeys(by[who])
			for _, item := range items {
				p.add(by[who][item], classOf[item])
				pooled.add(by[who][item], classOf[item])
				confusion[[2]string{by[who][item], classOf[item]}]++
				humanClasses = uniq(humanClasses, by[who][item])
				judgeClasses = uniq(judgeClasses, classOf[item])
			}
			if len(p.a) > 0 {
				t.Rows = append(t.Rows, agreementRow(short(node), who, p))
			}
		}
		if len(names) > 1 && len(pooled.a) > 0 {
			t.Rows = append(t.Rows, agreementRow(short(node), "all annotators", pooled))
		}
		if interAnnotator(inter, short(node), names, by) {
			inter.Sources = uniq(inter.Sources, node)
		}
	}
	s.para("People's labels of the judge's samples (lacuna's annotations, kind failure_class), joined with the judge rows by their item key (task, sample, model, cell).")
	if len(stray) > 0 {
		s.para("Labels of judge nodes with no artifact in this pipeline (not computed, or not in it), left out: " + strings.Join(stray, ", ") + ".")
	}
	if unmatched > 0 {
		s.para(fmt.Sprintf("%d labels name samples the judge nodes' current rows do not hold (the node recomputed since?), left out.", unmatched))
	}
	if len(t.Rows) > 0 {
		s.table(t)
	}
	if len(inter.Rows) > 0 {
		s.table(inter)
	}
	if len(confusion) == 0 {
		return nil
	}
	humanClasses, judgeClasses = classOrder(humanClasses), classOrder(judgeClasses)
	cm := &Table{ID: b.id("judge-human-confusion"), Title: "People's class × the judge's class", Sources: t.Sources,
		Caption: "Counts of labelled samples over every judge node and annotator above: rows the person's class, columns the judge's."}
	cm.Columns = []Column{{Name: "label"}}
	for _, c := range judgeClasses {
		cm.Columns = append(cm.Columns, Column{Name: c})
	}
	counts := make([][]int, len(humanClasses))
	for i, h := range humanClasses {
		line := []Cell{textCell(h)}
		counts[i] = make([]int, len(judgeClasses))
		for j, c := range judgeClasses {
			counts[i][j] = confusion[[2]string{h, c}]
			line = append(line, intCell(counts[i][j]))
		}
		cm.Rows = append(cm.Rows, line)
	}
	s.table(cm)
	p, w, h, err := heatmapFigure("People's class × the judge's class", "judge's class", "person's class", humanClasses, judgeClasses, counts)
	if err != nil {
		return err
	}
	s.figure(b.figure("judge-human-confusion", "People's class against the judge's class",
		"Each cell counts the labelled samples a person gave its row's class and the judge its column's.", nil, t.Sources, plotAndSize{p, w, h}))
	return nil
}

// agreementRow is one row of the judge-against-people table.
func agreementRow(node, who string, p *pairs) []Cell {
	n, k := len(p.a), p.agree()
	lo, hi, _ := wilson95(k, n)
	return []Cell{textCell(node), textCell(who), intCell(n), intCell(k), ciCell(100*float64(k)/float64(n), lo, hi), kappaCell(p)}
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// rrbSection: people's verdicts on RRB items (kind rrb_item), per node and
// annotator, the share they call valid with Wilson's interval, and their
// agreement among themselves.
func (b *builder) rrbSection() error {
	labels, nodes := byNode(b.in.Labels, annotations.KindRRBItem)
	if len(nodes) == 0 {
		return nil
	}
	s := b.newSection("rrb-annotations", "ToolSense RRB items: people's verdicts")
	defer b.keep(s)
	s.para("People's verdicts on Realistic Retrieval Benchmark items (lacuna's annotations, kind rrb_item): per labelled node and annotator, the items labelled, " +
		"how many were called valid, that share in percent with Wilson's 95% interval, and each other verdict's count; then Cohen's κ between annotators on the items both labelled. All computed here from the labels.")
	var verdicts []string
	for _, node := range nodes {
		for _, l := range labels[node] {
			if l.Label != "valid" {
				verdicts = uniq(verdicts, l.Label)
			}
		}
	}
	sort.Strings(verdicts)
	var stray []string
	for _, node := range nodes {
		if !slices.ContainsFunc(b.in.Nodes, func(n Node) bool { return n.Addr == node && n.computed() }) {
			stray = append(stray, node)
		}
	}
	if len(stray) > 0 {
		s.para("These labelled nodes have no artifact in this pipeline (not computed, or not in it); their labels are counted all the same: " + strings.Join(stray, ", ") + ".")
	}
	cols := []Column{{Name: "node"}, {Name: "annotator"}, {Name: "items"}, {Name: "valid"}, {Name: "valid_share", Title: "valid (%)"}}
	for _, v := range verdicts {
		cols = append(cols, Column{Name: v})
	}
	t := &Table{ID: b.id("rrb-verdicts"), Title: "Verdicts on RRB items", Columns: cols, Sources: nodes,
		Caption: "Labels of kind rrb_item; valid (%) is valid / items with Wilson's 95% interval, computed here."}
	inter := &Table{ID: b.id("rrb-inter-annotator"), Title: "Annotators' agreement on RRB items (Cohen's κ)", Sources: nodes,
		Columns: []Column{{Name: "node"}, {Name: "annotator_a", Title: "annotator"}, {Name: "annotator_b", Title: "annotator"}, {Name: "items"}, {Name: "agree"}, {Name: "kappa", Title: "Cohen's κ", Decimals: 3}}}
	for _, node := range nodes {
		by := map[string]map[string]string{}
		for _, l := range labels[node] {
			if by[l.Annotator] == nil {
				by[l.Annotator] = map[string]string{}
			}
			by[l.Annotator][l.Item] = l.Label
		}
		names := annotatorsOf(labels[node])
		for _, who := range names {
			count := map[string]int{}
			for _, v := range by[who] {
				count[v]++
			}
			n := len(by[who])
			lo, hi, _ := wilson95(count["valid"], n)
			line := []Cell{textCell(node), textCell(who), intCell(n), intCell(count["valid"]), ciCell(100*float64(count["valid"])/float64(n), lo, hi)}
			for _, v := range verdicts {
				line = append(line, intCell(count[v]))
			}
			t.Rows = append(t.Rows, line)
		}
		interAnnotator(inter, node, names, by)
	}
	s.table(t)
	if len(inter.Rows) > 0 {
		s.table(inter)
	}
	return nil
}

// interAnnotator adds to inter a row for each pair of annotators who both
// labelled some of the same items (by: annotator → item → label): the
// items they share, how many they agree on and Cohen's κ. It says whether
// it added any.
func interAnnotator(inter *Table, node string, names []string, by map[string]map[string]string) bool {
	added := false
	for i, a := range names {
		for _, c := range names[i+1:] {
			p := &pairs{}
			for _, item := range sortedKeys(by[a]) {
				if l, ok := by[c][item]; ok {
					p.add(by[a][item], l)
				}
			}
			if len(p.a) > 0 {
				inter.Rows = append(inter.Rows, []Cell{textCell(node), textCell(a), textCell(c), intCell(len(p.a)), intCell(p.agree()), kappaCell(p)})
				added = true
			}
		}
	}
	return added
}
