package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadingCommandsNeverCreateAStore: every command that only reads
// the store, run where there is none, leaves none behind; those that
// need one say so clearly and exit 1, plan plans against an empty one,
// and validate and graph do not open it.
func TestReadingCommandsNeverCreateAStore(t *testing.T) {
	dir := benchDAG(t, 2)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"show", "0123456789abcdef"}, 1},
		{[]string{"show", "0123"}, 1},
		{[]string{"show", "pipeline.hcl", "node.sample.s1"}, 1},
		{[]string{"cat", "pipeline.hcl", "node.sample.s1"}, 1},
		{[]string{"cat", "01234567"}, 1},
		{[]string{"diff", "01234567", "89abcdef"}, 1},
		{[]string{"export", "pipeline.hcl", "--to", "out"}, 1},
		{[]string{"verify", "pipeline.hcl", "node.sample.s1"}, 1},
		{[]string{"gc", "pipeline.hcl"}, 1},
		{[]string{"gc", "--calls"}, 1},
		{[]string{"fsck"}, 1},
		{[]string{"log"}, 1},
		{[]string{"log", "pipeline.hcl"}, 1},
		{[]string{"plan", "pipeline.hcl"}, 0},
		{[]string{"validate", "pipeline.hcl"}, 0},
		{[]string{"graph", "pipeline.hcl"}, 0},
	} {
		r := lacuna(t, dir, tc.args...)
		if r.code != tc.code {
			t.Errorf("%v: exit %d, want %d\n%s", tc.args, r.code, tc.code, r.stderr)
		}
		if tc.code == 1 && !strings.Contains(r.stderr, "no store at .lacuna; run `lacuna run` first or pass --store") {
			t.Errorf("%v: stderr does not say there is no store:\n%s", tc.args, r.stderr)
		}
		for _, p := range []string{".lacuna", "out"} {
			if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
				t.Fatalf("%v created %s", tc.args, p)
			}
		}
	}
	if r := lacuna(t, dir, "plan", "pipeline.hcl"); !strings.Contains(r.stderr, "no store at .lacuna yet") || !strings.Contains(r.stdout, "Plan: 4 to run, 0 cached") {
		t.Errorf("plan without a store:\n%s%s", r.stdout, r.stderr)
	}
	other := filepath.Join(t.TempDir(), "elsewhere")
	if r := lacuna(t, dir, "fsck", "--store", other); r.code != 1 || !strings.Contains(r.stderr, "elsewhere; run `lacuna run` first or pass --store") {
		t.Errorf("fsck --store DIR of nothing: %d %s", r.code, r.stderr)
	}
	// run creates it; then the readers read it.
	if r := lacuna(t, dir, "run", "pipeline.hcl"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := lacuna(t, dir, "fsck"); r.code != 0 || !strings.Contains(r.stdout, "no problems found") {
		t.Errorf("fsck after a run: %d %s %s", r.code, r.stdout, r.stderr)
	}
}

// TestVarWithoutEqualsIsAUsageError: --var NAME without =VALUE exits 2,
// as usage errors do.
func TestVarWithoutEqualsIsAUsageError(t *testing.T) {
	dir := benchDAG(t, 1)
	for _, cmd := range []string{"validate", "plan", "run"} {
		r := lacuna(t, dir, cmd, "pipeline.hcl", "--var", "x")
		if r.code != 2 || !strings.Contains(r.stderr, `--var "x": want NAME=VALUE`) {
			t.Errorf("%s --var x: exit %d, %s", cmd, r.code, r.stderr)
		}
	}
}
