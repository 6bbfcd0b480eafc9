package report

import (
	"math"
	"slices"
	"strconv"
)

// ToolSense's sections: retrieval (Rc@k per tier), parametric retrieval
// (Rf@k and IS@k) and the probes.

// bootstrapCI says how a ToolSense node computed its intervals: a
// percentile bootstrap whose resamples and seed its configuration records.
func bootstrapCI(n Node, over string) string {
	cfg := configOf(n)
	boot, seed := "1000", "1"
	if v, ok := cfg["bootstrap"].(float64); ok {
		boot = strconv.FormatFloat(v, 'f', -1, 64)
	}
	if v, ok := cfg["seed"].(float64); ok {
		seed = strconv.FormatFloat(v, 'f', -1, 64)
	}
	if boot == "0" {
		return "no intervals (bootstrap = 0)"
	}
	return "95% percentile bootstrap intervals over " + over + " as the artifact holds them (" + boot + " resamples, seed " + seed + ")"
}

var evalCols = []string{"retrieve", "tier", "k", "queries", "rc_at_k", "rc_lo", "rc_hi", "answer_recall_at_k", "answer_recall_lo", "answer_recall_hi"}

// retrievalSection: Rc@k per tier and k, per retrieve output of every
// retrieval_eval node, as curves with their intervals and as tables.
func (b *builder) retrievalSection() error {
	s := b.newSection("retrieval", "ToolSense retrieval: Rc@k per tier")
	computed, missing := b.nodesOf("retrieval_eval")
	s.Missing = missing
	defer b.keep(s)
	for _, n := range computed {
		rows, skip, err := b.readWith(n, evalCols...)
		if err != nil {
			return err
		}
		if skip != "" {
			s.para(skip)
			continue
		}
		ci := bootstrapCI(n, "queries")
		s.textf("%s: Rc@k (the share of queries with an answer tool in the top k, ToolSense §3.3) per tier and k, in percent; %s. "+
			"Answer recall@k (the mean share of a query's answer tools in its top k) is not the paper's metric; it is shown apart.%s", short(n.Addr), ci, lastKnown(n))
		for _, metric := range []struct{ col, title, id string }{{"rc_at_k", "Rc@k", "rc"}, {"answer_recall_at_k", "answer recall@k", "answer-recall"}} {
			lo, hi := "rc_lo", "rc_hi"
			if metric.col != "rc_at_k" {
				lo, hi = "answer_recall_lo", "answer_recall_hi"
			}
			ks := distinctNums(rows, "k")
			cols := []Column{{Name: "retrieve"}, {Name: "tier"}, {Name: "queries"}}
			for _, k := range ks {
				cols = append(cols, Column{Name: metric.id + "_at_" + fmtNum(k, 0), Title: metric.title[:len(metric.title)-1] + fmtNum(k, 0)})
			}
			t := &Table{ID: b.id("retrieval-" + metric.id + "-" + short(n.Addr)), Title: metric.title + " per tier (" + short(n.Addr) + ")", Columns: cols,
				Sources: []string{n.Addr}, Caption: "Rows of " + n.Addr + "; " + ci + "."}
			for _, retr := range distinct(rows, "retrieve") {
				for _, tier := range distinct(rows, "tier") {
					line := []Cell{textCell(short(retr)), textCell(tier)}
					vals := make([]Cell, len(ks))
					queries := Cell{}
					found := false
					for _, r := range rows {
						if r.str("retrieve") != retr || r.str("tier") != tier {
							continue
						}
						found = true
						queries = numCell(r.num("queries"))
						vals[slices.Index(ks, r.num("k"))] = ciCell(r.num(metric.col), r.num(lo), r.num(hi))
					}
					if found {
						t.Rows = append(t.Rows, append(append(line, queries), vals...))
					}
				}
			}
			s.table(t)
			if metric.col != "rc_at_k" {
				continue
			}
			for _, retr := range distinct(rows, "retrieve") {
				tiers := distinct(filter(rows, "retrieve", retr), "tier")
				var series []seriesCI
				for _, tier := range tiers {
					ser := seriesCI{Name: tier, Y: nan(len(ks)), Lo: nan(len(ks)), Hi: nan(len(ks))}
					for _, r := range rows {
						if r.str("retrieve") == retr && r.str("tier") == tier {
							i := slices.Index(ks, r.num("k"))
							ser.Y[i], ser.Lo[i], ser.Hi[i] = r.num("rc_at_k"), r.num("rc_lo"), r.num("rc_hi")
						}
					}
					series = append(series, ser)
				}
				p, err := linesCIFigure("Rc@k per tier: "+label(retr), "k", "Rc@k (%)", ks, series, true, 100)
				if err != nil {
					return err
				}
				s.figure(b.figure("retrieval-"+short(n.Addr)+"-"+short(retr), "Rc@k per tier, "+short(retr),
					"Rc@k of "+retr+"'s rankings per tier over k (log scale), read from "+n.Addr+"; bars: "+ci+".",
					tiers, []string{n.Addr}, plotAndSize{p, widthFor(8), figureHeight}))
			}
		}
	}
	return nil
}

// internalizationSection: a parametric retriever's constrained/free pair,
// Rc@k beside Rf@k and IS@k = Rf@k / Rc@k, per configuration.
func (b *builder) internalizationSection() error {
	s := b.newSection("internalization", "ToolSense parametric retrieval: Rf@k and IS@k per configuration")
	computed, _ := b.nodesOf("retrieval_eval") // those not computed are listed under retrieval
	defer b.keep(s)
	for _, n := range computed {
		rows, skip, err := b.readWith(n, append(slices.Clone(evalCols), "free", "rf_at_k", "rf_lo", "rf_hi", "is_at_k", "is_lo", "is_hi")...)
		if err != nil {
			return err
		}
		if skip != "" {
			continue // said under retrieval
		}
		var pairs []record
		for _, r := range rows {
			if r.str("free") != "" {
				pairs = append(pairs, r)
			}
		}
		if len(pairs) == 0 {
			continue
		}
		ci := bootstrapCI(n, "queries")
		s.textf("%s: each configuration is a parametric retriever's constrained decoding (Rc@k, the retrieve column) paired with its free decoding (Rf@k, the free column) "+
			"on the same queries; IS@k = Rf@k / Rc@k (a ratio, not a percentage). Rc@k and Rf@k: %s; IS@k's interval: the delta method from those (analysis.InternalizationCI), as the artifact holds it.%s",
			short(n.Addr), ci, lastKnown(n))
		t := &Table{ID: b.id("internalization-" + short(n.Addr)), Title: "Rc@k, Rf@k and IS@k (" + short(n.Addr) + ")", Sources: []string{n.Addr},
			Caption: "Rows of " + n.Addr + " with a free-decoding pair; Rc@k and Rf@k in percent, IS@k a ratio.",
			Columns: []Column{{Name: "configuration"}, {Name: "free"}, {Name: "tier"}, {Name: "k"}, {Name: "queries"},
				{Name: "rc_at_k", Title: "Rc@k"}, {Name: "rf_at_k", Title: "Rf@k"}, {Name: "is_at_k", Title: "IS@k", Decimals: 4}}}
		for _, r := range pairs {
			t.Rows = append(t.Rows, []Cell{textCell(short(r.str("retrieve"))), textCell(short(r.str("free"))), textCell(r.str("tier")), numCell(r.num("k")),
				numCell(r.num("queries")), ciCell(r.num("rc_at_k"), r.num("rc_lo"), r.num("rc_hi")),
				ciCell(r.num("rf_at_k"), r.num("rf_lo"), r.num("rf_hi")), ciCell(r.num("is_at_k"), r.num("is_lo"), r.num("is_hi"))})
		}
		s.table(t)
		ks := distinctNums(pairs, "k")
		configs := distinct(pairs, "retrieve")
		tier := all
		if len(filter(pairs, "tier", all)) == 0 {
			tier = pairs[0].str("tier")
		}
		var recall, is []seriesCI
		var recallNames, isNames []string
		for _, cfg := range configs {
			rc := seriesCI{Name: "Rc@k " + label(cfg), Y: nan(len(ks)), Lo: nan(len(ks)), Hi: nan(len(ks))}
			rf := seriesCI{Name: "Rf@k " + label(cfg), Y: nan(len(ks)), Lo: nan(len(ks)), Hi: nan(len(ks))}
			isS := seriesCI{Name: label(cfg), Y: nan(len(ks)), Lo: nan(len(ks)), Hi: nan(len(ks))}
			for _, r := range pairs {
				if r.str("retrieve") != cfg || r.str("tier") != tier {
					continue
				}
				i := slices.Index(ks, r.num("k"))
				rc.Y[i], rc.Lo[i], rc.Hi[i] = r.num("rc_at_k"), r.num("rc_lo"), r.num("rc_hi")
				rf.Y[i], rf.Lo[i], rf.Hi[i] = r.num("rf_at_k"), r.num("rf_lo"), r.num("rf_hi")
				isS.Y[i], isS.Lo[i], isS.Hi[i] = r.num("is_at_k"), r.num("is_lo"), r.num("is_hi")
			}
			recall = append(recall, rc, rf)
			recallNames = append(recallNames, rc.Name, rf.Name)
			is = append(is, isS)
			isNames = append(isNames, isS.Name)
		}
		p, err := linesCIFigure("Rc@k and Rf@k, tier "+tier, "k", "recall (%)", ks, recall, true, 100)
		if err != nil {
			return err
		}
		s.figure(b.figure("internalization-recall-"+short(n.Addr), "Rc@k (constrained) and Rf@k (free) per configuration, tier "+tier,
			"From "+n.Addr+"; bars: "+ci+".", recallNames, []string{n.Addr}, plotAndSize{p, widthFor(8), figureHeight}))
		p, err = linesCIFigure("IS@k per configuration, tier "+tier, "k", "IS@k", ks, is, true, 1)
		if err != nil {
			return err
		}
		s.figure(b.figure("internalization-is-"+short(n.Addr), "IS@k per configuration, tier "+tier,
			"IS@k = Rf@k / Rc@k from "+n.Addr+"; bars: its delta-method interval as the artifact holds it.", isNames, []string{n.Addr}, plotAndSize{p, widthFor(8), figureHeight}))
	}
	return nil
}

// probesSection: each probe_eval's accuracy with its interval against
// chance and the majority baseline, and the share of answers per label
// beside the share of gold answers (positional bias).
func (b *builder) probesSection() error {
	s := b.newSection("probes", "ToolSense probes: accuracy and positional bias")
	computed, missing := b.nodesOf("probe_metrics")
	s.Missing = missing
	defer b.keep(s)
	for _, n := range computed {
		rows, skip, err := b.readWith(n, "eval", "benchmark", "model", "n", "correct", "accuracy", "lo", "hi", "chance", "majority_baseline",
			"unparseable", "labels", "predicted_share", "gold_share")
		if err != nil {
			return err
		}
		if skip != "" {
			s.para(skip)
			continue
		}
		ci := bootstrapCI(n, "items")
		s.textf("%s: exact-match accuracy per probe_eval in percent (an unparseable answer is wrong); %s; chance is a uniform guess, the majority baseline "+
			"always answers the most frequent gold label. Positional bias: the share of answers that chose each label beside the share of items whose gold answer it is.%s",
			short(n.Addr), ci, lastKnown(n))
		t := &Table{ID: b.id("probes-" + short(n.Addr)), Title: "Probe accuracy (" + short(n.Addr) + ")", Sources: []string{n.Addr},
			Caption: "Rows of " + n.Addr + "; " + ci + ".",
			Columns: []Column{{Name: "eval"}, {Name: "benchmark"}, {Name: "model"}, {Name: "n"}, {Name: "correct"}, {Name: "accuracy", Title: "accuracy (%)"},
				{Name: "chance"}, {Name: "majority_baseline", Title: "majority baseline"}, {Name: "unparseable"}}}
		bias := &Table{ID: b.id("probes-bias-" + short(n.Addr)), Title: "Positional bias (" + short(n.Addr) + ")", Sources: []string{n.Addr},
			Caption: "Percent of answers per label (predicted) and of items whose gold answer it is (gold), from " + n.Addr + ".",
			Columns: []Column{{Name: "eval"}, {Name: "label"}, {Name: "predicted", Title: "predicted (%)"}, {Name: "gold", Title: "gold (%)"}}}
		var cats []string
		acc := seriesCI{Name: "accuracy"}
		chance := seriesCI{Name: "chance"}
		major := seriesCI{Name: "majority baseline"}
		var biasCats []string
		pred := seriesCI{Name: "predicted"}
		gold := seriesCI{Name: "gold"}
		models := distinct(rows, "model")
		for _, r := range rows {
			t.Rows = append(t.Rows, []Cell{textCell(short(r.str("eval"))), textCell(r.str("benchmark")), textCell(r.str("model")), numCell(r.num("n")),
				numCell(r.num("correct")), ciCell(r.num("accuracy"), r.num("lo"), r.num("hi")), numCell(r.num("chance")),
				numCell(r.num("majority_baseline")), numCell(r.num("unparseable"))})
			cat := label(r.str("eval"))
			if len(models) > 1 {
				cat += " · " + r.str("model")
			}
			cats = append(cats, cat)
			acc.Y, acc.Lo, acc.Hi = append(acc.Y, r.num("accuracy")), append(acc.Lo, r.num("lo")), append(acc.Hi, r.num("hi"))
			for _, x := range []*seriesCI{&chance, &major} {
				col := map[string]string{"chance": "chance", "majority baseline": "majority_baseline"}[x.Name]
				x.Y, x.Lo, x.Hi = append(x.Y, r.num(col)), append(x.Lo, math.NaN()), append(x.Hi, math.NaN())
			}
			labels, ps, gs := r.strings("labels"), r.nums("predicted_share"), r.nums("gold_share")
			for i, l := range labels {
				p, g := math.NaN(), math.NaN()
				if i < len(ps) {
					p = ps[i]
				}
				if i < len(gs) {
					g = gs[i]
				}
				bias.Rows = append(bias.Rows, []Cell{textCell(short(r.str("eval"))), textCell(l), numCell(p), numCell(g)})
				biasCats = append(biasCats, cat+": "+l)
				pred.Y, gold.Y = append(pred.Y, p), append(gold.Y, g)
			}
		}
		s.table(t)
		p, w, err := dotCIFigure("Probe accuracy ("+short(n.Addr)+")", "accuracy (%)", cats, []seriesCI{acc, chance, major})
		if err != nil {
			return err
		}
		s.figure(b.figure("probes-accuracy-"+short(n.Addr), "Probe accuracy against chance and the majority baseline",
			"Points: accuracy per probe_eval read from "+n.Addr+", bars: "+ci+"; chance and the majority baseline from the same rows.",
			[]string{"accuracy", "chance", "majority baseline"}, []string{n.Addr}, plotAndSize{p, w, figureHeight}))
		s.table(bias)
		if len(biasCats) > 0 {
			pred.Lo, pred.Hi, gold.Lo, gold.Hi = nan(len(biasCats)), nan(len(biasCats)), nan(len(biasCats)), nan(len(biasCats))
			p, w, err := barsFigure("Positional bias ("+short(n.Addr)+")", "share (%)", biasCats, []seriesCI{pred, gold}, false)
			if err != nil {
				return err
			}
			s.figure(b.figure("probes-bias-"+short(n.Addr), "Positional bias: predicted against gold label shares",
				"Bars: the share of answers per label (predicted) and of items whose gold answer it is (gold), from "+n.Addr+".",
				[]string{"predicted", "gold"}, []string{n.Addr}, plotAndSize{p, w, figureHeight}))
		}
	}
	return nil
}

// distinctNums lists a numeric column's values, ascending.
func distinctNums(rows []record, col string) []float64 {
	var out []float64
	for _, r := range rows {
		if v := r.num(col); !math.IsNaN(v) && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// filter keeps the rows whose column has the value.
func filter(rows []record, col, val string) []record {
	var out []record
	for _, r := range rows {
		if r.str(col) == val {
			out = append(out, r)
		}
	}
	return out
}
