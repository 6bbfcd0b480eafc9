// Package llmtest is a scripted OpenAI-compatible model server on the
// loopback interface, for the tests of lacuna's model clients and of the
// nodes that call models, and for the client benchmark.
//
// It serves GET /v1/models, POST /v1/chat/completions and POST
// /v1/completions (no streaming). Answers come from a script: the first
// Rule that matches a request answers it, the Config's Default answers the
// rest. Usage counts whitespace-separated tokens; max_tokens and stop cut
// the answer as a server would (finish_reason "length" or "stop"). A rule
// may script a next-token distribution instead (Rule.Next): the server
// then answers one token with top log-probabilities, honouring vLLM's
// allowed_token_ids, return_tokens_as_token_ids and, with
// Config.MaxLogprobs and Config.LogprobsMode, its --max-logprobs and
// --logprobs-mode.
//
// Config's other fields play what real servers do differently from vLLM
// (LlamaCpp and LlamaCppPython set those of llama.cpp's server and of
// llama-cpp-python's): another log-probability format, n > 1 refused,
// any model name answered as the server's own id, response_format
// json_schema refused with a 500, structured_outputs and
// allowed_token_ids ignored, GET /v1/models not answered while
// generating, and one slot that queues requests (GET /props says how
// many).
//
// Faults are injected deterministically: the kind of fault the k-th
// request of a call gets is a function of the seed, the call's ID and k
// (or of Config.Plan), never of arrival order, so a test with a fixed seed
// sees the same faults on every run.
//
// A call's ID is a digest of its request body as JSON (keys sorted): two
// requests have the same ID when they ask the same thing of the same
// model with the same seed. Counters are kept per ID (Server.Calls), so a
// test can assert that each call was answered exactly once, or that a call
// answered before a crash was not asked again. The samples of one request
// sent without a seed are identical requests, one ID: give calls seeds
// when a test counts per call.
//
// A Server's methods are safe for concurrent use.
package llmtest

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
)

// Config is what a Server serves.
type Config struct {
	// Models are the ids GET /v1/models lists; a request naming another
	// model gets 404 (default: "test-model").
	Models []string
	// Script answers requests: the first matching rule answers.
	Script []Rule
	// Default answers requests no rule matches ("OK" when empty).
	Default string
	// IgnoreSchema makes the server an old one that does not know
	// response_format or structured_outputs: Request.Schema and
	// Request.Choice stay empty, so rules answer as if unconstrained.
	IgnoreSchema bool
	// Fields, when not nil, are the top-level request fields the server
	// knows: a request carrying any other gets 400 "Unrecognized request
	// argument supplied: NAME", as OpenAI's API answers (OpenAIFields).
	// When nil, the server ignores fields it does not know, as vLLM and
	// llama.cpp's server do.
	Fields []string
	// APIKey, when set, is the bearer token every request must carry
	// (401 otherwise).
	APIKey string
	// Delay is how long every answer takes (a model's latency).
	Delay time.Duration
	// AnswerModel, when set, is the id every answer names in its `model`
	// field instead of the request's: a server that reports the dated
	// model behind an alias (OpenAI's API), or one that names every
	// answer after itself.
	AnswerModel string

	// Faults gives each kind of fault the fraction of requests that get it
	// (the fractions sum to at most 1); Seed makes the draw reproducible.
	Faults map[Fault]float64
	Seed   uint64
	// Plan, when set, decides instead of Faults: the fault of a call's
	// attempt-th request (0 for its first), "" for none.
	Plan func(id string, attempt int) Fault
	// RetryAfter is the Retry-After header of a TooMany fault ("1" when
	// empty; "-" sends none).
	RetryAfter string
	// SlowFor is how long a Slow fault waits before answering, unless the
	// client gives up first (default 30 s).
	SlowFor time.Duration

	// MaxLogprobs, when above 0, is the most top log-probabilities a
	// request may ask for: more gets 400, as vLLM answers a request past
	// its --max-logprobs.
	MaxLogprobs int
	// NoLogprobs makes the server one that does not return
	// log-probabilities: it answers requests that ask for them without.
	NoLogprobs bool
	// LogprobsMode is what a scripted distribution's (Rule.Next) top
	// log-probabilities are, as vLLM's --logprobs-mode: "" (the
	// default) masked by allowed_token_ids and sent as Next gives them,
	// which no vLLM mode does; ProcessedLogprobs masked and renormalised
	// (log-softmax over the allowed candidates), then filled up to the
	// asked count with masked candidates at MaskedLogprob, as vLLM 0.32
	// answers; RawLogprobs the whole
	// distribution ranked before the mask, as vLLM's default does (the
	// answer is still the best allowed candidate).
	LogprobsMode string
	// IgnoreTokenIDs makes the server one that does not know vLLM's
	// return_tokens_as_token_ids: top log-probabilities always name
	// token texts.
	IgnoreTokenIDs bool

	// What real servers other than vLLM do (LlamaCpp and LlamaCppPython
	// set them as those servers behave).

	// LogprobsFormat is how log-probabilities are written: "" as OpenAI's
	// API (chat {content: [...]}, completions {tokens, token_logprobs,
	// top_logprobs}), or LlamaCppLogprobs: the chat form for both APIs,
	// each entry with its token id and bytes, as llama.cpp's server
	// answers /v1/completions too.
	LogprobsFormat string
	// MaxN, when above 0, is the most choices a request may ask for (n):
	// more gets 400 "Only one completion choice is allowed", as
	// llama.cpp's server answers n > 1.
	MaxN int
	// AnyModel makes the server answer a request naming any model (never
	// 404) as itself: the answer's model field is Models[0] (unless
	// AnswerModel says otherwise), as llama.cpp's and llama-cpp-python's
	// servers, which serve one model, do.
	AnyModel bool
	// RefuseJSONSchema, when set, is the HTTP status of the answer to a
	// request with response_format {type: json_schema}, with the body
	// llama-cpp-python's server sends (a pydantic literal_error: it takes
	// only "text" and "json_object", and answers 500). json_object is
	// still served (Request.JSONObject).
	RefuseJSONSchema int
	// IgnoreStructuredOutputs makes the server ignore vLLM's
	// structured_outputs (Request.Schema and Choice stay empty for it),
	// as every server but vLLM does, silently.
	IgnoreStructuredOutputs bool
	// IgnoreAllowedTokenIDs makes the server ignore vLLM's
	// allowed_token_ids: a scripted distribution (Rule.Next) answers its
	// best candidate of all, as llama.cpp's and llama-cpp-python's servers
	// do, silently.
	IgnoreAllowedTokenIDs bool
	// BusyModels makes GET /v1/models and GET /props wait while any
	// completion request is in the server, as llama-cpp-python's server
	// (its model lock) and llama.cpp's (its HTTP threads all taken by
	// waiting completions) do while they generate.
	BusyModels bool
	// Slots, when above 0, is how many completion requests the server
	// computes at once (each for Delay); the others wait their turn in
	// arrival order. A request is computed to its end even when its
	// client has left (Stats.Abandoned counts those), as a one-slot
	// llama.cpp or llama-cpp-python server does: the time a request
	// waits in the queue is part of what its client sees.
	Slots int
	// Props serves GET /props (at the root, beside /v1) with
	// total_slots = Slots, as llama.cpp's server does.
	Props bool
}

// LlamaCppLogprobs is Config.LogprobsFormat for llama.cpp's server.
const LlamaCppLogprobs = "llama.cpp"

// LlamaCpp is cfg with what llama.cpp's server (llama-server) does
// differently from vLLM: one slot unless cfg says (--parallel) and
// GET /props naming it, log-probabilities in the chat form for both
// APIs, n > 1 refused (400), any model name answered as its own id,
// structured_outputs, allowed_token_ids and return_tokens_as_token_ids
// ignored, and GET /v1/models not answered while it generates.
func LlamaCpp(cfg Config) Config {
	if cfg.Slots == 0 {
		cfg.Slots = 1
	}
	cfg.Props = true
	cfg.LogprobsFormat = LlamaCppLogprobs
	cfg.MaxN = 1
	cfg.AnyModel = true
	cfg.IgnoreStructuredOutputs = true
	cfg.IgnoreAllowedTokenIDs = true
	cfg.IgnoreTokenIDs = true
	cfg.BusyModels = true
	return cfg
}

// LlamaCppPython is cfg with what llama-cpp-python's server
// (python -m llama_cpp.server) does differently from vLLM: one model
// lock (one slot, no GET /props), response_format json_schema answered
// with HTTP 500 (it takes text and json_object), any model name answered
// as its own id, structured_outputs, allowed_token_ids and
// return_tokens_as_token_ids ignored, and GET /v1/models not answered
// while it generates.
func LlamaCppPython(cfg Config) Config {
	if cfg.Slots == 0 {
		cfg.Slots = 1
	}
	cfg.RefuseJSONSchema = http.StatusInternalServerError
	cfg.AnyModel = true
	cfg.IgnoreStructuredOutputs = true
	cfg.IgnoreAllowedTokenIDs = true
	cfg.IgnoreTokenIDs = true
	cfg.BusyModels = true
	return cfg
}

// jsonSchemaRefusal is the message llama-cpp-python's server answers a
// response_format json_schema with (HTTP 500).
const jsonSchemaRefusal = `[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': "Input should be 'text' or 'json_object'", 'input': 'json_schema', 'ctx': {'expected': "'text' or 'json_object'"}}]`

// The modes of Config.LogprobsMode, spelt as vLLM's --logprobs-mode.
const (
	ProcessedLogprobs = "processed_logprobs"
	RawLogprobs       = "raw_logprobs"
)

// MaskedLogprob is the log-probability vLLM writes for a token its
// allowed_token_ids mask forbade (−∞, clamped for JSON): under
// processed_logprobs such tokens fill top_logprobs past the allowed ones
// when a request asks for more.
const MaskedLogprob = -9999.0

// Rule is one scripted answer. All of its set conditions must hold. When
// and Reply are called from the server's handlers, concurrently.
type Rule struct {
	Model    string         // the request names this model
	Contains string         // Request.Text contains this
	Regexp   *regexp.Regexp // Request.Text matches this
	When     func(Request) bool

	// Next, when set, scripts the model's next-token distribution
	// instead of Answer: the answer is one token, the most probable
	// candidate the request allows (every candidate, or those whose ID
	// is in the request's allowed_token_ids, as vLLM's mask does), and
	// the top log-probabilities are the request's count of the best
	// allowed candidates, best first (ties by token). The log-probabilities
	// are sent as Next gives them, not renormalised over the allowed set,
	// unless Config.LogprobsMode says otherwise. An empty allowed set
	// answers 400.
	Next func(Request) []Candidate

	Answer    string               // the answer's text
	Reply     func(Request) string // computes the answer instead of Answer
	Reasoning string               // sent as reasoning_content (chat)
	Status    int                  // answer this HTTP status and an error instead (e.g. 400)
	Error     string               // the error's message ("scripted error" when empty)
	// Raw, when set, is the whole body of a 200 answer, sent as it is
	// (a broken or lying server: invalid UTF-8, a null content, another
	// model's id); nil sends the scripted answer. Faults still apply
	// before it.
	Raw func(Request) []byte
}

func (r *Rule) matches(q Request) bool {
	return (r.Model == "" || r.Model == q.Model) &&
		(r.Contains == "" || strings.Contains(q.Text(), r.Contains)) &&
		(r.Regexp == nil || r.Regexp.MatchString(q.Text())) &&
		(r.When == nil || r.When(q))
}

// OpenAIFields are the request fields OpenAI's chat and completions APIs
// accept (the union of the two), for Config.Fields: vLLM's
// structured_outputs is not among them.
var OpenAIFields = []string{
	"audio", "best_of", "echo", "frequency_penalty", "function_call", "functions",
	"logit_bias", "logprobs", "max_completion_tokens", "max_tokens", "messages",
	"metadata", "modalities", "model", "n", "parallel_tool_calls", "prediction",
	"presence_penalty", "prompt", "prompt_cache_key", "reasoning_effort",
	"response_format", "safety_identifier", "seed", "service_tier", "stop", "store",
	"stream", "stream_options", "suffix", "temperature", "tool_choice", "tools",
	"top_logprobs", "top_p", "user", "verbosity", "web_search_options",
}

// Candidate is a token a scripted model may produce next (Rule.Next):
// its text, its id in the model's vocabulary and its log-probability.
type Candidate struct {
	Token   string
	ID      int
	Logprob float64
}

// Fault is a kind of injected failure.
type Fault string

// The kinds of fault.
const (
	TooMany     Fault = "429"       // 429 with Retry-After
	ServerError Fault = "500"       // 500
	Unavailable Fault = "503"       // 503
	Slow        Fault = "slow"      // the answer comes after SlowFor (past the client's timeout)
	Drop        Fault = "drop"      // the connection closes halfway through the answer's body
	Malformed   Fault = "malformed" // 200 with a body that is not JSON
	Empty       Fault = "empty"     // 200 with no choices
)

// AllFaults is every kind of fault.
var AllFaults = []Fault{TooMany, ServerError, Unavailable, Slow, Drop, Malformed, Empty}

// Spread gives each of kinds an equal share of rate, for Config.Faults.
func Spread(rate float64, kinds ...Fault) map[Fault]float64 {
	m := make(map[Fault]float64, len(kinds))
	for _, k := range kinds {
		m[k] = rate / float64(len(kinds))
	}
	return m
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is a request as the server understood it.
type Request struct {
	ID          string // the call's identity (package doc)
	API         string // "chat" or "completions"
	Model       string
	Messages    []Message
	Prompt      string
	Temperature *float64
	TopP        *float64
	MaxTokens   int
	Stop        []string
	Seed        *int64
	Logprobs    int // top log-probabilities asked for per token (0: none)
	// AllowedTokenIDs is vLLM's allowed_token_ids (nil when absent).
	AllowedTokenIDs []int
	Schema          json.RawMessage // response_format's json_schema, or structured_outputs' json
	Choice          []string        // structured_outputs' choice
	// JSONObject says the request asked for response_format
	// {type: json_object} (any JSON object).
	JSONObject bool
	Body       map[string]any // the whole request

	jsonSchema bool // response_format {type: json_schema}, known or not
}

// Text is what rules match: the last user message, or the prompt.
func (r Request) Text() string {
	if r.API == "completions" {
		return r.Prompt
	}
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// Call is what the server saw of one call ID.
type Call struct {
	ID       string
	Request  Request // its first request
	Requests int     // requests received
	Answers  int     // complete answers sent
}

// Entry is one request in the log.
type Entry struct {
	ID       string
	Received time.Time
	Fault    Fault // "" when it was answered as scripted
	Status   int   // the HTTP status sent (0 when the connection was dropped or the client left)
}

// Stats counts what the server did.
type Stats struct {
	Requests    int           // POST requests received
	Answers     int           // complete answers sent
	Faults      map[Fault]int // faults injected, by kind
	Status      map[int]int   // responses by HTTP status
	MaxInFlight int           // the most POST requests handled at once
	// Abandoned counts the requests a server with Slots computed to their
	// end after their client had left (a timed-out request the server
	// kept computing).
	Abandoned int
	// MaxComputing is the most requests a server with Slots computed at
	// once (at most Slots).
	MaxComputing int
}

// Server is a running scripted server.
type Server struct {
	cfg  Config
	srv  *http.Server
	url  string
	stop context.Context
	quit context.CancelFunc

	mu       sync.Mutex
	idle     *sync.Cond // signalled when inFlight drops
	stats    Stats
	inFlight int
	calls    map[string]*Call
	order    []string
	log      []Entry

	slots     *fifo // nil without Config.Slots
	computing int
}

// New starts a server on 127.0.0.1 (a free port). It panics when it
// cannot listen, as httptest.NewServer does.
func New(cfg Config) *Server {
	if len(cfg.Models) == 0 {
		cfg.Models = []string{"test-model"}
	}
	if cfg.Default == "" {
		cfg.Default = "OK"
	}
	if cfg.RetryAfter == "" {
		cfg.RetryAfter = "1"
	}
	if cfg.SlowFor <= 0 {
		cfg.SlowFor = 30 * time.Second
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("llmtest: listen: %v", err))
	}
	s := &Server{cfg: cfg, calls: map[string]*Call{}}
	if cfg.Slots > 0 {
		s.slots = newFIFO(cfg.Slots)
	}
	s.idle = sync.NewCond(&s.mu)
	s.stats.Faults = map[Fault]int{}
	s.stats.Status = map[int]int{}
	s.stop, s.quit = context.WithCancel(context.Background())
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", s.models)
	if cfg.Props {
		mux.HandleFunc("GET /props", s.props)
	}
	mux.HandleFunc("POST /v1/chat/completions", s.complete)
	mux.HandleFunc("POST /v1/completions", s.complete)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.url = "http://" + ln.Addr().String() + "/v1"
	go s.srv.Serve(ln)
	return s
}

// URL is the base URL, ending in /v1.
func (s *Server) URL() string { return s.url }

// Close stops the server: it closes every connection and waits for the
// handlers (a slow answer in progress is abandoned).
func (s *Server) Close() {
	s.quit()
	s.srv.Close()
	s.mu.Lock()
	for s.inFlight > 0 {
		s.idle.Wait()
	}
	s.mu.Unlock()
}

// Stats returns the counters so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Faults = make(map[Fault]int, len(s.stats.Faults))
	for k, v := range s.stats.Faults {
		st.Faults[k] = v
	}
	st.Status = make(map[int]int, len(s.stats.Status))
	for k, v := range s.stats.Status {
		st.Status[k] = v
	}
	return st
}

// Calls returns what the server saw of each call, in the order their
// first requests arrived.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Call, len(s.order))
	for i, id := range s.order {
		out[i] = *s.calls[id]
	}
	return out
}

// Log returns every POST request so far, in arrival order.
func (s *Server) Log() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) || !s.notBusy(r.Context()) {
		return
	}
	data := make([]map[string]any, len(s.cfg.Models))
	for i, m := range s.cfg.Models {
		data[i] = map[string]any{"id": m, "object": "model", "created": 0, "owned_by": "llmtest", "root": m}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// props answers GET /props as llama.cpp's server does (the part of it
// clients read: total_slots).
func (s *Server) props(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) || !s.notBusy(r.Context()) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"total_slots":                 s.cfg.Slots,
		"model_path":                  s.cfg.Models[0],
		"default_generation_settings": map[string]any{"n_ctx": 4096},
	})
}

// notBusy waits, with Config.BusyModels, until no completion request is
// in the server; false when the client left or the server closed first.
func (s *Server) notBusy(ctx context.Context) bool {
	if !s.cfg.BusyModels {
		return true
	}
	for {
		s.mu.Lock()
		n := s.inFlight
		s.mu.Unlock()
		if n == 0 {
			return true
		}
		if !s.wait(ctx, 5*time.Millisecond) {
			return false
		}
	}
}

func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if s.cfg.APIKey == "" || r.Header.Get("Authorization") == "Bearer "+s.cfg.APIKey {
		return true
	}
	writeError(w, http.StatusUnauthorized, "invalid API key")
	return false
}

// complete serves both completion endpoints.
func (s *Server) complete(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.stats.Requests++
	s.inFlight++
	s.stats.MaxInFlight = max(s.stats.MaxInFlight, s.inFlight)
	entry := len(s.log)
	s.log = append(s.log, Entry{Received: time.Now()})
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.idle.Broadcast()
		s.mu.Unlock()
	}()
	// Everything is counted before the client can see it, so that a
	// client that has its answer finds it counted.
	sent := func(code int) {
		s.mu.Lock()
		s.log[entry].Status = code
		s.stats.Status[code]++
		s.mu.Unlock()
	}
	reject := func(code int, msg string) {
		sent(code)
		writeError(w, code, msg)
	}
	if s.cfg.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+s.cfg.APIKey {
		reject(http.StatusUnauthorized, "invalid API key")
		return
	}
	q, err := parseRequest(r, &s.cfg)
	if err != nil {
		reject(http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	call := s.calls[q.ID]
	if call == nil {
		call = &Call{ID: q.ID, Request: q}
		s.calls[q.ID] = call
		s.order = append(s.order, q.ID)
	}
	attempt := call.Requests
	call.Requests++
	s.log[entry].ID = q.ID
	s.mu.Unlock()
	if s.cfg.Fields != nil {
		var unknown []string
		for k := range q.Body {
			if !slices.Contains(s.cfg.Fields, k) {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			slices.Sort(unknown)
			reject(http.StatusBadRequest, "Unrecognized request argument supplied: "+strings.Join(unknown, ", "))
			return
		}
	}
	if !slices.Contains(s.cfg.Models, q.Model) && !s.cfg.AnyModel {
		reject(http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist.", q.Model))
		return
	}
	if n, ok := q.Body["n"].(float64); ok && s.cfg.MaxN > 0 && n > float64(s.cfg.MaxN) {
		reject(http.StatusBadRequest, "Only one completion choice is allowed")
		return
	}
	if s.cfg.RefuseJSONSchema != 0 && q.jsonSchema {
		reject(s.cfg.RefuseJSONSchema, jsonSchemaRefusal)
		return
	}
	if b, _ := q.Body["stream"].(bool); b {
		reject(http.StatusBadRequest, "llmtest does not stream")
		return
	}
	if q.API == "chat" && len(q.Messages) == 0 {
		reject(http.StatusBadRequest, "messages: at least one message is required")
		return
	}
	if s.cfg.MaxLogprobs > 0 && q.Logprobs > s.cfg.MaxLogprobs {
		reject(http.StatusBadRequest, fmt.Sprintf("Requested logprobs of %d, which is greater than max allowed: %d", q.Logprobs, s.cfg.MaxLogprobs))
		return
	}
	fault := s.fault(q.ID, attempt)
	if fault != "" {
		s.mu.Lock()
		s.log[entry].Fault = fault
		s.stats.Faults[fault]++
		s.mu.Unlock()
	}
	switch fault {
	case TooMany:
		if s.cfg.RetryAfter != "-" {
			w.Header().Set("Retry-After", s.cfg.RetryAfter)
		}
		reject(http.StatusTooManyRequests, "too many requests")
		return
	case ServerError:
		reject(http.StatusInternalServerError, "internal server error")
		return
	case Unavailable:
		reject(http.StatusServiceUnavailable, "service unavailable")
		return
	case Slow:
		if !s.wait(r.Context(), s.cfg.SlowFor) {
			return
		}
	}
	var rule *Rule
	for i := range s.cfg.Script {
		if s.cfg.Script[i].matches(q) {
			rule = &s.cfg.Script[i]
			break
		}
	}
	if rule != nil && rule.Status != 0 {
		msg := rule.Error
		if msg == "" {
			msg = "scripted error"
		}
		reject(rule.Status, msg)
		return
	}
	if !s.compute(r.Context()) {
		return
	}
	text, reasoning := s.cfg.Default, ""
	var top []Candidate
	if rule != nil {
		text, reasoning = rule.Answer, rule.Reasoning
		if rule.Reply != nil {
			text = rule.Reply(q)
		}
		if rule.Next != nil {
			all := rule.Next(q)
			mask := q.AllowedTokenIDs
			if s.cfg.IgnoreAllowedTokenIDs {
				mask = nil
			}
			top = allowed(all, mask)
			if len(top) == 0 {
				reject(http.StatusBadRequest, "no candidate token is allowed")
				return
			}
			text = top[0].Token
			switch s.cfg.LogprobsMode {
			case ProcessedLogprobs:
				top = renormalize(top)
				// Asked for more alternatives than the mask allows, vLLM
				// fills the list with masked tokens at −∞, which its JSON
				// writes as -9999.0.
				for _, c := range allowed(all, nil) {
					if len(top) >= q.Logprobs {
						break
					}
					if !slices.ContainsFunc(top, func(t Candidate) bool { return t.ID == c.ID }) {
						c.Logprob = MaskedLogprob
						top = append(top, c)
					}
				}
			case RawLogprobs:
				top = allowed(all, nil)
			}
		}
	}
	if s.cfg.NoLogprobs {
		q.Logprobs = 0
	}
	ids, _ := q.Body["return_tokens_as_token_ids"].(bool)
	model := q.Model
	if s.cfg.AnyModel {
		model = s.cfg.Models[0]
	}
	if s.cfg.AnswerModel != "" {
		model = s.cfg.AnswerModel
	}
	body := answer(q, model, text, reasoning, top, ids && !s.cfg.IgnoreTokenIDs, s.cfg.LogprobsFormat == LlamaCppLogprobs)
	if rule != nil && rule.Raw != nil {
		if raw := rule.Raw(q); raw != nil {
			body = raw
		}
	}
	switch fault {
	case Drop:
		drop(w, body)
		return
	case Malformed:
		body = body[:len(body)/2]
	case Empty:
		body = []byte(`{"id":"x","object":"chat.completion","model":"` + q.Model + `","choices":[],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	sent(http.StatusOK)
	answered := fault != Malformed && fault != Empty
	if answered {
		s.answered(call, 1)
	}
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(body); err != nil && answered {
		s.answered(call, -1)
	}
}

func (s *Server) answered(c *Call, n int) {
	s.mu.Lock()
	c.Answers += n
	s.stats.Answers += n
	s.mu.Unlock()
}

// compute is the time a request takes the model: Delay, unless the
// client leaves or the server closes first; with Config.Slots, in a slot
// taken in arrival order and held for the whole Delay even when the
// client leaves (false then, once done, and counted as abandoned).
func (s *Server) compute(ctx context.Context) bool {
	if s.slots == nil {
		return s.wait(ctx, s.cfg.Delay)
	}
	if !s.slots.acquire(s.stop) {
		return false
	}
	s.mu.Lock()
	s.computing++
	s.stats.MaxComputing = max(s.stats.MaxComputing, s.computing)
	s.mu.Unlock()
	done := s.wait(context.Background(), s.cfg.Delay)
	s.mu.Lock()
	s.computing--
	left := ctx.Err() != nil
	if left && done {
		s.stats.Abandoned++
	}
	s.mu.Unlock()
	s.slots.release()
	return done && !left
}

// fifo is a counting semaphore that serves waiters in arrival order.
type fifo struct {
	mu      sync.Mutex
	free    int
	waiters []chan struct{}
}

func newFIFO(n int) *fifo { return &fifo{free: n} }

// acquire waits for a slot; false when stop is done first.
func (f *fifo) acquire(stop context.Context) bool {
	f.mu.Lock()
	if f.free > 0 && len(f.waiters) == 0 {
		f.free--
		f.mu.Unlock()
		return true
	}
	w := make(chan struct{})
	f.waiters = append(f.waiters, w)
	f.mu.Unlock()
	select {
	case <-w:
		return true
	case <-stop.Done():
		f.mu.Lock()
		defer f.mu.Unlock()
		select {
		case <-w: // granted meanwhile: hand it on
			f.releaseLocked()
		default:
			f.waiters = slices.DeleteFunc(f.waiters, func(c chan struct{}) bool { return c == w })
		}
		return false
	}
}

func (f *fifo) release() {
	f.mu.Lock()
	f.releaseLocked()
	f.mu.Unlock()
}

func (f *fifo) releaseLocked() {
	if len(f.waiters) > 0 {
		w := f.waiters[0]
		f.waiters = f.waiters[1:]
		close(w)
		return
	}
	f.free++
}

// wait sleeps d unless the client leaves or the server closes first.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.stop.Done():
		return false
	}
}

// fault draws the fault of a call's attempt-th request.
func (s *Server) fault(id string, attempt int) Fault {
	if s.cfg.Plan != nil {
		return s.cfg.Plan(id, attempt)
	}
	if len(s.cfg.Faults) == 0 {
		return ""
	}
	h := sha256.New()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], s.cfg.Seed)
	binary.LittleEndian.PutUint64(b[8:], uint64(attempt))
	h.Write(b[:])
	h.Write([]byte(id))
	u := float64(binary.LittleEndian.Uint64(h.Sum(nil))>>11) / (1 << 53)
	acc := 0.0
	for _, k := range AllFaults {
		acc += s.cfg.Faults[k]
		if u < acc {
			return k
		}
	}
	return ""
}

// drop sends the status line, the headers and half the body, then closes
// the connection.
func drop(w http.ResponseWriter, body []byte) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("llmtest: the connection cannot be hijacked")
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	buf.Write(body[:len(body)/2])
	buf.Flush()
}

func parseRequest(r *http.Request, cfg *Config) (Request, error) {
	var raw json.RawMessage
	if err := json.NewDecoder(bufio.NewReader(r.Body)).Decode(&raw); err != nil {
		return Request{}, fmt.Errorf("request body is not JSON: %v", err)
	}
	var q Request
	if err := json.Unmarshal(raw, &q.Body); err != nil {
		return Request{}, fmt.Errorf("request body is not a JSON object: %v", err)
	}
	var w struct {
		Model           string          `json:"model"`
		Messages        []Message       `json:"messages"`
		Prompt          *string         `json:"prompt"`
		Temperature     *float64        `json:"temperature"`
		TopP            *float64        `json:"top_p"`
		MaxTokens       int             `json:"max_tokens"`
		Stop            json.RawMessage `json:"stop"`
		Seed            *int64          `json:"seed"`
		Logprobs        json.RawMessage `json:"logprobs"`
		TopLogprobs     int             `json:"top_logprobs"`
		AllowedTokenIDs []int           `json:"allowed_token_ids"`
		ResponseFormat  *struct {
			Type       string `json:"type"`
			JSONSchema *struct {
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
		StructuredOutputs *struct {
			JSON   json.RawMessage `json:"json"`
			Choice []string        `json:"choice"`
		} `json:"structured_outputs"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return Request{}, fmt.Errorf("request: %v", err)
	}
	q.API = "chat"
	if strings.HasSuffix(r.URL.Path, "/v1/completions") {
		q.API = "completions"
		if w.Prompt == nil {
			return Request{}, fmt.Errorf("prompt is required")
		}
		q.Prompt = *w.Prompt
	}
	q.Model, q.Messages, q.Temperature, q.TopP, q.MaxTokens, q.Seed = w.Model, w.Messages, w.Temperature, w.TopP, w.MaxTokens, w.Seed
	q.AllowedTokenIDs = w.AllowedTokenIDs
	if len(w.Stop) > 0 && string(w.Stop) != "null" {
		var one string
		if json.Unmarshal(w.Stop, &one) == nil {
			q.Stop = []string{one}
		} else if err := json.Unmarshal(w.Stop, &q.Stop); err != nil {
			return Request{}, fmt.Errorf("stop: want a string or a list of strings")
		}
	}
	if len(w.Logprobs) > 0 {
		var b bool
		if json.Unmarshal(w.Logprobs, &b) == nil {
			if b {
				q.Logprobs = max(1, w.TopLogprobs)
			}
		} else if err := json.Unmarshal(w.Logprobs, &q.Logprobs); err != nil {
			return Request{}, fmt.Errorf("logprobs: want a boolean or an integer")
		}
	}
	if rf := w.ResponseFormat; rf != nil {
		q.jsonSchema = rf.Type == "json_schema"
		q.JSONObject = rf.Type == "json_object" && !cfg.IgnoreSchema
	}
	if !cfg.IgnoreSchema {
		if rf := w.ResponseFormat; rf != nil && rf.Type == "json_schema" && rf.JSONSchema != nil {
			q.Schema = rf.JSONSchema.Schema
		}
		if so := w.StructuredOutputs; so != nil && !cfg.IgnoreStructuredOutputs {
			if len(so.JSON) > 0 {
				q.Schema = so.JSON
			}
			q.Choice = so.Choice
		}
	}
	canon, _ := json.Marshal(q.Body) // map keys sorted
	sum := sha256.Sum256(append([]byte(q.API+"\x00"), canon...))
	q.ID = hex.EncodeToString(sum[:12])
	return q, nil
}

// allowed is the candidates whose ID is in ids (all of them when ids is
// nil), best first, ties by token.
func allowed(cands []Candidate, ids []int) []Candidate {
	set := make(map[int]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	var out []Candidate
	for _, c := range cands {
		if ids == nil || set[c.ID] {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b Candidate) int {
		switch {
		case a.Logprob > b.Logprob:
			return -1
		case a.Logprob < b.Logprob:
			return 1
		}
		return strings.Compare(a.Token, b.Token)
	})
	return out
}

// renormalize is cands (best first) with log-probabilities log-softmax
// over cands: vLLM's processed_logprobs after the allowed_token_ids mask.
func renormalize(cands []Candidate) []Candidate {
	out := slices.Clone(cands)
	best := out[0].Logprob
	sum := 0.0
	for _, c := range out {
		sum += math.Exp(c.Logprob - best)
	}
	z := best + math.Log(sum)
	for i := range out {
		out[i].Logprob -= z
	}
	return out
}

// answer builds the response body for text, from model; top, when not nil, is the
// scripted distribution of its single token (Rule.Next).
func answer(q Request, model, text, reasoning string, top []Candidate, tokenIDs, llamaCpp bool) []byte {
	finish := "stop"
	for _, st := range q.Stop {
		if i := strings.Index(text, st); st != "" && i >= 0 {
			text = text[:i]
		}
	}
	if q.MaxTokens > 0 {
		if cut, ok := cutTokens(text, q.MaxTokens); ok {
			text, finish = cut, "length"
		}
	}
	prompt := q.Prompt
	for _, m := range q.Messages {
		prompt += " " + m.Content
	}
	usage := map[string]int{"prompt_tokens": tokens(prompt), "completion_tokens": tokens(text)}
	usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
	choice := map[string]any{"index": 0, "finish_reason": finish}
	object := "text_completion"
	if q.API == "chat" {
		object = "chat.completion"
		msg := map[string]any{"role": "assistant", "content": text}
		if reasoning != "" {
			msg["reasoning_content"] = reasoning
		}
		choice["message"] = msg
	} else {
		choice["text"] = text
	}
	switch {
	case q.Logprobs > 0 && top != nil:
		choice["logprobs"] = scripted(q, text, top, tokenIDs, llamaCpp)
	case q.Logprobs > 0:
		choice["logprobs"] = logprobs(q, text, llamaCpp)
	}
	b, err := json.Marshal(map[string]any{
		"id": "llmtest-" + q.ID, "object": object, "created": 0, "model": model,
		"choices": []any{choice}, "usage": usage,
	})
	if err != nil {
		panic(err)
	}
	return b
}

// logprobs makes up log-probabilities for the answer's whitespace tokens:
// token i has log-probability -0.1·(i mod 5), and each alternative j
// (named "alt<j>") one less per rank. With llamaCpp, both APIs answer
// the chat form with token ids (token i's is i, alternative j's 1000j)
// and bytes, as llama.cpp's server does.
func logprobs(q Request, text string, llamaCpp bool) any {
	toks := strings.Fields(text)
	lp := func(i int) float64 { return float64(-(i % 5)) / 10 }
	if q.API == "chat" || llamaCpp {
		entry := func(tok string, id int, logprob float64) map[string]any {
			e := map[string]any{"token": tok, "logprob": logprob}
			if llamaCpp {
				e["id"], e["bytes"] = id, byteList(tok)
			}
			return e
		}
		content := make([]any, len(toks))
		for i, t := range toks {
			top := []any{entry(t, i, lp(i))}
			for j := 1; j < q.Logprobs; j++ {
				top = append(top, entry("alt"+strconv.Itoa(j), 1000*j, lp(i)-float64(j)))
			}
			e := entry(t, i, lp(i))
			e["top_logprobs"] = top
			content[i] = e
		}
		return map[string]any{"content": content}
	}
	lps := make([]float64, len(toks))
	tops := make([]map[string]float64, len(toks))
	for i, t := range toks {
		lps[i] = lp(i)
		tops[i] = map[string]float64{t: lp(i)}
		for j := 1; j < q.Logprobs; j++ {
			tops[i]["alt"+strconv.Itoa(j)] = lp(i) - float64(j)
		}
	}
	return map[string]any{"tokens": toks, "token_logprobs": lps, "top_logprobs": tops}
}

// scripted is the logprobs of a one-token answer, text, with the
// request's count of top alternatives from top (best first); with
// tokenIDs (vLLM's return_tokens_as_token_ids), tokens read "token_id:ID".
// The answer's own entry is its candidate in top (top[0] when text is not
// there).
func scripted(q Request, text string, top []Candidate, tokenIDs, llamaCpp bool) any {
	chosen := top[0]
	if i := slices.IndexFunc(top, func(c Candidate) bool { return c.Token == text }); i >= 0 {
		chosen = top[i]
	}
	if tokenIDs {
		chosen.Token = "token_id:" + strconv.Itoa(chosen.ID)
	}
	top = slices.Clone(top[:min(len(top), q.Logprobs)])
	if tokenIDs {
		for i := range top {
			top[i].Token = "token_id:" + strconv.Itoa(top[i].ID)
		}
	}
	if q.API == "chat" || llamaCpp {
		entry := func(c Candidate) map[string]any {
			e := map[string]any{"token": c.Token, "logprob": c.Logprob}
			if llamaCpp {
				e["id"], e["bytes"] = c.ID, byteList(c.Token)
			}
			return e
		}
		alts := make([]any, len(top))
		for i, c := range top {
			alts[i] = entry(c)
		}
		e := entry(chosen)
		e["top_logprobs"] = alts
		return map[string]any{"content": []any{e}}
	}
	alts := make(map[string]float64, len(top))
	for _, c := range top {
		alts[c.Token] = c.Logprob
	}
	return map[string]any{"tokens": []string{chosen.Token}, "token_logprobs": []float64{chosen.Logprob}, "top_logprobs": []any{alts}}
}

func tokens(s string) int { return len(strings.Fields(s)) }

// byteList is s's bytes as a JSON list of numbers (llama.cpp's "bytes").
func byteList(s string) []int {
	out := make([]int, len(s))
	for i := range len(s) {
		out[i] = int(s[i])
	}
	return out
}

// cutTokens cuts s after its n-th whitespace-separated token.
func cutTokens(s string, n int) (string, bool) {
	seen, in := 0, false
	for i, r := range s {
		sp := unicode.IsSpace(r)
		if !sp && !in {
			if seen == n {
				return strings.TrimRightFunc(s[:i], unicode.IsSpace), true
			}
			seen++
		}
		in = !sp
	}
	return s, false
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": http.StatusText(status), "code": status}})
}

// Settle returns once no request has arrived for d: the last requests of
// a client that was killed may still be on their way into the handlers,
// and a test that counts requests from now on must not see them.
func (s *Server) Settle(d time.Duration) {
	for prev := -1; ; {
		n := s.Stats().Requests
		if n == prev {
			return
		}
		prev = n
		time.Sleep(d)
	}
}
