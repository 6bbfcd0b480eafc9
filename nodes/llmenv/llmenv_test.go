package llmenv_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/llmenv"
	"github.com/lacuna-dev/lacuna/runners/llm"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

// resolveEnv is the part of nodes.Resolve that llmenv reads: the
// environment the run was started with.
type resolveEnv struct {
	nodes.Resolve
	env map[string]string
}

func (r resolveEnv) Getenv(k string) string { return r.env[k] }

func ptr[T any](v T) *T { return &v }

func TestResolveErrorsSayWhatIsWrong(t *testing.T) {
	srv := llmtest.New(llmtest.Config{Models: []string{"org/served"}, APIKey: "sekrit"})
	defer srv.Close()
	down := llmtest.New(llmtest.Config{})
	downURL := down.URL()
	down.Close()
	env := map[string]string{"GOOD_KEY": "sekrit", "BAD_KEY": "nope"}
	cases := []struct {
		name    string
		m       nodes.Model
		summary string
		detail  []string // substrings of the detail
	}{
		{"no endpoint", nodes.Model{ID: "org/m"}, "Model has no endpoint", []string{"org/m", "endpoint ="}},
		{"server down", nodes.Model{ID: "org/m", Endpoint: &downURL, APIKeyEnv: ptr("GOOD_KEY")}, "Model server unreachable", []string{downURL}},
		{"key unset", nodes.Model{ID: "org/m", Endpoint: ptr(srv.URL()), APIKeyEnv: ptr("NO_SUCH_VAR")}, "API key not set", []string{"$NO_SUCH_VAR"}},
		{"no key sent", nodes.Model{ID: "org/served", Endpoint: ptr(srv.URL())}, "API key rejected", []string{"401", "api_key_env"}},
		{"wrong key", nodes.Model{ID: "org/served", Endpoint: ptr(srv.URL()), APIKeyEnv: ptr("BAD_KEY")}, "API key rejected", []string{"401", "$BAD_KEY"}},
		{"id mismatch", nodes.Model{ID: "org/other", Endpoint: ptr(srv.URL()), APIKeyEnv: ptr("GOOD_KEY")}, "Model id mismatch", []string{`"org/other"`, `"org/served"`, "served_name"}},
		{"bad timeout", nodes.Model{ID: "org/served", Endpoint: ptr(srv.URL()), Timeout: ptr("soon")}, "Invalid timeout", []string{"soon"}},
		{"server down, credentials in the URL", nodes.Model{ID: "org/m", Endpoint: ptr(strings.Replace(downURL, "http://", "http://user:sekrit@", 1))}, "Model server unreachable", []string{"user:xxxxx@127.0.0.1"}},
		{"id mismatch, token in the URL", nodes.Model{ID: "org/other", Endpoint: ptr(strings.Replace(srv.URL(), "http://", "http://sekrit@", 1)), APIKeyEnv: ptr("GOOD_KEY")}, "Model id mismatch", []string{"xxxxx@127.0.0.1"}},
		{"negative max_retries", nodes.Model{ID: "org/served", Endpoint: ptr(srv.URL()), MaxRetries: ptr(-1)}, "Invalid max_retries", []string{"max_retries"}},
		{"param names a client field", nodes.Model{ID: "org/served", Endpoint: ptr(srv.URL()), Params: map[string]string{"temperature": "0", "top_k": "2"}}, "Invalid params", []string{"temperature"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := llmenv.Resolve(context.Background(), resolveEnv{env: env}, "model", "model", c.m)
			var ce *nodes.ConfigError
			if !errors.As(err, &ce) || ce.Attr != "model" || ce.Summary != c.summary {
				t.Fatalf("got %v, want a ConfigError on model: %s", err, c.summary)
			}
			for _, d := range c.detail {
				if !strings.Contains(ce.Detail, d) {
					t.Errorf("detail %q lacks %q", ce.Detail, d)
				}
			}
			if strings.Contains(ce.Error(), "sekrit") || strings.Contains(ce.Error(), "nope") {
				t.Errorf("the error shows the key: %s", ce.Error())
			}
		})
	}
}

// The identity is id, revision and what the server reports: never the
// endpoint, so two servers of one model share keys and the call cache.
func TestIdentityIsNotTheEndpoint(t *testing.T) {
	a := llmtest.New(llmtest.Config{Models: []string{"org/m"}})
	defer a.Close()
	b := llmtest.New(llmtest.Config{Models: []string{"other", "org/m"}})
	defer b.Close()
	var ids []map[string]string
	var idents []string
	for _, url := range []string{a.URL(), b.URL()} {
		m, id, err := llmenv.Resolve(context.Background(), resolveEnv{}, "model", "judge", nodes.Model{ID: "org/m", Revision: ptr("r1"), Endpoint: ptr(url)})
		if err != nil {
			t.Fatal(err)
		}
		ids, idents = append(ids, id), append(idents, m.Identity)
	}
	if ids[0]["judge"] != "org/m@r1" || ids[0]["judge.served"] != "org/m" || ids[1]["judge"] != ids[0]["judge"] || idents[0] != idents[1] {
		t.Errorf("identities %v %v (%q, %q)", ids[0], ids[1], idents[0], idents[1])
	}
}

// structured_output picks the one field a constraint is sent in; the
// default is response_format, which an OpenAI-like server accepts.
func TestStructuredOutputPicksTheWireField(t *testing.T) {
	for _, tc := range []struct {
		attr   *string
		fields []string
		sent   string
	}{
		{nil, llmtest.OpenAIFields, "response_format"},
		{ptr("response_format"), llmtest.OpenAIFields, "response_format"},
		{ptr("structured_outputs"), nil, "structured_outputs"},
	} {
		srv := llmtest.New(llmtest.Config{Fields: tc.fields, Default: `{"ok": true}`})
		m, _, err := llmenv.Resolve(context.Background(), resolveEnv{}, "model", "model", nodes.Model{ID: "test-model", Endpoint: ptr(srv.URL()), StructuredOutput: tc.attr})
		if err != nil {
			t.Fatal(err)
		}
		req := llm.Request{API: "chat", Messages: []llm.Message{{Role: "user", Content: "x"}}, Schema: json.RawMessage(`{"type": "object"}`)}
		r, err := llm.New(m.Endpoint).Do(context.Background(), llm.Call{Request: req})
		if err != nil || !*r.SchemaHeld {
			t.Fatalf("%s: %+v, %v", tc.sent, r, err)
		}
		body := srv.Calls()[0].Request.Body
		_, rf := body["response_format"]
		_, so := body["structured_outputs"]
		if rf != (tc.sent == "response_format") || so != (tc.sent == "structured_outputs") {
			t.Errorf("structured_output %v: sent %v, want %s alone", tc.attr, body, tc.sent)
		}
		srv.Close()
	}
}

// The model block's params reach the wire through Request, beside its
// sampling defaults.
func TestModelRequestCarriesTheBlocksDefaultsAndParams(t *testing.T) {
	srv := llmtest.New(llmtest.Config{})
	defer srv.Close()
	cfg := nodes.Model{ID: "test-model", Endpoint: ptr(srv.URL()), Temperature: ptr(0.6), MaxTokens: ptr(99), Seed: ptr[int64](5),
		Params: map[string]string{"top_k": "20", "chat_template_kwargs": `{"enable_thinking":false}`}}
	m, _, err := llmenv.Resolve(context.Background(), resolveEnv{}, "model", "model", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p := m.Params(); len(p) != 2 || p["top_k"] != "20" {
		t.Errorf("Params() = %v", p)
	}
	m.Params()["top_k"] = "1" // a copy: the model keeps its own
	req := m.Request()
	req.Messages = []llm.Message{{Role: "user", Content: "x"}}
	if _, err := llm.New(m.Endpoint).Do(context.Background(), llm.Call{Request: req}); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(srv.Calls()[0].Request.Body)
	for _, want := range []string{`"top_k":20`, `"chat_template_kwargs":{"enable_thinking":false}`, `"temperature":0.6`, `"max_tokens":99`, `"seed":5`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("request %s lacks %s", b, want)
		}
	}
}

// max_retries = 0 means one try; unset means the client's default.
func TestMaxRetriesZeroMeansOneTry(t *testing.T) {
	for _, tc := range []struct {
		attr     *int
		requests int
	}{
		{nil, 2},
		{ptr(0), 1},
		{ptr(3), 2},
	} {
		srv := llmtest.New(llmtest.Config{RetryAfter: "-", Plan: func(_ string, attempt int) llmtest.Fault {
			if attempt == 0 {
				return llmtest.ServerError
			}
			return ""
		}})
		m, _, err := llmenv.Resolve(context.Background(), resolveEnv{}, "model", "model", nodes.Model{ID: "test-model", Endpoint: ptr(srv.URL()), MaxRetries: tc.attr})
		if err != nil {
			t.Fatal(err)
		}
		c := llm.New(m.Endpoint, llm.WithBackoff(llm.Backoff{Base: time.Millisecond, Max: time.Millisecond}))
		_, err = c.Do(context.Background(), llm.Call{Request: llm.Request{API: "chat", Messages: []llm.Message{{Role: "user", Content: "x"}}}})
		if got := srv.Stats().Requests; got != tc.requests || (err == nil) != (tc.requests == 2) {
			t.Errorf("max_retries %v: %d requests (%v), want %d", tc.attr, got, err, tc.requests)
		}
		srv.Close()
	}
}

// reported_name is the id answers may name besides served_name: unset,
// answers from a server that names another id fail their call; set, they
// are answers.
func TestReportedNameAcceptsTheIDAnswersName(t *testing.T) {
	srv := llmtest.New(llmtest.Config{AnswerModel: "test-model-2024-08-06"})
	defer srv.Close()
	call := llm.Call{Request: llm.Request{API: "chat", Messages: []llm.Message{{Role: "user", Content: "x"}}}}
	for _, tc := range []struct {
		attr *string
		ok   bool
	}{
		{nil, false},
		{ptr("test-model-2024-08-06"), true},
		{ptr("*"), true},
		{ptr("test-model-2025-01-01"), false},
	} {
		m, _, err := llmenv.Resolve(context.Background(), resolveEnv{}, "model", "model", nodes.Model{ID: "test-model", Endpoint: ptr(srv.URL()), ReportedName: tc.attr})
		if err != nil {
			t.Fatal(err)
		}
		r, err := llm.New(m.Endpoint).Do(context.Background(), call)
		if (err == nil) != tc.ok || tc.ok && r.Model != "test-model-2024-08-06" {
			t.Errorf("reported_name %v: got %+v, %v; want ok %v", tc.attr, r, err, tc.ok)
		}
	}
}
