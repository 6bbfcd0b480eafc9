package llm_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/runners/llm"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

// parallel runs b.N calls with c in flight and reports calls/s.
func parallel(b *testing.B, c int, do func(i int) error) {
	var next atomic.Int64
	errs := make(chan error, c)
	b.ResetTimer()
	for range c {
		go func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					errs <- nil
					return
				}
				if err := do(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for range c {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

func benchCall(i int) llm.Call {
	return llm.Call{Request: chat(fmt.Sprintf("Write function number %d.", i))}
}

// BenchmarkClientChat is the client's throughput against the loopback
// scripted server (in this process), no cache.
func BenchmarkClientChat(b *testing.B) {
	srv := llmtest.New(llmtest.Config{Default: "func Answer() int { return 42 }"})
	defer srv.Close()
	for _, c := range []int{1, 16, 64} {
		b.Run(fmt.Sprint("concurrency=", c), func(b *testing.B) {
			cl := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model, Concurrency: c})
			parallel(b, c, func(i int) error {
				_, err := cl.Do(context.Background(), benchCall(i))
				return err
			})
		})
	}
}

// BenchmarkClientCacheReplay replays calls from a store's call cache.
func BenchmarkClientCacheReplay(b *testing.B) {
	const distinct = 1000
	srv := llmtest.New(llmtest.Config{Default: "func Answer() int { return 42 }"})
	st, err := artifacts.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	fill := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model, Concurrency: 16}, llm.WithCache(st.Calls(), "id"))
	for i := range distinct {
		if _, err := fill.Do(context.Background(), benchCall(i)); err != nil {
			b.Fatal(err)
		}
	}
	srv.Close()
	for _, c := range []int{1, 16} {
		b.Run(fmt.Sprint("concurrency=", c), func(b *testing.B) {
			cl := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model}, llm.WithCache(st.Calls(), "id"))
			parallel(b, c, func(i int) error {
				r, err := cl.Do(context.Background(), benchCall(i%distinct))
				if err == nil && !r.Cached {
					err = fmt.Errorf("call %d was not replayed", i)
				}
				return err
			})
		})
	}
}

func BenchmarkKey(b *testing.B) {
	call := benchCall(7)
	for b.Loop() {
		llm.Key("m@r|served", call)
	}
}
