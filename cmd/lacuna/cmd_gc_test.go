package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGCKeepsEveryPipelinesResultsInASharedStore: two pipelines share one
// store (as the shipped pipelines share pipelines/.lacuna); gc given one
// keeps the other's results, recorded by its runs, and says so; --forget
// lets them go.
func TestGCKeepsEveryPipelinesResultsInASharedStore(t *testing.T) {
	dir := benchDAG(t, 2)
	p := filepath.Join(dir, "pipeline.hcl")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// other.hcl: the same import (a result both share), other samples.
	other := strings.ReplaceAll(string(b), "n     = 5", "n     = 6")
	if err := os.WriteFile(filepath.Join(dir, "other.hcl"), []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"pipeline.hcl", "other.hcl"} {
		if r := lacuna(t, dir, "run", f); r.code != 0 {
			t.Fatal(r.stderr)
		}
	}
	executed := func(f string) float64 {
		t.Helper()
		return summary(t, lacuna(t, dir, "run", f, "--json").stdout)["executed"].(float64)
	}

	r := lacuna(t, dir, "gc", "pipeline.hcl")
	if r.code != 0 || !strings.Contains(r.stdout, "keeping 4 results of pipeline.hcl (its current nodes)") ||
		!strings.Contains(r.stdout, "keeping 4 results of other.hcl (recorded by its last runs; --forget other.hcl collects them)") ||
		!strings.Contains(r.stdout, "removed 0 actions") {
		t.Errorf("gc pipeline.hcl:\n%s%s", r.stdout, r.stderr)
	}
	if n := executed("other.hcl"); n != 0 {
		t.Fatalf("gc of pipeline.hcl deleted %v results of other.hcl", n)
	}

	// Editing other.hcl and running it again: gc collects its old results
	// (its snapshot holds the new keys), whichever pipeline it is given.
	if err := os.WriteFile(filepath.Join(dir, "other.hcl"), []byte(strings.ReplaceAll(other, "seed  = 1", "seed  = 7")), 0o644); err != nil {
		t.Fatal(err)
	}
	lacuna(t, dir, "run", "other.hcl")
	r = lacuna(t, dir, "gc", "pipeline.hcl", "--json")
	var rep struct {
		ActionsRemoved int
		Removed        []struct{ Node string }
		Roots          []gcRoot `json:"roots"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("gc --json: %v %s", err, r.stdout)
	}
	if rep.ActionsRemoved != 2 || len(rep.Removed) != 2 || len(rep.Roots) != 2 || rep.Roots[1].Current || rep.Roots[1].Results != 4 {
		t.Errorf("gc after editing other.hcl: %+v", rep)
	}
	for _, f := range []string{"pipeline.hcl", "other.hcl"} {
		if n := executed(f); n != 0 {
			t.Errorf("gc deleted %v current results of %s", n, f)
		}
	}

	// --forget: other.hcl's results go, except what pipeline.hcl uses.
	if r := lacuna(t, dir, "gc", "pipeline.hcl", "--forget", "nosuch.hcl"); r.code != 1 || !strings.Contains(r.stderr, "records no results of") {
		t.Errorf("gc --forget of a pipeline that never ran: %d %s", r.code, r.stderr)
	}
	r = lacuna(t, dir, "gc", "pipeline.hcl", "--forget", "other.hcl")
	if r.code != 0 || strings.Contains(r.stdout, "of other.hcl") || !strings.Contains(r.stdout, "removed 3 actions") || !strings.Contains(r.stdout, "removed node.concat.all") {
		t.Errorf("gc --forget other.hcl:\n%s%s", r.stdout, r.stderr)
	}
	if n := executed("pipeline.hcl"); n != 0 {
		t.Errorf("gc --forget other.hcl deleted %v results of pipeline.hcl", n)
	}
	if n := executed("other.hcl"); n != 3 {
		t.Errorf("other.hcl ran %v nodes after its results were forgotten and collected, want 3 (its import is pipeline.hcl's too)", n)
	}
}
