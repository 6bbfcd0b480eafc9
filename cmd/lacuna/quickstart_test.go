package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQuickstartAgainstTheRealProxy runs pipelines/quickstart.hcl as the
// README's quickstart does: four real modules through proxy.golang.org and
// sum.golang.org, examples validated in the sandbox, tasks, calibration,
// c1 and judge. Opt-in: it needs the
// network (LACUNA_TEST_NET=1) and a few minutes cold.
func TestQuickstartAgainstTheRealProxy(t *testing.T) {
	if os.Getenv("LACUNA_TEST_NET") == "" {
		t.Skip("set LACUNA_TEST_NET=1 to run the quickstart against proxy.golang.org")
	}
	dir := t.TempDir()
	src, err := os.ReadFile("../../pipelines/quickstart.hcl")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "quickstart.hcl"), src, 0o644)
	r := lacuna(t, dir, "run", "--json", "quickstart.hcl")
	if r.code != 0 {
		t.Fatalf("run: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	notes := map[string]string{}
	rows := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var e struct {
			Event, Node, Message string
			Rows                 int64
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Event == "done" {
			notes[e.Node], rows[e.Node] = e.Message, e.Rows
		}
	}
	for _, lib := range []string{"lo", "zerolog", "testify", "gonum"} {
		diff := `node.surface_diff.lib["` + lib + `"]`
		if rows[diff] == 0 || !strings.Contains(notes[diff], "novel") {
			t.Errorf("%s: %d rows, note %q", diff, rows[diff], notes[diff])
		}
	}
	if n := rows[`node.bundle.lib["lo"]`]; n < 50 {
		t.Errorf("lo: %d bundles, expected many (%q)", n, notes[`node.bundle.lib["lo"]`])
	}
	// c1 writes one row per task (testify's new APIs have no validated
	// example, so no task); most of lo's pass.
	for _, lib := range []string{"lo", "zerolog", "testify", "gonum"} {
		c1, tasks := `node.c1.lib["`+lib+`"]`, `node.tasks.lib["`+lib+`"]`
		if rows[c1] != rows[tasks] || !strings.Contains(notes[c1], "pass C1 and the audit") {
			t.Errorf("%s: %d rows for %d tasks, note %q", c1, rows[c1], rows[tasks], notes[c1])
		}
	}
	if rows[`node.c1.lib["lo"]`] < 50 {
		t.Errorf("lo: %d tasks through c1, expected many", rows[`node.c1.lib["lo"]`])
	}
	// The second run is all cache hits: 7 node types for 4 libraries.
	r = lacuna(t, dir, "run", "quickstart.hcl")
	if r.code != 0 || !strings.Contains(r.stdout, "0 executed, 28 cached") {
		t.Errorf("second run:\n%s\n%s", r.stdout, r.stderr)
	}
	t.Logf("notes: %v", notes)
}
