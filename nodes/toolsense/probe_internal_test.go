package toolsense

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseMCQAnswerReadsOneClaimedLetter(t *testing.T) {
	opts := []string{"Image OCR", "Weather data", "Currency rates", "Email checks"}
	for _, tc := range []struct {
		text   string
		letter string // "" unparseable
	}{
		{"B", "B"},
		{`"C"`, "C"},
		{"```json\n\"D\"\n```", "D"},
		{"<think>A or B?</think>B", "B"},
		{`{"answer": "A"}`, "A"},
		{"(C)", "C"},
		{"C) Currency rates", "C"},
		{"D. Email checks", "D"},
		{"b", "B"},
		{"The answer is (B) because it fits.", "B"},
		{"Answer: D", "D"},
		{"correct option: B", "B"},
		{"weather data.", "B"},
		// An "answer" phrase wins over an "option" one.
		{"Option A is wrong; the answer is C", "C"},
		{"The answer is C. Option A is wrong.", "C"},
		// Several letters claimed: unparseable, not the first.
		{"Answer: A or B", ""},
		{"The answer is A, B", ""},
		{"Option A or option C", ""},
		{"correct option: B, not D", ""},
		// A leading letter followed by something else than its option.
		{"A: no idea", ""},
		{"A. Or maybe C", ""},
		{"A tool like this one reads images.", ""},
		{"I do not know.", ""},
		{"", ""},
		{"E", ""},
	} {
		l, ok := parseMCQAnswer(tc.text, opts)
		if l != tc.letter || ok != (tc.letter != "") {
			t.Errorf("parseMCQAnswer(%q) = %q, %v; want %q", tc.text, l, ok, tc.letter)
		}
	}
}

func TestParseQAAnswerReadsAWholeYesOrNo(t *testing.T) {
	for _, tc := range []struct {
		text  string
		label string // "" unparseable
	}{
		{"Yes", "Yes"},
		{`"No"`, "No"},
		{"yes", "Yes"},
		{"No, it does not.", "No"},
		{"No.", "No"},
		{"Yes! It does", "Yes"},
		{"No: it reads images only", "No"},
		{"**Yes**", "Yes"},
		{"Answer: no", "No"},
		{"The answer is yes.", "Yes"},
		{"No idea", ""},
		{"No information about that", ""},
		{"Yes, but no", ""},
		{"No. Well, yes", ""},
		{"Answer: yes or no", ""},
		{"Yesterday it did", ""},
		{"Probably.", ""},
		{"Not sure", ""},
	} {
		l, ok := parseQAAnswer(tc.text)
		if l != tc.label || ok != (tc.label != "") {
			t.Errorf("parseQAAnswer(%q) = %q, %v; want %q", tc.text, l, ok, tc.label)
		}
	}
}

func TestProbeParsedByFollowsWhetherTheServerHeldTheConstraint(t *testing.T) {
	held, broken := true, false
	for _, tc := range []struct {
		ok   bool
		held *bool
		want string
	}{
		{true, &held, ParsedConstrained},
		{true, &broken, ParsedFreeText},
		{true, nil, ParsedFreeText},
		{false, &broken, ParsedNone},
	} {
		if got := probeParsedBy(tc.ok, tc.held); got != tc.want {
			t.Errorf("probeParsedBy(%v, %v) = %q, want %q", tc.ok, tc.held, got, tc.want)
		}
	}
}

// TestProbeToolRefSpellsRetrieveParametricsTokens: probe_eval names a tool
// by the very tokens retrieve_parametric's trie holds for it, in every
// format and spelling.
func TestProbeToolRefSpellsRetrieveParametricsTokens(t *testing.T) {
	tool := CatalogRow{ToolName: "Weather&&forecast"}
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		cfg  probeEvalConfig
		want string
	}{
		{probeEvalConfig{}, "<<Weather&&forecast>>"},
		{probeEvalConfig{TokenFormat: "hierarchical"}, "<<Weather>><<forecast>>"},
		{probeEvalConfig{TokenOpen: s("<|"), TokenClose: s("|>")}, "<|Weather&&forecast|>"},
		{probeEvalConfig{ToolRef: "name"}, "Weather&&forecast"},
	} {
		got, err := probeToolRef(tool, &tc.cfg)
		if err != nil || got != tc.want {
			t.Errorf("%+v: %q, %v; want %q", tc.cfg, got, err, tc.want)
		}
		if tc.cfg.ToolRef != "" {
			continue
		}
		format, open, close := tc.cfg.tokenSpelling()
		tr, err := newTrie([]CatalogRow{tool}, format, open, close)
		if err != nil {
			t.Fatal(err)
		}
		var trieTokens string
		if tr.flat {
			for tok := range tr.tool {
				trieTokens = tok
			}
		} else {
			trieTokens = tr.apis[0].token + tr.apis[0].order[0]
		}
		if trieTokens != got {
			t.Errorf("%+v: probe_eval writes %q, retrieve_parametric's trie holds %q", tc.cfg, got, trieTokens)
		}
	}
	if _, err := probeToolRef(CatalogRow{ToolName: "NoEndpoint"}, &probeEvalConfig{TokenFormat: "hierarchical"}); err == nil {
		t.Error("a hierarchical token of a tool_name without && was spelled")
	}
}

func TestValidateProbeItemNamesEveryFailure(t *testing.T) {
	tool := CatalogRow{ToolName: "QRCheck&&quality", ToolTitle: "QRCheck"}
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name string
		it   probeItem
		mcq  bool
		want []string // substrings, one per reason
	}{
		{"valid mcq", probeItem{Question: s("What does this tool check?"), CorrectAnswer: s("QR code quality"), WrongAnswers: []string{"QR code generation", "Barcode scanning", "Payment links"}}, true, nil},
		{"valid qa", probeItem{Question: s("Does This Tool read QR codes?")}, false, nil},
		{"no placeholder, named", probeItem{Question: s("What does QRCheck check?")}, false, []string{`does not say "this tool"`, `names the tool ("QRCheck")`}},
		{"options", probeItem{Question: s("What does this tool check?"), CorrectAnswer: s("Quality"), WrongAnswers: []string{"quality", "A very long option that goes on and on"}}, true,
			[]string{"2 wrong answers, not 3", `the correct answer "Quality" has 1 words, not 2–8`, `wrong answer 1 "quality" has 1 words`, `wrong answer 1 "quality" repeats another option`, "has 9 words"}},
		// Whole words, case aside.
		{"toolkit is not tool", probeItem{Question: s("Which format does this toolkit export?")}, false, []string{`does not say "this tool"`}},
		{"possessive", probeItem{Question: s("Is this tool's output JSON?")}, false, nil},
		{"title in lowercase", probeItem{Question: s("Does this tool run qrcheck scans?")}, false, []string{`names the tool ("QRCheck")`}},
		{"tool_name in another case", probeItem{Question: s("Does this tool wrap QRCHECK&&QUALITY?")}, false, []string{`names the tool ("QRCheck&&quality")`}},
		{"title inside a longer word", probeItem{Question: s("Does this tool differ from QRChecker?")}, false, nil},
	} {
		why := validateProbeItem(tc.it, tool, tc.mcq, 2, 8)
		if len(why) != len(tc.want) {
			t.Errorf("%s: reasons %q, want %d", tc.name, why, len(tc.want))
			continue
		}
		for _, w := range tc.want {
			if !slices.ContainsFunc(why, func(r string) bool { return strings.Contains(r, w) }) {
				t.Errorf("%s: reasons %q lack %q", tc.name, why, w)
			}
		}
	}
}

func TestProbePermutationDependsOnSeedAndIDOnly(t *testing.T) {
	a := probePermutation(1, "item-1")
	if !slices.Equal(a, probePermutation(1, "item-1")) {
		t.Fatal("the same seed and id shuffle differently")
	}
	sorted := slices.Clone(a)
	slices.Sort(sorted)
	if !slices.Equal(sorted, []int{0, 1, 2, 3}) {
		t.Errorf("permutation %v", a)
	}
	differs := false
	for seed := uint64(2); seed < 10; seed++ {
		differs = differs || !slices.Equal(a, probePermutation(seed, "item-1"))
	}
	if !differs {
		t.Error("eight other seeds all shuffle item-1 as seed 1 does")
	}
}

func TestProbePromptsRenderAndTheirDigestFollowsTheirBytes(t *testing.T) {
	for _, name := range []string{"mcq_generate", "qa_generate", "mcq_judge", "qa_judge", "mcq_eval", "qa_eval"} {
		if _, ok := probePrompts[name]; !ok {
			t.Errorf("no prompt %s", name)
		}
	}
	out, err := renderProbePrompt("qa_generate", map[string]any{"Description": "D", "TargetAnswer": "No", "Feedback": "- too generic"})
	if err != nil || !strings.Contains(out, `The correct answer MUST be "No"`) || !strings.Contains(out, "- too generic") {
		t.Errorf("qa_generate: %v\n%s", err, out)
	}
	if _, err := renderProbePrompt("qa_generate", map[string]any{"Description": "D"}); err == nil {
		t.Error("a prompt rendered with a missing field")
	}
	if probePromptDigest("mcq_generate") == probePromptDigest("qa_generate") {
		t.Error("two prompt files have one digest")
	}
}

// TestRebalanceQADropsASeededSurplusOfTheMajority: after drops, the
// majority target loses its surplus, chosen by the seed, and already
// dropped tools stay as they were.
func TestRebalanceQADropsASeededSurplusOfTheMajority(t *testing.T) {
	tools := func() []*probeTool {
		var out []*probeTool
		for i, target := range []string{"Yes", "No", "Yes", "No", "Yes", "No", "Yes", "Yes", "No"} {
			pt := &probeTool{tool: CatalogRow{ToolName: string(rune('a' + i))}, target: target}
			if i == 1 || i == 3 {
				pt.dropped = "rejected after 4 attempts: too generic"
			}
			out = append(out, pt)
		}
		return out // kept: 5 Yes (a c e g h), 2 No (f i)
	}
	dropped := func(seed uint64) string {
		ts := tools()
		rebalanceQA(ts, seed)
		kept := map[string]int{}
		var names []string
		for _, pt := range ts {
			switch pt.dropped {
			case "":
				kept[pt.target]++
			case probeRebalanced:
				if pt.target != "Yes" {
					t.Errorf("seed %d: rebalancing dropped a %s tool", seed, pt.target)
				}
				names = append(names, pt.tool.ToolName)
			}
		}
		if kept["Yes"] != 2 || kept["No"] != 2 || len(names) != 3 {
			t.Errorf("seed %d: kept %v, rebalanced away %v; want 2 Yes, 2 No, 3 dropped", seed, kept, names)
		}
		return strings.Join(names, "")
	}
	if first, again := dropped(1), dropped(1); first != again {
		t.Errorf("seed 1 dropped %q, then %q", first, again)
	}
	choices := map[string]bool{}
	for seed := uint64(1); seed <= 8; seed++ {
		choices[dropped(seed)] = true
	}
	if len(choices) < 2 {
		t.Errorf("eight seeds all drop %v", choices)
	}
}

// TestProbeMetricsBaselinesComeFromTheItems: chance is 100 over the
// labels; majority_baseline is the largest gold share of these items (75
// for a QA set three quarters Yes, not 50).
func TestProbeMetricsBaselinesComeFromTheItems(t *testing.T) {
	rows := func(bench string, gold ...string) []ProbeEvalRow {
		var out []ProbeEvalRow
		for _, g := range gold {
			out = append(out, ProbeEvalRow{Benchmark: bench, Gold: g, Predicted: g, Correct: true, ParsedBy: ParsedConstrained})
		}
		return out
	}
	for _, tc := range []struct {
		name             string
		rows             []ProbeEvalRow
		chance, majority float64
	}{
		{"unbalanced qa", rows(BenchmarkQA, "Yes", "Yes", "No", "Yes"), 50, 75},
		{"balanced qa", rows(BenchmarkQA, "Yes", "No"), 50, 50},
		{"mcq", rows(BenchmarkMCQ, "A", "A", "B", "C"), 25, 50},
	} {
		m, err := probeMetrics("e", tc.rows, 0, 1)
		if err != nil || m.Chance != tc.chance || m.MajorityBaseline != tc.majority {
			t.Errorf("%s: chance %v, majority_baseline %v, %v; want %v, %v", tc.name, m.Chance, m.MajorityBaseline, err, tc.chance, tc.majority)
		}
	}
}

// TestValidateProbeItemMatchesACommonWordTitleAsAWord: a one-word title
// that is a common word rejects the word (the documented decision: the
// retry's feedback names it).
func TestValidateProbeItemMatchesACommonWordTitleAsAWord(t *testing.T) {
	tool := CatalogRow{ToolName: "Email&&validate", ToolTitle: "Email"}
	q := "Does this tool validate email addresses?"
	if why := validateProbeItem(probeItem{Question: &q}, tool, false, 0, 0); len(why) != 1 || !strings.Contains(why[0], `names the tool ("Email")`) {
		t.Errorf("reasons %q", why)
	}
	q = "Does this tool validate emails?"
	if why := validateProbeItem(probeItem{Question: &q}, tool, false, 0, 0); len(why) != 0 {
		t.Errorf("reasons %q for a question without the word", why)
	}
}

// TestProbeOptionWordsDefaultToNoLimit: by default the validator counts
// no words (the released items do not hold the prompt's 2–8); set, it
// does.
func TestProbeOptionWordsDefaultToNoLimit(t *testing.T) {
	q, right := "What does this tool return?", "JSON"
	it := probeItem{Question: &q, CorrectAnswer: &right, WrongAnswers: []string{"XML", "CSV files", "A long list of rendered image files in a zip archive"}}
	lo, hi := (&probeGenConfig{}).optionWords()
	if why := validateProbeItem(it, CatalogRow{ToolName: "X&&y"}, true, lo, hi); len(why) != 0 {
		t.Errorf("default option_words: reasons %q", why)
	}
	lo, hi = (&probeGenConfig{OptionWords: []int{2, 8}}).optionWords()
	if why := validateProbeItem(it, CatalogRow{ToolName: "X&&y"}, true, lo, hi); len(why) != 3 {
		t.Errorf("option_words [2, 8]: reasons %q, want 3", why)
	}
}

// TestProbeValidatorDefaultsAcceptTheReleasedMCQOptions: with the default
// config no released MCQ item's options are rejected (with [2, 8] words
// 38% would be); the share the whole validator rejects is logged.
func TestProbeValidatorDefaultsAcceptTheReleasedMCQOptions(t *testing.T) {
	path, err := filepath.Abs("../../../shared/data/toolsense/toolsense-mcq.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		msg := "ToolSense data is not at ../shared/data/toolsense beside the repository: " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	lo, hi := (&probeGenConfig{}).optionWords()
	n, optionRejects, wordRejects, rejects := 0, 0, 0, map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var it struct {
			Question      string          `json:"question"`
			CorrectAnswer string          `json:"correct_answer"`
			WrongAnswers  []string        `json:"wrong_answers"`
			Tool          json.RawMessage `json:"tool"`
		}
		if err := json.Unmarshal([]byte(line), &it); err != nil {
			t.Fatal(err)
		}
		var tool struct {
			ToolName  string `json:"tool_name"`
			ToolTitle string `json:"tool_title"`
		}
		if err := json.Unmarshal(it.Tool, &tool); err != nil {
			t.Fatal(err)
		}
		n++
		item := probeItem{Question: &it.Question, CorrectAnswer: &it.CorrectAnswer, WrongAnswers: it.WrongAnswers}
		row := CatalogRow{ToolName: tool.ToolName, ToolTitle: tool.ToolTitle}
		for _, why := range validateProbeItem(item, row, true, lo, hi) {
			if strings.Contains(why, "answer") {
				optionRejects++
			}
			rejects[strings.SplitN(why, " (", 2)[0]]++
		}
		if len(validateProbeItem(item, row, true, 2, 8)) > 0 {
			wordRejects++
		}
	}
	if n != 496 || optionRejects != 0 {
		t.Errorf("%d released items, %d option rejections by default; want 496, 0", n, optionRejects)
	}
	t.Logf("released MCQ: %d items; default validator reasons %v; with option_words [2, 8] %d rejected", n, rejects, wordRejects)
}
