package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/nodetest"
)

// lacuna verify of a solve node: its seconds differ every run, and the
// stack traces of the samples that crash differ in goroutine numbers,
// addresses and temporary directories; verify sets the first aside (a
// declared volatile column, reported as information) and solve writes the
// second stably, so the node verifies.
func TestVerifyOfSolveSetsItsTimingsAside(t *testing.T) {
	nodetest.OfflineShapes(t)
	dir := t.TempDir()
	src := shapesPipeline + `node "tasks" "shapes" { bundles = node.bundle.shapes }
node "solve" "calibration" {
  tasks       = node.tasks.shapes
  calibration = true
}
`
	if err := os.WriteFile(filepath.Join(dir, "p.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := lacuna(t, dir, "run", "p.hcl"); r.code != 0 {
		t.Fatalf("run: %s%s", r.stdout, r.stderr)
	}
	r := lacuna(t, dir, "verify", "--json", "p.hcl", "node.solve.calibration")
	var out []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out) != 1 {
		t.Fatalf("verify --json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	v := out[0]
	if r.code != 0 || v["match"] != true || v["reproducible"] != true {
		t.Fatalf("verify of solve: exit %d, %v\n%s", r.code, v, r.stderr)
	}
	if v["identical"] != true {
		if vol, _ := v["volatile"].(map[string]any); vol["seconds"] == nil {
			t.Errorf("digests differ, yet no volatile column: %v", v)
		}
	}
	r = lacuna(t, dir, "verify", "p.hcl", "node.solve.calibration", "node.tasks.shapes")
	if r.code != 0 || strings.Count(r.stdout, "ok ") != 2 || strings.Contains(r.stdout, "MISMATCH") {
		t.Errorf("verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
