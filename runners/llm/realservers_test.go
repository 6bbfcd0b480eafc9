package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/runners/llm"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

// What the client meets on real servers other than vLLM (llama.cpp's
// server, llama-cpp-python's), played by the scripted server.

// TestLogprobsAreReadInEitherForm: llama.cpp's server answers
// /v1/completions with the chat form of logprobs ({"content": [...]}),
// and with post_sampling_probs probabilities instead; both are read, as
// the old completions form still is.
func TestLogprobsAreReadInEitherForm(t *testing.T) {
	probs := func(q llmtest.Request) []byte {
		return []byte(`{"model":"test-model","choices":[{"index":0,"text":"OK","finish_reason":"stop","logprobs":{"content":[` +
			`{"id":5,"token":"OK","bytes":[79,75],"prob":0.5,"top_probs":[{"id":5,"token":"OK","bytes":[79,75],"prob":0.5},{"id":6,"token":"No","bytes":[78,111],"prob":0.25}]}]}}],` +
			`"usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	}
	for _, tc := range []struct {
		name string
		cfg  llmtest.Config
		api  string
		want map[string]float64 // the first token's top
	}{
		{"llama.cpp completions", llmtest.LlamaCpp(llmtest.Config{Default: "OK fine"}), "completions", map[string]float64{"OK": 0, "alt1": -1, "alt2": -2}},
		{"llama.cpp chat", llmtest.LlamaCpp(llmtest.Config{Default: "OK fine"}), "chat", map[string]float64{"OK": 0, "alt1": -1, "alt2": -2}},
		{"vLLM completions", llmtest.Config{Default: "OK fine"}, "completions", map[string]float64{"OK": 0, "alt1": -1, "alt2": -2}},
		{"post-sampling probabilities", llmtest.Config{Script: []llmtest.Rule{{Raw: probs}}}, "completions", map[string]float64{"OK": -0.6931471805599453, "No": -1.3862943611198906}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(tc.cfg)
			defer srv.Close()
			req := llm.Request{API: tc.api, Prompt: "p", Logprobs: 3}
			if tc.api == "chat" {
				req = chat("p")
				req.Logprobs = 3
			}
			r, err := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model}).Do(context.Background(), llm.Call{Request: req})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Logprobs) == 0 || fmt.Sprint(r.Logprobs[0].Top) != fmt.Sprint(tc.want) || r.Logprobs[0].Token != "OK" {
				t.Errorf("logprobs %+v, want the first token OK with top %v", r.Logprobs, tc.want)
			}
		})
	}
}

// TestAnAnswerWithoutTopLogprobsFailsAndIsNotCached: asked for top
// log-probabilities, a server that sends none fails the call, saying so
// and naming the server; nothing is cached (an empty ranking replayed
// forever), and the call is made again once the server sends them.
func TestAnAnswerWithoutTopLogprobsFailsAndIsNotCached(t *testing.T) {
	var fixed atomic.Bool
	srv := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Answer: "OK", Raw: func(q llmtest.Request) []byte {
		if fixed.Load() {
			return nil
		}
		return []byte(`{"model":"test-model","choices":[{"index":0,"text":"OK","finish_reason":"stop","logprobs":{"content":[{"token":"OK","logprob":-0.1,"top_logprobs":[]}]}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	}}}})
	defer srv.Close()
	calls, dir := store(t)
	c := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model}, llm.WithCache(calls, "id"), fast)
	call := llm.Call{Request: llm.Request{API: "completions", Prompt: "p", Logprobs: 2}}
	_, err := c.Do(context.Background(), call)
	if err == nil || !strings.Contains(err.Error(), "answered without top log-probabilities") || !strings.Contains(err.Error(), srv.URL()) {
		t.Fatalf("got %v, want the missing top log-probabilities named, with the server", err)
	}
	if n := srv.Stats().Requests; n != 1 {
		t.Errorf("%d requests: an answer without logprobs is no better on a retry", n)
	}
	if c.Cached(call) || callFiles(t, dir) != 0 {
		t.Error("the answer without top log-probabilities was cached")
	}
	fixed.Store(true)
	r, err := c.Do(context.Background(), call)
	if err != nil || r.Cached || len(r.Logprobs) != 1 || len(r.Logprobs[0].Top) != 2 {
		t.Fatalf("once fixed: %+v, %v", r, err)
	}
	// An empty answer has no tokens to rank: not an error.
	empty := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Answer: ""}}})
	defer empty.Close()
	if _, err := llm.New(llm.Endpoint{BaseURL: empty.URL(), ServedName: model}).Do(context.Background(), call); err != nil {
		t.Errorf("an empty answer: %v", err)
	}
}

// TestRefusalsOfTheRequestFailFastWithTheServersMessage: a 4xx, or a 5xx
// whose message is about the request (llama-cpp-python's pydantic errors,
// llama.cpp's "must be one of"), fails at once with the message and
// llm.Refused; a 5xx that says nothing of the request is retried.
func TestRefusalsOfTheRequestFailFastWithTheServersMessage(t *testing.T) {
	const literal = `[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': "Input should be 'text' or 'json_object'"}]`
	for _, tc := range []struct {
		name     string
		status   int
		msg      string
		requests int
		refused  bool
	}{
		{"pydantic's error as 500", 500, literal, 1, true},
		{"llama.cpp's old response_format 500", 500, `response_format type must be one of "text" or "json_object", but got: json_schema`, 1, true},
		{"an unsupported feature", 500, "logit_bias is not supported by this server", 1, true},
		{"a plain 500", 500, "internal server error", 4, false},
		{"CUDA out of memory", 500, "CUDA error: out of memory", 4, false},
		{"503", 503, "Service Unavailable", 4, false},
		{"400", 400, "max_tokens must be at least 1", 1, true},
		{"408", 408, "request timeout", 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Status: tc.status, Error: tc.msg}}})
			defer srv.Close()
			start := time.Now()
			_, err := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model, MaxRetries: 3}, fast).Do(context.Background(), llm.Call{Request: chat("x")})
			if err == nil {
				t.Fatal("no error")
			}
			if n := srv.Stats().Requests; n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
			if llm.Refused(err) != tc.refused {
				t.Errorf("Refused(%v) = %v", err, !tc.refused)
			}
			if words := strings.Fields(tc.msg); !strings.Contains(err.Error(), words[min(2, len(words)-1)]) {
				t.Errorf("error %q does not carry the server's message", err)
			}
			if tc.refused && (strings.Contains(err.Error(), "giving up") || time.Since(start) > 2*time.Second) {
				t.Errorf("error %q after %s: want a fast failure", err, time.Since(start))
			}
		})
	}
}

var judgeSchema = json.RawMessage(`{"type": "object", "properties": {"class": {"type": "string", "enum": ["OK", "bad"]}, "score": {"type": "number", "minimum": 0, "maximum": 1}}, "required": ["class"]}`)

// objectReply answers a JSON object when asked for one with the schema in
// the prompt (json_object), prose otherwise.
func objectReply(q llmtest.Request) string {
	if q.JSONObject && strings.Contains(q.Text(), `"enum":["OK","bad"]`) {
		return `{"class": "OK", "score": 0.5}`
	}
	return "It is OK."
}

// TestJSONSchemaRefusedFallsBackToJSONObject: llama-cpp-python's server
// answers response_format json_schema with 500; the call falls back once
// to json_object with the schema in the prompt, checks the answer
// against the schema here, and says so in Response.Warning. Later calls
// to the server go straight to the fallback; the answers are cached
// under the fallback's key and replayed.
func TestJSONSchemaRefusedFallsBackToJSONObject(t *testing.T) {
	srv := llmtest.New(llmtest.LlamaCppPython(llmtest.Config{Models: []string{model}, Script: []llmtest.Rule{{Reply: objectReply}}}))
	defer srv.Close()
	calls, _ := store(t)
	ep := llm.Endpoint{BaseURL: srv.URL(), ServedName: model}
	c := llm.New(ep, llm.WithCache(calls, "id"), fast)
	ask := func(prompt string) llm.Call {
		req := chat(prompt)
		req.Schema = judgeSchema
		return llm.Call{Request: req}
	}
	r, err := c.Do(context.Background(), ask("first"))
	if err != nil {
		t.Fatal(err)
	}
	if r.SchemaHeld == nil || !*r.SchemaHeld || r.Text != `{"class": "OK", "score": 0.5}` {
		t.Errorf("answer %q held %v (%s)", r.Text, r.SchemaHeld, r.SchemaError)
	}
	if !strings.Contains(r.Warning, "refused response_format json_schema (HTTP 500") || !strings.Contains(r.Warning, `structured_output = "json_object"`) {
		t.Errorf("warning %q", r.Warning)
	}
	if st := srv.Stats(); st.Requests != 2 || st.Status[500] != 1 {
		t.Errorf("stats %+v: want the refused request and the fallback's", st)
	}
	body := srv.Calls()[1].Request.Body
	if rf, _ := body["response_format"].(map[string]any); rf["type"] != "json_object" || rf["json_schema"] != nil {
		t.Errorf("fallback request %v: want response_format json_object alone", body)
	}
	if _, err := c.Do(context.Background(), ask("second")); err != nil || srv.Stats().Requests != 3 {
		t.Errorf("second call: %v, %d requests: want straight to the fallback", err, srv.Stats().Requests)
	}
	// Another client (a resumed run) replays both from the cache.
	again := llm.New(ep, llm.WithCache(calls, "id"))
	for _, p := range []string{"first", "second"} {
		if !again.Cached(ask(p)) {
			t.Errorf("%s: the plan does not count it cached", p)
		}
		if r, err := again.Do(context.Background(), ask(p)); err != nil || !r.Cached || r.Warning == "" {
			t.Errorf("replay of %s: %+v, %v", p, r, err)
		}
	}
	if n := srv.Stats().Requests; n != 3 {
		t.Errorf("replays made %d requests", n-3)
	}

	// Choices cannot be a json_object: they fall back to no constraint,
	// checked here.
	req := chat("third")
	req.Choice = []string{"OK", "bad"}
	r, err = c.Do(context.Background(), llm.Call{Request: req})
	if err != nil || r.SchemaHeld == nil || *r.SchemaHeld || !strings.Contains(r.SchemaError, `structured_output = "none"`) || !strings.Contains(r.Warning, "unconstrained") {
		t.Errorf("choices: %+v, %v", r, err)
	}
	last := srv.Calls()[len(srv.Calls())-1].Request.Body
	if last["response_format"] != nil || last["structured_outputs"] != nil {
		t.Errorf("choices request %v: want no constraint sent", last)
	}
}

// TestStructuredOutputModes: json_object puts the schema in the prompt and
// sends response_format json_object; none sends nothing; both check the
// answer here (a score past the schema's maximum breaks it) and key
// constrained calls apart from json_schema's.
func TestStructuredOutputModes(t *testing.T) {
	for _, tc := range []struct {
		mode   string
		format any // the response_format type sent
		prompt bool
		reply  string
		held   bool
	}{
		{llm.JSONObject, "json_object", true, `{"class": "OK", "score": 0.5}`, true},
		{llm.JSONObject, "json_object", true, `{"class": "OK", "score": 1e15}`, false},
		{llm.NoConstraint, nil, false, `{"class": "bad"}`, true},
		{llm.NoConstraint, nil, false, `It is bad.`, false},
		{llm.JSONSchema, "json_schema", false, `{"class": "OK"}`, true},
	} {
		t.Run(tc.mode+" "+tc.reply, func(t *testing.T) {
			srv := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Answer: tc.reply}}})
			defer srv.Close()
			calls, _ := store(t)
			req := chat("classify")
			req.Schema = judgeSchema
			call := llm.Call{Request: req}
			c := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model, Structured: tc.mode}, llm.WithCache(calls, "id"))
			r, err := c.Do(context.Background(), call)
			if err != nil {
				t.Fatal(err)
			}
			if r.SchemaHeld == nil || *r.SchemaHeld != tc.held {
				t.Errorf("held %v (%s), want %v", r.SchemaHeld, r.SchemaError, tc.held)
			}
			q := srv.Calls()[0].Request
			rf, _ := q.Body["response_format"].(map[string]any)
			if got := rf["type"]; fmt.Sprint(got) != fmt.Sprint(tc.format) && !(got == nil && tc.format == nil) {
				t.Errorf("response_format %v, want type %v", rf, tc.format)
			}
			if strings.Contains(q.Text(), "JSON schema") != tc.prompt || q.Messages[0].Content != "Be brief." {
				t.Errorf("messages %+v: schema in the prompt should be %v, on the user message", q.Messages, tc.prompt)
			}
			def := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model}, llm.WithCache(calls, "id"))
			if def.Cached(call) == (tc.mode != llm.JSONSchema) {
				t.Errorf("a %s answer is replayed through json_schema (or the reverse)", tc.mode)
			}
		})
	}
}

// TestAServerAnsweringAsItselfIsNamed: llama.cpp's server answers a
// request for any model under its own id; the call fails, naming what the
// server calls itself and its Server header, and is not cached.
func TestAServerAnsweringAsItselfIsNamed(t *testing.T) {
	srv := llmtest.New(llmtest.LlamaCpp(llmtest.Config{Models: []string{"smollm2-135m-instruct"}}))
	defer srv.Close()
	calls, dir := store(t)
	_, err := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: "Qwen/Qwen2.5-Coder-7B-Instruct"}, llm.WithCache(calls, "id")).Do(context.Background(), llm.Call{Request: chat("x")})
	if err == nil || !strings.Contains(err.Error(), `calls itself "smollm2-135m-instruct"`) || !strings.Contains(err.Error(), "answers any model name as its own") {
		t.Fatalf("got %v", err)
	}
	if callFiles(t, dir) != 0 {
		t.Error("the other model's answer was cached")
	}
}

// TestAnIgnoredConstraintIsNamedWithTheServer: a server that ignores
// structured_outputs answers outside it; the answer's SchemaError says the
// server ignored the field, not that the model erred.
func TestAnIgnoredConstraintIsNamedWithTheServer(t *testing.T) {
	srv := llmtest.New(llmtest.LlamaCpp(llmtest.Config{Models: []string{model}, Default: "maybe"}))
	defer srv.Close()
	req := chat("pick")
	req.Choice = []string{"A", "B"}
	r, err := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model, Structured: llm.StructuredOutputs}).Do(context.Background(), llm.Call{Request: req})
	if err != nil {
		t.Fatal(err)
	}
	if r.SchemaHeld == nil || *r.SchemaHeld || !strings.Contains(r.SchemaError, "ignores the field") || !strings.Contains(r.SchemaError, srv.URL()) {
		t.Errorf("SchemaError %q", r.SchemaError)
	}
}

// TestNoRequestAsksForSeveralChoices: llama.cpp's server refuses n > 1;
// the samples of a request are separate calls, none sending n.
func TestNoRequestAsksForSeveralChoices(t *testing.T) {
	srv := llmtest.New(llmtest.LlamaCpp(llmtest.Config{Models: []string{model}}))
	defer srv.Close()
	c := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model})
	req := chat("x")
	req.Seed = ptr(int64(1))
	for i := range 3 {
		if _, err := c.Do(context.Background(), llm.Call{Request: req, Sample: i}); err != nil {
			t.Fatal(err)
		}
	}
	for _, call := range srv.Calls() {
		if _, ok := call.Request.Body["n"]; ok {
			t.Errorf("request %v sends n", call.Request.Body)
		}
	}
	if err := llm.CheckParams(map[string]string{"n": "4"}); err == nil {
		t.Error("a param may set n")
	}
}

// TestQueuedCallsAreNotResentWhileTheServerComputesThem: a one-slot server
// (llama-cpp-python's) takes 150 ms a call; four calls in flight with a
// 250 ms timeout wait up to 600 ms for their answers. Their clocks start
// when the calls ahead of them are answered: none times out, none is
// resent, and the server computes nothing whose client left.
func TestQueuedCallsAreNotResentWhileTheServerComputesThem(t *testing.T) {
	srv := llmtest.New(llmtest.LlamaCppPython(llmtest.Config{Models: []string{model}, Delay: 150 * time.Millisecond}))
	defer srv.Close()
	c := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model, Timeout: 250 * time.Millisecond, Concurrency: 4}, fast)
	var cs []llm.Call
	for i := range 4 {
		cs = append(cs, llm.Call{Request: chat(fmt.Sprint("q", i))})
	}
	for _, r := range doAll(t, c, cs, 4) {
		if r.Retries != 0 {
			t.Errorf("a call was retried %d times", r.Retries)
		}
	}
	if st := srv.Stats(); st.Requests != 4 || st.Abandoned != 0 || st.MaxComputing != 1 {
		t.Errorf("server stats %+v: want 4 requests, none abandoned", st)
	}
}

// TestAServerThatAnswersNothingStillTimesOut: the queue moves a clock only
// on answers: a server that answers nothing fails every attempt after the
// timeout, not after the timeout times the calls in flight.
func TestAServerThatAnswersNothingStillTimesOut(t *testing.T) {
	srv := llmtest.New(llmtest.Config{SlowFor: time.Hour, Plan: func(string, int) llmtest.Fault { return llmtest.Slow }})
	defer srv.Close()
	c := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model, Timeout: 100 * time.Millisecond, MaxRetries: llm.NoRetries, Concurrency: 4})
	start := time.Now()
	errs := make(chan error, 4)
	for i := range 4 {
		go func() {
			_, err := c.Do(context.Background(), llm.Call{Request: chat(fmt.Sprint("q", i))})
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err == nil || !strings.Contains(err.Error(), "no answer within 100ms") || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v", err)
		}
	}
	if d := time.Since(start); d > 350*time.Millisecond {
		t.Errorf("four attempts on a silent server took %s", d)
	}
}

// TestSlotsAndBusyProbes: Slots reads llama.cpp's GET /props; a server
// without it says nothing (0); a server busy generating answers neither
// GET /props nor GET /v1/models, and the probes say it is busy (ErrBusy)
// rather than unreachable.
func TestSlotsAndBusyProbes(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  llmtest.Config
		want int
	}{
		{"llama.cpp one slot", llmtest.LlamaCpp(llmtest.Config{}), 1},
		{"llama.cpp --parallel 4", llmtest.LlamaCpp(llmtest.Config{Slots: 4}), 4},
		{"llama-cpp-python", llmtest.LlamaCppPython(llmtest.Config{}), 0},
		{"vLLM", llmtest.Config{}, 0},
	} {
		srv := llmtest.New(tc.cfg)
		n, err := llm.New(llm.Endpoint{BaseURL: srv.URL()}).Slots(context.Background())
		if err != nil || n != tc.want {
			t.Errorf("%s: %d slots, %v; want %d", tc.name, n, err, tc.want)
		}
		srv.Close()
	}
	srv := llmtest.New(llmtest.LlamaCpp(llmtest.Config{Models: []string{model}, Delay: time.Second}))
	defer srv.Close()
	probe := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model, Timeout: 100 * time.Millisecond})
	go probe.Do(context.Background(), llm.Call{Request: chat("long")})
	for srv.Stats().Requests == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := probe.Models(context.Background()); !errors.Is(err, llm.ErrBusy) || !strings.Contains(err.Error(), "busy generating") {
		t.Errorf("models of a busy server: %v", err)
	}
	if _, err := probe.Slots(context.Background()); !errors.Is(err, llm.ErrBusy) {
		t.Errorf("slots of a busy server: %v", err)
	}
	if _, err := llm.New(llm.Endpoint{BaseURL: "http://127.0.0.1:1/v1", Timeout: 100 * time.Millisecond}).Models(context.Background()); err == nil || errors.Is(err, llm.ErrBusy) {
		t.Errorf("models of no server: %v, want unreachable, not busy", err)
	}
}

// TestKnownSlotsKeepTheTimeoutPlain: a request stuck on a server that
// keeps answering the others is abandoned after the timeout when the
// server's slots are known and not fewer than the calls in flight (it
// cannot be queued); with slots unknown it is given the benefit of the
// doubt while the others are answered, up to the timeout × the calls in
// flight.
func TestKnownSlotsKeepTheTimeoutPlain(t *testing.T) {
	for _, tc := range []struct {
		slots    int
		min, max time.Duration
	}{
		{4, 100 * time.Millisecond, 400 * time.Millisecond},
		{0, 450 * time.Millisecond, 2 * time.Second},
	} {
		t.Run(fmt.Sprint(tc.slots, " slots"), func(t *testing.T) {
			// The stuck request's handler sleeps past the client's patience.
			srv := llmtest.New(llmtest.Config{Delay: 5 * time.Millisecond, Script: []llmtest.Rule{
				{Contains: "stuck", Raw: func(llmtest.Request) []byte { time.Sleep(time.Second); return nil }},
				{Reply: echo},
			}})
			defer srv.Close()
			c := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model, Timeout: 150 * time.Millisecond, Slots: tc.slots, Concurrency: 4, MaxRetries: llm.NoRetries})
			var done atomic.Bool
			var others sync.WaitGroup
			for w := range 3 {
				others.Add(1)
				go func() {
					defer others.Done()
					for i := 0; !done.Load(); i++ {
						c.Do(context.Background(), llm.Call{Request: chat(fmt.Sprint("w", w, " ", i))})
					}
				}()
			}
			time.Sleep(20 * time.Millisecond)
			start := time.Now()
			_, err := c.Do(context.Background(), llm.Call{Request: chat("stuck")})
			took := time.Since(start)
			done.Store(true)
			others.Wait()
			if err == nil || took < tc.min || took > tc.max {
				t.Errorf("the stuck call failed after %s (%v), want between %s and %s", took, err, tc.min, tc.max)
			}
		})
	}
}

// TestMaskedAlternativesAreDropped: asked for more top log-probabilities
// than allowed_token_ids allows, vLLM 0.32 under processed_logprobs fills
// the list with masked tokens at -9999.0 (its JSON for −∞); the client
// reads only the allowed ones, in either API's form.
func TestMaskedAlternativesAreDropped(t *testing.T) {
	next := func(llmtest.Request) []llmtest.Candidate {
		return []llmtest.Candidate{{Token: "a", ID: 1, Logprob: -1.6}, {Token: "b", ID: 2, Logprob: -1.2}, {Token: "the", ID: 3, Logprob: -0.7}}
	}
	srv := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Next: next}}, LogprobsMode: llmtest.ProcessedLogprobs})
	defer srv.Close()
	cl := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: "test-model"})
	for _, api := range []string{"chat", "completions"} {
		rq := llm.Request{API: api, Prompt: "q", MaxTokens: 1, Logprobs: 3, Params: map[string]string{"allowed_token_ids": "[1,2]"}}
		if api == "chat" {
			rq.Messages = []llm.Message{{Role: "user", Content: "q"}}
		}
		resp, err := cl.Do(context.Background(), llm.Call{Request: rq})
		if err != nil {
			t.Fatalf("%s: %v", api, err)
		}
		if len(resp.Logprobs) != 1 || len(resp.Logprobs[0].Top) != 2 || resp.Logprobs[0].Top["the"] != 0 {
			t.Errorf("%s: top %v, want the two allowed tokens only", api, resp.Logprobs)
		}
	}
}
