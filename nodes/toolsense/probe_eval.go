package toolsense

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/cespare/xxhash/v2"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/llmenv"
	"github.com/lacuna-dev/lacuna/runners/llm"
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
	// ToolRef is how the prompt names the tool: "token" (default) its
	// ToolGen virtual token(s), spelled as retrieve_parametric spells
	// them (toolTokens: <<tool_name>> by default), the paper's setting
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
	format, open, close = c.TokenFormat, defaultTokenOpen, defaultTokenClose
	if format == "" {
		format = flatTokens
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

// The benchmarks and their answer labels.
const (
	BenchmarkMCQ = "mcq"
	BenchmarkQA  = "qa"
)

var (
	mcqLetters = []string{"A", "B", "C", "D"}
	qaLabels   = []string{"Yes", "No"}
)

// How a predicted answer was read (ProbeEvalRow.ParsedBy).
const (
	ParsedConstrained = "constrained" // the server held the constraint (llm.Response.SchemaHeld): the answer is one of the labels
	ParsedFreeText    = "parsed"      // read from an answer that did not satisfy the constraint (the server ignored it)
	ParsedNone        = "unparseable" // no label could be read: counted wrong
)

// ProbeEvalRow is one item's question, the model's answer and whether it
// was right.
type ProbeEvalRow struct {
	Benchmark string `parquet:"benchmark"` // mcq or qa
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
	// ("" when none could be), ParsedBy how (ParsedConstrained,
	// ParsedFreeText, ParsedNone).
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
	case c.TokenFormat != "" && c.TokenFormat != flatTokens && c.TokenFormat != hierarchicalTokens:
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
	id["prompts"] = probePromptDigest("mcq_eval", "qa_eval")
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
	bench, names := BenchmarkQA, []string{"id", "question", "answer", "tool"}
	if _, ok := in.Schema().Lookup("correct_answer"); ok {
		bench, names = BenchmarkMCQ, []string{"id", "question", "correct_answer", "wrong_answers", "tool"}
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
	req.Choice = qaLabels
	if bench == BenchmarkMCQ {
		req.Choice = mcqLetters
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
		tools, err := decodeTools([]byte(it["tool"]))
		if err != nil || len(tools) != 1 {
			return "", nil, fmt.Errorf("%s: tool is not one tool object: %v", where, err)
		}
		tool, err := tools[0].row()
		if err != nil {
			return "", nil, fmt.Errorf("%s: tool: %w", where, err)
		}
		row := ProbeEvalRow{Benchmark: bench, ID: it["id"], ToolName: tool.ToolName, Question: it["question"], Model: m.Config.ID}
		ref, err := probeToolRef(tool, c)
		if err != nil {
			return "", nil, fmt.Errorf("%s: %w", where, err)
		}
		data := map[string]any{"Tool": ref, "Question": it["question"]}
		if bench == BenchmarkMCQ {
			var wrong []string
			if err := json.Unmarshal([]byte(it["wrong_answers"]), &wrong); err != nil {
				return "", nil, fmt.Errorf("%s: wrong_answers is not a JSON list of strings: %v", where, err)
			}
			orig := append([]string{it["correct_answer"]}, wrong...)
			if why := probeCheckOptions(orig); why != "" {
				return "", nil, fmt.Errorf("%s: %s", where, why)
			}
			perm := probePermutation(c.seed(), row.ID)
			type option struct{ Letter, Text string }
			var shown []option
			for j, k := range perm {
				row.Options = append(row.Options, orig[k])
				row.Permutation = append(row.Permutation, int64(k))
				shown = append(shown, option{mcqLetters[j], orig[k]})
				if k == 0 {
					row.Gold = mcqLetters[j]
				}
			}
			data["Options"] = shown
		} else {
			row.Options = qaLabels
			row.Gold = it["answer"]
			if row.Gold != "Yes" && row.Gold != "No" {
				return "", nil, fmt.Errorf("%s: answer is %q, not Yes or No", where, row.Gold)
			}
		}
		user, err := renderProbePrompt(bench+"_eval", data)
		if err != nil {
			return "", nil, err
		}
		rq := probeMessages(m, req, user)
		row.Prompt = user
		out = append(out, probeQuestion{row: row, call: llm.Call{Request: rq}})
	}
	return bench, out, nil
}

// probeCheckOptions says why an MCQ item's options [correct, wrong...] cannot
// be asked ("" when they can): three wrong answers, none empty, the four
// distinct.
func probeCheckOptions(opts []string) string {
	if len(opts) != 4 {
		return fmt.Sprintf("%d wrong answers, not 3", len(opts)-1)
	}
	seen := map[string]bool{}
	for _, o := range opts {
		k := probeNormalize(o)
		if k == "" {
			return "an option is empty"
		}
		if seen[k] {
			return fmt.Sprintf("option %q is there twice", o)
		}
		seen[k] = true
	}
	return ""
}

// probePermutation is item id's option order under seed: element j is the
// index in [correct, wrong1, wrong2, wrong3] of the option shown as letter
// j. It depends on the seed and the id only (not on the item's place).
func probePermutation(seed uint64, id string) []int {
	return rand.New(rand.NewPCG(seed, xxhash.Sum64String(id))).Perm(4)
}

// probeToolRef is how a prompt names the tool (c.ToolRef): its virtual
// token(s), spelled by toolTokens as retrieve_parametric spells them and
// written one after the other (hierarchical: <<API>><<ENDPOINT>>).
func probeToolRef(t CatalogRow, c *probeEvalConfig) (string, error) {
	switch c.toolRef() {
	case "name":
		return t.ToolName, nil
	case "description":
		return "\n" + probeDescription(t), nil
	}
	format, open, close := c.tokenSpelling()
	toks, err := toolTokens(t, format, open, close)
	if err != nil {
		return "", err
	}
	return strings.Join(toks, ""), nil
}

var (
	// "Answer: B", "the answer is (B)", "answer: A or B" (group 1 holds
	// every letter claimed).
	probeAnswerIs = regexp.MustCompile(`(?i:\banswer)(?:\s+is)?\s*[:\-]?\s*(\(?[A-D]\)?(?:\s*(?:,|/|(?i:or|and))\s*\(?[A-D]\)?)*)(?:\W|$)`)
	// "correct option: B", "option (B)".
	probeOptionIs = regexp.MustCompile(`(?i:\boption)(?:\s+is)?\s*[:\-]?\s*\(?([A-D])(?:\W|$)`)
	// "B.", "B)", "(B)", "B:" at the start of the answer, and what follows.
	probeLeadingLetter = regexp.MustCompile(`^\(?([A-D])(?:[.):]|\)\s|$)(.*)$`)
	// A letter A–D standing as its own word.
	probeLetterWord = regexp.MustCompile(`\b[A-D]\b`)
	// QA: "Yes" or "No" as the whole answer or followed by , . ! : (so
	// "No idea" is not No); "answer: no".
	probeQAFirst    = regexp.MustCompile(`^(?i)\**(yes|no)\**(?:[,.!:]|$)`)
	probeQAAnswerIs = regexp.MustCompile(`(?i)\banswer(?:\s+is)?\s*[:\-]?\s*\**(yes|no)\b`)
)

// parseMCQAnswer reads a letter from an answer: the choice itself (bare
// or as a JSON string), else from free text, in this order: a bare
// lowercase letter; the letters an "answer" phrase claims ("Answer: B",
// "the answer is (C)"), read only when they are one letter; the letter of
// an "option" phrase ("correct option: B"), read only when every such
// phrase names one letter and no other letter A–D stands as a word; a
// leading "B." or "B)" read only when nothing follows it or what follows
// begins with that option's text ("B. Weather data", not "A: no idea" or
// "A. or maybe C"); the text of exactly one option. ok is false when none
// can be read: several letters claimed is unparseable, not the first.
func parseMCQAnswer(text string, options []string) (letter string, ok bool) {
	s := probeAnswerText(text)
	for _, l := range mcqLetters {
		if s == l || s == strings.ToLower(l) {
			return l, true
		}
	}
	distinct := func(ls []string) []string {
		slices.Sort(ls)
		return slices.Compact(ls)
	}
	var claimed []string
	for _, m := range probeAnswerIs.FindAllStringSubmatch(s, -1) {
		claimed = append(claimed, probeLetterWord.FindAllString(strings.ToUpper(m[1]), -1)...)
	}
	if claimed = distinct(claimed); len(claimed) > 0 {
		if len(claimed) == 1 {
			return claimed[0], true
		}
		return "", false
	}
	words := distinct(probeLetterWord.FindAllString(s, -1))
	for _, m := range probeOptionIs.FindAllStringSubmatch(s, -1) {
		claimed = append(claimed, m[1])
	}
	if claimed = distinct(claimed); len(claimed) > 0 {
		if len(claimed) == 1 && len(words) == 1 {
			return claimed[0], true
		}
		return "", false
	}
	if m := probeLeadingLetter.FindStringSubmatch(s); m != nil {
		rest := probeNormalize(m[2])
		opt := probeNormalize(options[strings.Index("ABCD", m[1])])
		if rest == "" || strings.HasPrefix(rest, opt) {
			return m[1], true
		}
		return "", false
	}
	hit := -1
	for j, o := range options {
		if probeNormalize(strings.TrimRight(s, ".")) == probeNormalize(o) {
			if hit >= 0 {
				return "", false
			}
			hit = j
		}
	}
	if hit >= 0 {
		return mcqLetters[hit], true
	}
	return "", false
}

// parseQAAnswer reads Yes or No from an answer: the choice itself (bare
// or as a JSON string), else free text whose first word is yes or no
// (any case, bold allowed) and is the whole answer or followed by , . !
// or : ("No, it does not."; "No idea" is not an answer), else "answer:
// yes". ok is false when none can be read, and when the other label also
// stands as a word ("Yes, but no").
func parseQAAnswer(text string) (label string, ok bool) {
	s := probeAnswerText(text)
	if s == "Yes" || s == "No" {
		return s, true
	}
	m := probeQAFirst.FindStringSubmatch(s)
	if m == nil {
		m = probeQAAnswerIs.FindStringSubmatch(s)
	}
	if m == nil {
		return "", false
	}
	label, other := "Yes", "no"
	if strings.EqualFold(m[1], "no") {
		label, other = "No", "yes"
	}
	words := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) })
	if slices.Contains(words, other) {
		return "", false
	}
	return label, true
}

// probeParsedBy is how an answer was read: constrained when a label was
// read and the server held the constraint (the response's SchemaHeld:
// its answer satisfied the choice), free text when a label was read from
// an answer that did not satisfy it.
func probeParsedBy(ok bool, schemaHeld *bool) string {
	switch {
	case !ok:
		return ParsedNone
	case schemaHeld != nil && *schemaHeld:
		return ParsedConstrained
	}
	return ParsedFreeText
}

// probeAnswerText is an answer with its think blocks and a fence left
// aside, a JSON string unquoted and an object's single "answer" field
// taken, trimmed.
func probeAnswerText(text string) string {
	s := strings.TrimSpace(llm.AnswerJSON(text))
	var str string
	if json.Unmarshal([]byte(s), &str) == nil {
		return strings.TrimSpace(str)
	}
	var obj struct {
		Answer *string `json:"answer"`
	}
	if json.Unmarshal([]byte(s), &obj) == nil && obj.Answer != nil {
		return strings.TrimSpace(*obj.Answer)
	}
	return s
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
	return []nodes.CallPlan{llmenv.Estimate(m.Client(r), m.Config.ID, calls, 0)}, nil
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
	cl := m.Client(r)
	var first error
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
		if bench == BenchmarkMCQ {
			row.Predicted, ok = parseMCQAnswer(resp.Text, row.Options)
		} else {
			row.Predicted, ok = parseQAAnswer(resp.Text)
		}
		row.ParsedBy = probeParsedBy(ok, resp.SchemaHeld)
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
	r.Report("answers", map[string]int{"constrained": by[ParsedConstrained], "free_text": by[ParsedFreeText], "unparseable": by[ParsedNone], "cut_off": cut})
	r.Note("%s: %d items, %d correct (%.1f%%); answers %d constrained, %d parsed from free text, %d unparseable (counted wrong), %d cut off at max_tokens (finish_reason length); %d calls made, %d cached",
		bench, len(rows), correct, acc, by[ParsedConstrained], by[ParsedFreeText], by[ParsedNone], cut, st.Calls, st.Cached)
	return t.Write(r, rows)
}
