package toolsense

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestHierarchicalTokensSplitByTitles: API and endpoint tokens come from
// tool_title and api_title (a title holding "&&" stays whole), or from
// tool_name cut at its first "&&" when a title is missing; a tool with
// neither is an error naming it.
func TestHierarchicalTokensSplitByTitles(t *testing.T) {
	tools := []CatalogRow{
		{ToolName: "Big&&Data&&query", ToolTitle: "Big&&Data", APITitle: "query"},
		{ToolName: "Maps&&route", APITitle: "route", Missing: []string{"tool_title"}},
		{ToolName: "Tik&&trending&&now"},
	}
	tr, err := NewTrie(tools, HierarchicalTokens, "<<", ">>")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, a := range tr.APIs {
		got[a.Token] = a.Order
	}
	want := map[string][]string{
		"<<Big&&Data>>": {"<<query>>"},
		"<<Maps>>":      {"<<route>>"},
		"<<Tik>>":       {"<<trending&&now>>"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tokens %v, want %v", got, want)
	}
	_, err = NewTrie([]CatalogRow{{ToolName: "lonely", APITitle: "x"}}, HierarchicalTokens, "<<", ">>")
	if err == nil || !strings.Contains(err.Error(), `tool "lonely" has no tool_title and api_title`) {
		t.Errorf("a tool without parts: %v, want an error naming it", err)
	}
}

func TestReadTokenIDsReadsAddedTokensOrATokenizer(t *testing.T) {
	cases := []struct {
		in   string
		want map[string]int
		err  string
	}{
		{`{"<<a>>": 5, "<<b>>": 6}`, map[string]int{"<<a>>": 5, "<<b>>": 6}, ""},
		{`{"added_tokens": [{"id": 5, "content": "<<a>>", "special": false}], "model": {"vocab": {"x": 1}}}`, map[string]int{"<<a>>": 5}, ""},
		{`{"<<a>>": 5, "<<b>>": 5}`, nil, `tokens "<<a>>" and "<<b>>" have the same id 5`},
		{`{"<<c>>": 5, "<<b>>": 5, "<<a>>": 5, "<<d>>": 6, "<<e>>": 6}`, nil, `tokens "<<a>>" and "<<b>>" have the same id 5`},
		{`{"added_tokens": [{"id": 5, "content": "<<a>>"}, {"id": 6, "content": "<<a>>"}]}`, nil, `added token "<<a>>" is listed twice`},
		{`[1, 2]`, nil, "neither a JSON object"},
	}
	for _, tc := range cases {
		got, err := ReadTokenIDs([]byte(tc.in))
		for range 20 { // the same error on every read
			if _, again := ReadTokenIDs([]byte(tc.in)); fmt.Sprint(again) != fmt.Sprint(err) {
				t.Errorf("%s: error %v, then %v", tc.in, err, again)
				break
			}
		}
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.in, err, tc.err)
			}
		case err != nil || !reflect.DeepEqual(got, tc.want):
			t.Errorf("%s: %v %v, want %v", tc.in, got, err, tc.want)
		}
	}
}
