package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/runners/parametric"
)

const vllmPipeline = `
model "tiny" {
  id          = "lacuna/tiny-llama"
  concurrency = 2
  temperature = 0
  serve {
    kind               = "vllm"
    weights            = %q
    command            = [%q, "serve"]
    context_size       = 2048
    max_logprobs       = 8
    logprobs_mode      = "processed_logprobs"
    structured_backend = "xgrammar"
    extra              = ["--enforce-eager"]
  }
}
node "import" "mcq" { path = "mcq.jsonl" }
node "probe_eval" "mcq" {
  items = node.import.mcq
  model = model.tiny
  seed  = 1
}
`

// TestVLLMServesAProbePipeline runs a ToolSense MCQ probe (probe_eval:
// each answer constrained to A-D by response_format json_schema) on a
// tiny Llama served by real vLLM, which lacuna starts from the model
// block's serve { kind = "vllm" } with the flags it derives, and stops at
// the end; a second run is answered from the call cache without starting
// vLLM. Opt-in: LACUNA_VLLM names the vllm entry point of a venv
// (runners/serve/testdata/build-vllm-venv.sh); unset, the test skips,
// under CI too.
func TestVLLMServesAProbePipeline(t *testing.T) {
	if testing.Short() {
		t.Skip("runs vLLM")
	}
	vllm := os.Getenv("LACUNA_VLLM")
	if vllm == "" {
		t.Skip("LACUNA_VLLM is not set (the vllm entry point of a venv: bash runners/serve/testdata/build-vllm-venv.sh prints it)")
	}
	const items = 6
	src, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "data", "toolsense", "toolsense-mcq.jsonl"))
	if err != nil {
		t.Skipf("the released ToolSense data (../shared/data): %v", err)
	}
	dir := t.TempDir()
	model := tinyVLLMModel(t, vllm, dir)
	lines := strings.SplitN(string(src), "\n", items+1)[:items]
	if err := os.WriteFile(filepath.Join(dir, "mcq.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p.hcl"), fmt.Appendf(nil, vllmPipeline, model, vllm), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, kv := range []string{"HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1", "VLLM_CPU_KVCACHE_SPACE=1", "VLLM_NO_USAGE_STATS=1", "DO_NOT_TRACK=1"} {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}

	start := time.Now()
	r := lacuna(t, dir, "run", "p.hcl", "--json")
	log, _ := os.ReadFile(filepath.Join(dir, ".lacuna", "servers", "servers.log"))
	if r.code != 0 {
		t.Fatalf("lacuna run: exit %d\n%s\n%s\nservers.log:\n%s", r.code, r.stdout, r.stderr, log)
	}
	t.Logf("first run (vLLM start, %d calls, stop) in %v", items, time.Since(start).Round(time.Second))
	// vLLM logs the arguments it was started with.
	for _, want := range []string{"'max_model_len': 2048", "'max_logprobs': 8", "'logprobs_mode': 'processed_logprobs'", "backend='xgrammar'", "'max_num_seqs': 2", "'served_model_name': ["} {
		if !strings.Contains(string(log), want) {
			t.Errorf("servers.log: vLLM's non-default args lack %s", want)
		}
	}
	if n := strings.Count(string(log), "POST /v1/chat/completions HTTP/1.1\" 200"); n != items {
		t.Errorf("vLLM answered %d chat completions with 200, want %d:\n%s", n, items, log)
	}

	cat := lacuna(t, dir, "cat", "p.hcl", "node.probe_eval.mcq", "--format", "jsonl")
	if cat.code != 0 {
		t.Fatalf("lacuna cat: %s", cat.stderr)
	}
	rows := strings.Split(strings.TrimSpace(cat.stdout), "\n")
	if len(rows) != items {
		t.Fatalf("probe_eval wrote %d rows, want %d:\n%s", len(rows), items, cat.stdout)
	}
	for _, line := range rows {
		var row map[string]any
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatal(err)
		}
		t.Logf("%v: predicted %v (gold %v), parsed_by %v", row["id"], row["predicted"], row["gold"], row["parsed_by"])
		if p, _ := row["predicted"].(string); row["parsed_by"] != "constrained" || !strings.Contains("ABCD", p) || len(p) != 1 {
			t.Errorf("an answer outside A-D under vLLM's structured output: %v", row)
		}
	}

	// The second run asks nothing: vLLM is not started again.
	r = lacuna(t, dir, "run", "p.hcl", "--json")
	if r.code != 0 {
		t.Fatalf("second run: %s%s", r.stdout, r.stderr)
	}
	if s := summary(t, r.stdout); s["cached"] != 2.0 {
		t.Errorf("second run %v: want both nodes cached", s)
	}
	if log2, _ := os.ReadFile(filepath.Join(dir, ".lacuna", "servers", "servers.log")); len(log2) != len(log) {
		t.Errorf("the second run wrote to servers.log (started a server?)")
	}
}

// tinyVLLMModel writes a tiny Llama (lacuna_parametric.tiny, 100 steps on
// 12 synthetic facts) under dir with the interpreter of vLLM's venv, with
// a head size vLLM's CPU attention runs (32: hidden 128, 4 heads; the
// parametric tests' hidden 64 gives 16, which it refuses). It returns the
// model directory.
func tinyVLLMModel(t *testing.T, vllm, dir string) string {
	t.Helper()
	py := filepath.Join(filepath.Dir(vllm), "python")
	root := filepath.Join(dir, "tiny")
	scripts, err := parametric.Materialize(filepath.Join(root, "scripts"))
	if err != nil {
		t.Fatal(err)
	}
	prog := `import json, sys
from lacuna_parametric import tiny
facts = tiny.synthetic_facts(12, seed=1)
boot = tiny.build_tokenizer(tiny.fact_texts(facts) + [f["question"] for f in facts], 1024)
with open(sys.argv[1], "w") as f:
    for x in tiny.fact_texts(facts, boot): f.write(json.dumps({"text": x}) + "\n")
`
	corpus, out := filepath.Join(root, "corpus.jsonl"), filepath.Join(root, "model")
	env := append(os.Environ(), "PYTHONPATH="+scripts, "OMP_NUM_THREADS=1", "HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1")
	for _, args := range [][]string{
		{"-c", prog, corpus},
		{"-m", parametric.Package + ".tiny", "--corpus", corpus, "--out", out, "--steps", "100", "--seed", "1", "--hidden", "128", "--threads", "1"},
	} {
		cmd := exec.Command(py, args...)
		cmd.Env = env
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building the tiny model: %s %v: %v\n%s", py, args[:2], err, b)
		}
	}
	return out
}
