package toolsense

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/cespare/xxhash/v2"
	"github.com/lacuna-dev/lacuna/runners/llm"
)

// The answer labels of the probes, in order.
var (
	mcqLetters = []string{"A", "B", "C", "D"}
	qaLabels   = []string{"Yes", "No"}
)

// MCQLetters are an MCQ item's answer labels, A to D (a fresh slice).
func MCQLetters() []string { return slices.Clone(mcqLetters) }

// QALabels are a QA item's answer labels, Yes and No (a fresh slice).
func QALabels() []string { return slices.Clone(qaLabels) }

// How a predicted answer was read (ParsedBy).
const (
	ParsedConstrained = "constrained" // the server held the constraint (llm.Response.SchemaHeld): the answer is one of the labels
	ParsedFreeText    = "parsed"      // read from an answer that did not satisfy the constraint (the server ignored it)
	ParsedNone        = "unparseable" // no label could be read: counted wrong
)

// CheckMCQOptions says why an MCQ item's options [correct, wrong...]
// cannot be asked ("" when they can): three wrong answers, none empty,
// the four distinct (case and spacing aside).
func CheckMCQOptions(opts []string) string {
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

// MCQPermutation is item id's option order under seed: element j is the
// index in [correct, wrong1, wrong2, wrong3] of the option shown as letter
// j. It depends on the seed and the id only (not on the item's place).
func MCQPermutation(seed uint64, id string) []int {
	return rand.New(rand.NewPCG(seed, xxhash.Sum64String(id))).Perm(4)
}

// ToolRef is how an evaluation prompt names tool t: ref "name" its
// tool_name; "description" a new line and its ProbeDescription (the
// open-book setting); any other (probe_eval's "token") its virtual
// token(s) in the given format and spelling, as ToolTokens spells them
// for retrieval, written one after the other (hierarchical:
// <<API>><<ENDPOINT>>). A hierarchical token of a tool that ToolTokens
// cannot split is an error.
func ToolRef(t CatalogRow, ref, format, open, close string) (string, error) {
	switch ref {
	case "name":
		return t.ToolName, nil
	case "description":
		return "\n" + ProbeDescription(t), nil
	}
	toks, err := ToolTokens(t, format, open, close)
	if err != nil {
		return "", err
	}
	return strings.Join(toks, ""), nil
}

// ProbeEvalPrompt is the evaluation prompt of bench (BenchmarkMCQ,
// prompts/mcq_eval.txt; BenchmarkQA, prompts/qa_eval.txt): the tool as
// toolRef names it (ToolRef) and the question; for MCQ, options are the
// four options in the order shown, lettered A to D.
func ProbeEvalPrompt(bench, toolRef, question string, options []string) (string, error) {
	data := map[string]any{"Tool": toolRef, "Question": question}
	if bench == BenchmarkMCQ {
		type option struct{ Letter, Text string }
		var shown []option
		for j, o := range options {
			shown = append(shown, option{mcqLetters[j], o})
		}
		data["Options"] = shown
	}
	return renderProbePrompt(bench+"_eval", data)
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

// ParseMCQAnswer reads a letter from an answer to an item whose options,
// in letter order A–D, are options: the choice itself (bare
// or as a JSON string), else from free text, in this order: a bare
// lowercase letter; the letters an "answer" phrase claims ("Answer: B",
// "the answer is (C)"), read only when they are one letter; the letter of
// an "option" phrase ("correct option: B"), read only when every such
// phrase names one letter and no other letter A–D stands as a word; a
// leading "B." or "B)" read only when nothing follows it or what follows
// begins with that option's text ("B. Weather data", not "A: no idea" or
// "A. or maybe C"); the text of exactly one option. ok is false when none
// can be read: several letters claimed is unparseable, not the first.
func ParseMCQAnswer(text string, options []string) (letter string, ok bool) {
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

// ParseQAAnswer reads Yes or No from an answer: the choice itself (bare
// or as a JSON string), else free text whose first word is yes or no
// (any case, bold allowed) and is the whole answer or followed by , . !
// or : ("No, it does not."; "No idea" is not an answer), else "answer:
// yes". ok is false when none can be read, and when the other label also
// stands as a word ("Yes, but no").
func ParseQAAnswer(text string) (label string, ok bool) {
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

// ParsedBy is how an answer was read: ParsedNone when no label was read
// (ok false); ParsedConstrained when one was and the server held the
// constraint (the response's SchemaHeld: its answer satisfied the
// choice); ParsedFreeText when one was read from an answer that did not
// satisfy it, or whose server did not say.
func ParsedBy(ok bool, schemaHeld *bool) string {
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
