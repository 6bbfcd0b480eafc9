package toolsense

import (
	"testing"

	ts "github.com/lacuna-dev/lacuna/toolsense"
)

// TestProbeMetricsBaselinesComeFromTheItems: chance is 100 over the
// labels; majority_baseline is the largest gold share of these items (75
// for a QA set three quarters Yes, not 50).
func TestProbeMetricsBaselinesComeFromTheItems(t *testing.T) {
	rows := func(bench string, gold ...string) []ProbeEvalRow {
		var out []ProbeEvalRow
		for _, g := range gold {
			out = append(out, ProbeEvalRow{Benchmark: bench, Gold: g, Predicted: g, Correct: true, ParsedBy: ts.ParsedConstrained})
		}
		return out
	}
	for _, tc := range []struct {
		name             string
		rows             []ProbeEvalRow
		chance, majority float64
	}{
		{"unbalanced qa", rows(ts.BenchmarkQA, "Yes", "Yes", "No", "Yes"), 50, 75},
		{"balanced qa", rows(ts.BenchmarkQA, "Yes", "No"), 50, 50},
		{"mcq", rows(ts.BenchmarkMCQ, "A", "A", "B", "C"), 25, 50},
	} {
		m, err := probeMetrics("e", tc.rows, 0, 1)
		if err != nil || m.Chance != tc.chance || m.MajorityBaseline != tc.majority {
			t.Errorf("%s: chance %v, majority_baseline %v, %v; want %v, %v", tc.name, m.Chance, m.MajorityBaseline, err, tc.chance, tc.majority)
		}
	}
}

// TestProbeOptionWordsDefaultToNoLimit: by default the validator counts
// no words (the released items do not hold the prompt's 2–8); set, it
// does.
func TestProbeOptionWordsDefaultToNoLimit(t *testing.T) {
	q, right := "What does this tool return?", "JSON"
	it := ts.ProbeItem{Question: &q, CorrectAnswer: &right, WrongAnswers: []string{"XML", "CSV files", "A long list of rendered image files in a zip archive"}}
	lo, hi := (&probeGenConfig{}).optionWords()
	if why := ts.ValidateProbeItem(it, CatalogRow{ToolName: "X&&y"}, true, lo, hi); len(why) != 0 {
		t.Errorf("default option_words: reasons %q", why)
	}
	lo, hi = (&probeGenConfig{OptionWords: []int{2, 8}}).optionWords()
	if why := ts.ValidateProbeItem(it, CatalogRow{ToolName: "X&&y"}, true, lo, hi); len(why) != 3 {
		t.Errorf("option_words [2, 8]: reasons %q, want 3", why)
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
		tr, err := ts.NewTrie([]CatalogRow{tool}, format, open, close)
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
			t.Errorf("%+v: probe_eval writes %q, retrieve_parametric's trie holds %q", tc.cfg, got, trieTokens)
		}
	}
	if _, err := probeToolRef(CatalogRow{ToolName: "NoEndpoint"}, &probeEvalConfig{TokenFormat: "hierarchical"}); err == nil {
		t.Error("a hierarchical token of a tool_name without && was spelled")
	}
}
