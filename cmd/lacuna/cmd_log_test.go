package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLogListsRunsAndShowsOne: lacuna log lists the store's runs newest
// first with their pipeline, counts and status, by pipeline when given
// one; lacuna log RUN prints one run's events.
func TestLogListsRunsAndShowsOne(t *testing.T) {
	dir := benchDAG(t, 2)
	b, _ := os.ReadFile(filepath.Join(dir, "pipeline.hcl"))
	os.WriteFile(filepath.Join(dir, "other.hcl"), []byte(strings.ReplaceAll(string(b), "n     = 5", "n     = 6")), 0o644)
	for _, f := range []string{"pipeline.hcl", "pipeline.hcl", "other.hcl"} {
		if r := lacuna(t, dir, "run", f); r.code != 0 {
			t.Fatal(r.stderr)
		}
	}
	// A run killed after it started: its log has no summary.
	killed := `{"event":"start","time":"2020-01-01T00:00:00Z","total":4,"message":"` + filepath.Join(dir, "pipeline.hcl") + `"}` + "\n" +
		`{"event":"done","time":"2020-01-01T00:00:02Z","node":"node.import.data","rows":1000}` + "\n" + `{"event":"do`
	os.WriteFile(filepath.Join(dir, ".lacuna", "runs", "20200101T000000Z-999999999.jsonl"), []byte(killed), 0o644)

	r := lacuna(t, dir, "log", "--json")
	var runs []runInfo
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var ri runInfo
		if err := json.Unmarshal([]byte(line), &ri); err != nil {
			t.Fatalf("log --json: %v: %q", err, line)
		}
		runs = append(runs, ri)
	}
	if len(runs) != 4 {
		t.Fatalf("log lists %d runs, want 4:\n%s%s", len(runs), r.stdout, r.stderr)
	}
	want := []struct {
		pipeline                 string
		computed, cached, failed int
		status                   string
	}{
		{"other.hcl", 3, 1, 0, "ok"},
		{"pipeline.hcl", 0, 4, 0, "ok"},
		{"pipeline.hcl", 4, 0, 0, "ok"},
		{"pipeline.hcl", 1, 0, 0, "killed"},
	}
	for i, w := range want {
		g := runs[i]
		if filepath.Base(g.Pipeline) != w.pipeline || g.Computed != w.computed || g.Cached != w.cached || g.Failed != w.failed || g.Status != w.status {
			t.Errorf("run %d: %+v, want %+v", i, g, w)
		}
		if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`).MatchString(g.Started) {
			t.Errorf("run %d started %q: not RFC 3339 in UTC", i, g.Started)
		}
	}
	if runs[3].Seconds != 2 || runs[3].Nodes != 4 {
		t.Errorf("the killed run: %+v", runs[3])
	}

	r = lacuna(t, dir, "log", "pipeline.hcl")
	if r.code != 0 || strings.Count(r.stdout, "\n") != 4 || strings.Contains(r.stdout, "other.hcl") || !strings.Contains(r.stdout, "STATUS") {
		t.Errorf("log pipeline.hcl:\n%s%s", r.stdout, r.stderr)
	}
	r = lacuna(t, dir, "log", "last")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "run "+runs[0].ID+" of other.hcl: ok\n") || !regexp.MustCompile(`\+\d+ms\s+done\s+node\.sample\.s1\s+6 rows in`).MatchString(r.stdout) {
		t.Errorf("log last:\n%s%s", r.stdout, r.stderr)
	}
	r = lacuna(t, dir, "log", "20200101", "--json")
	if r.code != 0 || strings.Count(r.stdout, "\n") != 2 || !strings.Contains(r.stdout, `"event":"done"`) {
		t.Errorf("log RUN --json prints the run's whole events: %q %s", r.stdout, r.stderr)
	}
	if r := lacuna(t, dir, "log", "19990101"); r.code != 1 || !strings.Contains(r.stderr, `no run "19990101"`) {
		t.Errorf("log of an unknown run: %d %s", r.code, r.stderr)
	}
	if r := lacuna(t, dir, "log", "20"); r.code != 1 || !strings.Contains(r.stderr, "is ambiguous") {
		t.Errorf("log of an ambiguous run: %d %s", r.code, r.stderr)
	}
}
