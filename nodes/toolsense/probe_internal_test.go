package toolsense

import (
	"slices"
	"strings"
	"testing"
)

func TestParseMCQAnswerReadsConstrainedAndFreeTextLetters(t *testing.T) {
	opts := []string{"Image OCR", "Weather data", "Currency rates", "Email checks"}
	for _, tc := range []struct {
		text        string
		letter      string
		constrained bool
		ok          bool
	}{
		{"B", "B", true, true},
		{`"C"`, "C", true, true},
		{"```json\n\"D\"\n```", "D", true, true},
		{"<think>A or B?</think>B", "B", true, true},
		{`{"answer": "A"}`, "A", true, true},
		{"(C)", "C", false, true},
		{"C) Currency rates", "C", false, true},
		{"D. Email checks", "D", false, true},
		{"b", "B", false, true},
		{"The answer is (B) because it fits.", "B", false, true},
		{"Answer: D", "D", false, true},
		{"weather data.", "B", false, true},
		{"A tool like this one reads images.", "", false, false},
		{"I do not know.", "", false, false},
		{"", "", false, false},
		{"E", "", false, false},
	} {
		l, c, ok := parseMCQAnswer(tc.text, opts)
		if l != tc.letter || c != tc.constrained || ok != tc.ok {
			t.Errorf("parseMCQAnswer(%q) = %q, %v, %v; want %q, %v, %v", tc.text, l, c, ok, tc.letter, tc.constrained, tc.ok)
		}
	}
}

func TestParseQAAnswerReadsYesOrNo(t *testing.T) {
	for _, tc := range []struct {
		text        string
		label       string
		constrained bool
		ok          bool
	}{
		{"Yes", "Yes", true, true},
		{`"No"`, "No", true, true},
		{"yes", "Yes", false, true},
		{"No, it does not.", "No", false, true},
		{"**Yes**", "Yes", false, true},
		{"Answer: no", "No", false, true},
		{"Probably.", "", false, false},
		{"Not sure", "", false, false},
	} {
		l, c, ok := parseQAAnswer(tc.text)
		if l != tc.label || c != tc.constrained || ok != tc.ok {
			t.Errorf("parseQAAnswer(%q) = %q, %v, %v; want %q, %v, %v", tc.text, l, c, ok, tc.label, tc.constrained, tc.ok)
		}
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
