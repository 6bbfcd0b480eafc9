package llm_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lacuna-dev/lacuna/runners/llm"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

// TestWithStartStartsTheServerForTheFirstCallNotAnsweredFromTheCache: a
// server started on demand is started once, by the first call the cache
// does not answer; a cached call starts nothing; a failed start fails the
// calls after it with its error, without starting again.
func TestWithStartStartsTheServerForTheFirstCallNotAnsweredFromTheCache(t *testing.T) {
	srv := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Reply: echo}}})
	defer srv.Close()
	cache := &memCache{m: map[string][]byte{}}
	var starts atomic.Int64
	start := func(context.Context) (string, error) { starts.Add(1); return srv.URL(), nil }
	ep := llm.Endpoint{ServedName: model}
	c := llm.New(ep, llm.WithCache(cache, "m@r|"+model), llm.WithStart(start))
	if _, err := c.Do(context.Background(), llm.Call{Request: chat("one")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(context.Background(), llm.Call{Request: chat("two")}); err != nil {
		t.Fatal(err)
	}
	if n := starts.Load(); n != 1 {
		t.Errorf("started %d times, want once", n)
	}
	// A new client (a later run) whose calls are all cached starts nothing.
	c2 := llm.New(ep, llm.WithCache(cache, "m@r|"+model), llm.WithStart(start))
	if r, err := c2.Do(context.Background(), llm.Call{Request: chat("one")}); err != nil || !r.Cached {
		t.Fatalf("cached call: %+v %v", r, err)
	}
	if n := starts.Load(); n != 1 {
		t.Errorf("a cached call started the server (%d starts)", n)
	}
	// A start that fails fails the call, and the next, once.
	var failed atomic.Int64
	bad := llm.New(ep, llm.WithStart(func(context.Context) (string, error) {
		failed.Add(1)
		return "", errors.New("no such file: model.gguf")
	}))
	for range 2 {
		_, err := bad.Do(context.Background(), llm.Call{Request: chat("x")})
		if err == nil || !strings.Contains(err.Error(), "starting the model's server: no such file: model.gguf") {
			t.Errorf("call after a failed start: %v", err)
		}
	}
	if failed.Load() != 1 {
		t.Errorf("a failed start was tried %d times", failed.Load())
	}
}
