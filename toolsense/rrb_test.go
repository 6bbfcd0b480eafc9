package toolsense

import (
	"strings"
	"testing"
)

// TestValidateRRBNamesTheFirstRuleBroken covers each rule of the
// programmatic filter on a five-tool pool whose seed is S&&s.
func TestValidateRRBNamesTheFirstRuleBroken(t *testing.T) {
	var pool []CatalogRow
	for _, n := range []string{"S&&s", "A&&a", "B&&b", "C&&c", "D&&d"} {
		pool = append(pool, CatalogRow{ToolName: n})
	}
	long := strings.Repeat("word ", 20)
	for _, tc := range []struct {
		tier, query string
		answer      []string
		want        string // the rule, "" for a pass
	}{
		{"easy", "Show open purchase orders", []string{"S&&s"}, ""},
		{"easy", "  ", []string{"S&&s"}, "empty query"},
		{"easy", "Show orders", []string{"X&&x"}, "not in pool"},
		{"medium", "Show orders", []string{"S&&s", "S&&s"}, "duplicate answer"},
		{"easy", "Use s&&S for orders", []string{"S&&s"}, "name in query"},
		{"easy", "Show orders", []string{"S&&s", "A&&a"}, "cardinality"},
		{"medium", "Show orders", []string{"S&&s"}, "cardinality"},
		{"medium", "Show orders", []string{"S&&s", "A&&a", "B&&b", "C&&c"}, "cardinality"},
		{"hard", "Run the quarter close.", []string{"S&&s", "A&&a", "B&&b"}, "cardinality"},
		{"easy", "Show orders", []string{"A&&a"}, "seed missing"},
		{"medium", "Show orders", []string{"A&&a", "B&&b"}, "seed missing"},
		{"easy", strings.Repeat("word ", 19), []string{"S&&s"}, ""},
		{"easy", long, []string{"S&&s"}, "too long"},
		{"medium", long + "and four more words", []string{"S&&s", "A&&a"}, ""},
		{"medium", long + "and five more words too", []string{"S&&s", "A&&a"}, "too long"},
		{"hard", "Close the quarter! Pay suppliers? " + long, []string{"S&&s", "A&&a", "B&&b", "C&&c"}, ""},
		{"hard", "Close the quarter. Pay suppliers. Bill clients. Report.", []string{"S&&s", "A&&a", "B&&b", "C&&c"}, "too long"},
	} {
		got := ValidateRRB(RRBSample{Query: tc.query, Answer: tc.answer}, tc.tier, pool)
		rule, _, _ := strings.Cut(got, ":")
		if rule != tc.want {
			t.Errorf("%s %q %v: %q, want rule %q", tc.tier, tc.query, tc.answer, got, tc.want)
		}
	}
}

// TestParseVerdictsFailsClosed: anything but one boolean verdict per
// sample rejects.
func TestParseVerdictsFailsClosed(t *testing.T) {
	for _, tc := range []struct {
		reply string
		want  []bool
	}{
		{`{"verdicts": [{"validation_result": true, "reason": "ok"}, {"validation_result": false, "reason": "no"}]}`, []bool{true, false}},
		{"<think>hm</think>\n```json\n{\"verdicts\": [{\"validation_result\": true}, {\"validation_result\": true}]}\n```", []bool{true, true}},
		{`{"verdicts": [{"validation_result": true}]}`, []bool{false, false}},
		{`{"verdicts": [{"reason": "fine"}, {"validation_result": true}]}`, []bool{false, true}},
		{`{"verdicts": [{"validation_result": "yes"}, {"validation_result": true}]}`, []bool{false, false}},
		{`All good.`, []bool{false, false}},
		{``, []bool{false, false}},
	} {
		ok, why := ParseRRBVerdicts(tc.reply, 2)
		for i := range ok {
			if ok[i] != tc.want[i] || !ok[i] && why[i] == "" {
				t.Errorf("%q: verdicts %v (%q), want %v with reasons", tc.reply, ok, why, tc.want)
				break
			}
		}
	}
}

// TestSentencesSkipCommonAbbreviations: a period after an abbreviation
// (e.g., i.e., U.S., etc., a single letter) does not end a sentence.
func TestSentencesSkipCommonAbbreviations(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want int
	}{
		{"Close the quarter. Pay suppliers! Bill clients?", 3},
		{"List U.S. stock tickers, e.g. AAPL, and their prices, i.e. the last trade. Then chart them.", 2},
		{"Fetch rates vs. the euro for Mr. Smith etc. and J. Doe.", 1},
		{"Weather now...   And tomorrow", 2},
		{"", 0},
	} {
		if got := sentences(tc.q); got != tc.want {
			t.Errorf("sentences(%q) = %d, want %d", tc.q, got, tc.want)
		}
	}
}
