package toolsense

import (
	"slices"
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
		l, ok := ParseMCQAnswer(tc.text, opts)
		if l != tc.letter || ok != (tc.letter != "") {
			t.Errorf("ParseMCQAnswer(%q) = %q, %v; want %q", tc.text, l, ok, tc.letter)
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
		l, ok := ParseQAAnswer(tc.text)
		if l != tc.label || ok != (tc.label != "") {
			t.Errorf("ParseQAAnswer(%q) = %q, %v; want %q", tc.text, l, ok, tc.label)
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
		if got := ParsedBy(tc.ok, tc.held); got != tc.want {
			t.Errorf("ParsedBy(%v, %v) = %q, want %q", tc.ok, tc.held, got, tc.want)
		}
	}
}

// TestToolRefSpellsTheTriesTokens: an evaluation prompt names a tool by
// the very tokens the retrieval search's trie holds for it, in every
// format and spelling.
func TestToolRefSpellsTheTriesTokens(t *testing.T) {
	tool := CatalogRow{ToolName: "Weather&&forecast"}
	for _, tc := range []struct {
		ref, format, open, close string
		want                     string
	}{
		{"token", FlatTokens, "<<", ">>", "<<Weather&&forecast>>"},
		{"token", HierarchicalTokens, "<<", ">>", "<<Weather>><<forecast>>"},
		{"token", FlatTokens, "<|", "|>", "<|Weather&&forecast|>"},
		{"name", FlatTokens, "<<", ">>", "Weather&&forecast"},
		{"description", FlatTokens, "<<", ">>", "\n"},
	} {
		got, err := ToolRef(tool, tc.ref, tc.format, tc.open, tc.close)
		if err != nil || got != tc.want {
			t.Errorf("%+v: %q, %v; want %q", tc, got, err, tc.want)
		}
		if tc.ref != "token" {
			continue
		}
		tr, err := NewTrie([]CatalogRow{tool}, tc.format, tc.open, tc.close)
		if err != nil {
			t.Fatal(err)
		}
		var trieTokens string
		if tr.Flat {
			for tok := range tr.Tool {
				trieTokens = tok
			}
		} else {
			trieTokens = tr.APIs[0].Token + tr.APIs[0].Order[0]
		}
		if trieTokens != got {
			t.Errorf("%+v: ToolRef writes %q, the trie holds %q", tc, got, trieTokens)
		}
	}
	if _, err := ToolRef(CatalogRow{ToolName: "NoEndpoint"}, "token", HierarchicalTokens, "<<", ">>"); err == nil {
		t.Error("a hierarchical token of a tool_name without && was spelled")
	}
}

func TestProbePermutationDependsOnSeedAndIDOnly(t *testing.T) {
	a := MCQPermutation(1, "item-1")
	if !slices.Equal(a, MCQPermutation(1, "item-1")) {
		t.Fatal("the same seed and id shuffle differently")
	}
	sorted := slices.Clone(a)
	slices.Sort(sorted)
	if !slices.Equal(sorted, []int{0, 1, 2, 3}) {
		t.Errorf("permutation %v", a)
	}
	differs := false
	for seed := uint64(2); seed < 10; seed++ {
		differs = differs || !slices.Equal(a, MCQPermutation(seed, "item-1"))
	}
	if !differs {
		t.Error("eight other seeds all shuffle item-1 as seed 1 does")
	}
}
