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
		"--var", "max_steps=4",
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
	for _, arm := range []string{`node.train.arm["sft"]`, `node.train.arm["raft"]`} {
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
	for _, arm := range []string{`node.edit.arm["grace"]`, `node.edit.arm["memit"]`, `node.edit.arm["alphaedit"]`} {
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
	for _, m := range []string{"base", `base+train.arm["sft"]`, `base+train.arm["raft"]`, `base+edit.arm["grace"]`, `base+edit.arm["memit"]`, `base+edit.arm["alphaedit"]`} {
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

// catJSON is `lacuna cat --format jsonl` of one node of parametric.hcl.
func catJSON(t *testing.T, dir string, vars []string, addr string, extra ...string) []map[string]any {
	t.Helper()
	return catJSONL(t, dir, vars, "parametric.hcl", addr, extra...)
}

// toolgenCatalog is a synthetic catalog of services × APIs, each tool
// described in words of its own, and queries asking for each tool in
// four wordings: three to train on, the fourth held out.
func toolgenCatalog(services, apis int) (tools, train, eval string, texts []string) {
	nouns := []string{"weather", "stock", "flight", "hotel", "recipe", "movie", "music", "news", "soccer", "crypto", "translate", "map", "email", "calendar", "photo", "video", "book", "podcast", "fitness", "shopping"}
	verbs := []string{"search", "list", "create", "delete", "update", "rank", "convert", "compare", "book", "track"}
	var tb, trb, evb strings.Builder
	for s := 0; s < services; s++ {
		svc := nouns[s%len(nouns)]
		title := strings.ToUpper(svc[:1]) + svc[1:] + " API"
		for a := 0; a < apis; a++ {
			verb := verbs[a%len(verbs)]
			name := title + "&&" + verb
			desc := fmt.Sprintf("%s %s data", verb, svc)
			fmt.Fprintf(&tb, "{\"tool_name\": %q, \"tool_title\": %q, \"tool_description\": %q, \"api_title\": %q, \"api_description\": %q}\n", name, title, "all about "+svc, verb, desc)
			asks := []string{
				fmt.Sprintf("please %s the %s", verb, svc),
				fmt.Sprintf("I want to %s %s things", verb, svc),
				fmt.Sprintf("can you %s %s for me", verb, svc),
				fmt.Sprintf("%s some %s now", verb, svc),
			}
			for i, q := range asks {
				row := fmt.Sprintf("{\"sample_id\": \"%s-%d\", \"query\": %q, \"complexity\": \"easy\", \"tool\": {\"tool_name\": %q}}\n", strings.ReplaceAll(name, " ", "_"), i, q, name)
				if i < 3 {
					trb.WriteString(row)
				} else {
					evb.WriteString(row)
				}
				texts = append(texts, q)
			}
			texts = append(texts, title+" "+desc)
		}
	}
	return tb.String(), trb.String(), evb.String(), texts
}

const toolgenPipeline = `
node "catalog" "c" { path = "tools.jsonl" }
node "import" "train" { path = "train.jsonl" }
node "import" "eval" { path = "eval.jsonl" }
node "toolgen_data" "s1" {
  stage         = 1
  configuration = "TG"
  catalog       = node.catalog.c
}
node "toolgen_data" "s2" {
  stage         = 2
  configuration = "TG"
  catalog       = node.catalog.c
  queries       = node.import.train
}
node "train" "s1" {
  base          = %[1]q
  python        = %[2]q
  data          = node.toolgen_data.s1
  new_tokens    = node.toolgen_data.s1
  method        = "full"
  epochs        = 20
  learning_rate = 0.001
  threads       = 1
}
node "train" "s2" {
  from          = node.train.s1
  python        = %[2]q
  data          = node.toolgen_data.s2
  method        = "full"
  epochs        = 10
  learning_rate = 0.001
  threads       = 1
}
model "tg" {
  id = "tiny-toolgen"
  serve {
    kind         = "transformers"
    weights      = %[1]q
    command      = [%[2]q]
    max_logprobs = 50
  }
}
node "retrieve_parametric" "constrained" {
  catalog      = node.catalog.c
  queries      = node.import.eval
  model        = model.tg
  trained      = node.train.s2
  decoding     = "constrained"
  token_format = "flat"
  prompt       = "none"
  beam         = 10
  k            = 10
}
node "retrieval_eval" "e" {
  retrieved = [node.retrieve_parametric.constrained]
  k         = [1, 5]
  bootstrap = 200
  seed      = 1
}
`

// TestToolGenTrainingRetrievesAboveChance trains a ToolGen retriever for
// real on CPU: a tiny Llama, a 50-tool catalog, Stage 1 (desc → a new
// virtual token per tool, full fine-tuning) then Stage 2 from Stage 1's
// model (three wordings of a query per tool → its token), served by
// lacuna's transformers server with the trained vocabulary, and asked the
// held-out fourth wording under constrained decoding: Rc@1 must beat
// chance (1/50).
func TestToolGenTrainingRetrievesAboveChance(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	py := parametrictest.Python(t)
	tools, train, eval, texts := toolgenCatalog(10, 5)
	base := parametrictest.TinyModel(t, 24, 300, texts...)
	dir := t.TempDir()
	for name, body := range map[string]string{"tools.jsonl": tools, "train.jsonl": train, "eval.jsonl": eval, "p.hcl": fmt.Sprintf(toolgenPipeline, base, py)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res := lacuna(t, dir, "run", "p.hcl")
	if res.code != 0 {
		t.Fatalf("lacuna run: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	t.Logf("%s", res.stdout)
	res = lacuna(t, dir, "cat", "p.hcl", "node.retrieval_eval.e", "--format", "jsonl")
	if res.code != 0 {
		t.Fatalf("lacuna cat: %s", res.stderr)
	}
	rc1 := -1.0
	for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		t.Logf("tier %v k %v: Rc@k %.1f%% [%.1f, %.1f] over %v queries", m["tier"], m["k"], m["rc_at_k"], m["rc_lo"], m["rc_hi"], m["queries"])
		if m["k"] == 1.0 && m["tier"] == "all" {
			rc1 = m["rc_at_k"].(float64)
		}
	}
	// retrieval_eval reports percentages: chance is 100/50 = 2%.
	if rc1 <= 100.0/50 {
		t.Errorf("Rc@1 = %.1f%% under constrained decoding, want above chance (2%%)", rc1)
	}
}

const trainPipeline = `
node "import" "data" { path = "data.jsonl" }
node "train" "sft" {
  base          = %q
  python        = %q
  data          = node.import.data
  rank          = 8
  learning_rate = 0.001
  max_steps     = 30
  save_steps    = 5
  batch         = 4
  threads       = 1
}
`

// TestTrainNodeResumesFromItsCheckpointAfterKill9 kills lacuna with
// SIGKILL while a train node is past its first checkpoint (the script
// dies with it: its process group is lacuna's child's), and runs again:
// the node resumes from the checkpoint under the store's cache rather
// than from step 0, finishes, and leaves no work directory behind.
func TestTrainNodeResumesFromItsCheckpointAfterKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	py := parametrictest.Python(t)
	base := parametrictest.TinyModel(t, 24, 300)
	dir := t.TempDir()
	var data strings.Builder
	for i := 0; i < 24; i++ {
		fmt.Fprintf(&data, "{\"prompt\": \"What is code %d?\", \"completion\": \"Code %d is lo.Chunk%d.\"}\n", i, i, i%5)
	}
	os.WriteFile(filepath.Join(dir, "data.jsonl"), []byte(data.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "p.hcl"), fmt.Appendf(nil, trainPipeline, base, py), 0o644)
	work := filepath.Join(dir, ".lacuna", "cache", "parametric-work")
	checkpointed := func(string) bool {
		m, _ := filepath.Glob(filepath.Join(work, "*", "checkpoint-*", "trainer_state.json"))
		return len(m) > 0
	}
	if !killMidRun(t, dir, nil, checkpointed, "run", "p.hcl") {
		t.Fatal("lacuna finished before the first checkpoint")
	}
	res := lacuna(t, dir, "run", "p.hcl")
	if res.code != 0 {
		t.Fatalf("resumed run: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	res = lacuna(t, dir, "cat", "p.hcl", "node.train.sft", "--format", "jsonl", "--columns", "steps,resumed_from_step,first_loss,final_loss,kind")
	var row map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(res.stdout)), &row); err != nil {
		t.Fatalf("%v: %s %s", err, res.stdout, res.stderr)
	}
	t.Logf("after the kill: %v", row)
	if from, _ := row["resumed_from_step"].(float64); from < 5 || row["steps"] != 30.0 {
		t.Errorf("resumed from step %v, %v steps: want from a checkpoint (≥ 5) to step 30", row["resumed_from_step"], row["steps"])
	}
	if left, _ := filepath.Glob(filepath.Join(work, "*")); len(left) != 0 {
		t.Errorf("work directories left after success: %v", left)
	}
}

// TestToolSensePipelineTrainsAToolGenArm runs pipelines/toolsense.hcl's
// ToolGen training arm end to end on a slice of the released RRB (its
// first 8 queries, whose candidate pools make the catalog): Stage 1 and
// Stage 2 on a tiny model (the 8 queries are its training split here: a
// test of the wiring, not of generalisation), served by lacuna and
// asked under constrained and free decoding, paired by retrieval_eval.
func TestToolSensePipelineTrainsAToolGenArm(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	py := parametrictest.Python(t)
	src, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "data", "toolsense", "toolsense-realistic-retrieval.jsonl"))
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skipf("the released ToolSense data (../shared/data): %v", err)
	}
	rows := strings.Join(strings.SplitN(string(src), "\n", 9)[:8], "\n") + "\n"
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	os.MkdirAll(data, 0o755)
	os.WriteFile(filepath.Join(data, "toolsense-realistic-retrieval.jsonl"), []byte(rows), 0o644)
	os.WriteFile(filepath.Join(dir, "train.jsonl"), []byte(rows), 0o644)
	hcl, err := os.ReadFile(filepath.Join("..", "..", "pipelines", "toolsense.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "toolsense.hcl"), hcl, 0o644)
	var queries []string
	for _, line := range strings.Split(strings.TrimSpace(rows), "\n") {
		var r struct {
			Query string `json:"query"`
		}
		json.Unmarshal([]byte(line), &r)
		queries = append(queries, r.Query)
	}
	base := parametrictest.TinyModel(t, 24, 300, queries...)
	vars := []string{"--var", "data_dir=" + data, "--var", "toolgen_base=" + base, "--var", "toolgen_train_data=train.jsonl",
		"--var", "toolgen_python=" + py, "--var", "toolgen_steps=8", "--var", "toolgen_threads=1", "--var", "beam=10", "--var", "bootstrap=100"}
	res := lacuna(t, dir, append(append([]string{"run"}, vars...), "toolsense.hcl")...)
	if res.code != 0 {
		t.Fatalf("lacuna run: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	t.Logf("%s", res.stdout)
	res = lacuna(t, dir, append(append([]string{"cat"}, vars...), "toolsense.hcl", `node.retrieval_eval.parametric["trained"]`, "--format", "jsonl")...)
	if res.code != 0 {
		t.Fatalf("lacuna cat: %s", res.stderr)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		if m["queries"] == 8.0 {
			n++
		}
	}
	if n == 0 {
		t.Errorf("retrieval_eval.parametric[\"trained\"] has no row over the 8 queries:\n%s", res.stdout)
	}
}
