package toolsense

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/lacuna-dev/lacuna/analysis"
	"github.com/lacuna-dev/lacuna/nodes"
	ts "github.com/lacuna-dev/lacuna/toolsense"
)

func init() { nodes.Register(qaGenerateType{}) }

// QARow is one generated yes/no item, in the released toolsense-qa.jsonl's
// shape (tool is a JSON column, as an import of that file has it).
type QARow struct {
	// ID is "qa-" and a digest of the tool_name (one item per tool).
	ID       string `parquet:"id"`
	Question string `parquet:"question"`
	// Answer is "Yes" or "No": the target the tool was given.
	Answer string `parquet:"answer"`
	Tool   string `parquet:"tool,json"`
}

type qaGenerateType struct {
	nodes.Static[probeGenConfig, QARow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed       = qaGenerateType{}
	_ nodes.Documented  = qaGenerateType{}
	_ nodes.Validator   = qaGenerateType{}
	_ nodes.Resolver    = qaGenerateType{}
	_ nodes.CallPlanner = qaGenerateType{}
)

func (qaGenerateType) Name() string    { return "qa_generate" }
func (qaGenerateType) Version() string { return "2" }
func (qaGenerateType) Doc() string {
	return "Generates ToolSense's QA probing benchmark (seed 002 §3.2, Appendix J.2) from a catalog: `count` tools are sampled " +
		"with `seed` (default every tool) and, in catalog order, given the target answers Yes, No, Yes, ... (balanced by " +
		"construction: alternated across tools, as the paper does); `model` writes a yes/no question about a verifiable property " +
		"whose answer is the target and which calls the tool \"this tool\" (prompts/qa_generate.txt, Figure 17, JSON constrained " +
		"by a schema and parsed either way). A programmatic validator checks the question (it says \"this tool\" and names neither " +
		"the full tool_name nor the tool_title, each matched case-insensitively as whole words, as mcq_generate's does), then `judge` (default `model`; always at temperature 0, as the paper runs judges) checks " +
		"the paper's four criteria (prompts/qa_judge.txt, Figure 18); a judge answer that is not the verdict rejects the item " +
		"(fails closed). A rejected item is retried at most `retries` times (default 3) with the rejection reasons fed back; a tool " +
		"the generator skips or still rejected after its last retry is dropped, counted by reason in the note and the report " +
		"\"generation\", and logged. Drops break the Yes/No balance: after the loop a seeded sample (`seed`) of the majority " +
		"target's surplus is dropped too, counted as \"dropped to rebalance Yes/No\", so the output has as many Yes as No items " +
		"(an odd number of kept tools loses one; the note gives the final counts). Retrying with feedback departs from the " +
		"paper's Appendix J.2, which discards a rejected item, as issue 11 asks for retries; `retries = 0` is the paper's rule. The rows, in the released " +
		"file's shape (id, question, answer, tool as JSON), are shuffled with `seed`. The prompt files' bytes are in the key; calls " +
		"go through the call cache (a re-run makes none); `lacuna plan` counts them as mcq_generate's plan does."
}

func (qaGenerateType) Validate(cfg any) error { return validateProbeGen(cfg.(*probeGenConfig), false) }

func (qaGenerateType) Resolve(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	return resolveProbeGen(ctx, r, "qa")
}

func (qaGenerateType) CallsModels(any) bool { return true }

func (t qaGenerateType) PlanCalls(ctx context.Context, r nodes.Run) ([]nodes.CallPlan, error) {
	g, err := newProbeGen(r, "qa", t.Config(r))
	if err != nil {
		return nil, err
	}
	return g.plan(ctx)
}

func (t qaGenerateType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	g, err := newProbeGen(r, "qa", c)
	if err != nil {
		return err
	}
	if err := g.run(ctx, r); err != nil {
		return fmt.Errorf("qa_generate: %w", err)
	}
	rebalanceQA(g.tools, c.seed())
	var rows []QARow
	yes := 0
	for _, pt := range g.tools {
		if pt.dropped != "" {
			continue
		}
		if pt.target == "Yes" {
			yes++
		}
		rows = append(rows, QARow{ID: ts.ProbeID(ts.BenchmarkQA, pt.tool.ToolName), Question: *pt.item.Question, Answer: pt.target, Tool: ts.ProbeToolJSON(pt.tool)})
	}
	// The targets alternate in catalog order: the file must not.
	rng := rand.New(rand.NewPCG(c.seed(), analysis.StreamOf("qa_generate order")))
	rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	g.report(r, len(rows), fmt.Sprintf(" (%d Yes, %d No)", yes, len(rows)-yes))
	return t.Write(r, rows)
}
