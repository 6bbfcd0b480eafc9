package llmtest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRealServersAreHowTheyAnswer: each of llama.cpp's and
// llama-cpp-python's differences from vLLM, as the presets play them, on
// the wire.
func TestRealServersAreHowTheyAnswer(t *testing.T) {
	const chat = `{"model": "Qwen/asked-for", "messages": [{"role": "user", "content": "a b c"}]`
	schema := `"response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object"}}}`
	next := func(Request) []Candidate {
		return []Candidate{{Token: "x", ID: 1, Logprob: -0.1}, {Token: "y", ID: 2, Logprob: -1}, {Token: "z", ID: 3, Logprob: -2}}
	}
	for _, tc := range []struct {
		name   string
		cfg    Config
		path   string
		body   string
		status int
		check  func(t *testing.T, b []byte)
	}{
		{"llama.cpp answers any model as itself", LlamaCpp(Config{Models: []string{"smollm2"}}), "/chat/completions", chat + "}", 200, func(t *testing.T, b []byte) {
			if !strings.Contains(string(b), `"model":"smollm2"`) {
				t.Errorf("answer %s does not name the server's own model", b)
			}
		}},
		{"vLLM does not", Config{Models: []string{"smollm2"}}, "/chat/completions", chat + "}", 404, nil},
		{"llama.cpp refuses n > 1", LlamaCpp(Config{}), "/chat/completions", chat + `, "n": 2}`, 400, func(t *testing.T, b []byte) {
			if !strings.Contains(string(b), "Only one completion choice is allowed") {
				t.Errorf("answer %s", b)
			}
		}},
		{"llama.cpp takes n = 1", LlamaCpp(Config{}), "/chat/completions", chat + `, "n": 1}`, 200, nil},
		{"llama.cpp's completions logprobs are the chat form", LlamaCpp(Config{}), "/completions", `{"model": "m", "prompt": "p", "logprobs": 2}`, 200, func(t *testing.T, b []byte) {
			var a struct {
				Choices []struct {
					Logprobs struct {
						Content []struct {
							ID          int    `json:"id"`
							Token       string `json:"token"`
							Bytes       []int  `json:"bytes"`
							TopLogprobs []struct {
								Token   string  `json:"token"`
								Logprob float64 `json:"logprob"`
							} `json:"top_logprobs"`
						} `json:"content"`
						Tokens []string `json:"tokens"`
					} `json:"logprobs"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(b, &a); err != nil || len(a.Choices) != 1 {
				t.Fatalf("%s: %v", b, err)
			}
			lp := a.Choices[0].Logprobs
			if len(lp.Content) != 1 || lp.Content[0].Token != "OK" || len(lp.Content[0].Bytes) != 2 || len(lp.Content[0].TopLogprobs) != 2 || lp.Tokens != nil {
				t.Errorf("logprobs %s, want llama.cpp's content form", b)
			}
		}},
		{"vLLM's completions logprobs are the old form", Config{}, "/completions", `{"model": "test-model", "prompt": "p", "logprobs": 2}`, 200, func(t *testing.T, b []byte) {
			if !strings.Contains(string(b), `"token_logprobs"`) || strings.Contains(string(b), `"content"`) {
				t.Errorf("logprobs %s, want tokens / token_logprobs / top_logprobs", b)
			}
		}},
		{"llama-cpp-python refuses json_schema with 500", LlamaCppPython(Config{}), "/chat/completions", chat + ", " + schema + "}", 500, func(t *testing.T, b []byte) {
			if !strings.Contains(string(b), "literal_error") || !strings.Contains(string(b), "'response_format', 'type'") {
				t.Errorf("answer %s, want pydantic's literal_error", b)
			}
		}},
		{"llama-cpp-python takes json_object", LlamaCppPython(Config{Script: []Rule{{When: func(q Request) bool { return q.JSONObject }, Answer: `{"a": 1}`}}}),
			"/chat/completions", chat + `, "response_format": {"type": "json_object"}}`, 200, func(t *testing.T, b []byte) {
				if !strings.Contains(string(b), `{\"a\": 1}`) {
					t.Errorf("answer %s, want the json_object rule's", b)
				}
			}},
		{"llama.cpp ignores allowed_token_ids", LlamaCpp(Config{Script: []Rule{{Next: next}}}), "/chat/completions", chat + `, "allowed_token_ids": [3], "logprobs": true, "top_logprobs": 1}`, 200, func(t *testing.T, b []byte) {
			if !strings.Contains(string(b), `"content":"x"`) {
				t.Errorf("answer %s, want the best candidate of all (x), not the allowed z", b)
			}
		}},
		{"vLLM applies allowed_token_ids", Config{Models: []string{"Qwen/asked-for"}, Script: []Rule{{Next: next}}}, "/chat/completions", chat + `, "allowed_token_ids": [3]}`, 200, func(t *testing.T, b []byte) {
			if !strings.Contains(string(b), `"content":"z"`) {
				t.Errorf("answer %s, want the allowed z", b)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(tc.cfg)
			defer s.Close()
			got, b, err := post(t, s.URL()+tc.path, tc.body)
			if err != nil || got != tc.status {
				t.Fatalf("%d %s (%v), want %d", got, b, err, tc.status)
			}
			if tc.check != nil {
				tc.check(t, b)
			}
		})
	}
}

// TestStructuredOutputsIgnoredLeavesTheRequestUnconstrained: a server that
// ignores structured_outputs shows rules no constraint.
func TestStructuredOutputsIgnoredLeavesTheRequestUnconstrained(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		s := New(Config{IgnoreStructuredOutputs: ignore})
		post(t, s.URL()+"/chat/completions", `{"model": "test-model", "messages": [{"role": "user", "content": "x"}], "structured_outputs": {"choice": ["a", "b"]}}`)
		if got := s.Calls()[0].Request.Choice; (got == nil) != ignore {
			t.Errorf("ignore %v: the rules saw choices %v", ignore, got)
		}
		s.Close()
	}
}

// TestOneSlotQueuesRequestsAndComputesAbandonedOnes: a one-slot server
// computes one request at a time, in arrival order, its GET /props says
// so, GET /v1/models waits while it works, and a request whose client
// left is still computed to its end.
func TestOneSlotQueuesRequestsAndComputesAbandonedOnes(t *testing.T) {
	s := New(LlamaCpp(Config{Delay: 100 * time.Millisecond}))
	defer s.Close()
	resp, err := http.Get(strings.TrimSuffix(s.URL(), "/v1") + "/props")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"total_slots":1`) {
		t.Errorf("GET /props: %s", b)
	}
	var wg sync.WaitGroup
	done := make([]time.Duration, 3)
	start := time.Now()
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			post(t, s.URL()+"/completions", `{"model": "m", "prompt": "p`+string(rune('0'+i))+`"}`)
			done[i] = time.Since(start)
		}()
		time.Sleep(10 * time.Millisecond) // arrival order
	}
	time.Sleep(20 * time.Millisecond)
	t0 := time.Now()
	resp, err = http.Get(s.URL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if waited := time.Since(t0); waited < 150*time.Millisecond {
		t.Errorf("GET /v1/models answered after %s while the server was busy for about 300ms", waited)
	}
	wg.Wait()
	for i := 1; i < 3; i++ {
		if done[i]-done[i-1] < 80*time.Millisecond {
			t.Errorf("answers at %v: not one at a time", done)
		}
	}
	if st := s.Stats(); st.MaxComputing != 1 || st.Abandoned != 0 {
		t.Errorf("stats %+v: want one computing at a time, none abandoned", st)
	}

	// A client that leaves: the server computes its request anyway.
	c := &http.Client{Timeout: 30 * time.Millisecond}
	if _, err := c.Post(s.URL()+"/completions", "application/json", strings.NewReader(`{"model": "m", "prompt": "gone"}`)); err == nil {
		t.Fatal("the client did not time out")
	}
	deadline := time.Now().Add(2 * time.Second)
	for s.Stats().Abandoned != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := s.Stats(); st.Abandoned != 1 {
		t.Errorf("stats %+v: want the abandoned request computed", st)
	}
}
