package toolsense

import (
	"context"
	"fmt"

	"github.com/lacuna-dev/lacuna/nodes"
	ts "github.com/lacuna-dev/lacuna/toolsense"
)

func init() { nodes.Register(mcqGenerateType{}) }

// MCQRow is one generated multiple-choice item, in the released
// toolsense-mcq.jsonl's shape (wrong_answers and tool are JSON columns,
// as an import of that file has them), so that probe_eval reads both.
type MCQRow struct {
	// ID is "mcq-" and a digest of the tool_name (one item per tool).
	ID            string `parquet:"id"`
	Question      string `parquet:"question"`
	CorrectAnswer string `parquet:"correct_answer"`
	// WrongAnswers is a JSON list of the three distractors.
	WrongAnswers string `parquet:"wrong_answers,json"`
	// Tool is the tool object (toolsense.Tool's fields, a missing one
	// "None"), as JSON.
	Tool string `parquet:"tool,json"`
}

type mcqGenerateType struct {
	nodes.Static[probeGenConfig, MCQRow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed       = mcqGenerateType{}
	_ nodes.Documented  = mcqGenerateType{}
	_ nodes.Validator   = mcqGenerateType{}
	_ nodes.Resolver    = mcqGenerateType{}
	_ nodes.CallPlanner = mcqGenerateType{}
)

func (mcqGenerateType) Name() string    { return "mcq_generate" }
func (mcqGenerateType) Version() string { return "2" }
func (mcqGenerateType) Doc() string {
	return "Generates ToolSense's MCQ probing benchmark (seed 002 §3.2, Appendix J.2) from a catalog: for each of `count` tools " +
		"sampled with `seed` (default every tool; kept in catalog order), `model` writes a question that calls the tool \"this tool\", " +
		"one correct short answer and three plausible wrong ones (prompts/mcq_generate.txt, Figure 19, JSON constrained by a schema " +
		"and parsed either way). A programmatic validator checks the item (the question says \"this tool\" and names neither the " +
		"full tool_name nor the tool_title, each matched case-insensitively as whole words, so \"this toolkit\" is not \"this tool\" " +
		"and a one-word title such as \"Email\" rejects a question using the word email; exactly three wrong answers; the four " +
		"options distinct ignoring case and spacing; with `option_words` = [min, max] set, every option that many words: unset by " +
		"default, since the prompt's 2–8 words (Figure 19) is not held by 38% of the released items), then `judge` (default `model`; always at temperature 0, as the " +
		"paper runs judges) checks the paper's five criteria (prompts/mcq_judge.txt, Figure 20); a judge answer that is not the verdict " +
		"rejects the item (fails closed). A rejected item is retried at most `retries` times (default 3), the rejection reasons " +
		"fed back into the next prompt (retrying departs from the paper's Appendix J.2, which discards a rejected item, as issue " +
		"11 asks for retries; `retries = 0` is the paper's rule); a tool the generator skips (skip = true) or still rejected after its last retry is dropped, " +
		"counted by reason in the note and the report \"generation\", and logged. Rows have the released file's shape: id, " +
		"question, correct_answer, wrong_answers (JSON), tool (JSON). The prompt files' bytes are in the key; calls go through " +
		"the call cache (a re-run makes none); `lacuna plan` counts the calls the cache answers and, on a fresh store, one " +
		"generation and one judge call per tool (retries cannot be known before the answers)."
}

func (mcqGenerateType) Validate(cfg any) error { return validateProbeGen(cfg.(*probeGenConfig), true) }

func (mcqGenerateType) Resolve(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	return resolveProbeGen(ctx, r, "mcq")
}

func (mcqGenerateType) CallsModels(any) bool { return true }

func (t mcqGenerateType) PlanCalls(ctx context.Context, r nodes.Run) ([]nodes.CallPlan, error) {
	g, err := newProbeGen(r, "mcq", t.Config(r))
	if err != nil {
		return nil, err
	}
	return g.plan(ctx)
}

func (t mcqGenerateType) Run(ctx context.Context, r nodes.Run) error {
	g, err := newProbeGen(r, "mcq", t.Config(r))
	if err != nil {
		return err
	}
	if err := g.run(ctx, r); err != nil {
		return fmt.Errorf("mcq_generate: %w", err)
	}
	var rows []MCQRow
	for _, pt := range g.tools {
		if pt.dropped != "" {
			continue
		}
		rows = append(rows, MCQRow{
			ID: ts.ProbeID(ts.BenchmarkMCQ, pt.tool.ToolName), Question: *pt.item.Question, CorrectAnswer: *pt.item.CorrectAnswer,
			WrongAnswers: ts.MarshalUnescaped(pt.item.WrongAnswers), Tool: ts.ProbeToolJSON(pt.tool),
		})
	}
	g.report(r, len(rows), "")
	return t.Write(r, rows)
}
