package toolsense

import "testing"

// TestToolsAndPoolsRejectDuplicates: a tool_name twice in a catalog, a
// seed twice in the pools, or a tool twice in a pool is an error naming it.
func TestToolsAndPoolsRejectDuplicates(t *testing.T) {
	row := func(names ...string) []CatalogRow {
		var out []CatalogRow
		for _, n := range names {
			out = append(out, CatalogRow{ToolName: n})
		}
		return out
	}
	if _, err := toolIndex(row("A&&a", "B&&b", "A&&a")); err == nil {
		t.Error("toolIndex accepted A&&a twice")
	} else {
		wantIn(t, err.Error(), `"A&&a"`)
	}
	if ix, err := toolIndex(row("A&&a", "B&&b")); err != nil || ix["B&&b"] != 1 {
		t.Errorf("toolIndex: %v, %v", ix, err)
	}
	tools := row("A&&a", "B&&b", "C&&c", "D&&d")
	byName := map[string]CatalogRow{}
	for _, tool := range tools {
		byName[tool.ToolName] = tool
	}
	easy := map[string]int{"easy": 1}
	for _, tc := range []struct {
		pools []NeighborsRow
		want  string
	}{
		{[]NeighborsRow{{Seed: "A&&a", Pool: []string{"A&&a", "B&&b"}}, {Seed: "A&&a", Pool: []string{"A&&a", "C&&c"}}}, `Duplicate seed: seed "A&&a"`},
		{[]NeighborsRow{{Seed: "A&&a", Pool: []string{"A&&a", "B&&b", "B&&b"}}}, `Duplicate tool in a pool: tool "B&&b"`},
		{[]NeighborsRow{{Seed: "A&&a", Pool: []string{"B&&b", "A&&a"}}}, "Pool without its seed"},
		{[]NeighborsRow{{Seed: "A&&a", Pool: []string{"A&&a", "E&&e"}}}, `Tool not in the catalog: tool "E&&e"`},
	} {
		_, err := poolTools(tc.pools, byName, easy)
		if err == nil {
			t.Errorf("%+v accepted, want %q", tc.pools, tc.want)
			continue
		}
		wantIn(t, err.Error(), tc.want)
	}
}
