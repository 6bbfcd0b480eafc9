package generic_test

import (
	"fmt"
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

// TestConcatUnionsInputsInOrder: rows come in the order of inputs (an
// input listed twice twice), source_column names each row's producer, and
// inputs of different schemas or a source_column the inputs already have
// are errors naming the problem.
func TestConcatUnionsInputsInOrder(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.jsonl", `{"x": 1}`+"\n"+`{"x": 2}`+"\n")
	write(t, dir, "b.jsonl", `{"x": 3}`+"\n")
	write(t, dir, "c.jsonl", `{"y": "other"}`+"\n")
	for _, c := range []struct {
		name, body string
		want       []string // x (and from) of each row, or the error's parts
		fails      bool
	}{
		{"in order", `inputs = [node.import.a, node.import.b]`, []string{"1", "2", "3"}, false},
		{"order follows inputs", `inputs = [node.import.b, node.import.a]`, []string{"3", "1", "2"}, false},
		{"an input twice", `inputs = [node.import.b, node.import.b]`, []string{"3", "3"}, false},
		{"source_column", `inputs = [node.import.a, node.import.b]
  source_column = "from"`, []string{"1 node.import.a", "2 node.import.a", "3 node.import.b"}, false},
		{"different schemas", `inputs = [node.import.a, node.import.c]`, []string{"node.import.c has a different schema from node.import.a"}, true},
		{"source_column exists", `inputs = [node.import.a]
  source_column = "x"`, []string{"Column exists", `"x"`}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := run(t, dir, `
node "import" "a" { path = "a.jsonl" }
node "import" "b" { path = "b.jsonl" }
node "import" "c" { path = "c.jsonl" }
node "concat" "all" {
  `+c.body+`
}
`)
			if c.fails {
				r := o.results["node.concat.all"]
				if r.State != "failed" {
					t.Fatalf("concat %s, want failed", r.State)
				}
				for _, w := range c.want {
					if !strings.Contains(r.Err.Error(), w) {
						t.Errorf("error %q does not say %q", r.Err, w)
					}
				}
				return
			}
			var got []string
			for _, r := range o.rows(t, "node.concat.all") {
				s := fmt.Sprint(r["x"])
				if from, ok := r["from"]; ok {
					s += " " + from.(string)
				}
				got = append(got, s)
			}
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("rows %v, want %v", got, c.want)
			}
		})
	}
}
