package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, url string, body string) (int, []byte, error) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func TestFaultsAreSeededAndPerCall(t *testing.T) {
	draw := func(seed uint64) []Fault {
		s := New(Config{Faults: Spread(0.5, AllFaults...), Seed: seed})
		defer s.Close()
		var out []Fault
		for i := range 200 {
			out = append(out, s.fault(fmt.Sprint("call ", i%50), i/50))
		}
		return out
	}
	a, b, c := draw(3), draw(3), draw(4)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Error("one seed drew two fault sequences")
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Error("two seeds drew the same fault sequence")
	}
	kinds := map[Fault]int{}
	for _, f := range a {
		kinds[f]++
	}
	if len(kinds) != len(AllFaults)+1 || kinds[""] < 60 || kinds[""] > 140 {
		t.Errorf("fault counts %v: want every kind and about half none", kinds)
	}
}

func TestFaultsLookAsTheyShould(t *testing.T) {
	const body = `{"model": "test-model", "messages": [{"role": "user", "content": "hello world"}]}`
	for _, tc := range []struct {
		fault  Fault
		status int
		check  func(t *testing.T, h http.Header, b []byte, err error)
	}{
		{"", 200, func(t *testing.T, _ http.Header, b []byte, err error) {
			var a struct {
				Choices []struct {
					Message struct{ Content string }
				}
				Usage struct{ PromptTokens, CompletionTokens int } `json:"usage"`
			}
			if err != nil || json.Unmarshal(b, &a) != nil || len(a.Choices) != 1 || a.Choices[0].Message.Content != "OK" {
				t.Errorf("answer %s, %v", b, err)
			}
		}},
		{TooMany, 429, func(t *testing.T, h http.Header, _ []byte, _ error) {
			if h.Get("Retry-After") != "7" {
				t.Errorf("Retry-After %q, want 7", h.Get("Retry-After"))
			}
		}},
		{ServerError, 500, nil},
		{Unavailable, 503, nil},
		{Malformed, 200, func(t *testing.T, _ http.Header, b []byte, err error) {
			if err != nil || json.Valid(b) {
				t.Errorf("malformed answer %q is valid JSON (%v)", b, err)
			}
		}},
		{Empty, 200, func(t *testing.T, _ http.Header, b []byte, err error) {
			if err != nil || !bytes.Contains(b, []byte(`"choices":[]`)) {
				t.Errorf("empty answer %s, %v", b, err)
			}
		}},
		{Drop, 200, func(t *testing.T, _ http.Header, b []byte, err error) {
			if err == nil {
				t.Errorf("a dropped answer read whole: %s", b)
			}
		}},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			s := New(Config{RetryAfter: "7", Plan: func(string, int) Fault { return tc.fault }})
			defer s.Close()
			resp, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.check != nil {
				tc.check(t, resp.Header, b, err)
			}
			st := s.Stats()
			wantAnswers := 0
			if tc.fault == "" {
				wantAnswers = 1
			}
			if st.Requests != 1 || st.Answers != wantAnswers || (tc.fault != "" && st.Faults[tc.fault] != 1) {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestSlowFaultOutlastsTheClient(t *testing.T) {
	s := New(Config{SlowFor: time.Hour, Plan: func(string, int) Fault { return Slow }})
	defer s.Close()
	c := &http.Client{Timeout: 50 * time.Millisecond}
	_, err := c.Post(s.URL()+"/completions", "application/json", strings.NewReader(`{"model": "test-model", "prompt": "p"}`))
	if err == nil {
		t.Fatal("a slow answer came within the client's timeout")
	}
	s.Close() // returns although the slow handler was asleep
	if st := s.Stats(); st.Answers != 0 || st.Faults[Slow] != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestRequestsAreValidated(t *testing.T) {
	s := New(Config{Models: []string{"a"}})
	defer s.Close()
	for _, tc := range []struct {
		path, body string
		status     int
	}{
		{"/chat/completions", `{"model": "b", "messages": [{"role": "user", "content": "x"}]}`, 404},
		{"/chat/completions", `{"model": "a", "messages": []}`, 400},
		{"/chat/completions", `not json`, 400},
		{"/chat/completions", `{"model": "a", "messages": [{"role": "user", "content": "x"}], "stream": true}`, 400},
		{"/completions", `{"model": "a"}`, 400},
		{"/completions", `{"model": "a", "prompt": "p", "stop": "\n"}`, 200},
	} {
		if got, b, err := post(t, s.URL()+tc.path, tc.body); got != tc.status || err != nil {
			t.Errorf("%s %s: %d %s (%v), want %d", tc.path, tc.body, got, b, err, tc.status)
		}
	}
}

func TestOpenAILikeServerRefusesUnknownFields(t *testing.T) {
	s := New(Config{Fields: OpenAIFields})
	defer s.Close()
	for _, tc := range []struct {
		body   string
		status int
		names  string
	}{
		{`{"model": "test-model", "messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "string"}}}}`, 200, ""},
		{`{"model": "test-model", "messages": [{"role": "user", "content": "x"}], "structured_outputs": {"choice": ["a"]}}`, 400, "structured_outputs"},
		{`{"model": "test-model", "messages": [{"role": "user", "content": "x"}], "top_k": 2, "guided_json": {}}`, 400, "guided_json, top_k"},
	} {
		got, b, err := post(t, s.URL()+"/chat/completions", tc.body)
		if got != tc.status || err != nil || tc.names != "" && !strings.Contains(string(b), "Unrecognized request argument supplied: "+tc.names) {
			t.Errorf("%s: %d %s (%v), want %d naming %q", tc.body, got, b, err, tc.status, tc.names)
		}
	}
	// Without Fields the server ignores what it does not know, as vLLM does.
	lax := New(Config{})
	defer lax.Close()
	if got, b, err := post(t, lax.URL()+"/chat/completions", `{"model": "test-model", "messages": [{"role": "user", "content": "x"}], "top_k": 2}`); got != 200 || err != nil {
		t.Errorf("lax server: %d %s (%v)", got, b, err)
	}
}

func TestCallIDsFollowTheRequest(t *testing.T) {
	s := New(Config{})
	defer s.Close()
	for _, body := range []string{
		`{"model": "test-model", "prompt": "p", "seed": 1}`,
		`{"seed": 1, "prompt": "p", "model": "test-model"}`, // same call, keys reordered
		`{"model": "test-model", "prompt": "p", "seed": 2}`,
	} {
		post(t, s.URL()+"/completions", body)
	}
	post(t, s.URL()+"/chat/completions", `{"model": "test-model", "messages": [{"role": "user", "content": "p"}], "seed": 1}`)
	calls := s.Calls()
	if len(calls) != 3 || calls[0].Requests != 2 || calls[0].Answers != 2 || calls[1].Requests != 1 || calls[2].Request.API != "chat" {
		t.Errorf("calls %+v", calls)
	}
}

func TestCutTokens(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
		cut  bool
	}{
		{"a b c", 2, "a b", true},
		{"a b c", 3, "a b c", false},
		{"  a\n\tb  c ", 1, "  a", true},
		{"", 1, "", false},
	} {
		if got, cut := cutTokens(tc.in, tc.n); got != tc.want || cut != tc.cut {
			t.Errorf("cutTokens(%q, %d) = %q, %v", tc.in, tc.n, got, cut)
		}
	}
}

// TestNextMasksByAllowedTokenIDsAndCutsTopLogprobs: a scripted next-token
// distribution is masked by allowed_token_ids, ranked best first (ties by
// token), cut to top_logprobs; past MaxLogprobs is 400; NoLogprobs
// answers without them.
func TestNextMasksByAllowedTokenIDsAndCutsTopLogprobs(t *testing.T) {
	next := func(Request) []Candidate {
		return []Candidate{{"<<a>>", 1, -2}, {"<<b>>", 2, -0.5}, {"the", 3, -0.1}, {"<<c>>", 4, -2}}
	}
	s := New(Config{Script: []Rule{{Next: next}}, MaxLogprobs: 3})
	defer s.Close()
	type top struct {
		Token   string  `json:"token"`
		Logprob float64 `json:"logprob"`
	}
	ask := func(body string) (int, string, []top) {
		code, b, err := post(t, s.URL()+"/chat/completions", body)
		if err != nil {
			t.Fatal(err)
		}
		var a struct {
			Choices []struct {
				Message  struct{ Content string }
				Logprobs *struct {
					Content []struct {
						TopLogprobs []top `json:"top_logprobs"`
					}
				}
			}
		}
		if code != 200 {
			return code, string(b), nil
		}
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatal(err)
		}
		if a.Choices[0].Logprobs == nil {
			return code, a.Choices[0].Message.Content, nil
		}
		return code, a.Choices[0].Message.Content, a.Choices[0].Logprobs.Content[0].TopLogprobs
	}
	const msgs = `"model":"test-model","messages":[{"role":"user","content":"q"}],"max_tokens":1`
	if code, text, tops := ask(`{` + msgs + `,"logprobs":true,"top_logprobs":3,"allowed_token_ids":[1,2,4]}`); code != 200 || text != "<<b>>" ||
		fmt.Sprint(tops) != "[{<<b>> -0.5} {<<a>> -2} {<<c>> -2}]" {
		t.Errorf("masked: %d %q %v", code, text, tops)
	}
	if code, text, tops := ask(`{` + msgs + `,"logprobs":true,"top_logprobs":2}`); code != 200 || text != "the" || fmt.Sprint(tops) != "[{the -0.1} {<<b>> -0.5}]" {
		t.Errorf("unmasked: %d %q %v", code, text, tops)
	}
	if code, body, _ := ask(`{` + msgs + `,"logprobs":true,"top_logprobs":4}`); code != 400 || !strings.Contains(body, "greater than max allowed: 3") {
		t.Errorf("past MaxLogprobs: %d %s", code, body)
	}
	if code, body, _ := ask(`{` + msgs + `,"allowed_token_ids":[9]}`); code != 400 {
		t.Errorf("nothing allowed: %d %s", code, body)
	}
	s2 := New(Config{Script: []Rule{{Next: next}}, NoLogprobs: true})
	defer s2.Close()
	s = s2
	if code, text, tops := ask(`{` + msgs + `,"logprobs":true,"top_logprobs":2}`); code != 200 || text != "the" || tops != nil {
		t.Errorf("no logprobs: %d %q %v", code, text, tops)
	}
}

// TestLogprobsModesFollowVLLM: processed_logprobs renormalises the
// allowed candidates (log-softmax over them); raw_logprobs ranks the
// whole distribution before the mask, the answer still an allowed token.
// Asked for more alternatives than are allowed, processed_logprobs fills
// the list with masked tokens at MaskedLogprob, as vLLM 0.32 does.
func TestLogprobsModesFollowVLLM(t *testing.T) {
	next := func(Request) []Candidate {
		return []Candidate{{"<<a>>", 1, math.Log(0.2)}, {"<<b>>", 2, math.Log(0.3)}, {"the", 3, math.Log(0.5)}}
	}
	body := func(n int) string {
		return `{"model":"test-model","messages":[{"role":"user","content":"q"}],"max_tokens":1,"logprobs":true,"top_logprobs":` + strconv.Itoa(n) + `,"allowed_token_ids":[1,2]}`
	}
	type entry struct {
		Token   string  `json:"token"`
		Logprob float64 `json:"logprob"`
	}
	for _, tc := range []struct {
		mode  string
		n     int
		token entry
		top   []entry
	}{
		{"", 2, entry{"<<b>>", math.Log(0.3)}, []entry{{"<<b>>", math.Log(0.3)}, {"<<a>>", math.Log(0.2)}}},
		{ProcessedLogprobs, 2, entry{"<<b>>", math.Log(0.6)}, []entry{{"<<b>>", math.Log(0.6)}, {"<<a>>", math.Log(0.4)}}},
		{ProcessedLogprobs, 3, entry{"<<b>>", math.Log(0.6)}, []entry{{"<<b>>", math.Log(0.6)}, {"<<a>>", math.Log(0.4)}, {"the", MaskedLogprob}}},
		{RawLogprobs, 2, entry{"<<b>>", math.Log(0.3)}, []entry{{"the", math.Log(0.5)}, {"<<b>>", math.Log(0.3)}}},
	} {
		s := New(Config{Script: []Rule{{Next: next}}, LogprobsMode: tc.mode})
		code, b, err := post(t, s.URL()+"/chat/completions", body(tc.n))
		s.Close()
		if err != nil || code != 200 {
			t.Fatalf("%q: %d %s %v", tc.mode, code, b, err)
		}
		var a struct {
			Choices []struct {
				Message  struct{ Content string }
				Logprobs struct {
					Content []struct {
						entry
						TopLogprobs []entry `json:"top_logprobs"`
					}
				}
			}
		}
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatal(err)
		}
		got := a.Choices[0].Logprobs.Content[0]
		near := func(x, y entry) bool { return x.Token == y.Token && math.Abs(x.Logprob-y.Logprob) < 1e-12 }
		ok := a.Choices[0].Message.Content == "<<b>>" && near(got.entry, tc.token) && len(got.TopLogprobs) == len(tc.top)
		for i := range tc.top {
			ok = ok && near(got.TopLogprobs[i], tc.top[i])
		}
		if !ok {
			t.Errorf("mode %q: answer %q %+v, want %+v %+v", tc.mode, a.Choices[0].Message.Content, got, tc.token, tc.top)
		}
	}
}
