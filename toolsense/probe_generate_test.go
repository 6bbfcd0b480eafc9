package toolsense

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestValidateProbeItemNamesEveryFailure(t *testing.T) {
	tool := CatalogRow{ToolName: "QRCheck&&quality", ToolTitle: "QRCheck"}
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name string
		it   ProbeItem
		mcq  bool
		want []string // substrings, one per reason
	}{
		{"valid mcq", ProbeItem{Question: s("What does this tool check?"), CorrectAnswer: s("QR code quality"), WrongAnswers: []string{"QR code generation", "Barcode scanning", "Payment links"}}, true, nil},
		{"valid qa", ProbeItem{Question: s("Does This Tool read QR codes?")}, false, nil},
		{"no placeholder, named", ProbeItem{Question: s("What does QRCheck check?")}, false, []string{`does not say "this tool"`, `names the tool ("QRCheck")`}},
		{"options", ProbeItem{Question: s("What does this tool check?"), CorrectAnswer: s("Quality"), WrongAnswers: []string{"quality", "A very long option that goes on and on"}}, true,
			[]string{"2 wrong answers, not 3", `the correct answer "Quality" has 1 words, not 2–8`, `wrong answer 1 "quality" has 1 words`, `wrong answer 1 "quality" repeats another option`, "has 9 words"}},
		// Whole words, case aside.
		{"toolkit is not tool", ProbeItem{Question: s("Which format does this toolkit export?")}, false, []string{`does not say "this tool"`}},
		{"possessive", ProbeItem{Question: s("Is this tool's output JSON?")}, false, nil},
		{"title in lowercase", ProbeItem{Question: s("Does this tool run qrcheck scans?")}, false, []string{`names the tool ("QRCheck")`}},
		{"tool_name in another case", ProbeItem{Question: s("Does this tool wrap QRCHECK&&QUALITY?")}, false, []string{`names the tool ("QRCheck&&quality")`}},
		{"title inside a longer word", ProbeItem{Question: s("Does this tool differ from QRChecker?")}, false, nil},
	} {
		why := ValidateProbeItem(tc.it, tool, tc.mcq, 2, 8)
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
	if ProbePromptDigest("mcq_generate") == ProbePromptDigest("qa_generate") {
		t.Error("two prompt files have one digest")
	}
}

// TestRebalanceQADropsASeededSurplusOfTheMajority: after drops, the
// majority target loses its surplus, chosen by the seed, and already
// dropped items stay as they were.
func TestRebalanceQADropsASeededSurplusOfTheMajority(t *testing.T) {
	targets := []string{"Yes", "No", "Yes", "No", "Yes", "No", "Yes", "Yes", "No"}
	kept := make([]bool, len(targets))
	for i := range kept {
		kept[i] = i != 1 && i != 3 // kept: 5 Yes (0 2 4 6 7), 2 No (5 8)
	}
	dropped := func(seed uint64) string {
		drop := RebalanceQA(targets, kept, seed)
		left := slices.Clone(kept)
		var names []string
		for _, i := range drop {
			if !kept[i] {
				t.Errorf("seed %d: rebalancing dropped item %d, dropped already", seed, i)
			}
			if targets[i] != "Yes" {
				t.Errorf("seed %d: rebalancing dropped a %s item", seed, targets[i])
			}
			left[i] = false
			names = append(names, string(rune('a'+i)))
		}
		n := map[string]int{}
		for i, k := range left {
			if k {
				n[targets[i]]++
			}
		}
		if n["Yes"] != 2 || n["No"] != 2 || len(drop) != 3 {
			t.Errorf("seed %d: kept %v, rebalanced away %v; want 2 Yes, 2 No, 3 dropped", seed, n, names)
		}
		slices.Sort(names)
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

// TestValidateProbeItemMatchesACommonWordTitleAsAWord: a one-word title
// that is a common word rejects the word (the documented decision: the
// retry's feedback names it).
func TestValidateProbeItemMatchesACommonWordTitleAsAWord(t *testing.T) {
	tool := CatalogRow{ToolName: "Email&&validate", ToolTitle: "Email"}
	q := "Does this tool validate email addresses?"
	if why := ValidateProbeItem(ProbeItem{Question: &q}, tool, false, 0, 0); len(why) != 1 || !strings.Contains(why[0], `names the tool ("Email")`) {
		t.Errorf("reasons %q", why)
	}
	q = "Does this tool validate emails?"
	if why := ValidateProbeItem(ProbeItem{Question: &q}, tool, false, 0, 0); len(why) != 0 {
		t.Errorf("reasons %q for a question without the word", why)
	}
}

// TestProbeValidatorDefaultsAcceptTheReleasedMCQOptions: with no word
// limit (mcq_generate's default option_words) no released MCQ item's
// options are rejected (with [2, 8] words 38% would be); the share the
// whole validator rejects is logged.
func TestProbeValidatorDefaultsAcceptTheReleasedMCQOptions(t *testing.T) {
	path, err := filepath.Abs("../../shared/data/toolsense/toolsense-mcq.jsonl")
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
	lo, hi := 0, 0 // no word limit
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
		item := ProbeItem{Question: &it.Question, CorrectAnswer: &it.CorrectAnswer, WrongAnswers: it.WrongAnswers}
		row := CatalogRow{ToolName: tool.ToolName, ToolTitle: tool.ToolTitle}
		for _, why := range ValidateProbeItem(item, row, true, lo, hi) {
			if strings.Contains(why, "answer") {
				optionRejects++
			}
			rejects[strings.SplitN(why, " (", 2)[0]]++
		}
		if len(ValidateProbeItem(item, row, true, 2, 8)) > 0 {
			wordRejects++
		}
	}
	if n != 496 || optionRejects != 0 {
		t.Errorf("%d released items, %d option rejections by default; want 496, 0", n, optionRejects)
	}
	t.Logf("released MCQ: %d items; default validator reasons %v; with option_words [2, 8] %d rejected", n, rejects, wordRejects)
}
