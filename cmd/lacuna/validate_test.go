package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validate finds, before anything runs and as FILE:LINE:COL diagnostics
// with the source line: a malformed model endpoint (an error with the
// hint; no /v1 a warning), a filter's where naming a column its input (an
// import) does not have, with the closest one, and an import of a file
// that is not there.
func TestValidateFindsWhatOnlyARunFoundBefore(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("tasks.jsonl", `{"task_id": "t1", "tier": "easy"}`+"\n")
	cases := []struct {
		name, src string
		code      int
		want      []string
	}{
		{"endpoint not a URL", "model \"m\" {\n  id       = \"org/m\"\n  endpoint = \"not-a-url\"\n}\n", 1, []string{
			`p.hcl:3:14: error: Invalid endpoint`,
			`"not-a-url" has no scheme: endpoint must be an absolute http(s) URL ending in /v1, e.g. http://127.0.0.1:8000/v1.`,
			`     3 |   endpoint = "not-a-url"`,
		}},
		{"endpoint without /v1", "model \"m\" {\n  id       = \"org/m\"\n  endpoint = \"http://127.0.0.1:8000\"\n}\n", 0, []string{
			`p.hcl:3:14: warning: Unusual endpoint`, "does not end in /v1", "is valid",
		}},
		{"where over an import", "node \"import\" \"t\" { path = \"tasks.jsonl\" }\nnode \"filter\" \"easy\" {\n  input = node.import.t\n  where = row.teir == \"easy\"\n}\n", 1, []string{
			`p.hcl:4:11: error: Unknown column`, `row has no column "teir". Did you mean "tier"? The rows of node.import.t have task_id, tier.`,
		}},
		{"missing import file", "node \"import\" \"t\" { path = \"task.jsonl\" }\n", 1, []string{
			`p.hcl:1:28: error: No such file`, `"task.jsonl" does not exist in`, `Did you mean "tasks.jsonl"?`,
		}},
		// Every problem in one pass, in the file's order.
		{"all at once", "model \"m\" {\n  id       = \"org/m\"\n  endpoint = \"not-a-url\"\n}\nnode \"import\" \"t\" { path = \"task.jsonl\" }\nnode \"import\" \"u\" { path = \"tasks.jsonl\" }\nnode \"filter\" \"easy\" {\n  input = node.import.u\n  where = row.teir == \"easy\"\n}\n", 1, []string{
			"p.hcl:3:14: error: Invalid endpoint",
			"p.hcl:5:28: error: No such file",
			"p.hcl:9:11: error: Unknown column",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			write("p.hcl", c.src)
			r := lacuna(t, dir, "validate", "p.hcl")
			if r.code != c.code {
				t.Errorf("exit %d, want %d\n%s%s", r.code, c.code, r.stdout, r.stderr)
			}
			at := 0 // the diagnostics on stderr come in the file's order
			for _, w := range c.want {
				if !strings.Contains(r.stdout+r.stderr, w) {
					t.Errorf("output lacks %q:\n%s%s", w, r.stdout, r.stderr)
				} else if i := strings.Index(r.stderr, w); strings.Contains(w, ": error: ") && i < at {
					t.Errorf("%q comes before the diagnostic above it in the file:\n%s", w, r.stderr)
				} else if i >= 0 {
					at = i
				}
			}
		})
	}
	// plan and run load the pipeline as validate does: the endpoint is
	// refused there too, before any node is asked to reach it.
	write("p.hcl", cases[0].src)
	if r := lacuna(t, dir, "plan", "p.hcl"); r.code != 1 || !strings.Contains(r.stderr, "p.hcl:3:14: error: Invalid endpoint") {
		t.Errorf("plan: exit %d\n%s", r.code, r.stderr)
	}
}
