package llm

import (
	"context"
	"net/http"
	"time"
)

// Endpoint is how to reach one served model. None of it is part of a call's
// key: moving the server or changing its limits keeps the cache.
type Endpoint struct {
	BaseURL     string // e.g. http://127.0.0.1:8000/v1
	APIKey      string // sent as a bearer token when not empty
	ServedName  string // the `model` field of every request
	Timeout     time.Duration
	Concurrency int // the most calls in flight (the adaptive limit starts here)
	MaxRetries  int // per call, after the first try (0: DefaultMaxRetries)
}

// DefaultMaxRetries is Endpoint.MaxRetries when zero.
const DefaultMaxRetries = 8

// Client calls one endpoint. Its methods are safe for concurrent use.
type Client struct {
	ep       Endpoint
	identity string
	cache    Cache
	limiter  *Limiter
	http     *http.Client
	backoff  Backoff
}

// Option configures a Client.
type Option func(*Client)

// WithCache makes the client look every call up in c before making it and
// store it there once it completes; identity is the model's identity (id,
// revision, the id the server reports), the first part of every key.
func WithCache(c Cache, identity string) Option {
	return func(cl *Client) { cl.cache, cl.identity = c, identity }
}

// WithLimiter shares a concurrency limiter between clients (the nodes that
// call one model share its limit).
func WithLimiter(l *Limiter) Option { return func(cl *Client) { cl.limiter = l } }

// WithHTTPClient replaces the HTTP client.
func WithHTTPClient(h *http.Client) Option { return func(cl *Client) { cl.http = h } }

// WithBackoff replaces the retry schedule.
func WithBackoff(b Backoff) Option { return func(cl *Client) { cl.backoff = b } }

// Backoff is the retry schedule: Base doubled each try, capped at Max, with
// full jitter; a Retry-After the server sends wins when it is longer.
type Backoff struct {
	Base, Max time.Duration
}

// New returns a client for ep.
func New(ep Endpoint, opts ...Option) *Client {
	panic("llm: not implemented yet")
}

// Models lists the model ids the server reports at GET /models.
func (c *Client) Models(ctx context.Context) ([]string, error) {
	panic("llm: not implemented yet")
}

// Do makes one call, or replays it from the cache. Failures are returned,
// never cached.
func (c *Client) Do(ctx context.Context, call Call) (*Response, error) {
	panic("llm: not implemented yet")
}

// Key is the cache key of a call to the model with this identity.
func Key(identity string, call Call) string {
	panic("llm: not implemented yet")
}

// Cached reports whether the cache holds the call (for plans).
func (c *Client) Cached(call Call) bool {
	panic("llm: not implemented yet")
}

// Stats is what a client did so far.
func (c *Client) Stats() Stats {
	panic("llm: not implemented yet")
}

// Stats counts calls, tokens, retries and latencies.
type Stats struct {
	Calls        int64   `json:"calls"`  // completed, made here
	Cached       int64   `json:"cached"` // replayed from the cache
	Failed       int64   `json:"failed"`
	Retries      int64   `json:"retries"`
	PromptTokens int64   `json:"prompt_tokens"`
	OutputTokens int64   `json:"completion_tokens"`
	LatencyP50   float64 `json:"latency_p50_s"`
	LatencyP90   float64 `json:"latency_p90_s"`
	LatencyP99   float64 `json:"latency_p99_s"`
	Seconds      float64 `json:"seconds"` // since the first call
}

// Limiter bounds the calls in flight to one model, adaptively: a 429
// halves the limit (down to 1); each run of successes raises it by one, up
// to the maximum. Safe for concurrent use.
type Limiter struct{}

// NewLimiter returns a limiter with max calls in flight.
func NewLimiter(max int) *Limiter { panic("llm: not implemented yet") }

// Shared returns the process's limiter for name (a model's identity),
// creating it with max: nodes calling one model at once share it.
func Shared(name string, max int) *Limiter { panic("llm: not implemented yet") }
