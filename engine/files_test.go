package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CheckFiles (lacuna validate) names, at the attribute, a file a node
// reads that is not there, with the closest name in its directory; plan
// says the same at the attribute, from the node's Resolve.
func TestMissingImportFileIsReportedAtTheAttribute(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tools.jsonl"), []byte(`{"a": 1}`+"\n"), 0o644)
	os.Mkdir(filepath.Join(dir, "data.jsonl"), 0o755)
	cases := []struct {
		name, src    string
		line, col    int
		summary, has string // "" summary: no diagnostic
	}{
		{"present", `node "import" "a" { path = "tools.jsonl" }`, 0, 0, "", ""},
		{"missing", `node "import" "a" { path = "tool.jsonl" }`, 1, 28, "No such file", `"tool.jsonl" does not exist in ` + dir + ` (a relative path is read from the pipeline's directory). Did you mean "tools.jsonl"?`},
		{"absolute", `node "import" "a" { path = "/nonexistent/x.csv" }`, 1, 28, "No such file", "/nonexistent/x.csv does not exist."},
		{"directory", `node "import" "a" { path = "data.jsonl" }`, 1, 28, "Not a regular file", "is a directory"},
		{"for_each", "node \"import\" \"a\" {\n  for_each = toset([\"x\", \"y\"])\n  path     = \"missing.csv\"\n}\n", 3, 14, "No such file", "missing.csv"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, diags := ExpandSource(filepath.Join(dir, "p.hcl"), []byte(c.src), dir, Options{})
			if diags.HasErrors() {
				t.Fatalf("expand: %s", diagText(diags))
			}
			g.Config.ReleaseSyntax() // as the CLI calls it, before validate checks files
			diags = CheckFiles(g)
			if c.summary == "" {
				if len(diags) > 0 {
					t.Fatalf("want none, got:\n%s", diagText(diags))
				}
				return
			}
			if len(diags) != 1 {
				t.Fatalf("want one diagnostic, got:\n%s", diagText(diags))
			}
			d := diags[0]
			if d.Summary != c.summary || !strings.Contains(d.Detail, c.has) || d.Subject == nil || d.Subject.Start.Line != c.line || d.Subject.Start.Column != c.col {
				t.Errorf("got %s, want %d:%d %s: ...%s...", diagText(diags), c.line, c.col, c.summary, c.has)
			}
		})
	}

	// Plan reaches the same file through import's Resolve, and names the
	// attribute too.
	h := newHarness(t)
	p := h.plan(`node "import" "a" { path = "tool.jsonl" }`)["node.import.a"]
	want := filepath.Join(h.dir, "p.hcl") + ":1:28: Cannot read the import file"
	if p.Status != PlanError || !strings.HasPrefix(p.Reason, want) {
		t.Errorf("plan: %+v, want an error starting %q", p, want)
	}
}
