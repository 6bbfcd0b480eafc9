package toolsense

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/lacuna-dev/lacuna/analysis"
	"github.com/lacuna-dev/lacuna/runners/llm"
)

// The probing benchmarks, as the kind of an item (ProbeItem, ProbeID,
// the prompts' names) and as a probe_eval row's benchmark column.
const (
	BenchmarkMCQ = "mcq"
	BenchmarkQA  = "qa"
)

// ProbeItem is a generated item as the generator answers it (the JSON of
// the generation prompts' format instructions). A nil field was absent.
type ProbeItem struct {
	Question      *string  `json:"question"`
	CorrectAnswer *string  `json:"correct_answer"` // mcq
	WrongAnswers  []string `json:"wrong_answers"`  // mcq
	Skip          *bool    `json:"skip"`
}

// Generation and judge answer schemas, sent as structured output (the
// answers are parsed either way): an MCQ item, a QA item, a judge's
// verdict.
var (
	MCQItemSchema = json.RawMessage(`{"type":"object","properties":{"question":{"type":"string"},"correct_answer":{"type":"string"},` +
		`"wrong_answers":{"type":"array","items":{"type":"string"}},"skip":{"type":"boolean"}},` +
		`"required":["question","correct_answer","wrong_answers","skip"],"additionalProperties":false}`)
	QAItemSchema = json.RawMessage(`{"type":"object","properties":{"question":{"type":"string"},"skip":{"type":"boolean"}},` +
		`"required":["question","skip"],"additionalProperties":false}`)
	ProbeVerdictSchema = json.RawMessage(`{"type":"object","properties":{"accept":{"type":"boolean"},"reason":{"type":"string"}},` +
		`"required":["accept","reason"],"additionalProperties":false}`)
)

// decodeProbeJSON decodes the JSON object of an answer (llm.AnswerJSON:
// think blocks and a fence around it left aside), refusing unknown fields.
func decodeProbeJSON(text string, v any) error {
	s := llm.AnswerJSON(text)
	d := json.NewDecoder(strings.NewReader(s))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("not the JSON object asked for: %v", err)
	}
	if d.More() {
		return fmt.Errorf("not the JSON object asked for: trailing text after it")
	}
	return nil
}

// ParseProbeItem reads a generation answer; mcq says which fields it
// needs. An item with skip true is returned as it is; any other lacks
// none of its kind's fields (question; mcq also correct_answer and
// wrong_answers) and, for QA, has no answer options. The error says what
// is wrong, to be fed back to the generator.
func ParseProbeItem(text string, mcq bool) (ProbeItem, error) {
	var it ProbeItem
	if err := decodeProbeJSON(text, &it); err != nil {
		return it, err
	}
	if it.Skip != nil && *it.Skip {
		return it, nil
	}
	var missing []string
	if it.Question == nil {
		missing = append(missing, "question")
	}
	if mcq && it.CorrectAnswer == nil {
		missing = append(missing, "correct_answer")
	}
	if mcq && it.WrongAnswers == nil {
		missing = append(missing, "wrong_answers")
	}
	if !mcq && (it.CorrectAnswer != nil || it.WrongAnswers != nil) {
		return it, fmt.Errorf("a yes/no item has no answer options")
	}
	if len(missing) > 0 {
		return it, fmt.Errorf("the answer lacks %s", strings.Join(missing, ", "))
	}
	return it, nil
}

// ParseProbeVerdict reads a judge answer. An answer that is not the
// verdict's JSON is an error: the caller rejects the item (fail closed).
func ParseProbeVerdict(text string) (accept bool, reason string, err error) {
	var v struct {
		Accept *bool   `json:"accept"`
		Reason *string `json:"reason"`
	}
	if err := decodeProbeJSON(text, &v); err != nil {
		return false, "", err
	}
	if v.Accept == nil {
		return false, "", fmt.Errorf("no accept field")
	}
	if v.Reason != nil {
		reason = strings.TrimSpace(*v.Reason)
	}
	return *v.Accept, reason, nil
}

// probeNormalize is an option as options are compared: lowercase, spaces
// collapsed.
func probeNormalize(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }

// probeHasWords says whether phrase occurs in text, case aside, as whole
// words: neither preceded nor followed by a letter or digit ("this tool"
// is in "Does this tool's API" but not in "this toolkit").
func probeHasWords(text, phrase string) bool {
	re := regexp.MustCompile(`(?i)(?:^|[^\pL\pN])` + regexp.QuoteMeta(phrase) + `(?:[^\pL\pN]|$)`)
	return re.MatchString(text)
}

// ValidateProbeItem is the programmatic validator: the reasons an item
// fails it, none when it passes. it must have a Question (and, when mcq,
// a CorrectAnswer): ParseProbeItem's items do. Every item: a question
// that says "this tool" and names neither the tool's full tool_name nor
// its tool_title (the service name), each matched case-insensitively as
// whole words, so a one-word title that is a common word ("Email")
// rejects a question using that word: the feedback names it and the
// retry rephrases. MCQ also: a correct answer and exactly three wrong
// ones, the four distinct (case and spacing aside), each of lo..hi words
// when hi > 0 (no word limit when hi is 0).
func ValidateProbeItem(it ProbeItem, tool CatalogRow, mcq bool, lo, hi int) []string {
	var why []string
	q := strings.TrimSpace(*it.Question)
	switch {
	case q == "":
		why = append(why, "the question is empty")
	case !probeHasWords(q, "this tool"):
		why = append(why, `the question does not say "this tool"`)
	}
	for _, name := range []string{tool.ToolName, tool.ToolTitle} {
		if strings.TrimSpace(name) != "" && probeHasWords(q, name) {
			why = append(why, fmt.Sprintf("the question names the tool (%q): use \"this tool\"", name))
			break
		}
	}
	if !mcq {
		return why
	}
	if len(it.WrongAnswers) != 3 {
		why = append(why, fmt.Sprintf("there are %d wrong answers, not 3", len(it.WrongAnswers)))
	}
	opts := append([]string{*it.CorrectAnswer}, it.WrongAnswers...)
	seen := map[string]bool{}
	for i, o := range opts {
		label := "the correct answer"
		if i > 0 {
			label = fmt.Sprintf("wrong answer %d", i)
		}
		if n := len(strings.Fields(o)); hi > 0 && (n < lo || n > hi) {
			why = append(why, fmt.Sprintf("%s %q has %d words, not %d–%d", label, o, n, lo, hi))
		}
		if k := probeNormalize(o); seen[k] {
			why = append(why, fmt.Sprintf("%s %q repeats another option", label, o))
		} else {
			seen[k] = true
		}
	}
	return why
}

// ProbeDescription is what the probes' generator and judge see of a tool
// (and the evaluated model, with tool_ref "description"): its names and
// descriptions, one labelled line each, missing ones left out.
func ProbeDescription(t CatalogRow) string {
	var lines []string
	for _, f := range []struct{ label, v string }{
		{"Tool name", t.ToolTitle}, {"API name", t.APITitle},
		{"Tool description", t.ToolDescription}, {"API description", t.APIDescription},
	} {
		if f.v != "" {
			lines = append(lines, f.label+": "+f.v)
		}
	}
	return strings.Join(lines, "\n")
}

// ProbeGeneratePrompt is the generation prompt of kind (BenchmarkMCQ,
// prompts/mcq_generate.txt; BenchmarkQA, prompts/qa_generate.txt) for
// tool. target is the answer a QA question must have ("Yes" or "No"; ""
// for MCQ); feedback is the previous attempt's rejection reasons (none
// on a first attempt), shown as a list.
func ProbeGeneratePrompt(kind string, tool CatalogRow, target string, feedback []string) (string, error) {
	data := map[string]any{"Description": ProbeDescription(tool), "TargetAnswer": target, "Feedback": ""}
	if len(feedback) > 0 {
		data["Feedback"] = "- " + strings.Join(feedback, "\n- ")
	}
	return renderProbePrompt(kind+"_generate", data)
}

// ProbeJudgePrompt is the judge prompt of kind (prompts/mcq_judge.txt,
// prompts/qa_judge.txt) for item it about tool, whose target answer (QA)
// is target. it must have a Question and, for MCQ, a CorrectAnswer;
// ParseProbeVerdict reads the judge's answer.
func ProbeJudgePrompt(kind string, tool CatalogRow, it ProbeItem, target string) (string, error) {
	data := map[string]any{"Description": ProbeDescription(tool), "Question": *it.Question, "Answer": target}
	if kind == BenchmarkMCQ {
		data["CorrectAnswer"] = *it.CorrectAnswer
		data["WrongAnswers"] = strings.Join(it.WrongAnswers, "; ")
	}
	return renderProbePrompt(kind+"_judge", data)
}

// ProbeID is a generated item's id: the kind, "-" and a digest of the
// kind and the tool_name (one item per tool), so re-generation keeps ids.
func ProbeID(kind, toolName string) string {
	return fmt.Sprintf("%s-%016x", kind, xxhash.Sum64String(kind+"\x00"+toolName))
}

// ProbeToolJSON is a catalog row as the released probe files write a
// tool object: the five fields in their order, a missing one as "None",
// no HTML escaping (tool names hold "&&").
func ProbeToolJSON(t CatalogRow) string {
	none := func(s string) string {
		if s == "" {
			return "None"
		}
		return s
	}
	return MarshalUnescaped(struct {
		ToolName        string `json:"tool_name"`
		ToolTitle       string `json:"tool_title"`
		ToolDescription string `json:"tool_description"`
		APITitle        string `json:"api_title"`
		APIDescription  string `json:"api_description"`
	}{t.ToolName, none(t.ToolTitle), none(t.ToolDescription), none(t.APITitle), none(t.APIDescription)})
}

// MarshalUnescaped is json.Marshal without HTML escaping and without the
// trailing newline, as the released probe files write JSON; v must be
// encodable (it panics otherwise).
func MarshalUnescaped(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// SampleProbeTools draws the tools a probe of kind is generated for from
// a catalog of n tools: count of them (all when count is nil or at least
// n), seeded by seed on a stream of the kind, as indexes in catalog
// order.
func SampleProbeTools(n int, count *int, seed uint64, kind string) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	if count != nil && *count < n {
		rng := rand.New(rand.NewPCG(seed, analysis.StreamOf(kind+"_generate tools")))
		rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		idx = idx[:*count]
		sort.Ints(idx)
	}
	return idx
}

// QATarget is the answer the i-th sampled tool's QA question must have
// (0-based, in catalog order): Yes, No, Yes, ..., balanced by
// construction (seed 002 §3.2); RebalanceQA restores the balance after
// drops.
func QATarget(i int) string { return [2]string{"Yes", "No"}[i%2] }

// RebalanceQA restores the Yes/No balance that drops broke: of the kept
// items (kept[i]) whose target (targets[i]: "Yes", else No) is the
// majority's, it returns the indexes of a seeded sample of the surplus
// to drop, so that as many Yes as No items remain (none when one target
// has no item left; an odd count loses one).
func RebalanceQA(targets []string, kept []bool, seed uint64) []int {
	var yes, no []int
	for i, target := range targets {
		switch {
		case !kept[i]:
		case target == "Yes":
			yes = append(yes, i)
		default:
			no = append(no, i)
		}
	}
	major, minor := yes, no
	if len(no) > len(yes) {
		major, minor = no, yes
	}
	rng := rand.New(rand.NewPCG(seed, analysis.StreamOf("qa_generate rebalance")))
	rng.Shuffle(len(major), func(i, j int) { major[i], major[j] = major[j], major[i] })
	return major[len(minor):]
}
