package llm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

// TestARefusalOfJSONSchemaOutlivesTheProcess: the server's refusal of
// response_format json_schema is kept in the call cache, so that a resumed
// run (another process: the memo of this one forgotten) goes straight to
// the fallback and its plan counts the fallback's answers as cached.
func TestARefusalOfJSONSchemaOutlivesTheProcess(t *testing.T) {
	srv := llmtest.New(llmtest.LlamaCppPython(llmtest.Config{Script: []llmtest.Rule{{Answer: `{"a": 1}`}}}))
	defer srv.Close()
	st, err := artifacts.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ep := Endpoint{BaseURL: srv.URL(), ServedName: "test-model"}
	ask := func(p string) Call {
		return Call{Request: Request{API: "chat", Messages: []Message{{Role: "user", Content: p}}, Schema: json.RawMessage(`{"type": "object"}`)}}
	}
	c := New(ep, WithCache(st.Calls(), "id"))
	if r, err := c.Do(context.Background(), ask("one")); err != nil || r.Warning == "" {
		t.Fatalf("%+v, %v", r, err)
	}
	refusals.Delete(c.refusalKey()) // another process
	again := New(ep, WithCache(st.Calls(), "id"))
	if !again.Cached(ask("one")) {
		t.Error("the plan of a resumed run does not find the fallback's answer")
	}
	before := srv.Stats().Requests
	r, err := again.Do(context.Background(), ask("two"))
	if err != nil || !strings.Contains(r.Warning, "HTTP 500") {
		t.Fatalf("%+v, %v", r, err)
	}
	if n := srv.Stats().Requests - before; n != 1 {
		t.Errorf("%d requests, want the fallback's alone", n)
	}
	// Another server at another address has not refused anything.
	other := New(Endpoint{BaseURL: "http://127.0.0.1:1/v1", ServedName: "test-model"}, WithCache(st.Calls(), "id"))
	if _, ok := other.refusedBefore(); ok {
		t.Error("the refusal was taken for another server's")
	}
}
