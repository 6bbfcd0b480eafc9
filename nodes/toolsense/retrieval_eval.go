package toolsense

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/lacuna-dev/lacuna/analysis"
	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
)

func init() { nodes.Register(retrievalEvalType{}) }

// retrievalEvalConfig:
//
//	node "retrieval_eval" "rrb" {
//	  retrieved = [node.retrieve.bm25]
//	  k         = [1, 3, 5, 10, 20, 50]
//	  bootstrap = 1000
//	  seed      = 1
//	}
type retrievalEvalConfig struct {
	Retrieved []nodes.Ref `hcl:"retrieved"`
	K         []int       `hcl:"k,optional"`
	Bootstrap *int        `hcl:"bootstrap,optional"`
	Seed      *int64      `hcl:"seed,optional"`
}

// Defaults of retrieval_eval.
var defaultKs = []int{1, 3, 5, 10, 20, 50}

const (
	defaultBootstrap = 1000
	defaultSeed      = 1
	ciLevel          = 0.95
	// AllTiers is the tier of the rows pooling every query.
	AllTiers = "all"
	// ByConstruction is the internalization column of a retriever that
	// ranks the catalog itself (bm25, dense): its free and constrained
	// rankings are one, so Rf@k = Rc@k and IS@k = 1.
	ByConstruction = "Rf@k = Rc@k, IS@k = 1 by construction (the retriever ranks the catalog; no decoding)"
)

func (c *retrievalEvalConfig) ks() []int {
	if c.K == nil {
		return defaultKs
	}
	return c.K
}

func (c *retrievalEvalConfig) bootstrap() int {
	if c.Bootstrap == nil {
		return defaultBootstrap
	}
	return *c.Bootstrap
}

func (c *retrievalEvalConfig) seed() uint64 {
	if c.Seed == nil {
		return defaultSeed
	}
	return uint64(*c.Seed)
}

// EvalRow is one retrieve output × tier × k. Metrics are percentages
// rounded to 0.01; _lo and _hi bound their 95% percentile bootstrap CI
// over queries (NaN when bootstrap = 0).
type EvalRow struct {
	// Retrieve is the retrieve node the rankings came from.
	Retrieve  string `parquet:"retrieve"`
	Retriever string `parquet:"retriever"`
	// Tier is easy, medium, hard (the RRB complexity) or "all".
	Tier    string `parquet:"tier"`
	K       int64  `parquet:"k"`
	Queries int64  `parquet:"queries"`
	// RcAtK is ToolSense's Rc@k (seed 002 §3.3): the share of queries
	// whose top k holds at least one answer tool.
	RcAtK float64 `parquet:"rc_at_k"`
	RcLo  float64 `parquet:"rc_lo"`
	RcHi  float64 `parquet:"rc_hi"`
	// AnswerRecallAtK is the mean over queries of the fraction of their
	// distinct answer tools in the top k (not the paper's Rc@k).
	AnswerRecallAtK float64 `parquet:"answer_recall_at_k"`
	AnswerRecallLo  float64 `parquet:"answer_recall_lo"`
	AnswerRecallHi  float64 `parquet:"answer_recall_hi"`
	// Internalization says how Rf@k and IS@k follow (ByConstruction for
	// bm25).
	Internalization string `parquet:"internalization"`
}

type retrievalEvalType struct {
	nodes.Static[retrievalEvalConfig, EvalRow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed      = retrievalEvalType{}
	_ nodes.Documented = retrievalEvalType{}
	_ nodes.Validator  = retrievalEvalType{}
)

func (retrievalEvalType) Name() string    { return "retrieval_eval" }
func (retrievalEvalType) Version() string { return "1" }
func (retrievalEvalType) Doc() string {
	return "ToolSense retrieval metrics from retrieve outputs: per retrieve node × tier (easy, medium, hard, then \"all\") × k " +
		"(default 1, 3, 5, 10, 20, 50), Rc@k as the paper defines it (seed 002 §3.3: the share of queries whose top k holds at " +
		"least one answer tool) and answer_recall_at_k (the mean share of a query's answer tools in its top k), in percent " +
		"rounded to 0.01, each with its 95% percentile bootstrap CI resampling queries (`bootstrap` resamples, default 1000; " +
		"`seed`; one resampling stream per retrieve node and tier, shared by every k). For bm25 Rf@k = Rc@k and IS@k = 1 by " +
		"construction: the internalization column says so instead of computing them."
}

func (retrievalEvalType) Validate(cfg any) error {
	c := cfg.(*retrievalEvalConfig)
	if len(c.Retrieved) == 0 {
		return nodes.Errorf("retrieved", "No retrieve outputs", "retrieved needs at least one node, e.g. [node.retrieve.bm25].")
	}
	if c.K != nil && len(c.K) == 0 {
		return nodes.Errorf("k", "No k", "k needs at least one cut-off, e.g. [1, 50].")
	}
	for _, k := range c.K {
		if k < 1 {
			return nodes.Errorf("k", "Invalid k", "Rc@k needs k ≥ 1, not %d.", k)
		}
	}
	if c.Bootstrap != nil && *c.Bootstrap < 0 {
		return nodes.Errorf("bootstrap", "Invalid bootstrap", "bootstrap is a number of resamples (0 for no CIs), not %d.", *c.Bootstrap)
	}
	return nil
}

var tierOrder = []string{"easy", "medium", "hard"}

func (t retrievalEvalType) Run(_ context.Context, r nodes.Run) error {
	c := t.Config(r)
	var out []EvalRow
	for _, ref := range c.Retrieved {
		in, err := r.Input(ref)
		if err != nil {
			return err
		}
		rows, err := artifacts.ReadAll[RetrieveRow](in)
		if err != nil {
			return fmt.Errorf("retrieved %s: %w", ref, err)
		}
		if len(rows) == 0 {
			return fmt.Errorf("retrieved %s has no queries", ref)
		}
		kept := 0
		for _, row := range rows {
			kept = max(kept, len(row.Ranked))
		}
		for _, k := range c.ks() {
			if k > kept {
				r.Logf("%s keeps at most %d tools per query: Rc@%d reads what it kept", ref, kept, k)
			}
		}
		byTier := map[string][]RetrieveRow{}
		for _, row := range rows {
			byTier[row.Tier] = append(byTier[row.Tier], row)
		}
		tiers := slices.Clone(tierOrder)
		var others []string
		for tier := range byTier {
			if !slices.Contains(tierOrder, tier) {
				others = append(others, tier)
			}
		}
		slices.Sort(others)
		tiers = append(tiers, others...)
		tiers = append(tiers, AllTiers)
		byTier[AllTiers] = rows
		for _, tier := range tiers {
			group := byTier[tier]
			if len(group) == 0 {
				continue
			}
			out = append(out, evalGroup(ref.Node, tier, group, c.ks(), c.bootstrap(), c.seed())...)
		}
	}
	r.Note("%d rows: Rc@k and answer recall with %d-resample bootstrap CIs", len(out), c.bootstrap())
	return t.Write(r, out)
}

// evalGroup computes one tier's rows, one per k.
func evalGroup(retrieve, tier string, group []RetrieveRow, ks []int, b int, seed uint64) []EvalRow {
	stream := analysis.StreamOf(retrieve + "\x00" + tier)
	var out []EvalRow
	for _, k := range ks {
		hits := make([]float64, len(group))
		recall := make([]float64, 0, len(group))
		for i, q := range group {
			if analysis.HitAtK(q.Ranked, q.Answers, k) {
				hits[i] = 1
			}
			if v, ok := analysis.AnswerRecallAtK(q.Ranked, q.Answers, k); ok {
				recall = append(recall, v)
			}
		}
		row := EvalRow{
			Retrieve: retrieve, Retriever: group[0].Retriever, Tier: tier, K: int64(k), Queries: int64(len(group)),
			RcAtK: pct(analysis.Mean(hits)), AnswerRecallAtK: pct(analysis.Mean(recall)),
			RcLo: math.NaN(), RcHi: math.NaN(), AnswerRecallLo: math.NaN(), AnswerRecallHi: math.NaN(),
			Internalization: ByConstruction,
		}
		if ci, ok := analysis.Bootstrap(hits, b, ciLevel, seed, stream); ok {
			row.RcLo, row.RcHi = pct(ci.Lo), pct(ci.Hi)
		}
		if ci, ok := analysis.Bootstrap(recall, b, ciLevel, seed, stream); ok {
			row.AnswerRecallLo, row.AnswerRecallHi = pct(ci.Lo), pct(ci.Hi)
		}
		out = append(out, row)
	}
	return out
}

// pct is a fraction as a percentage rounded to 0.01.
func pct(x float64) float64 { return math.Round(x*10000) / 100 }
