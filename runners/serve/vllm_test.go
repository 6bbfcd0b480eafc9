package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/runners/llm"
	"github.com/lacuna-dev/lacuna/runners/parametric"
	"github.com/lacuna-dev/lacuna/runners/serve"
)

// vllmInstall says how to get the vLLM the opt-in tests run.
const vllmInstall = "bash runners/serve/testdata/build-vllm-venv.sh (prints the path), then LACUNA_VLLM=PATH go test ./runners/serve -run VLLM"

// vllmBinary is $LACUNA_VLLM, the `vllm` entry point of a venv with
// vLLM (runners/serve/testdata/build-vllm-venv.sh builds a CPU one). The
// tests that need it are opt-in: without it they skip, under CI too.
func vllmBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("LACUNA_VLLM")
	if bin == "" {
		t.Skip("LACUNA_VLLM is not set (the vllm entry point of a venv); to run: " + vllmInstall)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("LACUNA_VLLM: %v", err)
	}
	return bin
}

// vllmFact is one synthetic fact the tiny model was taught.
type vllmFact struct {
	Subject, Relation, Object, Prompt, Question string
}

// tinyVLLMModel writes a tiny Llama (lacuna_parametric.tiny) that vLLM's
// CPU attention can run (head size 32: hidden 128, 4 heads; the
// parametric tests' hidden 64 gives 16, which it refuses), pretrained on
// 12 synthetic facts, with the interpreter of vLLM's venv (it has torch,
// transformers and tokenizers). It returns the model directory and the
// facts.
func tinyVLLMModel(t *testing.T, vllm string) (string, []vllmFact) {
	t.Helper()
	py := filepath.Join(filepath.Dir(vllm), "python")
	root := t.TempDir()
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
json.dump(facts, open(sys.argv[2], "w"))
`
	corpus, factsPath, dir := filepath.Join(root, "corpus.jsonl"), filepath.Join(root, "facts.json"), filepath.Join(root, "model")
	env := append(os.Environ(), "PYTHONPATH="+scripts, "OMP_NUM_THREADS=1", "HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1")
	for _, args := range [][]string{
		{"-c", prog, corpus, factsPath},
		{"-m", parametric.Package + ".tiny", "--corpus", corpus, "--out", dir, "--steps", "100", "--seed", "1", "--hidden", "128", "--threads", "1"},
	} {
		cmd := exec.Command(py, args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building the tiny model: %s %v: %v\n%s", py, args[:2], err, out)
		}
	}
	b, err := os.ReadFile(factsPath)
	if err != nil {
		t.Fatal(err)
	}
	var facts []vllmFact
	if err := json.Unmarshal(b, &facts); err != nil {
		t.Fatal(err)
	}
	return dir, facts
}

// vllmEnv is the environment the tests run vLLM in: offline, a small KV
// cache (CPU), no usage reports.
var vllmEnv = []string{"HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1", "VLLM_CPU_KVCACHE_SPACE=1", "VLLM_NO_USAGE_STATS=1", "DO_NOT_TRACK=1"}

// vocab reads the ids of tokens from a tokenizer.json.
func vocab(t *testing.T, dir string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		Model struct {
			Vocab map[string]int `json:"vocab"`
		} `json:"model"`
	}
	if err := json.Unmarshal(b, &tok); err != nil {
		t.Fatal(err)
	}
	return tok.Model.Vocab
}

// TestVLLMServesWhatLacunaDerives starts real vLLM through serve.Start
// with the flags Spec.Args derives from Needs (max logprobs, processed
// log-probabilities, the structured-output backend, the context size,
// the slot count) and checks each through runners/llm's client: the
// served name, chat and completions answers that know the taught facts,
// top log-probabilities, the --max-logprobs cap, json_schema answers
// that hold (response_format and structured_outputs), a choice,
// allowed_token_ids with return_tokens_as_token_ids and log-probabilities
// renormalised over the allowed tokens (processed_logprobs), and
// continue_final_message. Opt-in: LACUNA_VLLM.
func TestVLLMServesWhatLacunaDerives(t *testing.T) {
	bin := vllmBinary(t)
	model, facts := tinyVLLMModel(t, bin)
	const maxLogprobs, contextSize = 8, 256
	spec := serve.Spec{
		Kind:       serve.VLLM,
		Command:    []string{bin, "serve"},
		Env:        vllmEnv,
		Server:     "vllm-cpu 0.32.0",
		Weights:    []serve.Weights{{Path: model, Digest: "sha256:tiny"}},
		ServedName: "tiny",
		Needs: serve.Needs{
			MaxLogprobs:       maxLogprobs,
			LogprobsMode:      "processed_logprobs",
			StructuredBackend: "xgrammar",
			ContextSize:       contextSize,
			ParallelSlots:     2,
		},
		// A tiny model under vLLM's default JSON grammar, which allows
		// whitespace anywhere between tokens, writes newlines until
		// max_tokens; compact JSON only makes it answer.
		Extra: []string{"--enforce-eager", "--structured-outputs-config.disable_any_whitespace", "true"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var log strings.Builder
	begin := time.Now()
	srv, err := serve.Start(ctx, spec, serve.WithLog(&log), serve.WithStartTimeout(10*time.Minute))
	if err != nil {
		t.Fatalf("starting vLLM: %v\n%s", err, log.String())
	}
	defer func() {
		if err := srv.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
		if t.Failed() {
			t.Logf("vLLM's log:\n%s", log.String())
		}
	}()
	t.Logf("vLLM ready in %v (serve.Start: %v)", srv.Startup().Round(time.Second), time.Since(begin).Round(time.Second))

	cl := llm.New(llm.Endpoint{BaseURL: srv.Endpoint(), ServedName: "tiny", Timeout: 5 * time.Minute, MaxRetries: llm.NoRetries})
	ids, err := cl.Models(ctx)
	if err != nil || len(ids) != 1 || ids[0] != "tiny" {
		t.Fatalf("GET /models: %v, %v; want [tiny]", ids, err)
	}
	var listed struct {
		Data []struct {
			MaxModelLen int `json:"max_model_len"`
		} `json:"data"`
	}
	if err := getJSON(srv.Endpoint()+"/models", &listed); err != nil || len(listed.Data) != 1 || listed.Data[0].MaxModelLen != contextSize {
		t.Errorf("GET /models max_model_len: %+v, %v; want %d (--max-model-len)", listed, err, contextSize)
	}

	zero := 0.0
	do := func(name string, rq llm.Request) *llm.Response {
		t.Helper()
		rq.Temperature = &zero
		first := time.Now()
		resp, err := cl.Do(ctx, llm.Call{Request: rq})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Logf("%s (%v): %q finish %s, %d+%d tokens", name, time.Since(first).Round(time.Millisecond), resp.Text, resp.FinishReason, resp.PromptTokens, resp.OutputTokens)
		if resp.Model != "tiny" {
			t.Errorf("%s: answered as %q", name, resp.Model)
		}
		return resp
	}

	// The weights load right: greedy completions of the taught sentences
	// name their objects (chance: 1 in 8).
	known := 0
	for _, f := range facts {
		resp := do("fact "+f.Subject, llm.Request{API: "completions", Prompt: f.Prompt, MaxTokens: 4})
		if strings.HasPrefix(strings.TrimSpace(resp.Text), f.Object) {
			known++
		}
	}
	if known < len(facts)/2 {
		t.Errorf("the served model completes %d of %d taught facts, want at least half", known, len(facts))
	}

	// Chat with top log-probabilities: one entry per output token, each
	// with exactly the asked count of alternatives, the greedy token the
	// best of them.
	resp := do("chat logprobs", llm.Request{API: "chat", Messages: []llm.Message{{Role: "user", Content: facts[0].Question}}, MaxTokens: 12, Logprobs: 5})
	if resp.Text == "" || len(resp.Logprobs) != resp.OutputTokens {
		t.Errorf("chat: %q with %d log-probabilities for %d tokens", resp.Text, len(resp.Logprobs), resp.OutputTokens)
	}
	for i, tok := range resp.Logprobs {
		best := math.Inf(-1)
		for _, lp := range tok.Top {
			best = max(best, lp)
		}
		if len(tok.Top) != 5 || math.Abs(tok.Logprob-best) > 1e-6 {
			t.Errorf("token %d %q (%v): %d alternatives, best %v; want 5, the greedy token's the best", i, tok.Token, tok.Logprob, len(tok.Top), best)
		}
	}

	// --max-logprobs: a request above it is refused (vLLM's default, 20,
	// would take it).
	_, err = cl.Do(ctx, llm.Call{Request: llm.Request{API: "chat", Messages: []llm.Message{{Role: "user", Content: "x"}}, MaxTokens: 1, Logprobs: maxLogprobs + 1, Temperature: &zero}})
	var se *llm.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusBadRequest {
		t.Errorf("logprobs %d above --max-logprobs %d: %v, want a 400", maxLogprobs+1, maxLogprobs, err)
	}

	// A JSON schema holds, sent either way.
	cities := []string{"Paris", "Tokyo", "Lima", "Oslo", "Cairo", "Delhi", "Quito", "Perth"}
	enum, _ := json.Marshal(cities)
	schema := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","enum":` + string(enum) + `}},"required":["city"],"additionalProperties":false}`)
	for _, mode := range []string{llm.ResponseFormat, llm.StructuredOutputs} {
		c := llm.New(llm.Endpoint{BaseURL: srv.Endpoint(), ServedName: "tiny", Structured: mode, MaxRetries: llm.NoRetries})
		rq := llm.Request{API: "chat", Messages: []llm.Message{{Role: "user", Content: facts[0].Question}}, MaxTokens: 24, Schema: schema, Temperature: &zero}
		resp, err := c.Do(ctx, llm.Call{Request: rq})
		if err != nil {
			t.Fatalf("json_schema as %s: %v", mode, err)
		}
		t.Logf("json_schema as %s: %q", mode, resp.Text)
		if resp.SchemaHeld == nil || !*resp.SchemaHeld {
			t.Errorf("json_schema as %s: %q did not hold: %s", mode, resp.Text, resp.SchemaError)
		}
		rq.Schema, rq.Choice = nil, []string{"Oslo", "Lima"}
		resp, err = c.Do(ctx, llm.Call{Request: rq})
		if err != nil {
			t.Fatalf("choice as %s: %v", mode, err)
		}
		if resp.SchemaHeld == nil || !*resp.SchemaHeld {
			t.Errorf("choice as %s: %q did not hold: %s", mode, resp.Text, resp.SchemaError)
		}
	}

	// allowed_token_ids restricts the one answer token to the cities;
	// return_tokens_as_token_ids names the alternatives by id, and under
	// processed_logprobs their log-probabilities are renormalised over the
	// allowed tokens (raw_logprobs would rank the whole vocabulary).
	v := vocab(t, model)
	allowed := map[string]string{}
	var idList []string
	for _, c := range cities {
		if id, ok := v["Ġ"+c]; ok { // one token, after byte-level BPE's space
			allowed["token_id:"+strconv.Itoa(id)] = c
			idList = append(idList, strconv.Itoa(id))
		}
	}
	if len(idList) < 3 {
		t.Fatalf("only %d of the cities are single tokens of the tiny vocabulary (%v)", len(idList), allowed)
	}
	f := facts[0]
	resp = do("allowed_token_ids", llm.Request{API: "completions", Prompt: f.Prompt, MaxTokens: 1, Logprobs: maxLogprobs,
		Params: map[string]string{"allowed_token_ids": "[" + strings.Join(idList, ",") + "]", "return_tokens_as_token_ids": "true"}})
	if !strings.HasPrefix(resp.Text, " ") || allowed[firstToken(resp)] == "" || strings.TrimSpace(resp.Text) != allowed[firstToken(resp)] {
		t.Errorf("allowed_token_ids: answer %q (token %q), want one of the cities, named by id", resp.Text, firstToken(resp))
	}
	if len(resp.Logprobs) != 1 {
		t.Errorf("allowed_token_ids: %d log-probability entries for one token", len(resp.Logprobs))
	} else {
		sum := 0.0
		for tok, lp := range resp.Logprobs[0].Top {
			if allowed[tok] == "" {
				t.Errorf("allowed_token_ids: alternative %q is not an allowed token id", tok)
			}
			sum += math.Exp(lp)
		}
		if len(resp.Logprobs[0].Top) != len(idList) || math.Abs(sum-1) > 1e-3 {
			t.Errorf("processed_logprobs over %d allowed tokens: %d alternatives, probabilities sum to %v; want %d summing to 1", len(idList), len(resp.Logprobs[0].Top), sum, len(idList))
		}
		if resp.Text != " "+f.Object {
			t.Logf("allowed_token_ids: %q answered, the taught object is %q", resp.Text, f.Object)
		}
	}

	// continue_final_message: the answer continues the assistant's last
	// message instead of starting a new turn.
	resp = do("continue_final_message", llm.Request{API: "chat", MaxTokens: 6,
		Messages: []llm.Message{{Role: "user", Content: f.Question}, {Role: "assistant", Content: f.Prompt}},
		Params:   map[string]string{"continue_final_message": "true", "add_generation_prompt": "false"}})
	if strings.HasPrefix(strings.TrimSpace(resp.Text), f.Subject) {
		t.Errorf("continue_final_message: %q starts a new sentence instead of continuing %q", resp.Text, f.Prompt)
	}
}

// firstToken is the answer's first token as the server named it.
func firstToken(r *llm.Response) string {
	if len(r.Logprobs) == 0 {
		return ""
	}
	return r.Logprobs[0].Token
}

func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
