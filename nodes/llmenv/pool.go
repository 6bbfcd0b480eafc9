package llmenv

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/runners/llm"
)

// DoAll makes calls through cl, at most conc at once (the client's limiter
// may hold them to fewer), and hands each answer or error to each, one at
// a time, in the order they complete. With stopOnError the first error
// stops new calls; calls in flight complete (and are cached) before DoAll
// returns, so a re-run makes only the missing ones. A cancelled ctx stops
// new calls too. DoAll counts the calls it completes in r's Work (unit
// "calls": each DoAll adds its calls to the total, so a node calling it
// in rounds shows all of them), sets the live status line (calls made,
// not replayed from the cache, per second, and completion tokens per
// second) through r, and returns how many calls were answered.
//
// each runs under DoAll's lock: it may write shared state without its own.
func DoAll(ctx context.Context, r nodes.Run, cl *llm.Client, calls []llm.Call, conc int, stopOnError bool, each func(i int, resp *llm.Response, err error)) (answered int) {
	var (
		mu      sync.Mutex
		done    int64
		made    int64 // calls made, not replayed
		tokens  int64 // completion tokens of the calls made
		stopped bool
		stop    = make(chan struct{})
	)
	start := time.Now()
	counted := nodes.WorkOf(r)
	counted.Grow("calls", len(calls))
	work := make(chan int)
	var wg sync.WaitGroup
	for range max(1, conc) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				select {
				case <-stop: // the feeder may have raced the failure
					continue
				default:
				}
				resp, err := cl.Do(ctx, calls[i])
				counted.Add(1)
				mu.Lock()
				each(i, resp, err)
				if err != nil {
					if stopOnError && !stopped {
						stopped = true
						close(stop)
					}
					mu.Unlock()
					continue
				}
				done++
				if !resp.Cached {
					made++
					tokens += int64(resp.OutputTokens)
				}
				r.Status("%s", Status(done, made, tokens, time.Since(start)))
				mu.Unlock()
			}
		}()
	}
feed:
	for i := range calls {
		select {
		case work <- i:
		case <-stop:
			break feed
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	return int(done)
}

// Status is the live line of a node calling a model, beside its counts
// (the calls done, their rate and the ETA, which the display works out):
// of the calls answered, how many were made rather than replayed from
// the call cache, calls made per second and completion tokens per second
// since the start.
func Status(answered, made, tokens int64, elapsed time.Duration) string {
	secs := elapsed.Seconds()
	if secs <= 0 {
		secs = 1e-9
	}
	return fmt.Sprintf("%d made, %d from the cache; %.1f calls/s, %.0f tok/s", made, answered-made, float64(made)/secs, float64(tokens)/secs)
}

// DefaultCompletionEstimate is the completion tokens Estimate assumes per
// call when neither the cache, perAnswer nor the request's max_tokens
// says.
const DefaultCompletionEstimate = 512

// MaxTokensShare is the share of a request's max_tokens Estimate assumes
// a call to use when nothing better is known: answers stop well before
// the bound (the quickstart's model slice, run on two real models, used
// about 40% of what max_tokens × calls planned).
const MaxTokensShare = 0.4

// Estimate is the plan of calls to model through cl: how many, how many
// the call cache holds, and an estimate of the tokens of the rest: the
// prompt's bytes / 4, and per answer the mean completion tokens of the
// cached answers among these calls when there are any (the same model
// answering the same kind of question), else perAnswer when positive,
// else MaxTokensShare of the request's max_tokens, else
// DefaultCompletionEstimate. An estimate, never a bound: plans print it
// as one.
func Estimate(cl *llm.Client, model string, calls []llm.Call, perAnswer int) nodes.CallPlan {
	p := nodes.CallPlan{Model: model, Calls: int64(len(calls))}
	var cachedTokens int64
	var missing []llm.Call
	for _, c := range calls {
		if r := cl.Lookup(c); r != nil {
			p.Cached++
			cachedTokens += int64(r.OutputTokens)
			continue
		}
		missing = append(missing, c)
		n := len(c.Request.Prompt)
		for _, m := range c.Request.Messages {
			n += len(m.Content)
		}
		p.PromptTokens += int64(n / 4) // about 4 bytes a token
	}
	for _, c := range missing {
		switch {
		case p.Cached > 0:
			p.OutputTokens += (cachedTokens + p.Cached/2) / p.Cached
		case perAnswer > 0:
			p.OutputTokens += int64(perAnswer)
		case c.Request.MaxTokens > 0:
			p.OutputTokens += int64(math.Round(MaxTokensShare * float64(c.Request.MaxTokens)))
		default:
			p.OutputTokens += DefaultCompletionEstimate
		}
	}
	return p
}
