package toolsense_test

import (
	"reflect"
	"testing"

	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/toolsense"
)

// TestCatalogFromFileKeysToolsByNameInFileOrder: tools keep the file's
// order and bytes, "None"/null/absent/empty become empty fields named in
// missing, service comes from tool_title or the name up to its first
// "&&", and an identical repeat is kept once.
func TestCatalogFromFileKeysToolsByNameInFileOrder(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "tools.jsonl", `{"tool_name": "QR  Maker&&Make", "tool_title": "QR  Maker", "tool_description": "Makes QR codes", "api_title": "Make", "api_description": "/make"}
{"tool_name": "Weather&&Now && Later", "tool_title": "None", "tool_description": "None", "api_title": "Now && Later", "api_description": null, "extra": 1}

{"tool_name": "QR  Maker&&Make", "tool_title": "QR  Maker", "tool_description": "Makes QR codes", "api_title": "Make", "api_description": "/make"}
{"tool_name": "Mail&&Send", "tool_title": "Mail", "api_title": "Send", "api_description": ""}
`)
	r := nodetest.Run(t, dir, `node "catalog" "c" { path = "tools.jsonl" }`)
	got := nodetest.Read[toolsense.CatalogRow](t, r, "node.catalog.c")
	want := []toolsense.CatalogRow{
		{ToolName: "QR  Maker&&Make", ToolTitle: "QR  Maker", ToolDescription: "Makes QR codes", APITitle: "Make", APIDescription: "/make", Service: "QR  Maker", Missing: []string{}, Position: 0},
		{ToolName: "Weather&&Now && Later", APITitle: "Now && Later", Service: "Weather", Missing: []string{"tool_title", "tool_description", "api_description"}, Position: 1},
		{ToolName: "Mail&&Send", ToolTitle: "Mail", APITitle: "Send", Service: "Mail", Missing: []string{"tool_description", "api_description"}, Position: 2},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d tools, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if len(got[i].Missing) == 0 {
			got[i].Missing = []string{}
		}
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("tool %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	wantContains(t, r.Notes(engine.EventDone)["node.catalog.c"], "3 tools", "2 with an empty or missing description", "1 repeated tool objects kept once")
}

// TestCatalogRefusesBadInputNamingTheLine: a repeated name with other
// content names both lines; invalid UTF-8, a name without "&&", a missing
// name and broken JSON name their line.
func TestCatalogRefusesBadInputNamingTheLine(t *testing.T) {
	const ok = `{"tool_name": "A&&x", "tool_title": "A", "tool_description": "d", "api_title": "x", "api_description": "e"}` + "\n"
	for _, c := range []struct {
		name, file string
		want       []string
	}{
		{"same name, other content", ok + "\n" + `{"tool_name": "A&&x", "tool_title": "A", "tool_description": "other", "api_title": "x", "api_description": "e"}` + "\n",
			[]string{`tool "A&&x"`, "tools.jsonl:1", "tools.jsonl:3", "different content"}},
		{"invalid UTF-8", ok + `{"tool_name": "B&&y", "tool_title": "B` + "\xff" + `"}` + "\n", []string{"tools.jsonl:2", "invalid UTF-8"}},
		{"name without &&", ok + `{"tool_name": "B y"}` + "\n", []string{"tools.jsonl:2", `"B y" has no "&&"`}},
		{"missing name", `{"tool_title": "B"}` + "\n", []string{"tools.jsonl:1", "tool_name is missing"}},
		{"None name", `{"tool_name": "None"}` + "\n", []string{"tools.jsonl:1", "tool_name is missing"}},
		{"broken JSON", ok + `{"tool_name": ` + "\n", []string{"tools.jsonl:2"}},
		{"non-string field", `{"tool_name": "A&&x", "tool_title": 3}` + "\n", []string{"tools.jsonl:1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "tools.jsonl", c.file)
			r := nodetest.RunErr(t, dir, `node "catalog" "c" { path = "tools.jsonl" }`)
			wantContains(t, nodeErr(t, r, "node.catalog.c"), c.want...)
		})
	}
}

// TestCatalogFromRRBIsTheUnionOfPoolsAndAnswers: pools then answers, row
// by row, first occurrence first; an answer outside every pool is still
// in the catalog.
func TestCatalogFromRRBIsTheUnionOfPoolsAndAnswers(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "rrb.jsonl", `{"sample_id": "s1", "query": "q", "complexity": "easy", "tool": {"tool_name": "A&&a", "tool_title": "A", "tool_description": "d", "api_title": "a", "api_description": "e"}, "analyzed_tools": [{"tool_name": "B&&b", "tool_title": "B", "tool_description": "d", "api_title": "b", "api_description": "e"}, {"tool_name": "A&&a", "tool_title": "A", "tool_description": "d", "api_title": "a", "api_description": "e"}]}
{"sample_id": "s2", "query": "q", "complexity": "medium", "tool": [{"tool_name": "C&&c", "tool_title": "C", "tool_description": "d", "api_title": "c", "api_description": "e"}], "analyzed_tools": [{"tool_name": "A&&a", "tool_title": "A", "tool_description": "d", "api_title": "a", "api_description": "e"}, {"tool_name": "D&&d", "tool_title": "D", "tool_description": "d", "api_title": "d", "api_description": "e"}]}
`)
	r := nodetest.Run(t, dir, `node "import" "rrb" { path = "rrb.jsonl" }
node "catalog" "c" { from_rrb = node.import.rrb }`)
	var names []string
	for _, row := range nodetest.Read[toolsense.CatalogRow](t, r, "node.catalog.c") {
		names = append(names, row.ToolName)
	}
	if want := []string{"B&&b", "A&&a", "D&&d", "C&&c"}; !reflect.DeepEqual(names, want) {
		t.Errorf("catalog %v, want %v", names, want)
	}
}

func TestCatalogNeedsExactlyOneSource(t *testing.T) {
	wantContains(t, configErr(t, `node "catalog" "c" {}`), "Missing or conflicting catalog source")
	wantContains(t, configErr(t, `node "import" "r" { path = "r.jsonl" }
node "catalog" "c" {
  path     = "t.jsonl"
  from_rrb = node.import.r
}`), "Missing or conflicting catalog source")
}

// TestCatalogFromRRBRefusesOneNameWithTwoContents names both rows.
func TestCatalogFromRRBRefusesOneNameWithTwoContents(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "rrb.jsonl", `{"sample_id": "s1", "tool": {"tool_name": "A&&a", "tool_title": "A"}, "analyzed_tools": [{"tool_name": "A&&a", "tool_title": "A"}]}
{"sample_id": "s2", "tool": {"tool_name": "A&&a", "tool_title": "A2"}, "analyzed_tools": []}
`)
	r := nodetest.RunErr(t, dir, `node "import" "rrb" { path = "rrb.jsonl" }
node "catalog" "c" { from_rrb = node.import.rrb }`)
	wantContains(t, nodeErr(t, r, "node.catalog.c"), `tool "A&&a"`, "row 1 (sample_id s1) analyzed_tools", "row 2 (sample_id s2) tool", "different content")
}
