package toolsense

import (
	"errors"
	"reflect"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes"
)

// TestHierarchicalTokensSplitByTitles: API and endpoint tokens come from
// tool_title and api_title (a title holding "&&" stays whole), or from
// tool_name cut at its first "&&" when a title is missing; a tool with
// neither is a token_format error.
func TestHierarchicalTokensSplitByTitles(t *testing.T) {
	tools := []CatalogRow{
		{ToolName: "Big&&Data&&query", ToolTitle: "Big&&Data", APITitle: "query"},
		{ToolName: "Maps&&route", APITitle: "route", Missing: []string{"tool_title"}},
		{ToolName: "Tik&&trending&&now"},
	}
	tr, err := newTrie(tools, hierarchicalTokens, "<<", ">>")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, a := range tr.apis {
		got[a.token] = a.order
	}
	want := map[string][]string{
		"<<Big&&Data>>": {"<<query>>"},
		"<<Maps>>":      {"<<route>>"},
		"<<Tik>>":       {"<<trending&&now>>"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tokens %v, want %v", got, want)
	}
	_, err = newTrie([]CatalogRow{{ToolName: "lonely", APITitle: "x"}}, hierarchicalTokens, "<<", ">>")
	var ce *nodes.ConfigError
	if !errors.As(err, &ce) || ce.Attr != "token_format" {
		t.Errorf("a tool without parts: %v, want a token_format error", err)
	}
}
