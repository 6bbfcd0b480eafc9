package parametric_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/runners/llm"
	"github.com/lacuna-dev/lacuna/runners/parametric/parametrictest"
)

// serveFixtures is what the server tests ask of the tiny model: one fact
// it knows, the ids (and texts) of the first tokens of the objects of its
// "lives in" relation, a random LoRA adapter and an adapter directory
// carrying a tokenizer with an added token.
type serveFixtures struct {
	Fact struct {
		Prompt   string `json:"prompt"`
		Object   string `json:"object"`
		Question string `json:"question"`
	} `json:"fact"`
	Allowed []int    `json:"allowed"`
	Texts   []string `json:"texts"`
	LoRA    string   `json:"-"`
	Bad     string   `json:"-"`
}

var (
	fixturesMu sync.Mutex
	fixtures   = map[string]*serveFixtures{}
)

// makeServeFixtures builds the fixtures for the tiny model in dir, once
// per test binary.
func makeServeFixtures(t *testing.T, py, scripts, dir string) *serveFixtures {
	t.Helper()
	fixturesMu.Lock()
	defer fixturesMu.Unlock()
	if f, ok := fixtures[dir]; ok {
		return f
	}
	prog := `import json, sys, torch
from transformers import AutoTokenizer, AutoModelForCausalLM
from peft import LoraConfig, get_peft_model
from lacuna_parametric import tiny
torch.set_num_threads(1)
model_dir, lora_dir, bad_dir = sys.argv[1:4]
torch.manual_seed(0)
tok = AutoTokenizer.from_pretrained(model_dir)
fact = tiny.synthetic_facts(24, seed=1)[0]
ids = list(dict.fromkeys(tok(" " + o, add_special_tokens=False).input_ids[0] for o in tiny.OBJECTS[fact["relation"]]))
texts = [tok.decode([i]) for i in ids]
model = AutoModelForCausalLM.from_pretrained(model_dir)
# init_lora_weights=False draws B at random too: the adapter changes the logits.
lora = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
lora.save_pretrained(lora_dir)
lora.save_pretrained(bad_dir)
tok.add_tokens(["<<tool&&api>>"])
tok.save_pretrained(bad_dir)
print(json.dumps({"fact": fact, "allowed": ids, "texts": texts}))
`
	root, err := os.MkdirTemp("", "lacuna-serve-") // shared by the tests, like TinyModel's
	if err != nil {
		t.Fatal(err)
	}
	f := &serveFixtures{LoRA: filepath.Join(root, "lora"), Bad: filepath.Join(root, "bad")}
	cmd := parametrictest.Cmd(context.Background(), t, py, scripts, "serve")
	cmd.Args = []string{py, "-c", prog, dir, f.LoRA, f.Bad}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("building the server fixtures: %v\n%s", err, stderr.Bytes())
	}
	if err := json.Unmarshal(out, f); err != nil {
		t.Fatalf("fixtures: %v\n%s", err, out)
	}
	if i := slices.Index(f.Texts, " "+f.Fact.Object); i < 0 {
		t.Fatalf("the object %q is not one token of the tiny model (first tokens: %q)", f.Fact.Object, f.Texts)
	}
	fixtures[dir] = f
	return f
}

// lockedBuffer is the server's log, written by exec's copying goroutine
// and read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// servedModel is a running python -m lacuna_parametric.serve.
type servedModel struct {
	base string // http://127.0.0.1:PORT
	log  *lockedBuffer
	cmd  *exec.Cmd
	done chan struct{}
	err  error // cmd.Wait's, once done is closed
}

// startServe runs the server on a free loopback port, as runners/serve
// would, and returns once GET /health answers 200 (or fails the test
// when it exits first). The test's cleanup kills it if still running.
func startServe(t *testing.T, py, scripts string, args ...string) *servedModel {
	t.Helper()
	s := launchServe(t, py, scripts, args...)
	deadline := time.Now().Add(5 * time.Minute) // a loaded CI machine imports torch slowly
	for {
		resp, err := http.Get(s.base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		select {
		case <-s.done:
			t.Fatalf("the server exited before it was ready: %v\n%s", s.err, s.log)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server was not healthy within 5 minutes\n%s", s.log)
		}
	}
}

// launchServe starts the server and returns at once.
func launchServe(t *testing.T, py, scripts string, args ...string) *servedModel {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	args = append([]string{"--host", "127.0.0.1", "--port", strconv.Itoa(port), "--threads", "1"}, args...)
	s := &servedModel{base: "http://127.0.0.1:" + strconv.Itoa(port), log: &lockedBuffer{}, done: make(chan struct{})}
	s.cmd = parametrictest.Cmd(context.Background(), t, py, scripts, "serve", args...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			s.cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

// stop sends SIGTERM and waits for the exit (at most a minute).
func (s *servedModel) stop() error {
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-s.done:
		return s.err
	case <-time.After(time.Minute):
		return errors.New("still running a minute after SIGTERM")
	}
}

func (s *servedModel) client(name string) *llm.Client {
	return llm.New(llm.Endpoint{BaseURL: s.base + "/v1", ServedName: name, MaxRetries: llm.NoRetries, Timeout: 2 * time.Minute})
}

// post sends body to path and returns the status and the decoded answer.
func (s *servedModel) post(t *testing.T, path string, body any) (int, map[string]any) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(s.base+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("POST %s: HTTP %d, not JSON: %v", path, resp.StatusCode, err)
	}
	return resp.StatusCode, out
}

func ptr[T any](v T) *T { return &v }

func TestServeAnswersLikeVLLM(t *testing.T) {
	py := parametrictest.Python(t)
	dir := parametrictest.TinyModel(t, 24, 300)
	scripts := parametrictest.Scripts(t)
	fx := makeServeFixtures(t, py, scripts, dir)
	s := startServe(t, py, scripts, "--model", dir, "--served-name", "tiny", "--adapter", "lora="+fx.LoRA, "--max-logprobs", "50", "--seed", "0")
	ctx := context.Background()
	base := s.client("tiny")
	fact := fx.Fact
	greedy := ptr(0.0)

	t.Run("lists the base and the adapter and says it has one slot", func(t *testing.T) {
		if !strings.Contains(s.log.String(), "listening on "+s.base+"\n") {
			t.Errorf("no readiness line %q in the log:\n%s", "listening on "+s.base, s.log)
		}
		ids, err := base.Models(ctx)
		if err != nil || !slices.Equal(ids, []string{"tiny", "lora"}) {
			t.Fatalf("Models() = %q, %v; want [tiny lora]", ids, err)
		}
		if n, err := base.Slots(ctx); err != nil || n != 1 {
			t.Fatalf("Slots() = %d, %v; want 1", n, err)
		}
	})

	t.Run("greedy answers", func(t *testing.T) {
		for _, tc := range []struct {
			name       string
			req        llm.Request
			want       string
			prefixOnly bool
			finish     string
		}{
			{"chat answers a fact", llm.Request{API: "chat", Messages: []llm.Message{{Role: "user", Content: fact.Question}}, MaxTokens: 24},
				fact.Prompt + " " + fact.Object + ".", false, "stop"},
			{"completions continue the prompt", llm.Request{API: "completions", Prompt: fact.Prompt, MaxTokens: 1},
				" " + fact.Object, false, "length"},
			{"continue_final_message continues the assistant's turn", llm.Request{API: "chat", MaxTokens: 24,
				Messages: []llm.Message{{Role: "user", Content: fact.Question}, {Role: "assistant", Content: fact.Prompt}},
				Params:   map[string]string{"continue_final_message": "true", "add_generation_prompt": "false"}},
				" " + fact.Object + ".", false, "stop"},
			{"a stop string ends the answer before it", llm.Request{API: "chat", Messages: []llm.Message{{Role: "user", Content: fact.Question}},
				MaxTokens: 24, Stop: []string{" " + fact.Object}}, fact.Prompt, false, "stop"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tc.req.Temperature = greedy
				r, err := base.Do(ctx, llm.Call{Request: tc.req})
				if err != nil {
					t.Fatal(err)
				}
				if r.Text != tc.want || r.FinishReason != tc.finish {
					t.Fatalf("answer %q (finish %s), want %q (finish %s)", r.Text, r.FinishReason, tc.want, tc.finish)
				}
				if r.PromptTokens == 0 || r.OutputTokens == 0 || r.Model != "tiny" {
					t.Fatalf("usage %d+%d, model %q", r.PromptTokens, r.OutputTokens, r.Model)
				}
			})
		}
	})

	t.Run("allowed_token_ids: top log-probabilities only of allowed tokens, renormalised over them", func(t *testing.T) {
		ids, _ := json.Marshal(fx.Allowed)
		objectID := fx.Allowed[slices.Index(fx.Texts, " "+fact.Object)]
		for _, api := range []string{"chat", "completions"} {
			for _, asIDs := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/token_ids=%v", api, asIDs), func(t *testing.T) {
					req := llm.Request{API: api, Temperature: greedy, MaxTokens: 1, Logprobs: len(fx.Allowed) + 3,
						Params: map[string]string{"allowed_token_ids": string(ids)}}
					if asIDs {
						req.Params["return_tokens_as_token_ids"] = "true"
					}
					if api == "chat" {
						req.Messages = []llm.Message{{Role: "user", Content: fact.Question}, {Role: "assistant", Content: fact.Prompt}}
						req.Params["continue_final_message"], req.Params["add_generation_prompt"] = "true", "false"
					} else {
						req.Prompt = fact.Prompt
					}
					r, err := base.Do(ctx, llm.Call{Request: req})
					if err != nil {
						t.Fatal(err)
					}
					if len(r.Logprobs) != 1 {
						t.Fatalf("%d tokens of log-probabilities, want 1", len(r.Logprobs))
					}
					name := func(i int) string {
						if asIDs {
							return "token_id:" + strconv.Itoa(fx.Allowed[i])
						}
						return fx.Texts[i]
					}
					allowed := map[string]bool{}
					for i := range fx.Allowed {
						allowed[name(i)] = true
					}
					tok := r.Logprobs[0]
					wantTok := name(slices.Index(fx.Allowed, objectID))
					if tok.Token != wantTok {
						t.Errorf("chose %q, want %q (the fact's object)", tok.Token, wantTok)
					}
					sum := 0.0
					for k, lp := range tok.Top {
						if !allowed[k] {
							t.Errorf("top_logprobs lists %q, which allowed_token_ids does not allow", k)
						}
						sum += math.Exp(lp)
					}
					if len(tok.Top) != len(fx.Allowed) || math.Abs(sum-1) > 1e-4 {
						t.Fatalf("top_logprobs lists %d tokens of total probability %.6f, want all %d allowed ones summing to 1: %v", len(tok.Top), sum, len(fx.Allowed), tok.Top)
					}
				})
			}
		}
	})

	t.Run("n=2 sampling gives two different, reproducible choices", func(t *testing.T) {
		req := map[string]any{"model": "tiny", "messages": []map[string]string{{"role": "user", "content": fact.Question}},
			"n": 2, "temperature": 5.0, "seed": 7, "max_tokens": 8}
		var texts [2][]string
		for try := range texts {
			code, out := s.post(t, "/v1/chat/completions", req)
			if code != http.StatusOK {
				t.Fatalf("HTTP %d: %v", code, out)
			}
			choices, _ := out["choices"].([]any)
			if len(choices) != 2 {
				t.Fatalf("%d choices, want 2: %v", len(choices), out)
			}
			for i, c := range choices {
				c := c.(map[string]any)
				msg, _ := c["message"].(map[string]any)
				text, ok := msg["content"].(string)
				if !ok || c["index"] != float64(i) || (c["finish_reason"] != "stop" && c["finish_reason"] != "length") {
					t.Fatalf("choice %d malformed: %v", i, c)
				}
				texts[try] = append(texts[try], text)
			}
		}
		if texts[0][0] == texts[0][1] {
			t.Errorf("two samples at temperature 5 are both %q", texts[0][0])
		}
		if !slices.Equal(texts[0], texts[1]) {
			t.Errorf("the same seed sampled %q, then %q", texts[0], texts[1])
		}
	})

	t.Run("refusals", func(t *testing.T) {
		_, err := s.client("nope").Do(ctx, llm.Call{Request: llm.Request{API: "chat", Messages: []llm.Message{{Role: "user", Content: "hi"}}}})
		var se *llm.StatusError
		if !errors.As(err, &se) || se.Status != http.StatusNotFound || !se.Refused {
			t.Errorf("an unknown model: %v, want a refused HTTP 404", err)
		}
		msgs := []map[string]string{{"role": "user", "content": fact.Question}}
		for _, tc := range []struct {
			name   string
			body   map[string]any
			status int
			says   string
		}{
			{"unknown model", map[string]any{"model": "nope", "messages": msgs}, http.StatusNotFound, "does not exist"},
			{"streaming", map[string]any{"model": "tiny", "messages": msgs, "stream": true}, http.StatusBadRequest, "stream"},
			{"more top_logprobs than --max-logprobs", map[string]any{"model": "tiny", "messages": msgs, "logprobs": true, "top_logprobs": 51}, http.StatusBadRequest, "--max-logprobs"},
			{"an unknown field", map[string]any{"model": "tiny", "messages": msgs, "logit_bias": map[string]int{"5": 1}}, http.StatusBadRequest, "logit_bias"},
			{"response_format json_schema", map[string]any{"model": "tiny", "messages": msgs, "response_format": map[string]any{"type": "json_schema"}}, http.StatusBadRequest, "response_format"},
			{"continue_final_message with a generation prompt", map[string]any{"model": "tiny", "messages": msgs, "continue_final_message": true}, http.StatusBadRequest, "add_generation_prompt"},
			{"an allowed id outside the vocabulary", map[string]any{"model": "tiny", "messages": msgs, "allowed_token_ids": []int{1 << 20}}, http.StatusBadRequest, "vocabulary"},
			{"beyond the context", map[string]any{"model": "tiny", "messages": msgs, "max_tokens": 100000}, http.StatusBadRequest, "context length"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, out := s.post(t, "/v1/chat/completions", tc.body)
				e, _ := out["error"].(map[string]any)
				msg, _ := e["message"].(string)
				if code != tc.status || !strings.Contains(msg, tc.says) {
					t.Fatalf("HTTP %d %v, want %d with an error message saying %q", code, out, tc.status, tc.says)
				}
			})
		}
	})

	t.Run("the adapter's id changes the logits", func(t *testing.T) {
		req := llm.Request{API: "completions", Prompt: fact.Prompt, Temperature: greedy, MaxTokens: 1, Logprobs: 5}
		b, err := base.Do(ctx, llm.Call{Request: req})
		if err != nil {
			t.Fatal(err)
		}
		a, err := s.client("lora").Do(ctx, llm.Call{Request: req})
		if err != nil {
			t.Fatal(err)
		}
		if a.Model != "lora" {
			t.Fatalf("the adapter's answer names model %q", a.Model)
		}
		diff := 0.0
		for k, lp := range b.Logprobs[0].Top {
			if alp, ok := a.Logprobs[0].Top[k]; ok {
				diff = max(diff, math.Abs(alp-lp))
			} else {
				diff = math.Inf(1)
			}
		}
		if diff < 1e-3 {
			t.Fatalf("the adapter's top log-probabilities %v are the base's %v", a.Logprobs[0].Top, b.Logprobs[0].Top)
		}
		// The base is served unchanged after the adapter's request.
		again, err := base.Do(ctx, llm.Call{Request: req})
		if err != nil || fmt.Sprint(again.Logprobs) != fmt.Sprint(b.Logprobs) {
			t.Fatalf("the base after the adapter: %v %v, want %v", again.Logprobs, err, b.Logprobs)
		}
	})

	t.Run("probes answer while it generates", func(t *testing.T) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.post(t, "/v1/completions", map[string]any{"model": "tiny", "prompt": fact.Prompt, "n": 16, "max_tokens": 240, "ignore_eos": true})
		}()
		time.Sleep(200 * time.Millisecond)
		ids, err := base.Models(ctx)
		select {
		case <-done:
			t.Skip("the generation ended before the probe did: nothing overlapped")
		default:
		}
		if err != nil || len(ids) != 2 {
			t.Fatalf("Models() while generating = %q, %v", ids, err)
		}
		<-done
	})

	t.Run("SIGTERM stops it cleanly", func(t *testing.T) {
		if err := s.stop(); err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, s.log)
		}
	})
}

func TestServeRefusesAnAdapterWithAddedTokens(t *testing.T) {
	py := parametrictest.Python(t)
	dir := parametrictest.TinyModel(t, 24, 300)
	scripts := parametrictest.Scripts(t)
	fx := makeServeFixtures(t, py, scripts, dir)
	s := launchServe(t, py, scripts, "--model", dir, "--adapter", "bad="+fx.Bad)
	select {
	case <-s.done:
	case <-time.After(5 * time.Minute):
		t.Fatalf("still running after 5 minutes\n%s", s.log)
	}
	var ee *exec.ExitError
	if !errors.As(s.err, &ee) || ee.ExitCode() != 1 || !strings.Contains(s.log.String(), "Merge it into the base") {
		t.Fatalf("exit %v, want status 1 with a message saying to merge the adapter; log:\n%s", s.err, s.log)
	}
}
