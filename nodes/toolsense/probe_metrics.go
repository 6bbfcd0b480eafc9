package toolsense

import (
	"context"
	"fmt"
	"math"

	"github.com/lacuna-dev/lacuna/analysis"
	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	ts "github.com/lacuna-dev/lacuna/toolsense"
)

func init() { nodes.Register(probeMetricsType{}) }

// probeMetricsConfig:
//
//	node "probe_metrics" "probes" {
//	  evals     = [node.probe_eval.mcq, node.probe_eval.qa]
//	  bootstrap = 1000
//	  seed      = 1
//	}
type probeMetricsConfig struct {
	Evals     []nodes.Ref `hcl:"evals"`
	Bootstrap *int        `hcl:"bootstrap,optional"`
	Seed      *int64      `hcl:"seed,optional"`
}

// ProbeMetricsRow is one probe_eval output's accuracy. Percentages are
// rounded to 0.01; Lo and Hi bound the 95% percentile bootstrap CI over
// items (NaN when bootstrap = 0).
type ProbeMetricsRow struct {
	Eval      string `parquet:"eval"` // the probe_eval node
	Benchmark string `parquet:"benchmark"`
	Model     string `parquet:"model"`
	N         int64  `parquet:"n"`
	Correct   int64  `parquet:"correct"`
	// Accuracy is exact-match accuracy in percent (an unparseable answer
	// is wrong), with its CI.
	Accuracy float64 `parquet:"accuracy"`
	Lo       float64 `parquet:"lo"`
	Hi       float64 `parquet:"hi"`
	// Chance is the accuracy of a uniform random guess: 100 over the
	// number of labels (25 mcq, 50 qa), the paper's random baseline.
	Chance float64 `parquet:"chance"`
	// MajorityBaseline is the accuracy of always answering the most
	// frequent gold label, computed from these items: the largest
	// GoldShare (50 for a balanced QA set, more when drops unbalanced it;
	// near 25 for MCQ, whose gold letters the shuffle spreads).
	MajorityBaseline float64 `parquet:"majority_baseline"`
	Unparseable      int64   `parquet:"unparseable"`
	FreeText         int64   `parquet:"free_text"` // answers read from free text (the constraint was not held)
	// Labels are A–D (mcq) or Yes, No (qa); PredictedShare is the share
	// of answers that predicted each (positional bias: a model that always
	// says A has 100 there), GoldShare the share of items whose correct
	// answer it is (after the shuffle), in percent.
	Labels         []string  `parquet:"labels,list"`
	PredictedShare []float64 `parquet:"predicted_share,list"`
	GoldShare      []float64 `parquet:"gold_share,list"`
}

type probeMetricsType struct {
	nodes.Static[probeMetricsConfig, ProbeMetricsRow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed      = probeMetricsType{}
	_ nodes.Documented = probeMetricsType{}
	_ nodes.Validator  = probeMetricsType{}
)

func (probeMetricsType) Name() string    { return "probe_metrics" }
func (probeMetricsType) Version() string { return "2" }
func (probeMetricsType) Doc() string {
	return "MCQ and QA probing accuracy (seed 002 §4: exact match) from probe_eval outputs (`evals`): one row " +
		"per output with n, correct, accuracy in percent and its 95% percentile bootstrap CI resampling items (`bootstrap` " +
		"resamples, default 1000, 0 for none; `seed`, default 1; one stream per output), the unparseable answers (counted wrong) " +
		"and those read from free text, and the positional bias: the share of answers predicting each label (A–D, or Yes/No) " +
		"beside the share of items whose correct answer it is, so that a model favouring one letter shows. Two baselines: " +
		"chance, a uniform random guess (25 MCQ, 50 QA: the paper's random rows), and majority_baseline, computed from the items: " +
		"the accuracy of always answering the most frequent gold label (the largest gold share; above 50 for an unbalanced QA set)."
}

func (probeMetricsType) Validate(cfg any) error {
	c := cfg.(*probeMetricsConfig)
	if len(c.Evals) == 0 {
		return nodes.Errorf("evals", "No probe_eval outputs", "evals needs at least one node, e.g. [node.probe_eval.mcq].")
	}
	if c.Bootstrap != nil && *c.Bootstrap < 0 {
		return nodes.Errorf("bootstrap", "Invalid bootstrap", "bootstrap is a number of resamples (0 for no CIs), not %d.", *c.Bootstrap)
	}
	return nil
}

func (t probeMetricsType) Run(_ context.Context, r nodes.Run) error {
	c := t.Config(r)
	b := defaultBootstrap
	if c.Bootstrap != nil {
		b = *c.Bootstrap
	}
	seed := uint64(probeDefaultSeed)
	if c.Seed != nil {
		seed = uint64(*c.Seed)
	}
	var out []ProbeMetricsRow
	for _, ref := range c.Evals {
		in, err := r.Input(ref)
		if err != nil {
			return err
		}
		rows, err := artifacts.ReadAll[ProbeEvalRow](in)
		if err != nil {
			return fmt.Errorf("evals %s: %w (evals must come from probe_eval nodes)", ref, err)
		}
		if len(rows) == 0 {
			return fmt.Errorf("evals %s has no items", ref)
		}
		m, err := probeMetrics(ref.Node, rows, b, seed)
		if err != nil {
			return fmt.Errorf("evals %s: %w", ref, err)
		}
		r.Logf("%s %s (%s): accuracy %.2f%% [%.2f, %.2f] over %d items; %d unparseable; predicted %v, gold %v (%v)",
			m.Eval, m.Benchmark, m.Model, m.Accuracy, m.Lo, m.Hi, m.N, m.Unparseable, m.PredictedShare, m.GoldShare, m.Labels)
		out = append(out, m)
	}
	r.Note("accuracy of %d probe_eval outputs, %d-resample bootstrap CIs", len(out), b)
	return t.Write(r, out)
}

// probeMetrics is the metrics row of one probe_eval output.
func probeMetrics(eval string, rows []ProbeEvalRow, b int, seed uint64) (ProbeMetricsRow, error) {
	bench := rows[0].Benchmark
	m := ProbeMetricsRow{Eval: eval, Benchmark: bench, Model: rows[0].Model, N: int64(len(rows)), Lo: math.NaN(), Hi: math.NaN()}
	switch bench {
	case ts.BenchmarkMCQ:
		m.Labels = ts.MCQLetters()
	case ts.BenchmarkQA:
		m.Labels = ts.QALabels()
	default:
		return m, fmt.Errorf("unknown benchmark %q", bench)
	}
	hits := make([]float64, len(rows))
	pred := make([]string, len(rows))
	gold := make([]string, len(rows))
	for i, row := range rows {
		if row.Benchmark != bench {
			return m, fmt.Errorf("rows of benchmarks %s and %s", bench, row.Benchmark)
		}
		if row.Correct {
			hits[i] = 1
			m.Correct++
		}
		switch row.ParsedBy {
		case ts.ParsedNone:
			m.Unparseable++
		case ts.ParsedFreeText:
			m.FreeText++
		}
		pred[i], gold[i] = row.Predicted, row.Gold
	}
	m.Chance = pct(1 / float64(len(m.Labels)))
	m.Accuracy = pct(analysis.Mean(hits))
	if ci, ok := analysis.Bootstrap(hits, b, ciLevel, seed, analysis.StreamOf(eval)); ok {
		m.Lo, m.Hi = pct(ci.Lo), pct(ci.Hi)
	}
	for _, s := range analysis.ChoiceShares(pred, m.Labels) {
		m.PredictedShare = append(m.PredictedShare, pct(s))
	}
	for _, s := range analysis.ChoiceShares(gold, m.Labels) {
		m.GoldShare = append(m.GoldShare, pct(s))
		m.MajorityBaseline = max(m.MajorityBaseline, pct(s))
	}
	return m, nil
}
