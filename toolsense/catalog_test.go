package toolsense

import (
	"strings"
	"testing"
)

func TestReadRRB(t *testing.T) {
	const a = `{"tool_name": "A&&x", "tool_title": "A", "tool_description": "None", "api_title": "x", "api_description": "does x"}`
	const b = `{"tool_name": "B&&y", "tool_title": "B", "tool_description": "b", "api_title": "y", "api_description": "does y"}`
	good := `{"query": "q1", "tool": ` + a + `, "analyzed_tools": [` + b + `, ` + a + `]}
{"query": "q2", "tool": [` + b + `], "analyzed_tools": [` + a + `, ` + b + `]}
`
	queries, catalog, err := ReadRRB(strings.NewReader(good), "rrb.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(queries, ",") != "q1,q2" || len(catalog) != 2 || catalog[0].ToolName != "B&&y" || catalog[1].ToolName != "A&&x" {
		t.Fatalf("queries %v, catalog %+v", queries, catalog)
	}
	if got := DocText(catalog[1]); got != "A x does x" {
		t.Errorf("DocText = %q, want the missing description skipped", got)
	}
	for _, c := range []struct{ name, src, want string }{
		{"broken JSON", good + "{\n", "rrb.jsonl:3"},
		{"one name, two contents", good + `{"query": "q3", "tool": [], "analyzed_tools": [` + strings.Replace(a, "does x", "does z", 1) + `]}`, `tool "A&&x" is at rrb.jsonl:1 analyzed_tools and at rrb.jsonl:3 analyzed_tools`},
		{"no && in a name", `{"query": "q", "tool": [], "analyzed_tools": [{"tool_name": "A"}]}`, `rrb.jsonl:1 analyzed_tools: tool_name "A" has no "&&"`},
	} {
		if _, _, err := ReadRRB(strings.NewReader(c.src), "rrb.jsonl"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.name, err, c.want)
		}
	}
}

func TestDocTextJoinsTitlesThenDescriptionsSkippingMissing(t *testing.T) {
	got := DocText(CatalogRow{ToolTitle: "QR", APITitle: "Get", ToolDescription: "", APIDescription: "/qr"})
	if got != "QR Get /qr" {
		t.Errorf("DocText = %q, want %q", got, "QR Get /qr")
	}
}
