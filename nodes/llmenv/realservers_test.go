package llmenv_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/llmenv"
	"github.com/lacuna-dev/lacuna/runners/llm"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

// logRun is the part of nodes.Run that Client and Estimate use: the call
// cache and the log.
type logRun struct {
	nodes.Run
	calls *artifacts.Calls
	log   []string
}

func (r *logRun) Calls() nodes.CallCache { return r.calls }
func (r *logRun) Logf(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf(format, args...))
}
func (r *logRun) Progress(done, total int64)        {}
func (r *logRun) Status(format string, args ...any) {}
func (r *logRun) Report(name string, v any)         {}
func (r *logRun) Note(format string, args ...any)   {}

func newLogRun(t *testing.T) *logRun {
	t.Helper()
	st, err := artifacts.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &logRun{calls: st.Calls()}
}

// TestConcurrencyFollowsTheServersSlots: a server that says how many
// requests it computes at once (llama.cpp's GET /props) gets no more in
// flight, and the node's log says the concurrency was capped; a server
// that says nothing keeps the block's concurrency.
func TestConcurrencyFollowsTheServersSlots(t *testing.T) {
	for _, tc := range []struct {
		name        string
		cfg         llmtest.Config
		concurrency *int
		want, slots int
		noted       bool
	}{
		{"llama.cpp, one slot", llmtest.LlamaCpp(llmtest.Config{Models: []string{"m"}}), nil, 1, 1, true},
		{"llama.cpp --parallel 4, block asks 32", llmtest.LlamaCpp(llmtest.Config{Models: []string{"m"}, Slots: 4}), ptr(32), 4, 4, true},
		{"llama.cpp --parallel 4, block asks 2", llmtest.LlamaCpp(llmtest.Config{Models: []string{"m"}, Slots: 4}), ptr(2), 2, 4, false},
		{"llama-cpp-python says nothing", llmtest.LlamaCppPython(llmtest.Config{Models: []string{"m"}}), nil, llm.DefaultConcurrency, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(tc.cfg)
			defer srv.Close()
			m, _, err := llmenv.Resolve(context.Background(), resolveEnv{}, "model", "model", nodes.Model{ID: "m", Endpoint: ptr(srv.URL()), Concurrency: tc.concurrency})
			if err != nil {
				t.Fatal(err)
			}
			if m.Endpoint.Concurrency != tc.want || m.Endpoint.Slots != tc.slots {
				t.Errorf("concurrency %d, slots %d; want %d, %d", m.Endpoint.Concurrency, m.Endpoint.Slots, tc.want, tc.slots)
			}
			r := newLogRun(t)
			m.Client(r)
			if logged := strings.Contains(strings.Join(r.log, "\n"), "capped to"); logged != tc.noted {
				t.Errorf("log %q: the cap noted %v, want %v", r.log, logged, tc.noted)
			}
		})
	}
	// The cap holds on the wire: eight calls, one at a time.
	// (Another model id: the limiter is shared by the model's identity.)
	srv := llmtest.New(llmtest.LlamaCpp(llmtest.Config{Models: []string{"m-capped"}, Delay: 20 * time.Millisecond}))
	defer srv.Close()
	m, _, err := llmenv.Resolve(context.Background(), resolveEnv{}, "model", "model", nodes.Model{ID: "m-capped", Endpoint: ptr(srv.URL()), Concurrency: ptr(8)})
	if err != nil {
		t.Fatal(err)
	}
	r := newLogRun(t)
	calls := make([]llm.Call, 8)
	for i := range calls {
		calls[i] = llm.Call{Request: llm.Request{API: "chat", Messages: []llm.Message{{Role: "user", Content: fmt.Sprint("q", i)}}}}
	}
	if n := llmenv.DoAll(context.Background(), r, m.Client(r), calls, 8, false, func(int, *llm.Response, error) {}); n != 8 {
		t.Fatalf("%d answered", n)
	}
	if st := srv.Stats(); st.MaxInFlight != 1 || st.Requests != 8 {
		t.Errorf("server stats %+v: want one request at a time", st)
	}
}

// TestABusyServerIsNotUnreachable: a server generating (it answers no GET
// /v1/models meanwhile, as llama.cpp's and llama-cpp-python's do) does not
// fail the plan: the block's served name is taken, the identity is the one
// an idle server gives, and the node's log says the list was not checked.
// A server that is not there is still unreachable.
func TestABusyServerIsNotUnreachable(t *testing.T) {
	srv := llmtest.New(llmtest.LlamaCppPython(llmtest.Config{Models: []string{"m"}, Delay: 2 * time.Second}))
	defer srv.Close()
	block := nodes.Model{ID: "m", Endpoint: ptr(srv.URL()), Timeout: ptr("300ms")}
	other := llmtest.New(llmtest.LlamaCppPython(llmtest.Config{Models: []string{"m"}}))
	defer other.Close()
	idle, idleID, err := llmenv.Resolve(context.Background(), resolveEnv{}, "model", "model", nodes.Model{ID: "m", Endpoint: ptr(other.URL())})
	if err != nil {
		t.Fatal(err)
	}
	go llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: "m"}).Do(context.Background(), llm.Call{Request: llm.Request{API: "completions", Prompt: "long"}})
	for srv.Stats().Requests == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	m, id, err := llmenv.Resolve(context.Background(), resolveEnv{}, "model", "model", block)
	if err != nil {
		t.Fatalf("a busy server: %v", err)
	}
	if m.Identity != idle.Identity || fmt.Sprint(id) != fmt.Sprint(idleID) {
		t.Errorf("identity %q %v, want the idle server's %q %v", m.Identity, id, idle.Identity, idleID)
	}
	if len(m.Notes) != 1 || !strings.Contains(m.Notes[0], "busy generating") {
		t.Errorf("notes %q", m.Notes)
	}
	down := llmtest.New(llmtest.Config{})
	url := down.URL()
	down.Close()
	_, _, err = llmenv.Resolve(context.Background(), resolveEnv{}, "model", "model", nodes.Model{ID: "m", Endpoint: &url, Timeout: ptr("300ms")})
	var ce *nodes.ConfigError
	if !errors.As(err, &ce) || ce.Summary != "Model server unreachable" {
		t.Errorf("a server that is not there: %v", err)
	}
}

// TestStructuredOutputModesResolve: json_object and none are modes a
// block may ask for; anything else is an error naming the attribute.
func TestStructuredOutputModesResolve(t *testing.T) {
	srv := llmtest.New(llmtest.Config{Models: []string{"m"}})
	defer srv.Close()
	for _, mode := range []string{"json_schema", "json_object", "none", "response_format", "structured_outputs"} {
		m, _, err := llmenv.Resolve(context.Background(), resolveEnv{}, "model", "model", nodes.Model{ID: "m", Endpoint: ptr(srv.URL()), StructuredOutput: ptr(mode)})
		if err != nil || m.Endpoint.Structured != mode {
			t.Errorf("%s: %+v, %v", mode, m, err)
		}
	}
	_, _, err := llmenv.Resolve(context.Background(), resolveEnv{}, "model", "model", nodes.Model{ID: "m", Endpoint: ptr(srv.URL()), StructuredOutput: ptr("grammar")})
	var ce *nodes.ConfigError
	if !errors.As(err, &ce) || ce.Attr != "model" || !strings.Contains(ce.Detail, `"grammar"`) {
		t.Errorf("an unknown mode: %v", err)
	}
}

// TestEstimateIsAnEstimate: completion tokens of the calls still to make
// are the mean of the cached answers' when some are cached, else
// perAnswer, else a share of max_tokens, else the default; never
// max_tokens × calls.
func TestEstimateIsAnEstimate(t *testing.T) {
	srv := llmtest.New(llmtest.Config{Models: []string{"m"}, Script: []llmtest.Rule{{Reply: func(q llmtest.Request) string {
		return strings.Repeat("word ", len(q.Text())) // answers of 2 and 4 tokens
	}}}})
	defer srv.Close()
	r := newLogRun(t)
	cl := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: "m"}, llm.WithCache(r.calls, "m@|m"))
	call := func(prompt string, maxTokens int) llm.Call {
		return llm.Call{Request: llm.Request{API: "completions", Prompt: prompt, MaxTokens: maxTokens}}
	}
	fresh := []llm.Call{call("ab", 1000), call("abcd", 1000), call("abcdefgh", 1000)}
	if p := llmenv.Estimate(cl, "m", fresh, 0); p.OutputTokens != 3*400 || p.PromptTokens != (2+4+8)/4 {
		t.Errorf("nothing cached: %+v, want 40%% of max_tokens a call", p)
	}
	if p := llmenv.Estimate(cl, "m", fresh, 60); p.OutputTokens != 3*60 {
		t.Errorf("perAnswer 60: %+v", p)
	}
	if p := llmenv.Estimate(cl, "m", []llm.Call{call("x", 0)}, 0); p.OutputTokens != llmenv.DefaultCompletionEstimate {
		t.Errorf("no max_tokens: %+v", p)
	}
	for _, c := range fresh[:2] {
		if _, err := cl.Do(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	if p := llmenv.Estimate(cl, "m", fresh, 60); p.Cached != 2 || p.OutputTokens != 3 || p.PromptTokens != 8/4 {
		t.Errorf("two cached (2 and 4 tokens): %+v, want the third estimated at their mean, 3", p)
	}
}
