package generic_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/engine"
)

// TestFilterConfigErrorsPointAtTheAttribute: a filter takes a row
// predicate only; the removed check mode (now node type c1) is an error at
// the attribute that used it, with the replacement in the message.
func TestFilterConfigErrorsPointAtTheAttribute(t *testing.T) {
	for _, c := range []struct {
		name, body     string
		summary, where string // where: the source text the diagnostic points at
		detail         string
	}{
		{"check", `where = true
  check = "c1"`, "check was removed", `"c1"`, `use node "c1"`},
		{"samples", `where = true
  samples = node.import.a`, "samples was removed", `node.import.a`, `use node "c1"`},
		{"nothing", ``, "Nothing to filter on", `node "filter" "f"`, "where ="},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := `
node "import" "a" { path = "a.jsonl" }
node "filter" "f" {
  input = node.import.a
  ` + c.body + `
}
`
			cfg, diags := engine.LoadSource("p.hcl", []byte(src), t.TempDir())
			if !diags.HasErrors() {
				_, diags = engine.Expand(cfg, engine.Options{})
			}
			if len(diags) != 1 {
				t.Fatalf("want one diagnostic, got %v", diags)
			}
			d := diags[0]
			if d.Summary != c.summary || !strings.Contains(d.Detail, c.detail) {
				t.Errorf("diagnostic %q: %q, want %q containing %q", d.Summary, d.Detail, c.summary, c.detail)
			}
			if d.Subject == nil {
				t.Fatal("no source range")
			}
			if got := string(d.Subject.SliceBytes([]byte(src))); !strings.HasPrefix(got, c.where) {
				t.Errorf("points at %q (%s), want %q", got, d.Subject, c.where)
			}
		})
	}
}

// TestFilterKeepsRowsWherePredicateIsTrue: the rows kept are those where
// where is true, in input order, with nested JSON values and nulls as
// HCL sees them; a predicate that is not true or false for a row fails
// the node at the expression.
func TestFilterKeepsRowsWherePredicateIsTrue(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.jsonl", `{"id": 1, "tier": "easy", "n": 3, "meta": {"tags": ["x"]}}
{"id": 2, "tier": "hard", "n": 7, "meta": {"tags": []}}
{"id": 3, "tier": "easy", "n": null, "meta": {"tags": ["x", "y"]}}
`)
	for _, c := range []struct {
		name, where string
		ids         []int64
		err         string
	}{
		{"string equality", `row.tier == "easy"`, []int64{1, 3}, ""},
		{"numbers", `row.n != null && row.n > 4`, []int64{2}, ""},
		{"null", `row.n == null`, []int64{3}, ""},
		{"nested json", `length(row.meta.tags) > 0`, []int64{1, 3}, ""},
		{"none", `false`, nil, ""},
		// row.meta is a JSON column: its type is known only row by row,
		// so this fails at run time, not when the pipeline loads.
		{"not true or false", `row.meta`, nil, "p.hcl:5:11: where must be true or false, got object at row 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := run(t, dir, `
node "import" "a" { path = "a.jsonl" }
node "filter" "f" {
  input = node.import.a
  where = `+c.where+`
}
`)
			if c.err != "" {
				r := o.results["node.filter.f"]
				if r.State != "failed" || !strings.Contains(r.Err.Error(), c.err) {
					t.Fatalf("state %s, error %v; want failed at p.hcl:5 with %q", r.State, r.Err, c.err)
				}
				return
			}
			var ids []int64
			for _, r := range o.rows(t, "node.filter.f") {
				ids = append(ids, r["id"].(int64))
			}
			if fmt.Sprint(ids) != fmt.Sprint(c.ids) {
				t.Errorf("kept %v, want %v", ids, c.ids)
			}
		})
	}
}
