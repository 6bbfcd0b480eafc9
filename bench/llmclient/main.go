// Command llmclient is the Go half of bench/llm_client.sh: it serves the
// scripted model server, drives it with lacuna's client, and measures
// replays from a store's call cache.
//
//	llmclient serve                      print the server's URL, serve until stdin closes
//	llmclient drive -url U -n N -c C     N chat calls, C in flight, no cache
//	llmclient replay -n N -c C           N calls made into a fresh store, then replayed
//
// drive and replay print one JSON line: calls, seconds, calls_per_s and
// cpu_us_per_call (user + system CPU of this process per call).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/runners/llm"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

const served = "bench-model"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: llmclient serve|drive|replay [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	url := fs.String("url", "", "the server's base URL (drive)")
	n := fs.Int("n", 2000, "calls")
	c := fs.Int("c", 16, "calls in flight")
	warm := fs.Int("warm", 50, "untimed calls first (drive)")
	dir := fs.String("store", "", "store directory (replay; default: a temporary one)")
	fs.Parse(os.Args[2:])
	var err error
	switch os.Args[1] {
	case "serve":
		srv := server()
		fmt.Println(srv.URL())
		io.Copy(io.Discard, os.Stdin)
		srv.Close()
	case "drive":
		err = drive(*url, *n, *c, *warm)
	case "replay":
		err = replay(*dir, *n, *c)
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "llmclient:", err)
		os.Exit(1)
	}
}

// server answers every call with a fixed short answer, no faults.
func server() *llmtest.Server {
	return llmtest.New(llmtest.Config{Models: []string{served}, Default: "func Answer() int { return 42 }"})
}

// call is the i-th benchmark call; bench/llm_openai.py sends the same.
func call(i int) llm.Call {
	zero := 0.0
	return llm.Call{Request: llm.Request{
		API: "chat",
		Messages: []llm.Message{
			{Role: "system", Content: "You are a Go expert. Answer with code only."},
			{Role: "user", Content: fmt.Sprintf("Write function number %d.", i)},
		},
		Temperature: &zero,
		MaxTokens:   64,
	}}
}

// run makes calls [from, to) with c in flight.
func run(cl *llm.Client, from, to, c int) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	next := from
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= to {
					return
				}
				if _, err := cl.Do(context.Background(), call(i)); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func measure(calls int, f func() error) error {
	cpu0 := cpuTime()
	t0 := time.Now()
	if err := f(); err != nil {
		return err
	}
	sec := time.Since(t0).Seconds()
	cpu := (cpuTime() - cpu0).Seconds()
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"calls": calls, "seconds": sec, "calls_per_s": float64(calls) / sec,
		"cpu_us_per_call": cpu / float64(calls) * 1e6,
	})
}

func drive(url string, n, c, warm int) error {
	cl := llm.New(llm.Endpoint{BaseURL: url, ServedName: served, Concurrency: c})
	if err := run(cl, n, n+warm, c); err != nil {
		return err
	}
	return measure(n, func() error { return run(cl, 0, n, c) })
}

func replay(dir string, n, c int) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "llmclient-replay-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	st, err := artifacts.Open(dir)
	if err != nil {
		return err
	}
	srv := server()
	const identity = "bench@1|" + served
	fill := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: served, Concurrency: c}, llm.WithCache(st.Calls(), identity))
	err = run(fill, 0, n, c)
	srv.Close() // replays must not need it
	if err != nil {
		return err
	}
	cl := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: served, Concurrency: c, MaxRetries: 1}, llm.WithCache(st.Calls(), identity))
	if err := measure(n, func() error { return run(cl, 0, n, c) }); err != nil {
		return err
	}
	if s := cl.Stats(); s.Cached != int64(n) {
		return fmt.Errorf("replayed %d of %d calls", s.Cached, n)
	}
	return nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
