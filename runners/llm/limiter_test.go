package llm

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestLimiterIsAIMD(t *testing.T) {
	// Events, one attempt at a time: o = overload (429), s = success,
	// n = a failure that says nothing of load.
	for _, tc := range []struct {
		name   string
		max    int
		events string
		limits []int // the limit after each event
	}{
		{"429s halve down to one", 8, "oooo", []int{4, 2, 1, 1}},
		{"odd limits round down", 5, "oo", []int{2, 1}},
		{"successes at the max change nothing", 3, "sss", []int{3, 3, 3}},
		{"recovery takes `limit` successes a slot", 4, "oosssss", []int{2, 1, 2, 2, 3, 3, 3}},
		{"recovery stops at the max", 2, "osss", []int{1, 2, 2, 2}},
		{"a 429 resets the run of successes", 8, "ossossss", []int{4, 4, 4, 2, 2, 3, 3, 3}},
		{"neutral failures change nothing", 4, "onsn", []int{2, 2, 2, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLimiter(tc.max)
			for i, e := range tc.events {
				s, err := l.acquire(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				s.release(map[rune]outcome{'o': overload, 's': success, 'n': neutral}[e])
				if got := l.Limit(); got != tc.limits[i] {
					t.Fatalf("after %q the limit is %d, want %d", tc.events[:i+1], got, tc.limits[i])
				}
			}
		})
	}
}

func TestLimiterCutsOnceForABurstOf429s(t *testing.T) {
	l := NewLimiter(8)
	var slots []slot
	for range 8 {
		s, err := l.acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		slots = append(slots, s)
	}
	for _, s := range slots {
		s.release(overload)
	}
	if got := l.Limit(); got != 4 {
		t.Errorf("eight 429s of attempts started together left the limit at %d, want 4", got)
	}
}

func TestLimiterBlocksAtTheLimitAndServesWaitersInOrder(t *testing.T) {
	l := NewLimiter(1)
	first, _ := l.acquire(context.Background())
	got := make(chan int, 2)
	for i := range 2 {
		go func() {
			s, err := l.acquire(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			got <- i
			s.release(success)
		}()
		for { // wait until goroutine i queues, to fix the order
			l.mu.Lock()
			n := l.waiters.Len()
			l.mu.Unlock()
			if n == i+1 {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	select {
	case i := <-got:
		t.Fatalf("waiter %d got a slot while the only one was held", i)
	default:
	}
	first.release(success)
	if a, b := <-got, <-got; a != 0 || b != 1 {
		t.Errorf("waiters served %d then %d, want 0 then 1", a, b)
	}
}

func TestLimiterWaiterGivesUpOnCancel(t *testing.T) {
	l := NewLimiter(1)
	held, _ := l.acquire(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.acquire(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	held.release(success)
	l.mu.Lock()
	inflight, waiting := l.inflight, l.waiters.Len()
	l.mu.Unlock()
	if inflight != 0 || waiting != 0 {
		t.Errorf("after a cancelled wait: %d in flight, %d waiting; want 0, 0", inflight, waiting)
	}
}

func TestSharedLimiterIsOnePerName(t *testing.T) {
	a := Shared("test-shared-a", 4)
	if Shared("test-shared-a", 4) != a {
		t.Error("Shared returned a second limiter for one name")
	}
	if Shared("test-shared-b", 4) == a {
		t.Error("two names share a limiter")
	}
}

func TestSharedLimiterTakesTheLargestMax(t *testing.T) {
	a := Shared("test-shared-raise", 2)
	held := make([]slot, 2)
	for i := range held {
		held[i], _ = a.acquire(context.Background())
	}
	granted := make(chan slot)
	go func() {
		s, _ := a.acquire(context.Background())
		granted <- s
	}()
	for { // wait until the third caller queues
		a.mu.Lock()
		n := a.waiters.Len()
		a.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if Shared("test-shared-raise", 3) != a || a.Max() != 3 || a.Limit() != 3 {
		t.Fatalf("a larger max left the limiter at max %d, limit %d; want 3, 3", a.Max(), a.Limit())
	}
	held = append(held, <-granted) // the new slot went to the waiter
	if Shared("test-shared-raise", 1) != a || a.Max() != 3 || a.Limit() != 3 {
		t.Errorf("a smaller max lowered the limiter to max %d, limit %d", a.Max(), a.Limit())
	}
	for _, s := range held {
		s.release(neutral)
	}

	// A limit that 429s cut stays cut, and recovers to the new max.
	l := NewLimiter(4)
	s, _ := l.acquire(context.Background())
	s.release(overload)
	l.raise(8)
	if l.Max() != 8 || l.Limit() != 2 {
		t.Fatalf("raising a cut limiter: max %d, limit %d; want 8, 2", l.Max(), l.Limit())
	}
	for range 2 + 3 + 4 + 5 + 6 + 7 {
		s, _ := l.acquire(context.Background())
		s.release(success)
	}
	if l.Limit() != 8 {
		t.Errorf("after recovery the limit is %d, want 8", l.Limit())
	}
}

func TestBackoffIsCappedFullJitter(t *testing.T) {
	b := Backoff{Base: 10 * time.Millisecond, Max: 100 * time.Millisecond}
	for n, ceil := range []time.Duration{10, 20, 40, 80, 100, 100} {
		ceil *= time.Millisecond
		var hi time.Duration
		for range 2000 {
			d := b.delay(n)
			if d < 0 || d > ceil {
				t.Fatalf("retry %d waits %v, outside [0, %v]", n, d, ceil)
			}
			hi = max(hi, d)
		}
		if hi < ceil/2 {
			t.Errorf("retry %d: the longest of 2000 waits is %v; full jitter over [0, %v] should reach past half", n, hi, ceil)
		}
	}
	if d := b.delay(200); d > b.Max {
		t.Errorf("a huge retry count waits %v, past the cap", d)
	}
}

func TestRetryAfterParses(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		h    string
		want time.Duration
	}{
		{"", 0},
		{"2", 2 * time.Second},
		{" 0.5 ", 500 * time.Millisecond},
		{"0", 0},
		{"-3", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{now.Add(4 * time.Second).Format(time.RFC1123), 4 * time.Second},
		{"soon", 0},
		{"3600", time.Hour},
		{"1e12", 1e6 * time.Second},
		{"NaN", 0},
	} {
		if got := retryAfter(tc.h, now); got != tc.want {
			t.Errorf("Retry-After %q: %v, want %v", tc.h, got, tc.want)
		}
	}
}

func TestRetryAfterWaitIsCapped(t *testing.T) {
	b := Backoff{Base: time.Nanosecond, Max: time.Nanosecond}
	for _, tc := range []struct {
		after, want time.Duration
	}{
		{0, time.Nanosecond},
		{30 * time.Second, 30 * time.Second},
		{MaxRetryAfter, MaxRetryAfter},
		{time.Hour, MaxRetryAfter},
		{1e6 * time.Second, MaxRetryAfter},
	} {
		ae := &attemptError{after: tc.after}
		if got := ae.wait(b, 0); got > tc.want || got < tc.want-time.Nanosecond {
			t.Errorf("Retry-After %v: waits %v, want %v", tc.after, got, tc.want)
		}
	}
}
