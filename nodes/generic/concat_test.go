package generic_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/nodetest"
)

type sourceRow struct {
	A    *int64 `parquet:"a,optional"`
	From string `parquet:"from"`
}

// Rows carry node addresses in source_column; renaming a node must not
// leave its old name in a cached artifact, and renaming a node of a concat
// without source_column recomputes nothing.
func TestConcatSourceColumnFollowsRenames(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "t.jsonl"), []byte(`{"a": 1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pipeline := func(name, column string) string {
		return strings.NewReplacer("NAME", name, "COLUMN", column).Replace(`
node "import" "NAME" { path = "t.jsonl" }
node "concat" "all" {
  inputs = [node.import.NAME]
  COLUMN
}`)
	}
	for _, tc := range []struct {
		name, column string
		wantState    string
		wantFrom     string
	}{
		{"old", `source_column = "from"`, "done", "node.import.old"},
		{"new", `source_column = "from"`, "done", "node.import.new"},
		{"new", ``, "done", ""},
		{"newer", ``, "cached", ""},
	} {
		res := nodetest.Run(t, dir, pipeline(tc.name, tc.column))
		n := res.Nodes["node.concat.all"]
		if string(n.State) != tc.wantState {
			t.Errorf("%s %q: concat %s, want %s", tc.name, tc.column, n.State, tc.wantState)
		}
		if tc.wantFrom == "" {
			continue
		}
		rows := nodetest.Read[sourceRow](t, res, "node.concat.all")
		if len(rows) != 1 || rows[0].From != tc.wantFrom {
			t.Errorf("%s: rows %+v, want from = %s", tc.name, rows, tc.wantFrom)
		}
	}
}
