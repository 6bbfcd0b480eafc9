package toolsense

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/lacuna-dev/lacuna/runners/llm"
)

// Tiers are the Realistic Retrieval Benchmark's ambiguity tiers (an RRB
// row's complexity) in output order: easy, medium, hard. The slice is
// fresh on every call.
func Tiers() []string { return []string{"easy", "medium", "hard"} }

// minAnswers is the fewest answer tools of a tier's sample.
var minAnswers = map[string]int{"easy": 1, "medium": 2, "hard": 4}

// MinAnswers is the fewest answer tools a sample of tier may have (easy
// 1, medium 2, hard 4): a candidate pool smaller than that cannot hold a
// sample of the tier. It is 0 for a name that is not a tier.
func MinAnswers(tier string) int { return minAnswers[tier] }

// RRBSample is one generated (query, answer tools) pair, as the
// generation prompt asks for it: Answer holds tool_names.
type RRBSample struct {
	Query  string   `json:"query"`
	Answer []string `json:"answer"`
}

// RRBGeneratePrompt is the generation prompt (prompts/rrb_generate.txt)
// asking for n samples of tier over pool, whose first tool is the seed
// (the anchor). rejected and accepted are a retry's feedback: the
// previous attempt's rejection reasons, and the queries already accepted
// (not to repeat); both nil on a first attempt.
func RRBGeneratePrompt(tier string, n int, pool []CatalogRow, rejected, accepted []string) (string, error) {
	var lines []string
	for _, tool := range pool {
		lines = append(lines, "- "+tool.ToolName+": "+Description(tool))
	}
	var fb []string
	if len(rejected) > 0 {
		fb = append(fb, "Rejected samples:")
	}
	for _, r := range rejected {
		fb = append(fb, "- "+r)
	}
	if len(accepted) > 0 {
		fb = append(fb, fmt.Sprintf("Already accepted (do not repeat them; generate %d new samples):", n))
		for _, q := range accepted {
			fb = append(fb, "- "+q)
		}
	}
	var b strings.Builder
	err := rrbGenerateTmpl.Execute(&b, map[string]any{
		"N": n, "Tier": tier, "AnchorName": pool[0].ToolName, "AnchorDescription": Description(pool[0]),
		"Pool": strings.Join(lines, "\n"), "Feedback": strings.Join(fb, "\n"),
	})
	if err != nil {
		return "", fmt.Errorf("rrb_generate prompt: %w", err)
	}
	return b.String(), nil
}

// RRBJudgePrompt is the judge prompt (prompts/rrb_judge.txt) for samples
// of tier, whose answers are tools of pool; ParseRRBVerdicts reads its
// answer.
func RRBJudgePrompt(tier string, pool []CatalogRow, samples []RRBSample) (string, error) {
	byName := map[string]CatalogRow{}
	for _, tool := range pool {
		byName[tool.ToolName] = tool
	}
	var s strings.Builder
	for i, x := range samples {
		fmt.Fprintf(&s, "Sample %d:\nQuery: %s\nAnswer tools:\n", i+1, x.Query)
		for _, a := range x.Answer {
			fmt.Fprintf(&s, "- %s: %s\n", a, Description(byName[a]))
		}
	}
	var b strings.Builder
	if err := rrbJudgeTmpl.Execute(&b, map[string]any{"Tier": tier, "Samples": strings.TrimRight(s.String(), "\n")}); err != nil {
		return "", fmt.Errorf("rrb_judge prompt: %w", err)
	}
	return b.String(), nil
}

// CheckRRBAnswer parses a generation answer (think blocks and a fence
// left aside) and validates its first want samples of tier against pool
// (pool[0] the seed): it returns those that pass ValidateRRB and repeat
// neither an accepted query nor one another (NormQuery), and the reasons
// of those that do not, each starting with its rule's name ("rule:
// detail"); fewer samples than want is a reason too ("too few samples").
// An answer that is not the JSON object asked for gives no samples and
// one "unparseable" reason.
func CheckRRBAnswer(text, tier string, pool []CatalogRow, want int, accepted []string) (valid []RRBSample, reasons []string) {
	answer, _ := llm.StripThink(text)
	var out struct {
		Samples []RRBSample `json:"samples"`
	}
	if err := json.Unmarshal([]byte(llm.AnswerJSON(answer)), &out); err != nil {
		return nil, []string{fmt.Sprintf("unparseable: the answer is not the JSON object asked for (%v)", err)}
	}
	if len(out.Samples) == 0 {
		return nil, []string{"unparseable: the answer has no samples"}
	}
	seen := map[string]bool{}
	for _, q := range accepted {
		seen[NormQuery(q)] = true
	}
	for _, s := range out.Samples[:min(len(out.Samples), want)] {
		if why := ValidateRRB(s, tier, pool); why != "" {
			reasons = append(reasons, fmt.Sprintf("%s (query %q)", why, s.Query))
			continue
		}
		if seen[NormQuery(s.Query)] {
			reasons = append(reasons, fmt.Sprintf("duplicate query: %q was already given", s.Query))
			continue
		}
		seen[NormQuery(s.Query)] = true
		valid = append(valid, s)
	}
	if len(out.Samples) < want {
		reasons = append(reasons, fmt.Sprintf("too few samples: %d of %d", len(out.Samples), want))
	}
	return valid, reasons
}

// NormQuery is a query compared for duplicates: lower case, spaces
// collapsed.
func NormQuery(q string) string {
	return strings.Join(strings.Fields(strings.ToLower(q)), " ")
}

// sentenceEnd is where a sentence may end: ., ! or ? and spaces (or the
// end of the text), with the word before it.
var sentenceEnd = regexp.MustCompile(`(\S*?)([.!?]+)(\s+|$)`)

// notSentenceEnd are words whose trailing period is an abbreviation's
// (lower case, without it); so are words holding a period of their own
// (e.g, i.e, U.S) and single letters (initials).
var notSentenceEnd = map[string]bool{"etc": true, "vs": true, "approx": true, "mr": true, "mrs": true, "ms": true,
	"dr": true, "st": true, "inc": true, "ltd": true, "co": true, "no": true, "jr": true, "sr": true}

// sentences counts the sentences of q: text up to ., ! or ? and spaces,
// except a single period after an abbreviation. An abbreviation ending a
// sentence ("... and so on, etc. Then") joins two sentences into one: the
// count errs low, the lenient way for the hard tier's limit.
func sentences(q string) int {
	q = strings.TrimSpace(q)
	n, start := 0, 0
	for _, m := range sentenceEnd.FindAllStringSubmatchIndex(q, -1) {
		word, punct := q[m[2]:m[3]], q[m[4]:m[5]]
		if punct == "." && m[5] < len(q) && (strings.Contains(word, ".") || utf8.RuneCountInString(word) == 1 || notSentenceEnd[strings.ToLower(word)]) {
			continue
		}
		if strings.Trim(q[start:m[1]], ".!? \t\n") != "" {
			n++
		}
		start = m[1]
	}
	if strings.TrimSpace(q[start:]) != "" {
		n++
	}
	return n
}

// ValidateRRB is the programmatic filter: "" when s passes, else the
// first rule it breaks ("rule: detail"), in this order: empty query;
// every answer in the pool, none twice, none's tool_name in the query
// (case aside); the tier's cardinality (easy 1, medium 2–3, hard 4 or
// more); the seed (pool[0]) among the answers; the tier's length (easy
// under 20 words, medium under 25, hard 1–3 sentences, a period after an
// abbreviation ending none).
func ValidateRRB(s RRBSample, tier string, pool []CatalogRow) string {
	q := strings.TrimSpace(s.Query)
	if q == "" {
		return "empty query: the query is empty"
	}
	in := map[string]bool{}
	for _, t := range pool {
		in[t.ToolName] = true
	}
	seen := map[string]bool{}
	hasSeed := false
	for _, a := range s.Answer {
		switch {
		case !in[a]:
			return fmt.Sprintf("not in pool: answer %q is not in the candidate pool", a)
		case seen[a]:
			return fmt.Sprintf("duplicate answer: %q is listed twice", a)
		case strings.Contains(strings.ToLower(q), strings.ToLower(a)):
			return fmt.Sprintf("name in query: the query names answer tool %q", a)
		}
		seen[a] = true
		hasSeed = hasSeed || a == pool[0].ToolName
	}
	n, words := len(s.Answer), len(strings.Fields(q))
	switch {
	case tier == "easy" && n != 1, tier == "medium" && (n < 2 || n > 3), tier == "hard" && n < 4:
		return fmt.Sprintf("cardinality: %d answer tools, the %s tier needs %s", n, tier, map[string]string{"easy": "exactly 1", "medium": "2–3", "hard": "4 or more"}[tier])
	case !hasSeed:
		return fmt.Sprintf("seed missing: the target tool %q is not among the answers", pool[0].ToolName)
	case tier == "easy" && words >= 20:
		return fmt.Sprintf("too long: %d words, the easy tier needs under 20", words)
	case tier == "medium" && words >= 25:
		return fmt.Sprintf("too long: %d words, the medium tier needs under 25", words)
	case tier == "hard" && sentences(q) > 3:
		return fmt.Sprintf("too long: %d sentences, the hard tier needs 1–3", sentences(q))
	}
	return ""
}

// ParseRRBVerdicts reads the judge's reply for n samples: whether each
// is accepted, and the judge's reason (or why the reply could not be
// read). It fails closed: a reply that is not the JSON object asked for,
// or has a number of verdicts other than n, rejects every sample; a
// verdict without a boolean validation_result rejects its sample.
func ParseRRBVerdicts(text string, n int) (ok []bool, why []string) {
	ok, why = make([]bool, n), make([]string, n)
	answer, _ := llm.StripThink(text)
	var out struct {
		Verdicts []struct {
			Result *bool  `json:"validation_result"`
			Reason string `json:"reason"`
		} `json:"verdicts"`
	}
	err := json.Unmarshal([]byte(llm.AnswerJSON(answer)), &out)
	if err == nil && len(out.Verdicts) != n {
		err = fmt.Errorf("%d verdicts for %d samples", len(out.Verdicts), n)
	}
	if err != nil {
		for i := range why {
			why[i] = fmt.Sprintf("judge reply unparseable (%v)", err)
		}
		return ok, why
	}
	for i, v := range out.Verdicts {
		switch {
		case v.Result == nil:
			why[i] = "judge reply unparseable (a verdict without validation_result)"
		default:
			ok[i], why[i] = *v.Result, v.Reason
		}
	}
	return ok, why
}
