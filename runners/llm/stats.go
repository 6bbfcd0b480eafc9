package llm

import (
	"math"
	"slices"
	"sync"
	"time"
)

// Stats counts calls, tokens, retries and latencies. Tokens and latencies
// are those of the calls made (a replay costs none); latency is the
// answered attempt's, from sending the request to reading the answer.
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

// recorder accumulates a client's Stats; safe for concurrent use.
type recorder struct {
	mu      sync.Mutex
	first   time.Time
	s       Stats
	latency []float64 // seconds, of every call made
}

func (r *recorder) begin() {
	r.mu.Lock()
	if r.first.IsZero() {
		r.first = time.Now()
	}
	r.mu.Unlock()
}

func (r *recorder) replayed() {
	r.mu.Lock()
	r.s.Cached++
	r.mu.Unlock()
}

func (r *recorder) retried() {
	r.mu.Lock()
	r.s.Retries++
	r.mu.Unlock()
}

func (r *recorder) fail() {
	r.mu.Lock()
	r.s.Failed++
	r.mu.Unlock()
}

func (r *recorder) made(resp *Response) {
	r.mu.Lock()
	r.s.Calls++
	r.s.PromptTokens += int64(resp.PromptTokens)
	r.s.OutputTokens += int64(resp.OutputTokens)
	r.latency = append(r.latency, resp.Latency.Seconds())
	r.mu.Unlock()
}

// Stats is what the client did so far. Safe for concurrent use.
func (c *Client) Stats() Stats {
	r := &c.stats
	r.mu.Lock()
	s := r.s
	lat := slices.Clone(r.latency)
	if !r.first.IsZero() {
		s.Seconds = time.Since(r.first).Seconds()
	}
	r.mu.Unlock()
	slices.Sort(lat)
	s.LatencyP50 = quantile(lat, 0.50)
	s.LatencyP90 = quantile(lat, 0.90)
	s.LatencyP99 = quantile(lat, 0.99)
	return s
}

// quantile of sorted xs, nearest rank (0 for none).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[max(0, min(i, len(xs)-1))]
}
