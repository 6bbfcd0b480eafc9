package report

import (
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/lacuna-dev/lacuna/novelapibench/cells"
)

// NovelAPIBench's metrics: Table 1, the failure composition, the
// difficulty, library and retriever breakdowns.

// all is the metrics node's value for a pooled level.
const all = "all"

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
