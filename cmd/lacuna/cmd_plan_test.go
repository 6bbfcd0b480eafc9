package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlanExitsOneWhenItReportsErrors: a plan that reports a node with
// an error (here an import of a file that is not there) prints the plan
// and exits 1, in text and JSON; a clean plan exits 0.
func TestPlanExitsOneWhenItReportsErrors(t *testing.T) {
	dir := benchDAG(t, 1)
	for _, args := range [][]string{{"plan", "pipeline.hcl"}, {"plan", "pipeline.hcl", "--json"}} {
		if r := lacuna(t, dir, args...); r.code != 0 {
			t.Errorf("%v on a good pipeline: exit %d %s", args, r.code, r.stderr)
		}
	}
	if err := os.Remove(filepath.Join(dir, "data.jsonl")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "pipeline.hcl"}, "1 with errors."},
		{[]string{"plan", "pipeline.hcl", "--json"}, `"error":1`},
	} {
		r := lacuna(t, dir, tc.args...)
		if r.code != 1 || !strings.Contains(r.stdout, tc.want) {
			t.Errorf("%v with a missing input file: exit %d, want 1 and %q in\n%s%s", tc.args, r.code, tc.want, r.stdout, r.stderr)
		}
	}
}
