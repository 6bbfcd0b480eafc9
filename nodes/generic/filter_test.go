package generic_test

import (
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
