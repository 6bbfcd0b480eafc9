package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/parquet-go/parquet-go"
)

// toolRow is the declared output of the test type "tools".
type toolRow struct {
	Name string   `parquet:"name"`
	Size int64    `parquet:"size"`
	Tags []string `parquet:"tags,list"`
	Meta struct {
		Lang string `parquet:"lang"`
	} `parquet:"meta"`
	Spec string `parquet:"spec,json"`
}

//lint:ignore U1000 used as nodes.Static's type argument (staticcheck misses that use)
type toolsConfig struct {
	// Wrong makes Run write a schema other than the declared one.
	Wrong bool `hcl:"wrong,optional"`
}

// toolsType is a node type built on the typed skeleton: its schema is
// declared once, by toolRow.
type toolsType struct {
	nodes.Static[toolsConfig, toolRow]
}

var _ nodes.Typed = toolsType{}

func (toolsType) Name() string    { return "tools" }
func (toolsType) Version() string { return "1" }
func (t toolsType) Run(_ context.Context, r nodes.Run) error {
	if t.Config(r).Wrong {
		w, err := r.Output(artifacts.SchemaOf[valueRow]())
		if err != nil {
			return err
		}
		return w.Write(valueRow{1})
	}
	return t.Write(r, []toolRow{{Name: "grep", Size: 3, Spec: "{}"}})
}

func init() { nodes.Register(toolsType{}) }

// TestWhereIsCheckedAgainstTheInputSchema: a filter's where over an input
// whose schema is declared (directly, or through filter, sample and
// concat) is checked before the run: an unknown column is an error at the
// reference with a suggestion, a predicate that can never be true or false
// an error at the expression; over an import whose file cannot be read
// before the run (here: none) nothing is checked.
func TestWhereIsCheckedAgainstTheInputSchema(t *testing.T) {
	const head = `
node "tools" "t" {}
node "import" "i" { path = "x.jsonl" }
`
	// filter is a filter block; with head before it, the first one's where
	// starts at 6:11.
	filter := func(name, input, where string) string {
		return fmt.Sprintf("node \"filter\" %q {\n  input = %s\n  where = %s\n}\n", name, input, where)
	}
	tools := "node.tools.t"
	for _, c := range []struct {
		name, src string
		want      string // "" for valid; else "LINE:COL summary | detail part"
	}{
		{"known columns", filter("f", tools, `row.name == "x" && row.size > 3 && row.meta.lang == "go"`), ""},
		{"index form", filter("f", tools, `row["name"] == "x"`), ""},
		{"list and json columns are not checked inside", filter("f", tools, `row.tags[0] == "a" || row.spec.k == 1`), ""},
		{"unknown column", filter("f", tools, `row.nmae == "x"`), `6:11 Unknown column | no column "nmae" | Did you mean "name"?`},
		{"unknown column by index", filter("f", tools, `row["nmae"] == "x"`), `6:11 Unknown column | Did you mean "name"?`},
		{"unknown nested column", filter("f", tools, `row.meta.lnag == "go"`), `6:11 Unknown column | row.meta has no column "lnag" | Did you mean "lang"?`},
		{"not a predicate", filter("f", tools, `row.name`), `6:11 Predicate is not true or false | is a string`},
		{"a number is not a predicate", filter("f", tools, `row.size + 1`), `6:11 Predicate is not true or false | is a number`},
		{"type error for every row", filter("f", tools, `row.meta > 1`), `6:11 Invalid operand`},
		{"through a filter", filter("a", tools, `row.size > 1`) + filter("f", "node.filter.a", `row.nmae == "x"`), `10:11 Unknown column | Did you mean "name"?`},
		{"through sample and concat with source_column", `node "sample" "s" {
  input = node.tools.t
  n     = 1
}
node "concat" "c" {
  inputs        = [node.sample.s, node.tools.t]
  source_column = "from"
}
` + filter("f", "node.concat.c", `row.from == "x" && row.frm == "y"`), `14:30 Unknown column | Did you mean "from"?`},
		{"over an import of no file nothing is checked", filter("f", "node.import.i", `row.nmae == "x"`), ""},
		{"over a filter of an import of no file nothing is checked", filter("a", "node.import.i", `row.x == 1`) + filter("f", "node.filter.a", `row.nmae`), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := head + c.src
			_, diags := ExpandSource("p.hcl", []byte(src), t.TempDir(), Options{})
			if c.want == "" {
				if diags.HasErrors() {
					t.Fatalf("valid pipeline:\n%s\ngave %s", src, diagText(diags))
				}
				return
			}
			parts := strings.Split(c.want, " | ")
			pos, summary, _ := strings.Cut(parts[0], " ")
			if len(diags) != 1 {
				t.Fatalf("pipeline:\n%s\nwant one diagnostic, got %s", src, diagText(diags))
			}
			d := diags[0]
			if d.Subject == nil || fmt.Sprintf("%d:%d", d.Subject.Start.Line, d.Subject.Start.Column) != pos || !strings.Contains(d.Summary, summary) {
				t.Fatalf("pipeline:\n%s\ngot %s, want %s", src, diagText(diags), c.want)
			}
			for _, p := range parts[1:] {
				if !strings.Contains(d.Detail, p) {
					t.Errorf("detail %q does not say %q", d.Detail, p)
				}
			}
		})
	}
}

// TestWhereOfForEachInstancesIsReportedOnce: instances share their block's
// expression, so a bad reference is one diagnostic, not one per instance.
func TestWhereOfForEachInstancesIsReportedOnce(t *testing.T) {
	src := `
node "tools" "t" {}
node "filter" "f" {
  for_each = toset(["a", "b", "c"])
  input    = node.tools.t
  where    = row.nmae == each.key
}
`
	_, diags := ExpandSource("p.hcl", []byte(src), t.TempDir(), Options{})
	if len(diags) != 1 || diags[0].Summary != "Unknown column" {
		t.Fatalf("want one Unknown column diagnostic, got %s", diagText(diags))
	}
}

// TestOutputOfAnotherSchemaFailsTheNode: a typed node whose Run asks for
// an output schema other than its declared one fails, with the type and
// the columns that differ in the error; nothing is cached.
func TestOutputOfAnotherSchemaFailsTheNode(t *testing.T) {
	h := newHarness(t)
	states, res, err := h.run(`node "tools" "ok" {}
node "tools" "bad" { wrong = true }
`, func(x *Executor) { x.KeepGoing = true })
	if err == nil {
		t.Fatal("a node writing an undeclared schema did not fail the run")
	}
	if states["node.tools.ok"] != EventDone || states["node.tools.bad"] != EventFailed {
		t.Fatalf("states %v", states)
	}
	for inst, r := range res {
		if inst.Addr != "node.tools.bad" {
			continue
		}
		msg := fmt.Sprint(r.Err)
		for _, want := range []string{"node type tools", "missing column name (STRING, required)", "undeclared column value (INT64, required)"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q does not say %q", msg, want)
			}
		}
		if _, err := h.store.GetAction(r.Key); err == nil {
			t.Error("the failed node was cached")
		}
	}
}

// TestWhereOverAnImportIsCheckedAgainstItsFile: an import's schema is read
// before the run (nodes.SchemaReader) from the columns it declares, a
// Parquet file's footer, a small JSON or CSV file's inferred columns or a
// large CSV file's header, so a where over it, directly or through a
// filter, is checked at load time with a suggestion; over a large JSON
// file (its columns are known only by reading it all) nothing is.
func TestWhereOverAnImportIsCheckedAgainstItsFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("tools.jsonl", `{"name": "grep", "size": 3}`+"\n"+`{"name": "sed", "tags": ["a"]}`+"\n")
	write("tools.csv", "\ufeffname,size\ngrep,3\n")
	big := func(name, head string) {
		write(name, head)
		if err := os.Truncate(filepath.Join(dir, name), 17<<20); err != nil { // sparse: no disk used
			t.Fatal(err)
		}
	}
	big("big.csv", "name,size\ngrep,3\n")
	big("big.jsonl", `{"name": "grep"}`+"\n")
	{
		f, err := os.Create(filepath.Join(dir, "tools.parquet"))
		if err != nil {
			t.Fatal(err)
		}
		w := parquet.NewGenericWriter[toolRow](f)
		if _, err := w.Write([]toolRow{{Name: "grep"}}); err != nil {
			t.Fatal(err)
		}
		w.Close()
		f.Close()
	}
	imp := func(attrs string) string { return "node \"import\" \"i\" {\n  " + attrs + "\n}\n" }
	filter := func(name, input, where string) string {
		return fmt.Sprintf("node \"filter\" %q {\n  input = %s\n  where = %s\n}\n", name, input, where)
	}
	for _, c := range []struct {
		name, src string
		want      string // "" for valid; else "LINE:COL summary | detail part"
	}{
		{"jsonl", imp(`path = "tools.jsonl"`) + filter("f", "node.import.i", `row.name == "x" && row.size > 1 && row.tags != null`), ""},
		{"jsonl misspelt", imp(`path = "tools.jsonl"`) + filter("f", "node.import.i", `row.nmae == "x"`), `6:11 Unknown column | row has no column "nmae". Did you mean "name"? The rows of node.import.i have name, size, tags.`},
		{"jsonl type", imp(`path = "tools.jsonl"`) + filter("f", "node.import.i", `row.size`), `6:11 Predicate is not true or false | is a number`},
		{"csv with a byte-order mark", imp(`path = "tools.csv"`) + filter("f", "node.import.i", `row.sise > 1`), `6:11 Unknown column | Did you mean "size"?`},
		{"parquet", imp(`path = "tools.parquet"`) + filter("f", "node.import.i", `row.meta.lnag == "go"`), `6:11 Unknown column | Did you mean "lang"?`},
		{"declared columns", imp("path = \"none.jsonl\"\n  columns = { name = \"string\" }") + filter("f", "node.import.i", `row.size > 1`), `7:11 Unknown column | The rows of node.import.i have name.`},
		{"large csv: its header", imp(`path = "big.csv"`) + filter("f", "node.import.i", `row.nam == "x"`), `6:11 Unknown column | Did you mean "name"?`},
		{"large csv: any type", imp(`path = "big.csv"`) + filter("f", "node.import.i", `row.size > 1`), ""},
		{"large jsonl: not checked", imp(`path = "big.jsonl"`) + filter("f", "node.import.i", `row.nmae == "x"`), ""},
		{"through a filter", imp(`path = "tools.jsonl"`) + filter("a", "node.import.i", `row.size > 1`) + filter("f", "node.filter.a", `row.nmae == "x"`), `10:11 Unknown column | Did you mean "name"?`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, diags := ExpandSource(filepath.Join(dir, "p.hcl"), []byte(c.src), dir, Options{})
			if c.want == "" {
				if diags.HasErrors() {
					t.Fatalf("valid pipeline:\n%s\ngave %s", c.src, diagText(diags))
				}
				return
			}
			parts := strings.Split(c.want, " | ")
			pos, summary, _ := strings.Cut(parts[0], " ")
			if len(diags) != 1 {
				t.Fatalf("pipeline:\n%s\nwant one diagnostic, got %s", c.src, diagText(diags))
			}
			d := diags[0]
			if d.Subject == nil || fmt.Sprintf("%d:%d", d.Subject.Start.Line, d.Subject.Start.Column) != pos || !strings.Contains(d.Summary, summary) {
				t.Fatalf("pipeline:\n%s\ngot %s, want %s", c.src, diagText(diags), c.want)
			}
			for _, p := range parts[1:] {
				if !strings.Contains(d.Detail, p) {
					t.Errorf("detail %q does not say %q", d.Detail, p)
				}
			}
		})
	}
}
