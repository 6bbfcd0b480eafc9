package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunLogIsLineCompleteAfterKill9: the run's event log under runs/ is
// written an event at a time, each a whole line: killed with SIGKILL
// mid-run, lacuna leaves a log whose every line is a complete event, and
// which holds every node the run reported done before it died.
func TestRunLogIsLineCompleteAfterKill9(t *testing.T) {
	dir := benchDAG(t, 300)
	done := 0
	if !killMidRun(t, dir, nil, doneEvents(100, &done), "run", "pipeline.hcl", "--json", "-j", "2") {
		t.Fatalf("the run finished before it could be killed (%d nodes)", done)
	}
	logs, err := filepath.Glob(filepath.Join(dir, ".lacuna", "runs", "*.jsonl"))
	if err != nil || len(logs) != 1 {
		t.Fatalf("run logs %v (%v), want one", logs, err)
	}
	b, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		t.Fatalf("the log ends mid-line: ...%q", b[max(0, len(b)-80):])
	}
	logged := 0
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %d is not a whole event: %q (%v)", i+1, line, err)
		}
		if e["event"] == "done" {
			logged++
		}
	}
	if logged < done {
		t.Errorf("the log holds %d done events; the run had shown %d before it was killed", logged, done)
	}
}
