package toolsense

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/lacuna-dev/lacuna/analysis"
	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	ts "github.com/lacuna-dev/lacuna/toolsense"
)

func init() { nodes.Register(retrievalEvalType{}) }

// retrievalEvalConfig:
//
//	node "retrieval_eval" "rrb" {
//	  retrieved   = [node.retrieve.bm25, node.retrieve.dense]
//	  constrained = [node.retrieve.toolgen_constrained]
//	  free        = [node.retrieve.toolgen_free]
//	  k           = [1, 3, 5, 10, 20, 50]
//	  bootstrap   = 1000
//	  seed        = 1
//	}
//
// retrieved are catalog rankers (bm25, dense), evaluated alone.
// constrained and free pair a parametric retriever's outputs by position:
// constrained[i] under constrained decoding (its Rc@k), free[i] the same
// model under free decoding (its Rf@k). With for_each, `constrained =
// node.retrieve.cons` and `free = node.retrieve.free` over the same keys
// pair by key (a map's references are taken in key order).
type retrievalEvalConfig struct {
	Retrieved   []nodes.Ref `hcl:"retrieved,optional"`
	Constrained []nodes.Ref `hcl:"constrained,optional"`
	Free        []nodes.Ref `hcl:"free,optional"`
	K           []int       `hcl:"k,optional"`
	Bootstrap   *int        `hcl:"bootstrap,optional"`
	Seed        *int64      `hcl:"seed,optional"`
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
	// NotPaired is the internalization column of a model's output listed
	// in retrieved: without its free-decoding output Rf@k and IS@k are
	// not measured.
	NotPaired = "Rf@k, IS@k not measured: pair the constrained and free decoding outputs (constrained, free)"
	// Measured is the internalization column of a constrained/free pair.
	Measured = "IS@k = Rf@k / Rc@k (0 when Rc@k = 0), CI by the delta method from the bootstrap CIs of Rf@k and Rc@k, clipped to [0, 1] (seed 002 Eq. 2, Appendix G)"
)

// rankers are the retrievers that rank the catalog without decoding.
var rankers = map[string]bool{"bm25": true, "dense": true}

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

// EvalRow is one retrieve output (or constrained/free pair) × tier × k.
// Recall metrics are percentages rounded to 0.01, IS@k a ratio rounded to
// 0.0001; _lo and _hi bound their 95% CI (NaN when bootstrap = 0). The
// Rf@k and IS@k columns are NaN on the rows of a single retrieve output.
type EvalRow struct {
	// Retrieve is the retrieve node the rankings came from (of a pair,
	// the constrained one).
	Retrieve  string `parquet:"retrieve"`
	Retriever string `parquet:"retriever"`
	// Tier is easy, medium, hard (the RRB complexity) or "all".
	Tier    string `parquet:"tier"`
	K       int64  `parquet:"k"`
	Queries int64  `parquet:"queries"`
	// RcAtK is ToolSense's Rc@k (seed 002 §3.3): the share of queries
	// whose top k holds at least one answer tool, with its percentile
	// bootstrap CI over queries.
	RcAtK float64 `parquet:"rc_at_k"`
	RcLo  float64 `parquet:"rc_lo"`
	RcHi  float64 `parquet:"rc_hi"`
	// AnswerRecallAtK is the mean over queries of the fraction of their
	// distinct answer tools in the top k (not the paper's Rc@k).
	AnswerRecallAtK float64 `parquet:"answer_recall_at_k"`
	AnswerRecallLo  float64 `parquet:"answer_recall_lo"`
	AnswerRecallHi  float64 `parquet:"answer_recall_hi"`
	// Internalization says how Rf@k and IS@k follow: ByConstruction,
	// NotPaired or Measured.
	Internalization string `parquet:"internalization"`
	// Free is a pair's free-decoding retrieve node ("" otherwise).
	Free string `parquet:"free"`
	// RfAtK is ToolSense's Rf@k: Rc@k's measure over the free-decoding
	// rankings of the same queries, with its percentile bootstrap CI
	// (resampling the same queries as Rc@k's).
	RfAtK float64 `parquet:"rf_at_k"`
	RfLo  float64 `parquet:"rf_lo"`
	RfHi  float64 `parquet:"rf_hi"`
	// ISAtK is the Internalization Score (analysis.InternalizationScore)
	// and ISLo, ISHi its delta-method CI (analysis.InternalizationCI),
	// both from the unrounded recalls and CIs.
	ISAtK float64 `parquet:"is_at_k"`
	ISLo  float64 `parquet:"is_lo"`
	ISHi  float64 `parquet:"is_hi"`
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
func (retrievalEvalType) Version() string { return "2" }
func (retrievalEvalType) Doc() string {
	return "ToolSense retrieval metrics from retrieve outputs: per output × tier (easy, medium, hard, then \"all\") × k " +
		"(default 1, 3, 5, 10, 20, 50), Rc@k as the paper defines it (seed 002 §3.3: the share of queries whose top k holds at " +
		"least one answer tool) and answer_recall_at_k (the mean share of a query's answer tools in its top k), in percent " +
		"rounded to 0.01, each with its 95% percentile bootstrap CI resampling queries (`bootstrap` resamples, default 1000; " +
		"`seed`; one resampling stream per retrieve node and tier, shared by every k). `retrieved` lists catalog rankers " +
		"(bm25, dense): for them Rf@k = Rc@k and IS@k = 1 by construction, and the internalization column says so instead of " +
		"computing them. `constrained` and `free` pair a parametric retriever's outputs by position (the same queries, by " +
		"sample_id): the constrained output gives Rc@k, the free one Rf@k (same measure, its CI resampling the same queries), " +
		"and IS@k = Rf@k / Rc@k (0 when Rc@k = 0, Eq. 2) with the delta-method CI of Appendix G: σ̂ = bootstrap half-width / " +
		"1.96, σ_IS = IS·√((σ̂_f/Rf)² + (σ̂_c/Rc)²), IS ± 1.96 σ_IS clipped to [0, 1]; IS@k is rounded to 0.0001."
}

func (retrievalEvalType) Validate(cfg any) error {
	c := cfg.(*retrievalEvalConfig)
	if len(c.Retrieved) == 0 && len(c.Constrained) == 0 && len(c.Free) == 0 {
		return nodes.Errorf("retrieved", "No retrieve outputs", "retrieved needs at least one node, e.g. [node.retrieve.bm25], or set constrained and free.")
	}
	if len(c.Constrained) != len(c.Free) {
		return nodes.Errorf("free", "Unpaired decoding outputs", "constrained and free pair by position, but constrained has %d outputs and free %d.", len(c.Constrained), len(c.Free))
	}
	for i := range c.Constrained {
		if c.Constrained[i] == c.Free[i] {
			return nodes.Errorf("free", "Output paired with itself", "%s is both the constrained and the free output of pair %d.", c.Free[i], i+1)
		}
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

func (t retrievalEvalType) Run(_ context.Context, r nodes.Run) error {
	c := t.Config(r)
	var out []EvalRow
	for _, ref := range c.Retrieved {
		rows, err := readRetrieved(r, ref, c.ks())
		if err != nil {
			return err
		}
		status := ByConstruction
		if !rankers[rows[0].Retriever] {
			status = NotPaired
		}
		for _, tier := range tiersOf(rows) {
			out = append(out, evalGroup(ref.Node, status, tier.rows, nil, tier.name, c.ks(), c.bootstrap(), c.seed())...)
		}
	}
	for i, cref := range c.Constrained {
		fref := c.Free[i]
		cons, err := readRetrieved(r, cref, c.ks())
		if err != nil {
			return err
		}
		free, err := readRetrieved(r, fref, c.ks())
		if err != nil {
			return err
		}
		for _, rows := range [][]RetrieveRow{cons, free} {
			if rankers[rows[0].Retriever] {
				return fmt.Errorf("constrained %s and free %s: retriever %q ranks the catalog (no decoding): Rf@k = Rc@k and IS@k = 1 by construction; list it under retrieved", cref, fref, rows[0].Retriever)
			}
		}
		byID, err := pairByQuery(cons, free)
		if err != nil {
			return fmt.Errorf("constrained %s and free %s: %w", cref, fref, err)
		}
		for _, tier := range tiersOf(cons) {
			tierFree := make([]RetrieveRow, len(tier.rows))
			for j, row := range tier.rows {
				tierFree[j] = byID[row.SampleID]
			}
			rows := evalGroup(cref.Node, Measured, tier.rows, tierFree, tier.name, c.ks(), c.bootstrap(), c.seed())
			for j := range rows {
				rows[j].Free = fref.Node
			}
			out = append(out, rows...)
		}
	}
	r.Note("%d rows: Rc@k and answer recall of %d outputs, Rf@k and IS@k of %d constrained/free pairs, %d-resample bootstrap CIs",
		len(out), len(c.Retrieved), len(c.Constrained), c.bootstrap())
	return t.Write(r, out)
}

// readRetrieved reads a retrieve output, refusing an empty one and
// logging the k beyond what it kept.
func readRetrieved(r nodes.Run, ref nodes.Ref, ks []int) ([]RetrieveRow, error) {
	in, err := r.Input(ref)
	if err != nil {
		return nil, err
	}
	rows, err := artifacts.ReadAll[RetrieveRow](in)
	if err != nil {
		return nil, fmt.Errorf("retrieved %s: %w", ref, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("retrieved %s has no queries", ref)
	}
	kept := 0
	for _, row := range rows {
		kept = max(kept, len(row.Ranked))
	}
	for _, k := range ks {
		if k > kept {
			r.Logf("%s keeps at most %d tools per query: recall@%d reads what it kept", ref, kept, k)
		}
	}
	return rows, nil
}

// pairByQuery maps each sample_id to its free-decoding row. The two
// outputs must hold the same queries: the same sample_ids, each once,
// with the same tier and answers.
func pairByQuery(cons, free []RetrieveRow) (map[string]RetrieveRow, error) {
	byID := map[string]RetrieveRow{}
	for _, row := range free {
		if _, dup := byID[row.SampleID]; dup {
			return nil, fmt.Errorf("free decoding has sample_id %q twice", row.SampleID)
		}
		byID[row.SampleID] = row
	}
	seen := map[string]bool{}
	for _, row := range cons {
		if seen[row.SampleID] {
			return nil, fmt.Errorf("constrained decoding has sample_id %q twice", row.SampleID)
		}
		seen[row.SampleID] = true
		f, ok := byID[row.SampleID]
		if !ok {
			return nil, fmt.Errorf("sample_id %q is in the constrained decoding output only: the pair must evaluate the same queries", row.SampleID)
		}
		if f.Tier != row.Tier || !slices.Equal(f.Answers, row.Answers) {
			return nil, fmt.Errorf("sample_id %q differs between the outputs (tier %q, answers %q constrained; tier %q, answers %q free): the pair must evaluate the same queries", row.SampleID, row.Tier, row.Answers, f.Tier, f.Answers)
		}
	}
	for _, row := range free {
		if !seen[row.SampleID] {
			return nil, fmt.Errorf("sample_id %q is in the free decoding output only: the pair must evaluate the same queries", row.SampleID)
		}
	}
	return byID, nil
}

// tier is one group of queries.
type tier struct {
	name string
	rows []RetrieveRow
}

// tiersOf groups rows by tier: easy, medium, hard, other tiers by name,
// then "all" (every row); tiers without rows are left out.
func tiersOf(rows []RetrieveRow) []tier {
	byTier := map[string][]RetrieveRow{}
	for _, row := range rows {
		byTier[row.Tier] = append(byTier[row.Tier], row)
	}
	names := ts.Tiers()
	var others []string
	for name := range byTier {
		if !slices.Contains(names, name) {
			others = append(others, name)
		}
	}
	slices.Sort(others)
	names = append(names, others...)
	var out []tier
	for _, name := range names {
		if len(byTier[name]) > 0 {
			out = append(out, tier{name, byTier[name]})
		}
	}
	return append(out, tier{AllTiers, rows})
}

// evalGroup computes one tier's rows, one per k. free, when not nil, holds
// the free-decoding rankings of group's queries in group's order; its hits
// are resampled with the same stream, so Rf@k's CI resamples the same
// queries as Rc@k's.
func evalGroup(retrieve, status string, group, free []RetrieveRow, tier string, ks []int, b int, seed uint64) []EvalRow {
	stream := analysis.StreamOf(retrieve + "\x00" + tier)
	nan := math.NaN()
	var out []EvalRow
	for _, k := range ks {
		hits := hitsAt(group, k)
		recall := make([]float64, 0, len(group))
		for _, q := range group {
			if v, ok := analysis.AnswerRecallAtK(q.Ranked, q.Answers, k); ok {
				recall = append(recall, v)
			}
		}
		rc := analysis.Mean(hits)
		row := EvalRow{
			Retrieve: retrieve, Retriever: group[0].Retriever, Tier: tier, K: int64(k), Queries: int64(len(group)),
			RcAtK: pct(rc), AnswerRecallAtK: pct(analysis.Mean(recall)),
			RcLo: nan, RcHi: nan, AnswerRecallLo: nan, AnswerRecallHi: nan,
			Internalization: status,
			RfAtK:           nan, RfLo: nan, RfHi: nan, ISAtK: nan, ISLo: nan, ISHi: nan,
		}
		rcCI, rcOK := analysis.Bootstrap(hits, b, ciLevel, seed, stream)
		if rcOK {
			row.RcLo, row.RcHi = pct(rcCI.Lo), pct(rcCI.Hi)
		}
		if ci, ok := analysis.Bootstrap(recall, b, ciLevel, seed, stream); ok {
			row.AnswerRecallLo, row.AnswerRecallHi = pct(ci.Lo), pct(ci.Hi)
		}
		if free != nil {
			freeHits := hitsAt(free, k)
			rf := analysis.Mean(freeHits)
			row.RfAtK, row.ISAtK = pct(rf), ratio(analysis.InternalizationScore(rf, rc))
			if rfCI, ok := analysis.Bootstrap(freeHits, b, ciLevel, seed, stream); ok && rcOK {
				is := analysis.InternalizationCI(rf, rc, rfCI, rcCI)
				row.RfLo, row.RfHi = pct(rfCI.Lo), pct(rfCI.Hi)
				row.ISLo, row.ISHi = ratio(is.Lo), ratio(is.Hi)
			}
		}
		out = append(out, row)
	}
	return out
}

// hitsAt is each query's Rc@k term: 1 when its top k holds an answer.
func hitsAt(rows []RetrieveRow, k int) []float64 {
	hits := make([]float64, len(rows))
	for i, q := range rows {
		if analysis.HitAtK(q.Ranked, q.Answers, k) {
			hits[i] = 1
		}
	}
	return hits
}

// pct is a fraction as a percentage rounded to 0.01.
func pct(x float64) float64 { return math.Round(x*10000) / 100 }

// ratio is a ratio rounded to 0.0001.
func ratio(x float64) float64 { return math.Round(x*10000) / 10000 }
