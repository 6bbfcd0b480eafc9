// Package llm is lacuna's client for OpenAI-compatible model servers
// (vLLM, llama.cpp's server, hosted APIs): chat and completions calls with
// n samples, bounded concurrency that adapts to 429s, retries with capped
// exponential backoff and jitter, and a call cache keyed by the model's
// identity, the canonical request and the sample index, written as each
// call completes so that an interrupted run repeats no completed call.
//
// It knows nothing of the graph: nodes hand it an Endpoint, a Cache and
// the identity their Resolve pinned.
//
// Real servers differ from vLLM, and the client meets them where they
// are (llmtest plays each difference): log-probabilities in either form
// (llama.cpp's server sends the chat form for completions too), a refusal
// of the request sent as a 500 (failed at once, never retried),
// response_format json_schema refused (the json_object fallback,
// Endpoint.Structured), any model name answered as the server's own (an
// error naming what it calls itself), structured_outputs and
// allowed_token_ids ignored (SchemaError names the server), one slot
// that queues requests (Slots, and timeouts counted from the server's
// turn: queue) and GET /models not answered while generating (ErrBusy).
//
// Concurrency: a Client, a Limiter and the Shared registry are safe for
// concurrent use by any number of goroutines. A Client holds one slot of
// its Limiter for each HTTP attempt in flight (never while it waits to
// retry), so the clients of the nodes that share a model's Limiter never
// have more than its limit of requests in flight together. The Cache a
// Client is given must be safe for concurrent use (Cache). StripThink,
// AnswerJSON, ExtractCode and Key are pure functions.
//
// The package prints nothing and reads no environment variable: the API
// key comes in the Endpoint.
package llm

import (
	"encoding/json"
	"time"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is what one call asks: everything that can change the answer and
// nothing else (no timeout, retry or concurrency setting), so its canonical
// JSON is the cache key's material.
type Request struct {
	// API is "chat" (POST /chat/completions, Messages) or "completions"
	// (POST /completions, Prompt).
	API      string    `json:"api"`
	Messages []Message `json:"messages,omitempty"`
	Prompt   string    `json:"prompt,omitempty"`
	// Sampling; nil or zero fields are left to the server's defaults.
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	Stop        []string `json:"stop,omitempty"`
	// Seed, when set, is sent as Seed + the call's sample index, so that
	// the samples of one request differ and each is reproducible.
	Seed *int64 `json:"seed,omitempty"`
	// Logprobs asks for this many top log-probabilities per token (0:
	// none).
	Logprobs int `json:"logprobs,omitempty"`
	// Schema constrains the answer to a JSON schema, sent as
	// response_format json_schema or as vLLM's structured_outputs, as
	// Endpoint.Structured says; the answer is checked against it
	// (Response.SchemaHeld), because a server that does not know the
	// field ignores it silently.
	Schema     json.RawMessage `json:"schema,omitempty"`
	SchemaName string          `json:"schema_name,omitempty"`
	// Choice constrains the answer to one of these strings: a JSON-schema
	// string enum in response_format (answered as a JSON string), or
	// vLLM's structured_outputs choice (answered bare). Either form holds.
	Choice []string `json:"choice,omitempty"`
	// Params are extra top-level fields of the request body (a model
	// block's params: top_k, min_p, repetition_penalty,
	// chat_template_kwargs, ...). A value that parses as JSON is sent as
	// that JSON (a number, a boolean, an object, a quoted string), any
	// other as a string. A param may not name a field the client sets
	// itself (CheckParams): Do refuses such a request rather than let
	// either win.
	Params map[string]string `json:"params,omitempty"`
}

// Call is one sample of a request. Calls with the same request and
// different sample indexes are different calls: never merged, each cached
// under its own key.
type Call struct {
	Request Request
	Sample  int
}

// Response is one completed call.
type Response struct {
	Text         string  `json:"text"`                // the answer as the server sent it (think blocks included)
	Reasoning    string  `json:"reasoning,omitempty"` // a separate reasoning_content field, when the server sends one
	Refusal      string  `json:"refusal,omitempty"`   // a chat answer's refusal field (OpenAI's), when the model refused
	FinishReason string  `json:"finish_reason"`
	Model        string  `json:"model"` // the model the server says answered
	PromptTokens int     `json:"prompt_tokens"`
	OutputTokens int     `json:"completion_tokens"`
	Logprobs     []Token `json:"logprobs,omitempty"`
	// SchemaHeld says whether the answer satisfied Request.Schema or
	// Request.Choice (nil when the request had neither).
	SchemaHeld *bool `json:"schema_held,omitempty"`
	// SchemaError says why the answer did not satisfy the constraint,
	// and how the constraint was sent and what that says of the server
	// (one that ignores the mechanism answers free text).
	SchemaError string `json:"schema_error,omitempty"`
	// Server is the answer's Server header (e.g. "llama.cpp"), which
	// errors name the server by.
	Server string `json:"server,omitempty"`
	// Warning says how the answer was obtained when not as asked: the
	// server refused response_format json_schema and the call went
	// through the fallback (Endpoint.Structured). Cached with the
	// answer; nodes surface it (a note or a log line), the client prints
	// nothing.
	Warning string `json:"warning,omitempty"`

	// Latency is the answered attempt's, request sent to answer read. It
	// is cached with the answer: a replay reports the original call's, so
	// rows built from responses are the same whether or not they were
	// replayed.
	Latency time.Duration `json:"latency_ns,omitempty"`

	// What this call cost here; not cached (a replay reports Cached).
	Retries int  `json:"-"`
	Cached  bool `json:"-"`
}

// Token is one sampled token with its log-probability and the top
// alternatives.
type Token struct {
	Token   string             `json:"token"`
	Logprob float64            `json:"logprob"`
	Top     map[string]float64 `json:"top,omitempty"`
}

// Cache stores completed calls by key. Implementations must make Put
// atomic (a reader sees the whole value or none) and safe for concurrent
// use; artifacts.Calls is the store's.
type Cache interface {
	Get(key string) ([]byte, bool, error)
	Put(key string, value []byte) error
}
