package llm

import (
	"container/list"
	"context"
	"sync"
)

// Limiter bounds the calls in flight to one model, adaptively: a 429
// halves the limit (down to 1); each run of successes raises it by one, up
// to the maximum. Safe for concurrent use.
//
// The limit is additive-increase, multiplicative-decrease, as TCP's
// window: after a 429 the limit grows by one for every `limit` successes
// (slowly), and the 429s of attempts that started before the last cut do
// not cut it again (a burst of 429s from one overload halves it once).
// Waiters are served first come, first served.
type Limiter struct {
	mu        sync.Mutex
	max       int
	limit     int
	inflight  int
	successes int        // since the limit last changed
	epoch     int        // bumped by each cut
	waiters   *list.List // of chan struct{}, closed when granted a slot

	// queue orders the attempts in flight, for their timeouts.
	queue queue
}

// NewLimiter returns a limiter with max calls in flight (at least 1).
func NewLimiter(max int) *Limiter {
	if max < 1 {
		max = 1
	}
	return &Limiter{max: max, limit: max, waiters: list.New()}
}

// Limit is the current limit on calls in flight.
func (l *Limiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit
}

// Max is the limit the limiter starts at and recovers to.
func (l *Limiter) Max() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.max
}

// raise lifts the maximum to max when that is higher. A limit at the old
// maximum moves to the new one at once (waiters get the new slots); a
// limit that 429s have cut stays, and recovers up to the new maximum.
func (l *Limiter) raise(max int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if max <= l.max {
		return
	}
	if l.limit == l.max {
		l.limit = max
	}
	l.max = max
	l.grant()
}

// slot is one granted slot; release it exactly once.
type slot struct {
	l     *Limiter
	epoch int
}

// outcome of an attempt, as the limiter sees it.
type outcome int

const (
	neutral  outcome = iota // a failure that says nothing of the server's load
	success                 // a complete answer
	overload                // a 429
)

// acquire waits for a slot, or for ctx.
func (l *Limiter) acquire(ctx context.Context) (slot, error) {
	l.mu.Lock()
	if l.inflight < l.limit && l.waiters.Len() == 0 {
		l.inflight++
		s := slot{l, l.epoch}
		l.mu.Unlock()
		return s, nil
	}
	w := make(chan struct{})
	e := l.waiters.PushBack(w)
	l.mu.Unlock()
	select {
	case <-w:
		l.mu.Lock()
		s := slot{l, l.epoch}
		l.mu.Unlock()
		return s, nil
	case <-ctx.Done():
		l.mu.Lock()
		select {
		case <-w: // granted while we gave up: hand it on
			l.inflight--
			l.grant()
		default:
			l.waiters.Remove(e)
		}
		l.mu.Unlock()
		return slot{}, ctx.Err()
	}
}

// release returns the slot and adapts the limit to what the attempt saw.
func (s slot) release(o outcome) {
	l := s.l
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inflight--
	switch o {
	case overload:
		if s.epoch == l.epoch {
			l.limit = max(1, l.limit/2)
			l.successes = 0
			l.epoch++
		}
	case success:
		if l.limit < l.max {
			l.successes++
			if l.successes >= l.limit {
				l.limit++
				l.successes = 0
			}
		}
	}
	l.grant()
}

// grant hands free slots to waiters in order; l.mu is held.
func (l *Limiter) grant() {
	for l.inflight < l.limit && l.waiters.Len() > 0 {
		w := l.waiters.Remove(l.waiters.Front()).(chan struct{})
		l.inflight++
		close(w)
	}
}

var shared = struct {
	sync.Mutex
	m map[string]*Limiter
}{m: map[string]*Limiter{}}

// Shared returns the process's limiter for name (a model's identity),
// creating it with max: nodes calling one model at once share it. Its
// maximum is the largest any caller has asked for: a later caller with a
// larger max raises it (Limiter.raise: at once, unless 429s have cut the
// limit, which then recovers to the new maximum); one with a smaller max
// gets the limiter as it is.
func Shared(name string, max int) *Limiter {
	shared.Lock()
	defer shared.Unlock()
	l := shared.m[name]
	if l == nil {
		l = NewLimiter(max)
		shared.m[name] = l
		return l
	}
	l.raise(max)
	return l
}
