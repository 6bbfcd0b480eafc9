package llm

import (
	"sync"
	"time"
)

// queue tracks the attempts in flight through one Limiter, so that an
// attempt's timeout counts from when the server could have started on
// it, not from when it was sent: a server with fewer slots than the calls
// in flight (llama.cpp's server and llama-cpp-python's have one by
// default) queues them, and a call waiting while the server answers our
// other calls one after another is not stuck. Resending it would only
// queue it again behind the abandoned copy, which the server keeps
// computing.
//
// An attempt's deadline is Endpoint.Timeout after the later of its
// sending and the last answer (any HTTP answer: the server moved on) to
// another attempt in flight with it, and never later than Timeout × the
// most attempts in flight at once during its life, itself included (the
// longest queue it can have been behind: one slot, each call taking the
// whole timeout; with Endpoint.Slots known, the attempts in flight over
// the slots, rounded up). Any other attempt counts, not only those sent before
// it: requests sent at about the same time reach the server in any order.
// An attempt that ends without an answer (a timeout, a dropped
// connection) moves no deadline: a server that answers nothing fails
// every attempt after Timeout, as before. Safe for concurrent use.
type queue struct {
	mu   sync.Mutex
	seq  uint64
	live map[uint64]*queued
}

// queued is one attempt in the queue.
type queued struct {
	seq   uint64
	sent  time.Time
	ahead time.Time // the last answer to another attempt in flight with it
	depth int       // the most attempts in flight at once during its life
}

// enter registers an attempt sent now.
func (q *queue) enter(now time.Time) *queued {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.live == nil {
		q.live = map[uint64]*queued{}
	}
	q.seq++
	a := &queued{seq: q.seq, sent: now}
	q.live[a.seq] = a
	for _, b := range q.live {
		b.depth = max(b.depth, len(q.live))
	}
	return a
}

// leave removes the attempt; answered says the server answered it at
// now, which moves the clock of every other attempt in flight.
func (q *queue) leave(a *queued, answered bool, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.live, a.seq)
	if !answered {
		return
	}
	for _, b := range q.live {
		if now.After(b.ahead) {
			b.ahead = now
		}
	}
}

// deadline is when the attempt times out, as things stand, on a server
// with this many slots (0: unknown, as if one).
func (q *queue) deadline(a *queued, timeout time.Duration, slots int) time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	start := a.sent
	if a.ahead.After(start) {
		start = a.ahead
	}
	d := start.Add(timeout)
	turns := a.depth
	if slots > 0 {
		turns = (a.depth + slots - 1) / slots
	}
	if limit := a.sent.Add(time.Duration(turns) * timeout); d.After(limit) {
		d = limit
	}
	return d
}
