package llm_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lacuna-dev/lacuna/runners/llm"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

// chatBody is a chat answer from model whose message is msg (raw JSON).
func chatBody(model, msg string) []byte {
	return []byte(`{"id":"x","object":"chat.completion","model":"` + model + `","choices":[{"index":0,"message":` + msg +
		`,"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
}

// TestUntrueAnswersFailTheirCallAndAreNeverCached: a server that answers
// for another model, with a null content, with bytes that are not UTF-8
// or with a body that is not the API's answer fails the call (retried
// when another try may mend it), nothing reaches the cache, and once the
// server answers properly the answer is made and cached.
func TestUntrueAnswersFailTheirCallAndAreNeverCached(t *testing.T) {
	cases := []struct {
		name     string
		api      string
		body     []byte
		requests int    // requests one call makes before it fails
		want     string // in the error
	}{
		{"another model", "chat", chatBody("other-model", `{"role":"assistant","content":"hi"}`), 1, `from model "other-model", not "test-model"`},
		{"no model", "chat", chatBody("", `{"role":"assistant","content":"hi"}`), 1, "names no model"},
		{"null content", "chat", chatBody(model, `{"role":"assistant","content":null}`), 3, "null content"},
		{"absent content", "chat", chatBody(model, `{"role":"assistant"}`), 3, "null content"},
		{"tool call", "chat", chatBody(model, `{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}`), 1, "tool call"},
		{"invalid UTF-8", "chat", chatBody(model, "{\"role\":\"assistant\",\"content\":\"caf\xe9\"}"), 3, "not valid UTF-8 (byte"},
		{"lone surrogate", "chat", chatBody(model, `{"role":"assistant","content":"a\udc00b"}`), 3, "lone UTF-16 surrogate"},
		{"content not a string", "chat", chatBody(model, `{"role":"assistant","content":7}`), 3, "malformed answer"},
		{"choices not a list", "chat", []byte(`{"model":"test-model","choices":{"message":{"content":"hi"}}}`), 3, "malformed answer"},
		{"no finish_reason", "chat", []byte(`{"model":"test-model","choices":[{"message":{"role":"assistant","content":"hi"}}]}`), 3, "no finish_reason"},
		{"trailing garbage", "chat", append(chatBody(model, `{"role":"assistant","content":"hi"}`), " {}"...), 3, "malformed answer"},
		{"null text", "completions", []byte(`{"model":"test-model","choices":[{"text":null,"finish_reason":"stop"}]}`), 3, "no text"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var healthy atomic.Bool
			srv := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Answer: "true answer", Raw: func(llmtest.Request) []byte {
				if healthy.Load() {
					return nil
				}
				return tc.body
			}}}})
			defer srv.Close()
			calls, dir := store(t)
			req := chat("q")
			if tc.api == "completions" {
				req = llm.Request{API: "completions", Prompt: "q"}
			}
			call := llm.Call{Request: req}
			c := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model, MaxRetries: 2}, llm.WithCache(calls, "m@|"+model), fast)
			_, err := c.Do(context.Background(), call)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
			if n := srv.Stats().Requests; n != tc.requests {
				t.Errorf("server saw %d requests, want %d", n, tc.requests)
			}
			if c.Cached(call) || callFiles(t, dir) != 0 {
				t.Fatal("an untrue answer was cached")
			}
			healthy.Store(true)
			r, err := c.Do(context.Background(), call)
			if err != nil || r.Cached || r.Text != "true answer" {
				t.Fatalf("healthy server: got %+v, %v; want the answer made", r, err)
			}
			if !c.Cached(call) || callFiles(t, dir) != 1 {
				t.Fatal("the healthy answer was not cached")
			}
			if r, err := c.Do(context.Background(), call); err != nil || !r.Cached || r.Text != "true answer" {
				t.Fatalf("replay: got %+v, %v", r, err)
			}
		})
	}
}

// TestTrueAnswersThatLookOddAreKept: what the checks must not refuse.
func TestTrueAnswersThatLookOddAreKept(t *testing.T) {
	cases := []struct {
		name     string
		reported string // the endpoint's Reported
		body     []byte
		text     string
		check    func(*llm.Response) bool
	}{
		{"reasoning only (max_tokens spent thinking)", "", chatBody(model, `{"role":"assistant","content":null,"reasoning_content":"hmm"}`), "",
			func(r *llm.Response) bool { return r.Reasoning == "hmm" }},
		{"refusal", "", chatBody(model, `{"role":"assistant","content":null,"refusal":"I can't."}`), "",
			func(r *llm.Response) bool { return r.Refusal == "I can't." }},
		{"empty content", "", chatBody(model, `{"role":"assistant","content":""}`), "", nil},
		{"surrogate pair and escaped backslash", "", chatBody(model, `{"role":"assistant","content":"\ud83d\ude00 \\udc00"}`), "😀 \\udc00", nil},
		{"a literal U+FFFD the model wrote", "", chatBody(model, `{"role":"assistant","content":"\ufffd�"}`), "\ufffd\ufffd", nil},
		{"the reported id the block names", "gpt-x-2024-08-06", chatBody("gpt-x-2024-08-06", `{"role":"assistant","content":"hi"}`), "hi",
			func(r *llm.Response) bool { return r.Model == "gpt-x-2024-08-06" }},
		{"any id under *", "*", chatBody("whatever", `{"role":"assistant","content":"hi"}`), "hi", nil},
		{"no id under *", "*", chatBody("", `{"role":"assistant","content":"hi"}`), "hi", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Raw: func(llmtest.Request) []byte { return tc.body }}}})
			defer srv.Close()
			calls, dir := store(t)
			call := llm.Call{Request: chat("q")}
			c := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model, Reported: tc.reported, MaxRetries: 2}, llm.WithCache(calls, "m@|"+model), fast)
			r, err := c.Do(context.Background(), call)
			if err != nil || r.Text != tc.text || tc.check != nil && !tc.check(r) {
				t.Fatalf("got %+v, %v; want text %q", r, err, tc.text)
			}
			if n := srv.Stats().Requests; n != 1 || callFiles(t, dir) != 1 {
				t.Errorf("%d requests, %d cache files; want 1 and 1", n, callFiles(t, dir))
			}
		})
	}
}

// TestAServerThatReportsAnotherIDIsRefusedUnlessTheBlockNamesIt: a server
// that names every answer after itself (Config.AnswerModel) fails every
// call, saying which id to name, and is accepted once the endpoint names
// it. An answer cached from another model (before answers were checked)
// is a miss, made again.
func TestAServerThatReportsAnotherIDIsRefusedUnlessTheBlockNamesIt(t *testing.T) {
	srv := llmtest.New(llmtest.Config{AnswerModel: "model.gguf"})
	defer srv.Close()
	calls, dir := store(t)
	call := llm.Call{Request: chat("q")}
	_, err := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model}, llm.WithCache(calls, "id"), fast).Do(context.Background(), call)
	if err == nil || !strings.Contains(err.Error(), `set reported_name = "model.gguf"`) {
		t.Fatalf("got %v, want the call refused naming the reported id", err)
	}
	if callFiles(t, dir) != 0 {
		t.Fatal("refused answer cached")
	}
	r, err := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model, Reported: "model.gguf"}, llm.WithCache(calls, "id"), fast).Do(context.Background(), call)
	if err != nil || r.Model != "model.gguf" || r.Text != "OK" {
		t.Fatalf("got %+v, %v", r, err)
	}
	// The same cache through a client that expects the served name: the
	// entry names another model, so it is not replayed.
	strict := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model}, llm.WithCache(calls, "id"), fast)
	if strict.Cached(call) {
		t.Error("an answer from another model counts as cached")
	}
}
