package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/runners/parametric/parametrictest"
)

// tinyStudy is what the parametric tests run pipelines/parametric.hcl
// with: the offline fixture library, a tiny Llama served by lacuna's
// transformers server, every arm trained or edited for a few steps on
// one thread.
func tinyStudy(t *testing.T, dir string) []string {
	t.Helper()
	nodetest.OfflineShapes(t)
	py := parametrictest.Python(t)
	base := parametrictest.TinyModel(t, 24, 300, "package main\n\nfunc main() {\n\tshapes.Area(2)\n}")
	var corpus strings.Builder
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&corpus, "{\"text\": \"Shape number %d has an area of %d square units and a perimeter of %d.\"}\n", i, i*i, 4*i)
	}
	if err := os.WriteFile(filepath.Join(dir, "corpus.jsonl"), []byte(corpus.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "pipelines", "parametric.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "parametric.hcl"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{
		"--var", `libraries={ shapes = { ecosystem = "go", name = "example.com/shapes", domain = "test" } }`,
		"--var", "base=" + base,
		"--var", "python=" + py,
		"--var", "lora_rank=8",
		"--var", "max_steps=12",
		"--var", "threads=1",
		"--var", "max_tokens=48",
		"--var", "stats_corpus=corpus.jsonl",
		"--var", "stats_samples=40",
		"--var", "edit_layers=[1, 2]",
		"--var", "test_sample_fraction=0.5",
	}
}

// TestParametricPipelineRunsEndToEndOnATinyModel runs NovelAPIBench's
// parametric study (pipelines/parametric.hcl) for real on CPU: a tiny
// Llama defined from a config, fine-tuned with LoRA on the SFT and RAFT
// data of the fixture library's train split, edited by GRACE, MEMIT and
// AlphaEdit (the covariance over a small corpus), each result served by
// lacuna's transformers server and asked the test split with and without
// the bundle, then solved, judged and tabled beside the base model. The
// second run is all cached.
func TestParametricPipelineRunsEndToEndOnATinyModel(t *testing.T) {
	if testing.Short() {
		t.Skip("trains and edits a model")
	}
	dir := t.TempDir()
	vars := tinyStudy(t, dir)
	res := lacuna(t, dir, append(append([]string{"run"}, vars...), "parametric.hcl")...)
	if res.code != 0 {
		t.Fatalf("lacuna run: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	t.Logf("%s", res.stdout)

	// Training: the loss fell; the edits' efficacy and locality.
	for _, arm := range []string{`node.train.sft["sft"]`, `node.train.raft["raft"]`} {
		rows := catJSON(t, dir, vars, arm)
		if len(rows) != 1 {
			t.Fatalf("%s: %d rows", arm, len(rows))
		}
		r := rows[0]
		first, final := r["first_loss"].(float64), r["final_loss"].(float64)
		t.Logf("%s: %v steps, loss %.3f → %.3f, kind %v", arm, r["steps"], first, final, r["kind"])
		if r["kind"] != "adapter" || !(final < first) {
			t.Errorf("%s: kind %v, loss %v → %v: want an adapter and a falling loss", arm, r["kind"], first, final)
		}
	}
	for _, arm := range []string{`node.edit.grace["grace"]`, `node.edit.memit["memit"]`, `node.edit.alphaedit["alphaedit"]`} {
		rows := catJSON(t, dir, vars, arm)
		if len(rows) != 1 {
			t.Fatalf("%s: %d rows", arm, len(rows))
		}
		r := rows[0]
		t.Logf("%s: %v requests, efficacy %v → %v, locality %v", arm, r["requests"], r["efficacy_pre"], r["efficacy_post"], r["locality"])
		if n, _ := r["requests"].(float64); n < 1 {
			t.Errorf("%s: no requests edited", arm)
		}
	}

	// Every arm is a model of the table, asked with (Full) and without
	// (baseline) the bundle.
	table := catJSON(t, dir, vars, "node.metrics.table", "--where", "difficulty=all", "--where", "library=all")
	seen := map[string]bool{}
	for _, r := range table {
		seen[fmt.Sprint(r["model"], "/", r["cell"])] = true
	}
	for _, m := range []string{"base", `base+train.sft["sft"]`, `base+train.raft["raft"]`, `base+edit.grace["grace"]`, `base+edit.memit["memit"]`, `base+edit.alphaedit["alphaedit"]`} {
		for _, cell := range []string{"Full", "baseline"} {
			if !seen[m+"/"+cell] {
				t.Errorf("metrics table: no row for %s in cell %s (rows: %v)", m, cell, seen)
			}
		}
	}

	again := lacuna(t, dir, append(append([]string{"run", "--json"}, vars...), "parametric.hcl")...)
	if again.code != 0 {
		t.Fatalf("second run: exit %d\n%s", again.code, again.stderr)
	}
	s := summary(t, again.stdout)
	if ran, _ := s["executed"].(float64); ran != 0 {
		t.Errorf("second run ran %v nodes, want all cached: %v", ran, s)
	}
}

// catJSON is `lacuna cat --format json` of one node's rows.
func catJSON(t *testing.T, dir string, vars []string, addr string, extra ...string) []map[string]any {
	t.Helper()
	args := append(append(append([]string{"cat"}, vars...), "parametric.hcl", addr, "--format", "jsonl"), extra...)
	res := lacuna(t, dir, args...)
	if res.code != 0 {
		t.Fatalf("lacuna cat %s: exit %d\n%s", addr, res.code, res.stderr)
	}
	var rows []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("lacuna cat %s: %v: %s", addr, err, line)
		}
		rows = append(rows, m)
	}
	return rows
}
