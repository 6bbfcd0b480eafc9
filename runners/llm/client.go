package llm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Endpoint is how to reach one served model. None of it but Structured is
// part of a call's key: moving the server or changing its limits keeps the
// cache.
type Endpoint struct {
	BaseURL    string // e.g. http://127.0.0.1:8000/v1; errors show it through RedactURL
	APIKey     string // sent as a bearer token when not empty
	ServedName string // the `model` field of every request
	// Reported is the id the server may name in its answers' `model`
	// field besides ServedName (OpenAI's API answers a request for an
	// alias under the dated model behind it); "*" accepts any id, or
	// none. Empty: an answer must name ServedName. An answer naming
	// another model fails its call (Client.Do) and is never cached.
	Reported string
	// Timeout bounds each attempt (0: DefaultTimeout), counted from when
	// the server could start on it: while the server answers other
	// attempts in flight through the same Limiter (a server with fewer
	// slots than the calls in flight queues them), its clock restarts at
	// each of their answers, up to Timeout × the most attempts in flight
	// during its life. A request the server is still computing is not
	// abandoned and resent just because it waited its turn (queue).
	Timeout time.Duration
	// Slots is how many requests the server computes at once, when known
	// (Client.Slots; 0: unknown): an attempt can then be behind at most
	// ⌈in flight / Slots⌉ − 1 others, and with no more calls in flight
	// than slots its Timeout counts from its sending. Callers also cap
	// Concurrency to it.
	Slots       int
	Concurrency int // the most calls in flight (the adaptive limit starts here; 0: DefaultConcurrency)
	MaxRetries  int // per call, after the first try (0: DefaultMaxRetries; NoRetries: none)
	// Structured is how a request's Schema or Choice goes on the wire:
	// ResponseFormat ("" and JSONSchema mean it), StructuredOutputs,
	// JSONObject or NoConstraint. One mechanism, never two: OpenAI's API
	// refuses fields it does not know, and vLLM refuses two constraints
	// at once. Any but ResponseFormat enters the key of a constrained
	// call (Client.Do): the mechanisms are different requests and
	// different servers' code paths, and may answer differently. Every
	// answer to a constrained request is checked here
	// (Response.SchemaHeld), whatever was sent.
	Structured string
}

// The ways of sending a structured-output constraint (Endpoint.Structured).
const (
	// ResponseFormat sends OpenAI's response_format {type: json_schema},
	// which vLLM, llama.cpp's server and OpenAI's API accept. A Choice
	// goes as a schema whose root is a string enum (the answer is a JSON
	// string); OpenAI's API wants an object at a schema's root, so use a
	// Schema there.
	ResponseFormat = "response_format"
	// StructuredOutputs sends vLLM's own structured_outputs {json} or
	// {choice} (a Choice is answered as the bare string). Only a vLLM
	// recent enough to have it knows it: OpenAI's API answers 400, and a
	// server that ignores unknown fields answers unconstrained.
	StructuredOutputs = "structured_outputs"
	// JSONSchema is ResponseFormat under the name of its type
	// (structured_output = "json_schema", the default).
	JSONSchema = "json_schema"
	// JSONObject sends response_format {type: json_object} (any JSON
	// object; llama-cpp-python's server takes it, not json_schema) and
	// puts the schema in the prompt (appended to the last user message,
	// or to the prompt); the answer is checked against the schema here. A
	// Choice is sent unconstrained (json_object asks for an object) and
	// checked here.
	JSONObject = "json_object"
	// NoConstraint sends no constraint at all: the answer is only checked
	// here, against the schema or the choices.
	NoConstraint = "none"
)

// NoRetries as Endpoint.MaxRetries makes every call a single try (the
// zero value means DefaultMaxRetries). Any negative value means the same.
const NoRetries = -1

// Defaults for an Endpoint's zero fields.
const (
	DefaultMaxRetries  = 8
	DefaultTimeout     = 5 * time.Minute
	DefaultConcurrency = 8
)

// DefaultBackoff is the retry schedule of a client without WithBackoff.
var DefaultBackoff = Backoff{Base: 200 * time.Millisecond, Max: 20 * time.Second}

// maxAnswer bounds the bytes read from one answer (8 MiB): the buffer one
// attempt holds.
const maxAnswer = 8 << 20

// Client calls one endpoint. Its methods are safe for concurrent use.
type Client struct {
	ep       Endpoint
	shown    string // ep.BaseURL, redacted (RedactURL)
	identity string
	cache    Cache
	limiter  *Limiter
	http     *http.Client
	backoff  Backoff
	stats    recorder
	noMarker atomic.Bool // the cache held no refusal of json_schema (refusedBefore)

	// start, when set (WithStart), gives the base URL the first time a
	// call needs the server (a server started on demand); guarded by
	// startMu, as are ep.BaseURL and shown until then.
	start    func(ctx context.Context) (string, error)
	startMu  sync.Mutex
	started  bool
	startErr error
}

// Option configures a Client.
type Option func(*Client)

// WithCache makes the client look every call up in c before making it and
// store it there once it completes; identity is the model's identity (id,
// revision, the id the server reports), the first part of every key.
func WithCache(c Cache, identity string) Option {
	return func(cl *Client) { cl.cache, cl.identity = c, identity }
}

// WithStart makes the client ask start for the server's base URL the
// first time a call is not answered from the cache (the server is started
// then, not before: a plan, or a run whose calls are all cached, starts
// nothing). A failure to start fails that call and every later one, with
// start's error; one caused by the call's context being done is retried
// by the next call. Endpoint.BaseURL is ignored.
func WithStart(start func(ctx context.Context) (string, error)) Option {
	return func(cl *Client) { cl.start = start }
}

// ensureStarted runs start once (WithStart).
func (c *Client) ensureStarted(ctx context.Context) error {
	if c.start == nil {
		return nil
	}
	c.startMu.Lock()
	defer c.startMu.Unlock()
	if c.started {
		return c.startErr
	}
	u, err := c.start(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.started, c.startErr = true, fmt.Errorf("starting the model's server: %w", err)
			return c.startErr
		}
		return err
	}
	c.started = true
	c.ep.BaseURL = strings.TrimRight(u, "/")
	c.shown = RedactURL(c.ep.BaseURL)
	return nil
}

// WithLimiter shares a concurrency limiter between clients (the nodes that
// call one model share its limit).
func WithLimiter(l *Limiter) Option { return func(cl *Client) { cl.limiter = l } }

// WithHTTPClient replaces the HTTP client. Its Timeout should be zero: the
// client bounds each attempt by Endpoint.Timeout.
func WithHTTPClient(h *http.Client) Option { return func(cl *Client) { cl.http = h } }

// WithBackoff replaces the retry schedule (a zero Base or Max takes
// DefaultBackoff's).
func WithBackoff(b Backoff) Option { return func(cl *Client) { cl.backoff = b } }

// Backoff is the retry schedule: Base doubled each try, capped at Max, with
// full jitter; a Retry-After the server sends wins when it is longer.
type Backoff struct {
	Base, Max time.Duration
}

// delay is the wait before retry number n (0: the first retry): uniform in
// [0, min(Max, Base·2ⁿ)].
func (b Backoff) delay(n int) time.Duration {
	d := b.Max
	if n < 62 && b.Base<<n > 0 && b.Base<<n < b.Max {
		d = b.Base << n
	}
	return rand.N(d + 1)
}

// sharedHTTP is the HTTP client of clients without WithHTTPClient: one
// connection pool for the process, wide enough for every model's limit.
// It uses no proxy (the proxy variables are environment the library does
// not read); a caller that needs one passes WithHTTPClient.
var sharedHTTP = func() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 256
	return &http.Client{Transport: t}
}()

// New returns a client for ep. Without WithLimiter it has a limiter of its
// own with ep.Concurrency slots; without WithCache it caches nothing.
func New(ep Endpoint, opts ...Option) *Client {
	ep.BaseURL = strings.TrimRight(ep.BaseURL, "/")
	if ep.Timeout <= 0 {
		ep.Timeout = DefaultTimeout
	}
	if ep.Concurrency <= 0 {
		ep.Concurrency = DefaultConcurrency
	}
	switch {
	case ep.MaxRetries == 0:
		ep.MaxRetries = DefaultMaxRetries
	case ep.MaxRetries < 0:
		ep.MaxRetries = 0
	}
	c := &Client{ep: ep, shown: RedactURL(ep.BaseURL), http: sharedHTTP, backoff: DefaultBackoff}
	for _, o := range opts {
		o(c)
	}
	if c.limiter == nil {
		c.limiter = NewLimiter(ep.Concurrency)
	}
	if c.backoff.Base <= 0 {
		c.backoff.Base = DefaultBackoff.Base
	}
	if c.backoff.Max <= 0 {
		c.backoff.Max = DefaultBackoff.Max
	}
	return c
}

// StatusError is an answer with an HTTP status other than 2xx.
type StatusError struct {
	Status int
	Body   string // an excerpt
	// Refused says the server refused the request itself: any 4xx but
	// 408 and 429, and a 5xx whose message is about the request (a
	// response_format it does not take, a validation error), as
	// llama-cpp-python's server answers json_schema with HTTP 500.
	// Such a call fails at once, never retried (Refused).
	Refused bool
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("HTTP %d %s: %s", e.Status, http.StatusText(e.Status), e.Body)
	if e.Refused && e.Status/100 == 5 {
		s += " (the server's message is about the request, not its load: not retried)"
	}
	return s
}

// Models lists the model ids the server reports at GET /models. It tries
// once, within ProbeTimeout (or the endpoint's timeout when shorter): a
// wrong endpoint fails plans quickly. A server that accepts the
// connection but answers nothing in that time fails with an error that
// wraps ErrBusy: llama.cpp's and llama-cpp-python's servers do not answer
// GET /models while they generate.
func (c *Client) Models(ctx context.Context) ([]string, error) {
	b, err := c.get(ctx, "/models", false)
	if err != nil {
		return nil, fmt.Errorf("list models: %w", err)
	}
	shown := c.shown + "/models"
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("list models: GET %s: not a model list: %w", shown, err)
	}
	ids := make([]string, len(list.Data))
	for i, m := range list.Data {
		ids[i] = m.ID
	}
	return ids, nil
}

// Do makes one call, or replays it from the cache. Failures are returned,
// never cached.
//
// A cached call returns at once with Cached set. Otherwise the call is
// sent, retried on 429, 5xx, timeouts, dropped connections and malformed
// answers (at most Endpoint.MaxRetries times, after the
// Backoff's delay or the server's Retry-After capped at MaxRetryAfter; a
// Retry-After that would outlast ctx's deadline fails the call at once,
// saying so), and, once answered, stored in the cache before Do returns:
// a process killed after Do returned never makes the call again. A
// refusal of the request itself fails at once with the server's message
// (a *StatusError with Refused set, in the chain): any other 4xx, and a
// 5xx whose message is about the request (llama-cpp-python answers a
// response_format it does not take with 500), which another try would
// only repeat. An attempt reads
// at most 8 MiB of answer: a longer one fails the call without a retry,
// so that many calls in flight cannot exhaust memory. Cancelling ctx
// stops the call promptly.
//
// Only a true answer is returned and cached. Malformed, and retried like
// a dropped connection: a body that is not valid UTF-8 (or escapes a lone
// UTF-16 surrogate; neither is ever replaced by U+FFFD), that does not
// decode as the API's answer, that has no choices, a choice without
// finish_reason, a chat message whose content is null (unless its
// reasoning or refusal field carries what the model produced: a
// reasoning model that spent max_tokens thinking answers that way) or a
// completion whose text is null. Failed at once: an answer that names
// another model than the one asked for (Endpoint.ServedName, or
// Endpoint.Reported), which is a misrouted request or a server that
// answers any name as its own (the error says what it calls itself), a
// chat answer that is a tool call (the client sends no tools and reads no
// tool calls), and an answer without the top log-probabilities the
// request asked for (a server that ignores the field; never cached as an
// answer without them).
//
// A constrained request (Schema or Choice) goes as Endpoint.Structured
// says. Under the default, json_schema, a server that refuses
// response_format json_schema (a refusal naming it) is asked once more
// through the fallback: the schema in the prompt with response_format
// json_object (choices: unconstrained), the answer checked here, and
// Response.Warning saying so; the refusal is remembered for the process
// and in the cache, so that later calls to the server go straight to the
// fallback (under the fallback's key).
func (c *Client) Do(ctx context.Context, call Call) (*Response, error) {
	c.stats.begin()
	resp, err := c.do(ctx, call)
	if err != nil {
		c.stats.fail()
		return nil, fmt.Errorf("llm: %s call to %s (sample %d): %w", call.Request.API, c.ep.ServedName, call.Sample, err)
	}
	return resp, nil
}

func (c *Client) do(ctx context.Context, call Call) (*Response, error) {
	req := &call.Request
	if err := checkMode(c.ep.Structured); err != nil {
		return nil, err
	}
	sc, err := validate(call)
	if err != nil {
		return nil, err
	}
	mode := c.mode()
	if len(req.Schema) == 0 && len(req.Choice) == 0 || mode != ResponseFormat {
		return c.call(ctx, call, sc, mode, "")
	}
	if refusal, ok := c.refusedBefore(); ok {
		mode = fallbackMode(req)
		return c.call(ctx, call, sc, mode, fallbackWarning(refusal, mode))
	}
	resp, err := c.call(ctx, call, sc, mode, "")
	refusal, ok := refusesJSONSchema(err)
	if !ok {
		return resp, err
	}
	c.refused(refusal)
	mode = fallbackMode(req)
	return c.call(ctx, call, sc, mode, fallbackWarning(refusal, mode))
}

// refusedBefore says whether the server is known to refuse response_format
// json_schema: it did in this process, or the call cache holds its
// refusal (refusalKey), and what it said.
func (c *Client) refusedBefore() (string, bool) {
	if r, ok := refusals.Load(c.refusalKey()); ok {
		return r.(string), true
	}
	if c.cache == nil || c.noMarker.Load() {
		return "", false
	}
	b, ok, err := c.cache.Get(c.refusalCacheKey())
	var r struct {
		Refusal string `json:"refusal"`
	}
	if err != nil || !ok || json.Unmarshal(b, &r) != nil || r.Refusal == "" {
		c.noMarker.Store(true) // a refusal from now on is in refusals
		return "", false
	}
	refusals.Store(c.refusalKey(), r.Refusal)
	return r.Refusal, true
}

// refused records that the server refused response_format json_schema,
// for the process and in the call cache (so that a resumed run, and its
// plan, go straight to the fallback).
func (c *Client) refused(refusal string) {
	refusals.Store(c.refusalKey(), refusal)
	if c.cache != nil {
		b, _ := json.Marshal(map[string]string{"refusal": refusal}) // a string map always encodes
		c.cache.Put(c.refusalCacheKey(), b)                         // best effort: a lost marker costs one refused request
	}
}

// refusalCacheKey is the call-cache key of a server's refusal of
// json_schema: the lower-case hex SHA-256 of "lacuna-refusal-v1", the
// identity, the base URL and the served name, separated by zero bytes.
// The URL is in it because the refusal is the server's, not the model's.
func (c *Client) refusalCacheKey() string {
	h := sha256.New()
	h.Write([]byte("lacuna-refusal-v1\x00" + c.identity + "\x00" + c.ep.BaseURL + "\x00" + c.ep.ServedName))
	return hex.EncodeToString(h.Sum(nil))
}

// call replays the call from the cache under mode's key, or makes it
// with its constraint sent as mode says; warning, when not empty, is the
// Response.Warning of an answer it makes.
func (c *Client) call(ctx context.Context, call Call, sc *schema, mode, warning string) (*Response, error) {
	req := &call.Request
	key := ""
	if c.cache != nil {
		key = c.keyFor(call, mode)
		if r := c.lookup(key); r != nil {
			c.stats.replayed()
			return r, nil
		}
	}
	body, path, err := c.body(call, mode)
	if err != nil {
		return nil, err
	}
	if err := c.ensureStarted(ctx); err != nil {
		return nil, err
	}
	var resp *Response
	for try := 0; ; try++ {
		r, ae := c.attempt(ctx, path, body, req.API)
		if ae == nil {
			resp = r
			resp.Retries = try
			break
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (after %d tries; last: %v)", ctx.Err(), try+1, ae.err)
		}
		if !ae.retry {
			return nil, ae.err
		}
		if try >= c.ep.MaxRetries {
			return nil, fmt.Errorf("giving up after %d tries: %w", try+1, ae.err)
		}
		wait := ae.wait(c.backoff, try)
		if dl, ok := ctx.Deadline(); ok && ae.after > 0 && time.Until(dl) < wait {
			return nil, fmt.Errorf("the server asks to wait %s before a retry, past the call's deadline (after %d tries; last: %w)", ae.after, try+1, ae.err)
		}
		c.stats.retried()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (waiting to retry after %d tries; last: %v)", ctx.Err(), try+1, ae.err)
		}
	}
	if err := c.checkLogprobs(req, resp); err != nil {
		return nil, err
	}
	if len(req.Schema) > 0 || len(req.Choice) > 0 {
		held, why := checkAnswer(req, sc, resp.Text)
		if !held {
			why = c.brokeConstraint(why, mode, resp)
		}
		resp.SchemaHeld, resp.SchemaError = &held, why
	}
	resp.Warning = warning
	if c.cache != nil {
		b, err := json.Marshal(resp)
		if err != nil {
			return nil, fmt.Errorf("encode answer: %w", err)
		}
		if err := c.cache.Put(key, b); err != nil {
			return nil, fmt.Errorf("store call %s: %w", key, err)
		}
	}
	c.stats.made(resp)
	return resp, nil
}

// checkLogprobs fails an answer without the top log-probabilities its
// request asked for: a server that ignores logprobs / top_logprobs, or
// sends them in a form parseLogprobs does not read. Such an answer is
// never cached: it would be replayed as an empty ranking. An answer of no
// tokens has none to give.
func (c *Client) checkLogprobs(req *Request, resp *Response) error {
	if req.Logprobs <= 0 || (resp.Text == "" && resp.OutputTokens == 0) {
		return nil
	}
	for _, t := range resp.Logprobs {
		if len(t.Top) > 0 {
			return nil
		}
	}
	who := c.shown
	if resp.Server != "" {
		who += " (Server: " + resp.Server + ")"
	}
	what := "no log-probabilities"
	if len(resp.Logprobs) > 0 {
		what = "token log-probabilities but no top alternatives"
	}
	return fmt.Errorf("the server at %s answered without top log-probabilities (%s, %d asked for per token): it ignores the request's logprobs / top_logprobs, or sends them in a form this client does not read; the answer is not cached", who, what, req.Logprobs)
}

// lookup returns the cached call, or nil on a miss; an unreadable entry,
// or one naming a model this client does not accept (written before
// answers were checked), is a miss (the call is made again and its entry
// rewritten).
func (c *Client) lookup(key string) *Response {
	b, ok, err := c.cache.Get(key)
	if err != nil || !ok {
		return nil
	}
	var r Response
	if json.Unmarshal(b, &r) != nil || c.wrongModel(r.Model, r.Server) != "" {
		return nil
	}
	r.Cached = true
	return &r
}

// Cached reports whether the cache holds the call (for plans). A client
// without a cache holds nothing.
func (c *Client) Cached(call Call) bool { return c.Lookup(call) != nil }

// Lookup returns the answer Do would replay for the call, Cached set, or
// nil when the cache does not hold it (or the client has no cache). A
// constrained call to a server known to refuse response_format
// json_schema is looked up under its fallback's key, as Do would make it.
func (c *Client) Lookup(call Call) *Response {
	if c.cache == nil || checkMode(c.ep.Structured) != nil {
		return nil
	}
	mode := c.mode()
	if mode == ResponseFormat && (len(call.Request.Schema) > 0 || len(call.Request.Choice) > 0) {
		if _, ok := c.refusedBefore(); ok {
			mode = fallbackMode(&call.Request)
		}
	}
	return c.lookup(c.keyFor(call, mode))
}

// keyFor is the call's cache key when its constraint is sent as mode:
// Key, except for a constrained request (Schema or Choice) sent any other
// way than ResponseFormat, whose key has the mode ("structured_outputs",
// "json_object", "none") after the sample index (a zero byte between): a
// cached answer obtained through one mechanism is never replayed for
// another, while unconstrained calls, which send none, keep one key.
func (c *Client) keyFor(call Call, mode string) string {
	if mode != ResponseFormat && (len(call.Request.Schema) > 0 || len(call.Request.Choice) > 0) {
		return callKey(c.identity, call, mode)
	}
	return Key(c.identity, call)
}

// Key is the cache key of a call to the model with this identity, its
// constraint (if any) sent as response_format: the lower-case hex SHA-256
// of "lacuna-call-v1", identity, the request's canonical JSON (json.Marshal
// of Request, its Schema compacted) and the decimal sample index, separated
// by zero bytes. Timeouts, retries, concurrency and the endpoint are not
// part of it. A client whose endpoint sends constraints as
// structured_outputs keys constrained calls differently (Client.Do).
func Key(identity string, call Call) string { return callKey(identity, call, "") }

// callKey is Key with, when via is not empty, a zero byte and via after
// the sample index.
func callKey(identity string, call Call, via string) string {
	h := sha256.New()
	h.Write([]byte("lacuna-call-v1\x00"))
	h.Write([]byte(identity))
	h.Write([]byte{0})
	h.Write(canonical(call.Request))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(call.Sample)))
	if via != "" {
		h.Write([]byte{0})
		h.Write([]byte(via))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func canonical(r Request) []byte {
	if len(r.Schema) > 0 {
		var b bytes.Buffer
		if json.Compact(&b, r.Schema) == nil {
			r.Schema = b.Bytes()
		} else {
			// Do refuses such a request; the key stays defined.
			q, _ := json.Marshal(string(r.Schema))
			r.Schema = q
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("llm: encode request: %v", err)) // a Request always encodes
	}
	return b
}

// validate checks what the server cannot be asked to fix, and parses the
// schema.
func validate(call Call) (*schema, error) {
	r := &call.Request
	switch r.API {
	case "chat":
		if len(r.Messages) == 0 {
			return nil, errors.New("chat request has no messages")
		}
	case "completions":
	default:
		return nil, fmt.Errorf("request API %q: want \"chat\" or \"completions\"", r.API)
	}
	if call.Sample < 0 {
		return nil, fmt.Errorf("sample index %d is negative", call.Sample)
	}
	if r.Logprobs < 0 {
		return nil, fmt.Errorf("logprobs %d is negative", r.Logprobs)
	}
	if len(r.Schema) > 0 && len(r.Choice) > 0 {
		return nil, errors.New("request has both a schema and choices")
	}
	if err := CheckParams(r.Params); err != nil {
		return nil, err
	}
	if len(r.Schema) == 0 {
		return nil, nil
	}
	sc, err := parseSchema(r.Schema)
	if err != nil {
		return nil, fmt.Errorf("request's %w", err)
	}
	return sc, nil
}

// reserved are the body fields the client sets itself, or that would
// change the answer's format under it (stream, n): no param may name one.
var reserved = []string{
	"logprobs", "max_tokens", "messages", "model", "n", "prompt", "response_format", "seed",
	"stop", "stream", "structured_outputs", "temperature", "top_logprobs", "top_p",
}

// CheckParams reports a param that names a body field the client sets
// itself or reads the answer by (model, messages, prompt, temperature,
// top_p, max_tokens, stop, seed, logprobs, top_logprobs,
// response_format, structured_outputs, stream, n): such fields are set
// through Request's own fields, never overridden by a param.
func CheckParams(params map[string]string) error {
	var bad []string
	for k := range params {
		if slices.Contains(reserved, k) {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad)
	return fmt.Errorf("params %s: the client sets these fields itself (use the request's own fields)", strings.Join(bad, ", "))
}

// paramValue is a param's value on the wire: its JSON when it parses as
// JSON, else a JSON string.
func paramValue(v string) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, []byte(v)) == nil {
		return b.Bytes()
	}
	q, _ := json.Marshal(v) // a string always encodes
	return q
}

// The wire format of a request (OpenAI's, or with vLLM's
// structured_outputs instead of response_format).
type wireRequest struct {
	Model             string             `json:"model"`
	Messages          []Message          `json:"messages,omitempty"`
	Prompt            *string            `json:"prompt,omitempty"`
	Temperature       *float64           `json:"temperature,omitempty"`
	TopP              *float64           `json:"top_p,omitempty"`
	MaxTokens         int                `json:"max_tokens,omitempty"`
	Stop              []string           `json:"stop,omitempty"`
	Seed              *int64             `json:"seed,omitempty"`
	Logprobs          any                `json:"logprobs,omitempty"` // chat: true; completions: how many
	TopLogprobs       int                `json:"top_logprobs,omitempty"`
	ResponseFormat    *responseFormat    `json:"response_format,omitempty"`
	StructuredOutputs *structuredOutputs `json:"structured_outputs,omitempty"`
}

type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *jsonSchema `json:"json_schema,omitempty"`
}

type jsonSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
}

type structuredOutputs struct {
	JSON   json.RawMessage `json:"json,omitempty"`
	Choice []string        `json:"choice,omitempty"`
}

// body encodes the call for the wire, its constraint sent as mode says,
// and names its path.
func (c *Client) body(call Call, mode string) ([]byte, string, error) {
	r := call.Request
	w := wireRequest{
		Model:       c.ep.ServedName,
		Temperature: r.Temperature,
		TopP:        r.TopP,
		MaxTokens:   r.MaxTokens,
		Stop:        r.Stop,
	}
	if r.Seed != nil {
		s := *r.Seed + int64(call.Sample)
		w.Seed = &s
	}
	path := "/chat/completions"
	if r.API == "chat" {
		w.Messages = r.Messages
		if r.Logprobs > 0 {
			w.Logprobs, w.TopLogprobs = true, r.Logprobs
		}
	} else {
		path = "/completions"
		w.Prompt = &r.Prompt
		if r.Logprobs > 0 {
			w.Logprobs = r.Logprobs
		}
	}
	if err := constrain(&w, &r, mode); err != nil {
		return nil, "", err
	}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, "", fmt.Errorf("encode request: %w", err)
	}
	if len(r.Params) == 0 {
		return b, path, nil
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, "", fmt.Errorf("encode request: %w", err)
	}
	for k, v := range r.Params {
		fields[k] = paramValue(v) // CheckParams kept the client's fields out
	}
	if b, err = json.Marshal(fields); err != nil {
		return nil, "", fmt.Errorf("encode request's params: %w", err)
	}
	return b, path, nil
}

func (c *Client) auth(req *http.Request) {
	if c.ep.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.ep.APIKey)
	}
}

// attemptError is why one attempt failed and whether to try again.
type attemptError struct {
	err   error
	retry bool
	after time.Duration // the server's Retry-After, as it asked
}

// MaxRetryAfter caps the wait a server's Retry-After can impose before a
// retry: a server asking for longer is retried after MaxRetryAfter.
const MaxRetryAfter = 5 * time.Minute

// wait is how long to wait before retry number n: the backoff's delay, or
// the server's Retry-After (at most MaxRetryAfter) when that is longer.
func (ae *attemptError) wait(b Backoff, n int) time.Duration {
	return max(b.delay(n), min(ae.after, MaxRetryAfter))
}

// attempt sends the request once, holding a slot of the limiter, within
// the endpoint's timeout as the limiter's queue counts it (queue).
func (c *Client) attempt(ctx context.Context, path string, body []byte, api string) (*Response, *attemptError) {
	s, err := c.limiter.acquire(ctx)
	if err != nil {
		return nil, &attemptError{err: err}
	}
	o := neutral
	defer func() { s.release(o) }()
	start := time.Now()
	q := c.limiter.queue.enter(start)
	answered := false
	defer func() { c.limiter.queue.leave(q, answered, time.Now()) }()
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := c.watch(q, cancel)
	defer stop()
	shown := c.shown + path
	req, err := http.NewRequestWithContext(actx, http.MethodPost, c.ep.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		return nil, &attemptError{err: fmt.Errorf("POST %s: %w", shown, scrub(err))}
	}
	req.Header.Set("Content-Type", "application/json")
	c.auth(req)
	hresp, err := c.http.Do(req)
	if err != nil {
		return nil, &attemptError{err: c.transportError(actx, shown, err), retry: true}
	}
	defer hresp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(hresp.Body, maxAnswer+1))
	answered = err == nil
	if hresp.StatusCode/100 != 2 {
		se := &StatusError{Status: hresp.StatusCode, Body: excerpt(string(b), 300), Refused: aboutRequest(hresp.StatusCode, string(b))}
		ae := &attemptError{err: fmt.Errorf("POST %s: %w", shown, se)}
		switch {
		case hresp.StatusCode == http.StatusTooManyRequests:
			o = overload
			ae.retry = true
		case hresp.StatusCode >= 500 && !se.Refused, hresp.StatusCode == http.StatusRequestTimeout:
			ae.retry = true
		}
		if ae.retry {
			ae.after = retryAfter(hresp.Header.Get("Retry-After"), time.Now())
		}
		return nil, ae
	}
	if err != nil {
		return nil, &attemptError{err: fmt.Errorf("POST %s: reading the answer: %w", shown, c.transportError(actx, shown, err)), retry: true}
	}
	if len(b) > maxAnswer {
		return nil, &attemptError{err: fmt.Errorf("POST %s: answer longer than %d MiB", shown, maxAnswer>>20)}
	}
	r, err := parseAnswer(b, api)
	if err != nil {
		var fe *finalError
		return nil, &attemptError{err: fmt.Errorf("POST %s: %w", shown, err), retry: !errors.As(err, &fe)}
	}
	r.Server = hresp.Header.Get("Server")
	if why := c.wrongModel(r.Model, r.Server); why != "" {
		return nil, &attemptError{err: fmt.Errorf("POST %s: %s", shown, why)}
	}
	r.Latency = time.Since(start)
	o = success
	return r, nil
}

// errNoAnswer is the cause of an attempt the watch cancelled.
var errNoAnswer = errors.New("no answer")

// watch cancels the attempt (cause errNoAnswer) at its deadline, as the
// queue moves it; stop ends the watch.
func (c *Client) watch(q *queued, cancel context.CancelCauseFunc) (stop func()) {
	var mu sync.Mutex
	stopped := false
	var t *time.Timer
	var check func()
	check = func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		d := time.Until(c.limiter.queue.deadline(q, c.ep.Timeout, c.ep.Slots))
		if d <= 0 {
			cancel(errNoAnswer)
			return
		}
		t = time.AfterFunc(d, check)
	}
	mu.Lock()
	t = time.AfterFunc(c.ep.Timeout, check)
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
	}
}

// transportError names a timeout of the attempt as such, and keeps the
// credentials of the URL out of the error.
// ctx is the attempt's.
func (c *Client) transportError(ctx context.Context, shown string, err error) error {
	err = scrub(err)
	if errors.Is(context.Cause(ctx), errNoAnswer) {
		return fmt.Errorf("POST %s: no answer within %s of the server being free to start on it: %w", shown, c.ep.Timeout, context.DeadlineExceeded)
	}
	return err
}

// scrub redacts the URL of a *url.Error (net/http's errors name the URL,
// and mask only a password in it).
func scrub(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return &url.Error{Op: ue.Op, URL: RedactURL(ue.URL), Err: ue.Err}
	}
	return err
}

// RedactURL is rawURL fit for an error or a log: a password in it is
// masked ((*url.URL).Redacted), and so is a user name that comes without
// one (a token passed as the user). Of a URL that does not parse, the
// user info is masked by hand. Every error of this package and of
// nodes/llmenv shows URLs through it.
func RedactURL(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil {
		if u.User != nil {
			if _, ok := u.User.Password(); !ok {
				u.User = url.User("xxxxx")
			}
		}
		return u.Redacted()
	}
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		scheme, rest = "", rawURL
	} else {
		scheme += "://"
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
		rest = "xxxxx@" + rest[at+1:]
	}
	return scheme + rest
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date. What
// it returns is what the server asked for, up to a million seconds (the
// wait itself is capped at MaxRetryAfter).
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(h, 64); err == nil {
		if s <= 0 || math.IsNaN(s) {
			return 0
		}
		return time.Duration(min(s, 1e6) * float64(time.Second))
	}
	for _, parse := range []func(string) (time.Time, error){http.ParseTime, func(s string) (time.Time, error) { return time.Parse(time.RFC1123, s) }} {
		if t, err := parse(h); err == nil {
			if t.After(now) {
				return t.Sub(now)
			}
			return 0
		}
	}
	return 0
}

// wrongModel says why an answer naming model, from a server whose Server
// header is server, is not an answer of the model this client asks for
// ("" when it is).
func (c *Client) wrongModel(model, server string) string {
	switch {
	case c.ep.Reported == "*", model == c.ep.ServedName, c.ep.Reported != "" && model == c.ep.Reported:
		return ""
	case model == "":
		return fmt.Sprintf("the answer names no model (asked for %q); if the server never does, set reported_name = \"*\" in the model block", c.ep.ServedName)
	}
	want := fmt.Sprintf("%q", c.ep.ServedName)
	if c.ep.Reported != "" {
		want = fmt.Sprintf("%q (or %q)", c.ep.ServedName, c.ep.Reported)
	}
	who := "the server"
	if server != "" {
		who += " (Server: " + server + ")"
	}
	return fmt.Sprintf("the answer is from model %q, not %s as asked: %s calls itself %q. It routed the request to another model, or it serves one model and answers any model name as its own (llama.cpp's and llama-cpp-python's servers do); if %q is the model you mean, set reported_name = %q in the model block", model, want, who, model, model, model)
}

// finalError is a malformed answer that another try would not mend.
type finalError struct{ msg string }

func (e *finalError) Error() string { return e.msg }

// The wire format of an answer.
type wireAnswer struct {
	Model   string `json:"model"`
	Choices []struct {
		Text    *string `json:"text"`
		Message *struct {
			Content          *string         `json:"content"`
			ReasoningContent string          `json:"reasoning_content"`
			Reasoning        string          `json:"reasoning"`
			Refusal          *string         `json:"refusal"`
			ToolCalls        json.RawMessage `json:"tool_calls"`
		} `json:"message"`
		FinishReason *string         `json:"finish_reason"`
		Logprobs     json.RawMessage `json:"logprobs"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// parseAnswer reads a 2xx answer; an error means the answer is malformed
// (worth another try, unless it is a *finalError).
func parseAnswer(b []byte, api string) (*Response, error) {
	if err := checkText(b); err != nil {
		return nil, fmt.Errorf("malformed answer: %w", err)
	}
	var w wireAnswer
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("malformed answer (%v): %s", err, excerpt(string(b), 120))
	}
	if len(w.Choices) == 0 {
		return nil, fmt.Errorf("answer has no choices: %s", excerpt(string(b), 120))
	}
	ch := w.Choices[0]
	if ch.FinishReason == nil || *ch.FinishReason == "" {
		return nil, fmt.Errorf("answer's choice has no finish_reason: %s", excerpt(string(b), 120))
	}
	if w.Usage.PromptTokens < 0 || w.Usage.CompletionTokens < 0 {
		return nil, fmt.Errorf("answer's usage counts negative tokens: %s", excerpt(string(b), 120))
	}
	r := &Response{
		FinishReason: *ch.FinishReason,
		Model:        w.Model,
		PromptTokens: w.Usage.PromptTokens,
		OutputTokens: w.Usage.CompletionTokens,
	}
	if api == "chat" {
		m := ch.Message
		if m == nil {
			return nil, fmt.Errorf("answer's choice has no message: %s", excerpt(string(b), 120))
		}
		r.Reasoning = m.ReasoningContent
		if r.Reasoning == "" {
			r.Reasoning = m.Reasoning
		}
		if m.Refusal != nil {
			r.Refusal = *m.Refusal
		}
		switch {
		case m.Content != nil:
			r.Text = *m.Content
		case len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" && string(m.ToolCalls) != "[]":
			return nil, &finalError{"the answer is a tool call, not text (the client sends no tools; a model block's params must not add them): " + excerpt(string(b), 120)}
		case r.Reasoning == "" && r.Refusal == "":
			return nil, fmt.Errorf("answer's message has null content: %s", excerpt(string(b), 120))
		}
	} else {
		if ch.Text == nil {
			return nil, fmt.Errorf("answer's choice has no text: %s", excerpt(string(b), 120))
		}
		r.Text = *ch.Text
	}
	if len(ch.Logprobs) > 0 && string(ch.Logprobs) != "null" {
		lp, err := parseLogprobs(ch.Logprobs)
		if err != nil {
			return nil, fmt.Errorf("answer's logprobs: %w", err)
		}
		r.Logprobs = lp
	}
	return r, nil
}

// parseLogprobs reads a choice's logprobs in either form a server sends,
// whatever the API: the chat form {"content": [{token, logprob,
// top_logprobs: [{token, logprob}]}]} (OpenAI's chat API, vLLM's chat,
// and llama.cpp's server for /v1/completions too; an entry with "prob"
// and "top_probs" instead, llama.cpp's post_sampling_probs, is read as
// their logarithms) or the completions form {tokens, token_logprobs,
// top_logprobs: [{token: logprob}]} (OpenAI's completions API, vLLM's,
// llama-cpp-python's). Alternatives at vLLM's -9999.0 or below (its
// JSON for −∞: under processed_logprobs, tokens the allowed_token_ids
// mask forbade fill the list past the allowed ones) are dropped: they
// were never candidates.
func parseLogprobs(b []byte) ([]Token, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return nil, err
	}
	if _, ok := keys["content"]; ok {
		return parseChatLogprobs(keys["content"])
	}
	var w struct {
		Tokens        []string             `json:"tokens"`
		TokenLogprobs []*float64           `json:"token_logprobs"`
		TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, err
	}
	toks := make([]Token, len(w.Tokens))
	for i, t := range w.Tokens {
		toks[i].Token = t
		if i < len(w.TokenLogprobs) && w.TokenLogprobs[i] != nil {
			toks[i].Logprob = *w.TokenLogprobs[i]
		}
		if i < len(w.TopLogprobs) && len(w.TopLogprobs[i]) > 0 {
			toks[i].Top = w.TopLogprobs[i]
			maps.DeleteFunc(toks[i].Top, func(_ string, lp float64) bool { return lp <= maskedLogprob })
		}
	}
	return toks, nil
}

// maskedLogprob is what vLLM writes for −∞ (a token masked out).
const maskedLogprob = -9999.0

// chatLogprob is one entry of the chat form.
type chatLogprob struct {
	Token   string   `json:"token"`
	Logprob *float64 `json:"logprob"`
	Prob    *float64 `json:"prob"`
}

// value is the entry's log-probability (a probability's logarithm).
func (e chatLogprob) value() float64 {
	switch {
	case e.Logprob != nil:
		return *e.Logprob
	case e.Prob != nil:
		return math.Log(*e.Prob)
	}
	return 0
}

func parseChatLogprobs(b []byte) ([]Token, error) {
	var content []struct {
		chatLogprob
		TopLogprobs []chatLogprob `json:"top_logprobs"`
		TopProbs    []chatLogprob `json:"top_probs"`
	}
	if string(b) != "null" {
		if err := json.Unmarshal(b, &content); err != nil {
			return nil, err
		}
	}
	toks := make([]Token, len(content))
	for i, t := range content {
		toks[i] = Token{Token: t.Token, Logprob: t.value()}
		alts := t.TopLogprobs
		if len(alts) == 0 {
			alts = t.TopProbs
		}
		if len(alts) > 0 {
			toks[i].Top = make(map[string]float64, len(alts))
			for _, a := range alts {
				if v := a.value(); v > maskedLogprob {
					toks[i].Top[a.Token] = v
				}
			}
		}
	}
	return toks, nil
}

// checkText reports a body that is not valid UTF-8, or whose JSON escapes
// a lone UTF-16 surrogate (\ud800 to \udfff unpaired): encoding/json
// would decode either to U+FFFD, an answer the model never gave.
func checkText(b []byte) error {
	if !utf8.Valid(b) {
		i := 0
		for i < len(b) {
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return fmt.Errorf("answer is not valid UTF-8 (byte %d)", i)
	}
	// Outside strings valid JSON has no backslash, so escapes can be
	// scanned without tracking strings; a body that is not JSON fails to
	// decode after this.
	// escape reads the \uXXXX escape at i, if there is one.
	escape := func(i int) (rune, bool) {
		if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
		return rune(v), err == nil
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		r, ok := escape(i)
		if !ok {
			i++ // the escaped character
			continue
		}
		switch {
		case r >= 0xd800 && r < 0xdc00:
			if lo, ok := escape(i + 6); ok && lo >= 0xdc00 && lo < 0xe000 {
				i += 11
				continue
			}
			return fmt.Errorf("answer escapes a lone UTF-16 surrogate at byte %d", i)
		case r >= 0xdc00 && r < 0xe000:
			return fmt.Errorf("answer escapes a lone UTF-16 surrogate at byte %d", i)
		}
		i += 5
	}
	return nil
}

// excerpt shortens s to about n bytes on one line.
func excerpt(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return s
}

// ProbeTimeout bounds the GET requests that ask a server what it serves
// (Models, Slots).
const ProbeTimeout = 10 * time.Second

// ErrBusy is wrapped by the error of a probe (Models, Slots) the server
// accepted but did not answer within ProbeTimeout: it is up, and busy
// (generating, on a server that answers nothing else meanwhile), or hung.
var ErrBusy = errors.New("the server accepted the connection but did not answer: busy generating (llama.cpp's and llama-cpp-python's servers answer nothing else meanwhile) or hung")

// get sends GET path (under BaseURL, or, with root, under BaseURL less
// its trailing /v1) once, within ProbeTimeout, and returns the 2xx body.
func (c *Client) get(ctx context.Context, path string, root bool) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, min(c.ep.Timeout, ProbeTimeout))
	defer cancel()
	base, shown := c.ep.BaseURL, c.shown
	if root {
		base, shown = strings.TrimSuffix(base, "/v1"), strings.TrimSuffix(shown, "/v1")
	}
	shown += path
	var connected atomic.Bool
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", shown, scrub(err))
	}
	c.auth(req)
	resp, err := c.http.Do(req)
	if err != nil {
		if connected.Load() && errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return nil, fmt.Errorf("GET %s: no answer within %s: %w", shown, min(c.ep.Timeout, ProbeTimeout), ErrBusy)
		}
		return nil, scrub(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", shown, scrub(err))
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("GET %s: %w", shown, &StatusError{Status: resp.StatusCode, Body: excerpt(string(b), 200), Refused: aboutRequest(resp.StatusCode, string(b))})
	}
	return b, nil
}

// Slots is how many requests the server computes at once, when it says
// (llama.cpp's server: GET /props total_slots at the root beside /v1,
// else the length of GET /slots); 0 when it says nothing (no such
// endpoint: vLLM, llama-cpp-python's server, hosted APIs). A server that
// does not answer in time fails with an error wrapping ErrBusy. Callers
// cap Endpoint.Concurrency to it: calls beyond the server's slots only
// queue there, and their timeouts count the queue.
func (c *Client) Slots(ctx context.Context) (int, error) {
	b, err := c.get(ctx, "/props", true)
	if err == nil {
		var p struct {
			TotalSlots int `json:"total_slots"`
		}
		if json.Unmarshal(b, &p) == nil && p.TotalSlots > 0 {
			return p.TotalSlots, nil
		}
	} else if errors.Is(err, ErrBusy) {
		return 0, fmt.Errorf("server slots: %w", err)
	}
	b, err = c.get(ctx, "/slots", true)
	if err != nil {
		var se *StatusError
		if errors.As(err, &se) {
			return 0, nil // no slots endpoint: the server does not say
		}
		return 0, fmt.Errorf("server slots: %w", err)
	}
	var slots []json.RawMessage
	if json.Unmarshal(b, &slots) != nil {
		return 0, nil
	}
	return len(slots), nil
}
