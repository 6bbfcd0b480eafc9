package toolsense

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/llmenv"
	"github.com/lacuna-dev/lacuna/runners/llm"
	ts "github.com/lacuna-dev/lacuna/toolsense"
)

func init() { nodes.Register(probeEvalType{}) }

// probeEvalConfig:
//
//	node "probe_eval" "mcq" {
//	  items    = node.import.mcq    # or node.mcq_generate.X, node.qa_generate.X
//	  model    = model.toolgen
//	  tool_ref = "token"            # or "name", "description"
//	  seed     = 1                  # the MCQ option shuffle
//	}
type probeEvalConfig struct {
	// Items is an MCQ table (id, question, correct_answer, wrong_answers,
	// tool) or a QA table (id, question, answer, tool): the released
	// files imported, or mcq_generate / qa_generate output. Which one is
	// told by its columns (correct_answer: MCQ).
	Items nodes.Ref   `hcl:"items"`
	Model nodes.Model `hcl:"model"`
	// Trained serves the weights a train or edit node wrote (an adapter
	// beside the model's base weights, a full model, a GRACE codebook)
	// instead of the model's own: the model needs a serve { } block
	// (llmenv.WithTrained).
	Trained *nodes.Ref `hcl:"trained,optional" key:"omitnull"`
	// ToolRef is how the prompt names the tool: "token" (default) its
	// ToolGen virtual token(s), spelled as retrieve_parametric spells
	// them (ts.ToolTokens: <<tool_name>> by default), the paper's setting
	// (the model sees only the token); "name" the tool_name as text;
	// "description" its names and descriptions (the annotators'
	// open-book setting, an upper bound).
	ToolRef string `hcl:"tool_ref,optional"`
	// TokenFormat, TokenOpen and TokenClose spell the virtual token
	// (tool_ref "token" only), as retrieve_parametric's attributes of
	// those names: "flat" (default, <<API&&ENDPOINT>>) or "hierarchical"
	// (<<API>><<ENDPOINT>>), around "<<" and ">>" by default.
	TokenFormat string  `hcl:"token_format,optional"`
	TokenOpen   *string `hcl:"token_open,optional"`
	TokenClose  *string `hcl:"token_close,optional"`
	// Seed drives the MCQ option shuffle (default 1).
	Seed *int64 `hcl:"seed,optional"`
	// Limit takes the first N items in file order.
	Limit *int `hcl:"limit,optional"`
	// MaxTokens overrides the answer's token limit (default: the model
	// block's max_tokens, else 16: the answer is one letter or word).
	MaxTokens *int `hcl:"max_tokens,optional"`
}

func (c *probeEvalConfig) toolRef() string {
	if c.ToolRef == "" {
		return "token"
	}
	return c.ToolRef
}

// tokenSpelling is the virtual token's format, open and close strings.
func (c *probeEvalConfig) tokenSpelling() (format, open, close string) {
	format, open, close = c.TokenFormat, ts.DefaultTokenOpen, ts.DefaultTokenClose
	if format == "" {
		format = ts.FlatTokens
	}
	if c.TokenOpen != nil {
		open = *c.TokenOpen
	}
	if c.TokenClose != nil {
		close = *c.TokenClose
	}
	return format, open, close
}

func (c *probeEvalConfig) seed() uint64 {
	if c.Seed == nil {
		return probeDefaultSeed
	}
	return uint64(*c.Seed)
}

// ProbeEvalRow is one item's question, the model's answer and whether it
// was right.
type ProbeEvalRow struct {
	Benchmark string `parquet:"benchmark"` // ts.BenchmarkMCQ or ts.BenchmarkQA
	ID        string `parquet:"id"`
	ToolName  string `parquet:"tool_name"`
	Question  string `parquet:"question"`
	// Options are the options as shown, in letter order A–D (mcq), or
	// Yes, No (qa).
	Options []string `parquet:"options,list"`
	// Permutation (mcq) is the shuffle: Permutation[j] is the index, in
	// [correct_answer, wrong_answers...], of the option shown as letter
	// j. Empty for qa.
	Permutation []int64 `parquet:"permutation,list"`
	// Gold is the correct letter (mcq) or answer (qa).
	Gold string `parquet:"gold"`
	// Raw is the model's answer as sent; Predicted the label read from it
	// ("" when none could be), ParsedBy how (ts.ParsedConstrained,
	// ts.ParsedFreeText, ts.ParsedNone: ts.ParsedBy).
	Raw       string `parquet:"raw"`
	Predicted string `parquet:"predicted"`
	ParsedBy  string `parquet:"parsed_by"`
	// CutOff says the answer stopped at max_tokens (finish_reason
	// "length"): a reasoning model's answer cut before its label.
	CutOff  bool   `parquet:"cut_off"`
	Correct bool   `parquet:"correct"`
	Model   string `parquet:"model"`
	Prompt  string `parquet:"prompt"`
}

type probeEvalType struct {
	nodes.Static[probeEvalConfig, ProbeEvalRow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed       = probeEvalType{}
	_ nodes.Documented  = probeEvalType{}
	_ nodes.Validator   = probeEvalType{}
	_ nodes.Resolver    = probeEvalType{}
	_ nodes.CallPlanner = probeEvalType{}
)

func (probeEvalType) Name() string    { return "probe_eval" }
func (probeEvalType) Version() string { return "2" }
func (probeEvalType) Doc() string {
	return "Asks a model ToolSense's MCQ or QA probes (seed 002 §3.2, §4): `items` is an MCQ table (id, question, " +
		"correct_answer, wrong_answers, tool) or a QA table (id, question, answer, tool), the released files imported or " +
		"mcq_generate / qa_generate output, told apart by their columns. The prompt (prompts/mcq_eval.txt, prompts/qa_eval.txt) " +
		"names the tool as `tool_ref` says: \"token\" (default, the paper's setting) its ToolGen virtual token spelled exactly as " +
		"retrieve_parametric spells it, with the same `token_format` (\"flat\" <<API&&ENDPOINT>>, default, or \"hierarchical\" " +
		"<<API>><<ENDPOINT>>), `token_open` and `token_close` (default \"<<\", \">>\"); \"name\" or \"description\" (open book). " +
		"MCQ options are shuffled per item by `seed` (default 1; the permutation is in each row) and the answer is constrained to " +
		"A–D, QA answers to Yes/No, by the structured-output choice of the model's server (temperature 0 unless the model block " +
		"sets one; max_tokens default 16). parsed_by is \"constrained\" when the server held the constraint (the response " +
		"satisfied the choice), else an answer is parsed from free text: MCQ the one letter an \"answer\" phrase claims, else " +
		"that of an \"option\" phrase when no other letter A–D stands as a word, else a leading \"B.\" followed by nothing or by " +
		"option B's text, else the text of exactly one option; QA yes or no as the whole answer or its first word followed by , . ! " +
		"or :, or \"answer: yes\". An answer claiming two labels (\"Answer: A or B\", \"Yes, but no\") or none (\"No idea\") " +
		"counts as wrong, parsed_by \"unparseable\", counted in the note. Answers stopped at max_tokens (finish_reason " +
		"\"length\", e.g. a reasoning model cut off while thinking) are flagged in the row (cut_off) and counted in the note. One " +
		"row per item, in items order; `limit` takes the first N. probe_metrics turns them into accuracies with CIs. Calls go " +
		"through the call cache: a re-run makes none."
}

func (probeEvalType) Validate(cfg any) error {
	c := cfg.(*probeEvalConfig)
	switch {
	case c.toolRef() != "token" && c.toolRef() != "name" && c.toolRef() != "description":
		return nodes.Errorf("tool_ref", "Invalid tool_ref", "tool_ref is \"token\", \"name\" or \"description\", not %q.", c.ToolRef)
	case c.toolRef() != "token" && (c.TokenFormat != "" || c.TokenOpen != nil || c.TokenClose != nil):
		return nodes.Errorf("token_format", "Token spelling without tokens", "token_format, token_open and token_close spell the virtual token of tool_ref = \"token\"; tool_ref is %q.", c.ToolRef)
	case c.TokenFormat != "" && c.TokenFormat != ts.FlatTokens && c.TokenFormat != ts.HierarchicalTokens:
		return nodes.Errorf("token_format", "Unknown token format", "%q: use \"flat\" (<<API&&ENDPOINT>>) or \"hierarchical\" (<<API>><<ENDPOINT>>).", c.TokenFormat)
	case (c.TokenOpen != nil && *c.TokenOpen == "") || (c.TokenClose != nil && *c.TokenClose == ""):
		return nodes.Errorf("token_open", "Empty token spelling", "token_open and token_close must not be empty.")
	case c.Limit != nil && *c.Limit < 1:
		return nodes.Errorf("limit", "Invalid limit", "limit must be at least 1.")
	case c.MaxTokens != nil && *c.MaxTokens < 1:
		return nodes.Errorf("max_tokens", "Invalid max_tokens", "max_tokens must be at least 1.")
	}
	return nil
}

func (probeEvalType) Resolve(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	c := r.Config().(*probeEvalConfig)
	m, id, err := llmenv.Resolve(ctx, r, "model", "model", c.Model)
	if err != nil {
		return nil, err
	}
	id["prompts"] = ts.ProbePromptDigest("mcq_eval", "qa_eval")
	return &nodes.Pinned{Identity: id, Value: m}, nil
}

func (probeEvalType) CallsModels(any) bool { return true }

// probeQuestion is one item ready to ask.
type probeQuestion struct {
	row  ProbeEvalRow
	call llm.Call
}

// probeItems reads the items table: which benchmark it holds and its
// rows, each checked (an id given twice, a QA answer other than Yes/No,
// an MCQ item without exactly three distinct wrong answers or with an
// empty option is an error naming the row: nothing is dropped).
func probeItems(r nodes.Run, ref nodes.Ref) (string, []map[string]string, error) {
	in, err := r.Input(ref)
	if err != nil {
		return "", nil, err
	}
	bench, names := ts.BenchmarkQA, []string{"id", "question", "answer", "tool"}
	if _, ok := in.Schema().Lookup("correct_answer"); ok {
		bench, names = ts.BenchmarkMCQ, []string{"id", "question", "correct_answer", "wrong_answers", "tool"}
	}
	cols, err := columns(in, names...)
	if err != nil {
		return "", nil, fmt.Errorf("items %s (an MCQ table has correct_answer, a QA table answer): %w", ref, err)
	}
	out := make([]map[string]string, len(cols))
	for i, v := range cols {
		out[i] = map[string]string{}
		for j, name := range names {
			out[i][name] = text(v[j])
		}
	}
	return bench, out, nil
}

// questions builds the calls, in items order.
func (t probeEvalType) questions(r nodes.Run) (string, []probeQuestion, error) {
	c := t.Config(r)
	m := r.Pinned().(*llmenv.Model)
	bench, items, err := probeItems(r, c.Items)
	if err != nil {
		return "", nil, err
	}
	if c.Limit != nil && *c.Limit < len(items) {
		items = items[:*c.Limit]
	}
	req := m.Request()
	if req.Temperature == nil {
		zero := 0.0
		req.Temperature = &zero
	}
	if c.MaxTokens != nil {
		req.MaxTokens = *c.MaxTokens
	} else if req.MaxTokens == 0 {
		req.MaxTokens = 16
	}
	req.Choice = ts.QALabels()
	if bench == ts.BenchmarkMCQ {
		req.Choice = ts.MCQLetters()
	}
	seen := map[string]int{}
	var out []probeQuestion
	for i, it := range items {
		where := fmt.Sprintf("items %s row %d (id %q)", c.Items, i+1, it["id"])
		if it["id"] == "" {
			return "", nil, fmt.Errorf("items %s row %d: no id", c.Items, i+1)
		}
		if j, dup := seen[it["id"]]; dup {
			return "", nil, fmt.Errorf("%s: the id is also row %d's", where, j+1)
		}
		seen[it["id"]] = i
		tools, err := ts.DecodeTools([]byte(it["tool"]))
		if err != nil || len(tools) != 1 {
			return "", nil, fmt.Errorf("%s: tool is not one tool object: %v", where, err)
		}
		tool, err := tools[0].Row()
		if err != nil {
			return "", nil, fmt.Errorf("%s: tool: %w", where, err)
		}
		row := ProbeEvalRow{Benchmark: bench, ID: it["id"], ToolName: tool.ToolName, Question: it["question"], Model: m.Config.ID}
		ref, err := probeToolRef(tool, c)
		if err != nil {
			return "", nil, fmt.Errorf("%s: %w", where, err)
		}
		if bench == ts.BenchmarkMCQ {
			var wrong []string
			if err := json.Unmarshal([]byte(it["wrong_answers"]), &wrong); err != nil {
				return "", nil, fmt.Errorf("%s: wrong_answers is not a JSON list of strings: %v", where, err)
			}
			orig := append([]string{it["correct_answer"]}, wrong...)
			if why := ts.CheckMCQOptions(orig); why != "" {
				return "", nil, fmt.Errorf("%s: %s", where, why)
			}
			letters := ts.MCQLetters()
			for j, k := range ts.MCQPermutation(c.seed(), row.ID) {
				row.Options = append(row.Options, orig[k])
				row.Permutation = append(row.Permutation, int64(k))
				if k == 0 {
					row.Gold = letters[j]
				}
			}
		} else {
			row.Options = ts.QALabels()
			row.Gold = it["answer"]
			if row.Gold != "Yes" && row.Gold != "No" {
				return "", nil, fmt.Errorf("%s: answer is %q, not Yes or No", where, row.Gold)
			}
		}
		user, err := ts.ProbeEvalPrompt(bench, ref, it["question"], row.Options)
		if err != nil {
			return "", nil, err
		}
		rq := probeMessages(m, req, user)
		row.Prompt = user
		out = append(out, probeQuestion{row: row, call: llm.Call{Request: rq}})
	}
	return bench, out, nil
}

// probeToolRef is how a prompt names the tool (c.ToolRef): ts.ToolRef,
// its virtual token(s) spelled as retrieve_parametric spells them.
func probeToolRef(t CatalogRow, c *probeEvalConfig) (string, error) {
	format, open, close := c.tokenSpelling()
	return ts.ToolRef(t, c.toolRef(), format, open, close)
}

func (t probeEvalType) PlanCalls(ctx context.Context, r nodes.Run) ([]nodes.CallPlan, error) {
	m := r.Pinned().(*llmenv.Model)
	_, qs, err := t.questions(r)
	if err != nil {
		return nil, err
	}
	calls := make([]llm.Call, len(qs))
	for i, q := range qs {
		calls[i] = q.call
	}
	// Trained weights are another model to the call cache.
	m, err = m.WithTrained(r, "trained", t.Config(r).Trained)
	if err != nil {
		return nil, err
	}
	return []nodes.CallPlan{llmenv.Estimate(m.Client(r), m.Config.ID, calls, 0)}, nil
}

// constraintSent says whether a model with this structured_output sends
// its choices to the server as a constraint.
func constraintSent(mode string) bool {
	return mode != llm.JSONObject && mode != llm.NoConstraint
}

// Run asks every item (llmenv.DoAll; the first failed call fails the node,
// the answered ones are cached, so a re-run makes only the missing) and
// writes one row per item in items order.
func (t probeEvalType) Run(ctx context.Context, r nodes.Run) error {
	m := r.Pinned().(*llmenv.Model)
	bench, qs, err := t.questions(r)
	if err != nil {
		return err
	}
	calls := make([]llm.Call, len(qs))
	for i, q := range qs {
		calls[i] = q.call
	}
	m, err = m.WithTrained(r, "trained", t.Config(r).Trained)
	if err != nil {
		return err
	}
	cl := m.Client(r)
	var first error
	fallbacks, fallback := 0, ""
	rows := make([]ProbeEvalRow, len(qs))
	done := llmenv.DoAll(ctx, r, cl, calls, m.Endpoint.Concurrency, true, func(i int, resp *llm.Response, err error) {
		if err != nil {
			if first == nil {
				first = fmt.Errorf("item %s: %w", qs[i].row.ID, err)
			}
			return
		}
		row := qs[i].row
		row.Raw = resp.Text
		row.CutOff = resp.FinishReason == "length"
		var ok bool
		if bench == ts.BenchmarkMCQ {
			row.Predicted, ok = ts.ParseMCQAnswer(resp.Text, row.Options)
		} else {
			row.Predicted, ok = ts.ParseQAAnswer(resp.Text)
		}
		held := resp.SchemaHeld
		if resp.Warning != "" || !constraintSent(m.Endpoint.Structured) {
			// No constraint went to the server (structured_output json_object
			// or none, or the client's fallback from a refused
			// json_schema): an answer among the choices was not held to them.
			held = nil
		}
		if resp.Warning != "" {
			if fallbacks == 0 {
				fallback = resp.Warning
			}
			fallbacks++
		}
		row.ParsedBy = ts.ParsedBy(ok, held)
		row.Correct = ok && row.Predicted == row.Gold
		rows[i] = row
	})
	if first == nil {
		first = ctx.Err()
	}
	st := cl.Stats()
	r.Report("usage", st)
	if first != nil {
		return fmt.Errorf("probe_eval: %w; %d of %d calls answered and cached: a re-run makes only the %d missing", first, done, len(qs), len(qs)-done)
	}
	by := map[string]int{}
	correct, cut := 0, 0
	for _, row := range rows {
		by[row.ParsedBy]++
		if row.Correct {
			correct++
		}
		if row.CutOff {
			cut++
		}
	}
	acc := 0.0
	if len(rows) > 0 {
		acc = 100 * float64(correct) / float64(len(rows))
	}
	r.Report("answers", map[string]int{"constrained": by[ts.ParsedConstrained], "free_text": by[ts.ParsedFreeText], "unparseable": by[ts.ParsedNone], "cut_off": cut})
	warning := ""
	if fallbacks > 0 {
		r.Logf("%d answers obtained through the structured-output fallback: %s", fallbacks, fallback)
		warning = fmt.Sprintf("; warning: %d answers unconstrained, through the structured-output fallback (the server refused json_schema; see the log)", fallbacks)
	}
	r.Note("%s: %d items, %d correct (%.1f%%); answers %d constrained, %d parsed from free text, %d unparseable (counted wrong), %d cut off at max_tokens (finish_reason length); %d calls made, %d cached%s",
		bench, len(rows), correct, acc, by[ts.ParsedConstrained], by[ts.ParsedFreeText], by[ts.ParsedNone], cut, st.Calls, st.Cached, warning)
	return t.Write(r, rows)
}
