package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/runners/llm"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

const model = "test-model"

// fast is a retry schedule that keeps tests quick.
var fast = llm.WithBackoff(llm.Backoff{Base: time.Millisecond, Max: 5 * time.Millisecond})

func ptr[T any](v T) *T { return &v }

func chat(prompt string) llm.Request {
	return llm.Request{API: "chat", Messages: []llm.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: prompt}}}
}

// echo answers "answer to PROMPT seed SEED".
func echo(q llmtest.Request) string {
	seed := "none"
	if q.Seed != nil {
		seed = fmt.Sprint(*q.Seed)
	}
	return "answer to " + q.Text() + " seed " + seed
}

func store(t *testing.T) (*artifacts.Calls, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := artifacts.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s.Calls(), dir
}

// callFiles counts the call cache's entries on disk.
func callFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(filepath.Join(dir, "calls"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// doAll makes every call with up to par in flight and returns the answers
// in order; any error fails the test.
func doAll(t *testing.T, c *llm.Client, calls []llm.Call, par int) []*llm.Response {
	t.Helper()
	out := make([]*llm.Response, len(calls))
	errs := make([]error, len(calls))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, call := range calls {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i], errs[i] = c.Do(context.Background(), call)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEveryCallCompletesExactlyOnceWhenAThirdOfRequestsFail(t *testing.T) {
	const n = 200
	// 30% of requests fail; few of them by timing out, which is slow.
	rates := llmtest.Spread(0.28, llmtest.TooMany, llmtest.ServerError, llmtest.Unavailable, llmtest.Drop, llmtest.Malformed, llmtest.Empty)
	rates[llmtest.Slow] = 0.02
	srv := llmtest.New(llmtest.Config{
		Script:     []llmtest.Rule{{Reply: echo}},
		Faults:     rates,
		Seed:       7,
		RetryAfter: "-",
	})
	defer srv.Close()
	calls, dir := store(t)
	ep := llm.Endpoint{BaseURL: srv.URL(), ServedName: model, Timeout: time.Second, Concurrency: 16, MaxRetries: 20}
	c := llm.New(ep, llm.WithCache(calls, "m@r|"+model), fast)
	var cs []llm.Call
	for i := range n {
		cs = append(cs, llm.Call{Request: chat(fmt.Sprintf("task %d", i)), Sample: 0})
	}
	got := doAll(t, c, cs, 32)
	for i, r := range got {
		if want := fmt.Sprintf("answer to task %d seed none", i); r.Text != want || r.Cached {
			t.Errorf("call %d: got %q (cached %v), want %q made", i, r.Text, r.Cached, want)
		}
	}

	st := srv.Stats()
	faults := 0
	for _, k := range llmtest.AllFaults {
		if st.Faults[k] == 0 {
			t.Errorf("no %s fault was injected: the test does not exercise it", k)
		}
		faults += st.Faults[k]
	}
	if frac := float64(faults) / float64(st.Requests); frac < 0.15 {
		t.Errorf("%d of %d requests faulted; want about 30%%", faults, st.Requests)
	}
	sc := srv.Calls()
	if len(sc) != n {
		t.Fatalf("server saw %d calls, want %d", len(sc), n)
	}
	for _, call := range sc {
		if call.Answers != 1 {
			t.Errorf("%s was answered %d times, want once", call.Request.Text(), call.Answers)
		}
	}
	cst := c.Stats()
	if cst.Calls != n || cst.Failed != 0 || cst.Retries != int64(faults) || cst.Cached != 0 {
		t.Errorf("client stats %+v: want %d calls, 0 failed, %d retries", cst, n, faults)
	}
	if files := callFiles(t, dir); files != n {
		t.Errorf("cache holds %d entries, want %d", files, n)
	}

	// A second pass replays every call and asks the server nothing.
	before := srv.Stats().Requests
	again := llm.New(ep, llm.WithCache(calls, "m@r|"+model))
	for i, r := range doAll(t, again, cs, 8) {
		if !r.Cached || r.Text != got[i].Text {
			t.Errorf("replay of call %d: got %q cached %v", i, r.Text, r.Cached)
		}
	}
	if after := srv.Stats().Requests; after != before {
		t.Errorf("replay made %d requests", after-before)
	}
}

func TestClientErrorsAreNotRetried(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    llmtest.Config
		served string
		status int
	}{
		{"400 bad request", llmtest.Config{Script: []llmtest.Rule{{Contains: "task", Status: 400}}}, model, 400},
		{"401 wrong key", llmtest.Config{APIKey: "right"}, model, 401},
		{"404 unknown model", llmtest.Config{}, "other-model", 404},
		{"422 unprocessable", llmtest.Config{Script: []llmtest.Rule{{Status: 422}}}, model, 422},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(tc.cfg)
			defer srv.Close()
			calls, _ := store(t)
			c := llm.New(llm.Endpoint{BaseURL: srv.URL(), APIKey: "wrong", ServedName: tc.served}, llm.WithCache(calls, "id"), fast)
			call := llm.Call{Request: chat("task 1")}
			_, err := c.Do(context.Background(), call)
			var se *llm.StatusError
			if !errors.As(err, &se) || se.Status != tc.status {
				t.Fatalf("got %v, want HTTP %d", err, tc.status)
			}
			if !strings.Contains(err.Error(), fmt.Sprint(tc.status)) || se.Body == "" {
				t.Errorf("error %q does not name the status and the server's message", err)
			}
			if got := srv.Stats().Requests; got != 1 {
				t.Errorf("server saw %d requests, want 1", got)
			}
			if c.Cached(call) {
				t.Error("a failed call was cached")
			}
			if st := c.Stats(); st.Failed != 1 || st.Retries != 0 {
				t.Errorf("stats %+v: want 1 failed, 0 retries", st)
			}
		})
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after func() string
		wait  time.Duration
	}{
		{"seconds", func() string { return "1" }, time.Second},
		// An HTTP date 3 s ahead, cut to the second: more than 2 s away
		// when made, so surely 1 s away when the 429 is sent.
		{"HTTP date", func() string { return time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat) }, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(llmtest.Config{
				RetryAfter: tc.after(),
				Plan: func(_ string, attempt int) llmtest.Fault {
					if attempt == 0 {
						return llmtest.TooMany
					}
					return ""
				},
			})
			defer srv.Close()
			c := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model}, fast)
			r, err := c.Do(context.Background(), llm.Call{Request: chat("x")})
			if err != nil {
				t.Fatal(err)
			}
			log := srv.Log()
			if len(log) != 2 || log[0].Status != 429 || log[1].Status != 200 || r.Retries != 1 {
				t.Fatalf("log %+v, retries %d: want a 429 then an answer", log, r.Retries)
			}
			// The server sent the 429 before the client read it, so the
			// gap is a lower bound of the client's wait.
			if gap := log[1].Received.Sub(log[0].Received); gap < tc.wait {
				t.Errorf("retried %v after the 429; Retry-After asked for %v", gap, tc.wait)
			}
		})
	}
}

func TestTooManyRequestsLowerTheSharedLimitAndSuccessesRaiseIt(t *testing.T) {
	overloaded := llmtest.New(llmtest.Config{RetryAfter: "-", Plan: func(string, int) llmtest.Fault { return llmtest.TooMany }})
	defer overloaded.Close()
	healthy := llmtest.New(llmtest.Config{})
	defer healthy.Close()
	lim := llm.NewLimiter(8)
	a := llm.New(llm.Endpoint{BaseURL: overloaded.URL(), ServedName: model, MaxRetries: 3}, llm.WithLimiter(lim), fast)
	b := llm.New(llm.Endpoint{BaseURL: healthy.URL(), ServedName: model}, llm.WithLimiter(lim), fast)
	if _, err := a.Do(context.Background(), llm.Call{Request: chat("x")}); err == nil {
		t.Fatal("a call answered only by 429s succeeded")
	}
	if got := lim.Limit(); got != 1 {
		t.Fatalf("after four 429s the limit is %d, want 8→4→2→1→1", got)
	}
	// Additive increase: one more slot per `limit` successes.
	for i, want := range []int{2, 2, 3, 3, 3, 4} {
		if _, err := b.Do(context.Background(), llm.Call{Request: chat(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
		if got := lim.Limit(); got != want {
			t.Fatalf("after %d successes the limit is %d, want %d", i+1, got, want)
		}
	}
}

func TestConcurrencyIsBounded(t *testing.T) {
	srv := llmtest.New(llmtest.Config{Delay: 20 * time.Millisecond})
	defer srv.Close()
	c := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model, Concurrency: 3})
	var cs []llm.Call
	for i := range 24 {
		cs = append(cs, llm.Call{Request: chat(fmt.Sprint(i))})
	}
	doAll(t, c, cs, 24)
	if got := srv.Stats().MaxInFlight; got > 3 {
		t.Errorf("server saw %d requests at once, want at most 3", got)
	}
}

func TestSamplesOfOneRequestAreDistinctCalls(t *testing.T) {
	for _, seed := range []*int64{ptr[int64](100), nil} {
		t.Run(fmt.Sprint("seed ", seed != nil), func(t *testing.T) {
			srv := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Reply: echo}}})
			defer srv.Close()
			calls, dir := store(t)
			c := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model}, llm.WithCache(calls, "id"))
			req := chat("same")
			req.Seed, req.Temperature = seed, ptr(0.8)
			var cs []llm.Call
			keys := map[string]bool{}
			for i := range 10 {
				cs = append(cs, llm.Call{Request: req, Sample: i})
				keys[llm.Key("id", cs[i])] = true
			}
			got := doAll(t, c, cs, 10)
			if len(keys) != 10 || callFiles(t, dir) != 10 {
				t.Errorf("%d keys, %d cache entries; want 10 each", len(keys), callFiles(t, dir))
			}
			if n := srv.Stats().Requests; n != 10 {
				t.Errorf("server saw %d requests, want 10", n)
			}
			if seed != nil {
				for i, r := range got {
					if want := fmt.Sprintf("answer to same seed %d", 100+i); r.Text != want {
						t.Errorf("sample %d: %q, want %q (seed + sample index)", i, r.Text, want)
					}
				}
			}
		})
	}
}

func TestCacheHitMakesNoRequest(t *testing.T) {
	srv := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Reply: echo}}})
	defer srv.Close()
	calls, _ := store(t)
	ep := llm.Endpoint{BaseURL: srv.URL(), ServedName: model}
	call := llm.Call{Request: chat("q"), Sample: 3}
	first, err := llm.New(ep, llm.WithCache(calls, "id")).Do(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	// Another client, another endpoint URL and timeout: the same call.
	ep.Timeout, ep.MaxRetries, ep.Concurrency = time.Minute, 2, 1
	c := llm.New(ep, llm.WithCache(calls, "id"))
	if !c.Cached(call) {
		t.Fatal("Cached: false after the call completed")
	}
	second, err := c.Do(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	if !second.Cached || second.Text != first.Text || second.PromptTokens != first.PromptTokens || second.FinishReason != "stop" {
		t.Errorf("replay %+v, want %+v cached", second, first)
	}
	if n := srv.Stats().Requests; n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
	if st := c.Stats(); st.Cached != 1 || st.Calls != 0 {
		t.Errorf("stats %+v: want 1 replay, no call made", st)
	}
	if c.Cached(llm.Call{Request: chat("q"), Sample: 4}) || llm.New(ep, llm.WithCache(calls, "other id")).Cached(call) {
		t.Error("another sample or another model identity hit the cache")
	}
}

func TestFailedCallsAreNotCached(t *testing.T) {
	srv := llmtest.New(llmtest.Config{RetryAfter: "-", Plan: func(string, int) llmtest.Fault { return llmtest.ServerError }})
	calls, dir := store(t)
	call := llm.Call{Request: chat("q")}
	c := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model, MaxRetries: 2}, llm.WithCache(calls, "id"), fast)
	_, err := c.Do(context.Background(), call)
	if err == nil || !strings.Contains(err.Error(), "after 3 tries") {
		t.Fatalf("got %v, want a failure after 3 tries", err)
	}
	if n := srv.Stats().Requests; n != 3 {
		t.Errorf("server saw %d requests, want 3", n)
	}
	srv.Close()
	if c.Cached(call) || callFiles(t, dir) != 0 {
		t.Fatal("a failed call was cached")
	}
	healthy := llmtest.New(llmtest.Config{})
	defer healthy.Close()
	r, err := llm.New(llm.Endpoint{BaseURL: healthy.URL(), ServedName: model}, llm.WithCache(calls, "id")).Do(context.Background(), call)
	if err != nil || r.Cached || r.Text != "OK" {
		t.Fatalf("got %+v, %v; want the call made", r, err)
	}
}

// memCache is a Cache in memory whose entries a test can spoil.
type memCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (c *memCache) Get(k string) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok, nil
}

func (c *memCache) Put(k string, v []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[k] = v
	return nil
}

type brokenCache struct{}

func (*brokenCache) Get(string) ([]byte, bool, error) { return nil, false, errors.New("disk on fire") }
func (*brokenCache) Put(string, []byte) error         { return errors.New("disk on fire") }

func TestUnreadableCacheEntryIsAMiss(t *testing.T) {
	srv := llmtest.New(llmtest.Config{})
	defer srv.Close()
	call := llm.Call{Request: chat("q")}
	mc := &memCache{m: map[string][]byte{llm.Key("id", call): []byte("{not json")}}
	r, err := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model}, llm.WithCache(mc, "id")).Do(context.Background(), call)
	if err != nil || r.Cached {
		t.Fatalf("got %+v, %v; want the call made", r, err)
	}
	var back llm.Response
	if err := json.Unmarshal(mc.m[llm.Key("id", call)], &back); err != nil || back.Text != "OK" {
		t.Errorf("entry not rewritten: %q", mc.m[llm.Key("id", call)])
	}

	// A cache that cannot store fails the call: a completed call must be
	// on disk before Do returns.
	_, err = llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model}, llm.WithCache(&brokenCache{}, "id")).Do(context.Background(), call)
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("got %v, want the cache's error", err)
	}
}

func TestSchemaHeld(t *testing.T) {
	classes := []string{"OK", "API_misuse", "hallucination"}
	schema := json.RawMessage(`{
		"type": "object",
		"properties": {"class": {"type": "string", "enum": ["OK", "API_misuse", "hallucination"]}, "why": {"type": "string"}},
		"required": ["class", "why"],
		"additionalProperties": false
	}`)
	// The scripted model answers JSON or a class when the server passes it
	// a constraint (a JSON string for a string-enum schema, bare for
	// vLLM's choice), and prose when it does not.
	reply := func(q llmtest.Request) string {
		var enum struct {
			Enum []string `json:"enum"`
		}
		switch {
		case q.Choice != nil:
			return q.Choice[1]
		case json.Unmarshal(q.Schema, &enum) == nil && enum.Enum != nil:
			return strconv.Quote(enum.Enum[1])
		case q.Schema != nil:
			return `{"class": "API_misuse", "why": "calls lo.Map with a wrong signature"}`
		}
		return "The class is API_misuse, because the call is wrong."
	}
	for _, tc := range []struct {
		name   string
		api    string
		schema json.RawMessage
		choice []string
		ignore bool
		reply  func(llmtest.Request) string
		held   bool
	}{
		{"chat schema on a current server", "chat", schema, nil, false, reply, true},
		{"completions schema on a current server", "completions", schema, nil, false, reply, true},
		{"chat schema on an old server", "chat", schema, nil, true, reply, false},
		{"choice on a current server", "chat", nil, classes, false, reply, true},
		{"choice answered as a JSON string", "completions", nil, classes, false, func(llmtest.Request) string { return `"hallucination"` }, true},
		{"choice answered bare", "completions", nil, classes, false, func(llmtest.Request) string { return "hallucination" }, true},
		{"choice on an old server", "chat", nil, classes, true, reply, false},
		{"JSON missing a required field", "chat", schema, nil, false, func(llmtest.Request) string { return `{"class": "OK"}` }, false},
		{"JSON with a value off the enum", "chat", schema, nil, false, func(llmtest.Request) string { return `{"class": "fine", "why": ""}` }, false},
		{"JSON after a think block", "chat", schema, nil, false, func(llmtest.Request) string {
			return "<think>The spy shows no call.</think>\n" + `{"class": "OK", "why": "passes"}`
		}, true},
		{"fenced JSON after a think block", "chat", schema, nil, false, func(llmtest.Request) string {
			return "<think>The spy shows no call.</think>\n```json\n" + `{"class": "OK", "why": "passes"}` + "\n```"
		}, true},
	} {
		for _, structured := range []string{"", llm.ResponseFormat, llm.StructuredOutputs} {
			t.Run(tc.name+" via "+structured, func(t *testing.T) {
				cfg := llmtest.Config{IgnoreSchema: tc.ignore, Script: []llmtest.Rule{{Reply: tc.reply}}}
				if structured != llm.StructuredOutputs {
					// An OpenAI-like server refuses any field it does not
					// know: a second mechanism would fail the call.
					cfg.Fields = llmtest.OpenAIFields
				}
				srv := llmtest.New(cfg)
				defer srv.Close()
				req := llm.Request{API: tc.api, Schema: tc.schema, SchemaName: "judge", Choice: tc.choice}
				if tc.api == "chat" {
					req.Messages = []llm.Message{{Role: "user", Content: "classify"}}
				} else {
					req.Prompt = "classify"
				}
				r, err := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model, Structured: structured}).Do(context.Background(), llm.Call{Request: req})
				if err != nil {
					t.Fatal(err)
				}
				if r.SchemaHeld == nil || *r.SchemaHeld != tc.held || (r.SchemaError == "") == !tc.held {
					t.Errorf("answer %q: SchemaHeld %v (%q), want %v", r.Text, r.SchemaHeld, r.SchemaError, tc.held)
				}
				body := srv.Calls()[0].Request.Body
				rf, _ := body["response_format"].(map[string]any)
				so, _ := body["structured_outputs"].(map[string]any)
				if structured == llm.StructuredOutputs {
					if rf != nil || so == nil || (so["choice"] != nil) != (tc.choice != nil) || (so["json"] != nil) != (tc.schema != nil) {
						t.Errorf("request %v: want structured_outputs alone", body)
					}
				} else {
					js, _ := rf["json_schema"].(map[string]any)
					if so != nil || rf["type"] != "json_schema" || js["name"] != "judge" || js["strict"] != true {
						t.Errorf("request %v: want response_format json_schema alone, named judge, strict", body)
					}
				}
				for k := range body {
					if strings.HasPrefix(k, "guided_") {
						t.Errorf("request sends the removed field %s", k)
					}
				}
			})
		}
	}
	_, err := llm.New(llm.Endpoint{BaseURL: "http://127.0.0.1:1/v1", Structured: "guided_json"}).Do(context.Background(), llm.Call{Request: chat("x")})
	if err == nil || !strings.Contains(err.Error(), "guided_json") {
		t.Errorf("an unknown structured output: got %v, want an error before any request", err)
	}
	r, err := llm.New(llm.Endpoint{BaseURL: "http://127.0.0.1:1/v1"}).Do(context.Background(), llm.Call{Request: llm.Request{API: "chat", Messages: []llm.Message{{Content: "x"}}, Schema: json.RawMessage(`{"type": "tuple"}`)}})
	if err == nil || !strings.Contains(err.Error(), "tuple") {
		t.Errorf("a bad schema: got %+v, %v; want an error before any request", r, err)
	}
}

func TestParamsAreSentAsExtraFields(t *testing.T) {
	srv := llmtest.New(llmtest.Config{})
	defer srv.Close()
	c := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model})
	req := chat("x")
	req.Temperature = ptr(0.5)
	req.Params = map[string]string{
		"top_k":                "20",
		"min_p":                "0.05",
		"skip_special_tokens":  "false",
		"chat_template_kwargs": `{"enable_thinking": false}`,
		"stop_token_ids":       "[1, 2]",
		"user":                 "lacuna run 7",
		"suffix":               `"quoted"`,
	}
	if _, err := c.Do(context.Background(), llm.Call{Request: req}); err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(srv.Calls()[0].Request.Body)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	json.Unmarshal(body, &got)
	want := map[string]any{
		"top_k": 20.0, "min_p": 0.05, "skip_special_tokens": false,
		"chat_template_kwargs": map[string]any{"enable_thinking": false}, "stop_token_ids": []any{1.0, 2.0},
		"user": "lacuna run 7", "suffix": "quoted", "temperature": 0.5, "model": model,
	}
	for k, v := range want {
		if fmt.Sprint(got[k]) != fmt.Sprint(v) || fmt.Sprintf("%T", got[k]) != fmt.Sprintf("%T", v) {
			t.Errorf("request %s = %#v, want %#v", k, got[k], v)
		}
	}

	// A param may not stand in for a field the client sets: the request
	// fails before it is sent.
	for _, name := range []string{"temperature", "model", "max_tokens", "stream", "n", "response_format", "structured_outputs"} {
		bad := chat("x")
		bad.Params = map[string]string{name: "1", "top_k": "5"}
		if _, err := c.Do(context.Background(), llm.Call{Request: bad}); err == nil || !strings.Contains(err.Error(), "params "+name) {
			t.Errorf("param %s: got %v, want an error naming it", name, err)
		}
	}
	if n := srv.Stats().Requests; n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

func TestChatAndCompletionsRequestsAndAnswers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		req   llm.Request
		rule  llmtest.Rule
		check func(t *testing.T, r *llm.Response, body map[string]any)
	}{
		{
			name: "chat sampling fields and seed",
			req:  llm.Request{API: "chat", Messages: []llm.Message{{Role: "user", Content: "write code"}}, Temperature: ptr(0.0), TopP: ptr(0.95), MaxTokens: 64, Stop: []string{"</s>"}, Seed: ptr[int64](41)},
			rule: llmtest.Rule{Answer: "package main\n\nfunc main() {}"},
			check: func(t *testing.T, r *llm.Response, b map[string]any) {
				if r.Text != "package main\n\nfunc main() {}" || r.FinishReason != "stop" || r.PromptTokens != 2 || r.OutputTokens != 5 || r.Model != model {
					t.Errorf("answer %+v", r)
				}
				want := map[string]any{"model": model, "temperature": 0.0, "top_p": 0.95, "max_tokens": 64.0, "seed": 43.0, "stop": []any{"</s>"}}
				for k, v := range want {
					if fmt.Sprint(b[k]) != fmt.Sprint(v) {
						t.Errorf("request %s = %v, want %v", k, b[k], v)
					}
				}
			},
		},
		{
			name: "chat reasoning and length",
			req:  llm.Request{API: "chat", Messages: []llm.Message{{Role: "user", Content: "think"}}, MaxTokens: 3},
			rule: llmtest.Rule{Answer: "one two three four five", Reasoning: "hmm"},
			check: func(t *testing.T, r *llm.Response, b map[string]any) {
				if r.Text != "one two three" || r.FinishReason != "length" || r.Reasoning != "hmm" || r.OutputTokens != 3 {
					t.Errorf("answer %+v", r)
				}
			},
		},
		{
			name: "chat logprobs",
			req:  llm.Request{API: "chat", Messages: []llm.Message{{Role: "user", Content: "x"}}, Logprobs: 3},
			rule: llmtest.Rule{Answer: "a b"},
			check: func(t *testing.T, r *llm.Response, b map[string]any) {
				if b["logprobs"] != true || b["top_logprobs"] != 3.0 {
					t.Errorf("request logprobs %v top_logprobs %v", b["logprobs"], b["top_logprobs"])
				}
				if len(r.Logprobs) != 2 || r.Logprobs[1].Token != "b" || r.Logprobs[1].Logprob != -0.1 || len(r.Logprobs[1].Top) != 3 || r.Logprobs[1].Top["alt2"] != -2.1 {
					t.Errorf("logprobs %+v", r.Logprobs)
				}
			},
		},
		{
			name: "completions prompt, stop and logprobs",
			req:  llm.Request{API: "completions", Prompt: "func Sum(xs []int) int {", Stop: []string{"\n}"}, Logprobs: 2, Seed: ptr[int64](0)},
			rule: llmtest.Rule{Answer: "\n\treturn lo.Sum(xs)\n}\n\nfunc other() {}"},
			check: func(t *testing.T, r *llm.Response, b map[string]any) {
				if _, chat := b["messages"]; chat || b["prompt"] != "func Sum(xs []int) int {" || b["logprobs"] != 2.0 || b["seed"] != 5.0 {
					t.Errorf("request %v", b)
				}
				if r.Text != "\n\treturn lo.Sum(xs)" || r.FinishReason != "stop" || r.PromptTokens != 5 || len(r.Logprobs) != 2 || r.Logprobs[0].Top["alt1"] != -1 {
					t.Errorf("answer %+v", r)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(llmtest.Config{Script: []llmtest.Rule{tc.rule}})
			defer srv.Close()
			sample := 0
			if tc.req.API == "completions" {
				sample = 5
			} else if tc.req.Seed != nil {
				sample = 2
			}
			r, err := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model}).Do(context.Background(), llm.Call{Request: tc.req, Sample: sample})
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, r, srv.Calls()[0].Request.Body)
		})
	}
}

func TestCancellationStopsACallPromptly(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault llmtest.Fault
		// started reports that the client is where the test cancels it.
		started func(*llmtest.Server, *llm.Client) bool
		reason  string
	}{
		{"during a slow answer", llmtest.Slow,
			func(s *llmtest.Server, _ *llm.Client) bool { return s.Stats().Requests > 0 }, "after 1 tries"},
		{"while waiting out a long Retry-After", llmtest.TooMany,
			func(_ *llmtest.Server, c *llm.Client) bool { return c.Stats().Retries > 0 }, "waiting to retry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(llmtest.Config{RetryAfter: "3600", SlowFor: time.Hour, Plan: func(string, int) llmtest.Fault { return tc.fault }})
			defer srv.Close()
			c := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model})
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				for !tc.started(srv, c) {
					time.Sleep(time.Millisecond)
				}
				cancel()
			}()
			_, err := c.Do(ctx, llm.Call{Request: chat("x")})
			if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("got %v, want context.Canceled %s", err, tc.reason)
			}
			if n := srv.Stats().Requests; n != 1 {
				t.Errorf("server saw %d requests, want 1", n)
			}
		})
	}
}

func TestMaxRetriesZeroIsTheDefaultAndNoRetriesIsNone(t *testing.T) {
	for _, tc := range []struct {
		max      int
		requests int
		ok       bool
	}{
		{0, 2, true},              // the default: the 503 is retried
		{llm.NoRetries, 1, false}, // a single try
		{1, 2, true},
	} {
		srv := llmtest.New(llmtest.Config{RetryAfter: "-", Plan: func(_ string, attempt int) llmtest.Fault {
			if attempt == 0 {
				return llmtest.Unavailable
			}
			return ""
		}})
		_, err := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model, MaxRetries: tc.max}, fast).Do(context.Background(), llm.Call{Request: chat("x")})
		if (err == nil) != tc.ok || srv.Stats().Requests != tc.requests {
			t.Errorf("MaxRetries %d: %d requests, error %v; want %d requests, success %v", tc.max, srv.Stats().Requests, err, tc.requests, tc.ok)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "after 1 tries")) {
			t.Errorf("MaxRetries %d: error %v does not say it gave up after one try", tc.max, err)
		}
		srv.Close()
	}
}

func TestRetryAfterPastTheDeadlineFailsAtOnceSayingSo(t *testing.T) {
	srv := llmtest.New(llmtest.Config{RetryAfter: "3600", Plan: func(string, int) llmtest.Fault { return llmtest.TooMany }})
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model}).Do(ctx, llm.Call{Request: chat("x")})
	if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "asks to wait 1h0m0s") || !strings.Contains(err.Error(), "429") {
		t.Errorf("got %v; want an error saying the server's wait outlasts the deadline", err)
	}
	if n := srv.Stats().Requests; n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

func TestErrorsNeverShowTheURLsCredentials(t *testing.T) {
	const secret = "s3cr3t-tok"
	down := llmtest.New(llmtest.Config{})
	down.Close()
	live := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Contains: "refuse", Status: 400}}})
	defer live.Close()
	slow := llmtest.New(llmtest.Config{SlowFor: time.Hour, Plan: func(string, int) llmtest.Fault { return llmtest.Slow }})
	defer slow.Close()
	keyed := llmtest.New(llmtest.Config{APIKey: "other"})
	defer keyed.Close()
	with := func(base, userinfo string) string { return strings.Replace(base, "http://", "http://"+userinfo+"@", 1) }
	do := func(base, prompt string) error {
		_, err := llm.New(llm.Endpoint{BaseURL: base, ServedName: model, MaxRetries: llm.NoRetries, Timeout: 50 * time.Millisecond}).Do(context.Background(), llm.Call{Request: chat(prompt)})
		return err
	}
	models := func(base string) error {
		_, err := llm.New(llm.Endpoint{BaseURL: base}).Models(context.Background())
		return err
	}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"HTTP 400", do(with(live.URL(), "user:"+secret), "refuse")},
		{"server down", do(with(down.URL(), "user:"+secret), "x")},
		{"server down, token as the user", do(with(down.URL(), secret), "x")},
		{"timeout", do(with(slow.URL(), "user:"+secret), "x")},
		{"a URL that does not parse", do("http://user:"+secret+"@127.0.0.1:port/v1", "x")},
		{"models: HTTP 401", models(with(keyed.URL(), "user:"+secret))},
		{"models: server down", models(with(down.URL(), secret))},
	} {
		if tc.err == nil || strings.Contains(tc.err.Error(), secret) || !strings.Contains(tc.err.Error(), "127.0.0.1") {
			t.Errorf("%s: error %v; want one naming the host and not the credentials", tc.name, tc.err)
		}
	}
	for raw, want := range map[string]string{
		"http://user:" + secret + "@127.0.0.1:8000/v1": "http://user:xxxxx@127.0.0.1:8000/v1",
		"http://" + secret + "@127.0.0.1:8000/v1":      "http://xxxxx@127.0.0.1:8000/v1",
		"http://u:" + secret + "@127.0.0.1:x/v1":       "http://xxxxx@127.0.0.1:x/v1",
		"http://127.0.0.1:8000/v1":                     "http://127.0.0.1:8000/v1",
	} {
		if got := llm.RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestAnswersPast8MiBFailWithoutRetry(t *testing.T) {
	short := strings.Repeat("word ", 7<<20/5)
	srv := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Contains: "long", Answer: strings.Repeat("word ", 9<<20/5)}}, Default: short})
	defer srv.Close()
	c := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model}, fast)
	if r, err := c.Do(context.Background(), llm.Call{Request: chat("short")}); err != nil || r.Text != short {
		t.Fatalf("a 7 MiB answer: %v", err)
	}
	_, err := c.Do(context.Background(), llm.Call{Request: chat("long")})
	if err == nil || !strings.Contains(err.Error(), "longer than 8 MiB") {
		t.Errorf("a 9 MiB answer: got %v, want an error naming the bound", err)
	}
	if n := srv.Stats().Requests; n != 2 {
		t.Errorf("server saw %d requests, want 2 (no retry)", n)
	}
}

func TestTimeoutsAreRetried(t *testing.T) {
	srv := llmtest.New(llmtest.Config{SlowFor: time.Hour, Plan: func(_ string, attempt int) llmtest.Fault {
		if attempt < 2 {
			return llmtest.Slow
		}
		return ""
	}})
	defer srv.Close()
	r, err := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model, Timeout: 50 * time.Millisecond}, fast).Do(context.Background(), llm.Call{Request: chat("x")})
	if err != nil || r.Retries != 2 || r.Text != "OK" {
		t.Fatalf("got %+v, %v; want an answer after 2 timeouts", r, err)
	}
}

func TestModelsListsServedIDs(t *testing.T) {
	srv := llmtest.New(llmtest.Config{Models: []string{"Qwen/Qwen2.5-Coder-7B-Instruct", "judge"}, APIKey: "k"})
	defer srv.Close()
	ids, err := llm.New(llm.Endpoint{BaseURL: srv.URL() + "/", APIKey: "k"}).Models(context.Background())
	if err != nil || strings.Join(ids, ",") != "Qwen/Qwen2.5-Coder-7B-Instruct,judge" {
		t.Errorf("got %v, %v", ids, err)
	}
	_, err = llm.New(llm.Endpoint{BaseURL: srv.URL(), APIKey: "wrong"}).Models(context.Background())
	var se *llm.StatusError
	if !errors.As(err, &se) || se.Status != 401 {
		t.Errorf("wrong key: got %v, want HTTP 401", err)
	}
}

func TestStatsCountTokensAndLatency(t *testing.T) {
	srv := llmtest.New(llmtest.Config{Default: "three token answer", Plan: func(_ string, attempt int) llmtest.Fault {
		if attempt == 0 {
			return llmtest.Empty
		}
		return ""
	}})
	defer srv.Close()
	calls, _ := store(t)
	c := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model}, llm.WithCache(calls, "id"), fast)
	var cs []llm.Call
	for i := range 5 {
		cs = append(cs, llm.Call{Request: llm.Request{API: "completions", Prompt: "p q", Seed: ptr[int64](1)}, Sample: i})
	}
	doAll(t, c, cs, 5)
	doAll(t, c, cs[:2], 2)
	st := c.Stats()
	if st.Calls != 5 || st.Cached != 2 || st.Retries != 5 || st.PromptTokens != 10 || st.OutputTokens != 15 {
		t.Errorf("stats %+v", st)
	}
	if !(st.LatencyP50 > 0 && st.LatencyP50 <= st.LatencyP90 && st.LatencyP90 <= st.LatencyP99 && st.Seconds > 0) {
		t.Errorf("latencies %+v", st)
	}
}

func TestKeyIsTheDocumentedDigest(t *testing.T) {
	call := llm.Call{Request: llm.Request{API: "chat", Messages: []llm.Message{{Role: "user", Content: "hi <b>"}}, Temperature: ptr(0.8), Schema: json.RawMessage("{ \"type\" :\n \"string\" }")}, Sample: 2}
	// The golden value (computed outside Go from the documented
	// material) pins the canonical encoding: changing it
	// invalidates every store's call cache.
	const golden = "57caf4a88cc07f4e88d6f3618b0593e28a80da59eba5299857348bbc77e6703d"
	if got := llm.Key("m@r|served", call); got != golden {
		t.Errorf("Key = %s, want %s", got, golden)
	}
	compact := call
	compact.Request.Schema = json.RawMessage(`{"type":"string"}`)
	if llm.Key("m@r|served", compact) != llm.Key("m@r|served", call) {
		t.Error("the schema's whitespace changes the key")
	}
	for name, other := range map[string]llm.Call{
		"sample":      {Request: call.Request, Sample: 3},
		"temperature": {Request: llm.Request{API: "chat", Messages: call.Request.Messages, Temperature: ptr(0.7), Schema: call.Request.Schema}, Sample: 2},
		"params":      {Request: llm.Request{API: "chat", Messages: call.Request.Messages, Temperature: ptr(0.8), Schema: call.Request.Schema, Params: map[string]string{"top_k": "20"}}, Sample: 2},
	} {
		if llm.Key("m@r|served", other) == llm.Key("m@r|served", call) {
			t.Errorf("changing the %s keeps the key", name)
		}
	}
	if llm.Key("m@r2|served", call) == llm.Key("m@r|served", call) {
		t.Error("the identity is not in the key")
	}
}

// A constrained call sent as structured_outputs is keyed apart from the
// same call sent as response_format (switching the mechanism makes the
// call again, never replays the other's answer); an unconstrained call
// sends neither and keeps its key. Cached agrees with Do.
func TestStructuredOutputsKeysConstrainedCallsApart(t *testing.T) {
	srv := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Reply: func(llmtest.Request) string { return "OK" }}}})
	defer srv.Close()
	mc := &memCache{m: map[string][]byte{}}
	via := func(structured string) *llm.Client {
		return llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model, Structured: structured}, llm.WithCache(mc, "m@r|served"))
	}
	constrained := llm.Call{Request: llm.Request{API: "chat", Messages: []llm.Message{{Role: "user", Content: "classify"}}, Choice: []string{"OK", "bad"}}}
	free := llm.Call{Request: chat("q")}
	for _, step := range []struct {
		structured string
		call       llm.Call
		cached     bool
	}{
		{"", constrained, false},
		{llm.ResponseFormat, constrained, true},
		{llm.StructuredOutputs, constrained, false},
		{llm.StructuredOutputs, constrained, true},
		{"", constrained, true},
		{llm.StructuredOutputs, free, false},
		{llm.ResponseFormat, free, true},
	} {
		c := via(step.structured)
		if got := c.Cached(step.call); got != step.cached {
			t.Errorf("via %q, constrained %v: Cached %v before Do, want %v", step.structured, step.call.Request.Choice != nil, got, step.cached)
		}
		r, err := c.Do(context.Background(), step.call)
		if err != nil {
			t.Fatal(err)
		}
		if r.Cached != step.cached {
			t.Errorf("via %q, constrained %v: Do replayed %v, want %v", step.structured, step.call.Request.Choice != nil, r.Cached, step.cached)
		}
	}
	if n := len(srv.Calls()); n != 3 {
		t.Errorf("%d calls made, want 3", n)
	}
	// The golden keys (computed outside Go from STORE.md's material)
	// pin the structured_outputs key as the response_format one with
	// "\x00structured_outputs" after the sample index.
	for _, k := range []string{
		"e7ba42b26319e386ef5fce1bb23e3fe64bad5b21713270f12a1604ec05d0ba0d", // response_format
		"48252e11a485a944273805fb5da77f97e42ad4cf5c2c8e389439e273620235c4", // structured_outputs
	} {
		if _, ok := mc.m[k]; !ok {
			t.Errorf("no cache entry %s", k)
		}
	}
	if k := llm.Key("m@r|served", constrained); k != "e7ba42b26319e386ef5fce1bb23e3fe64bad5b21713270f12a1604ec05d0ba0d" {
		t.Errorf("Key = %s, want the response_format key", k)
	}
}
