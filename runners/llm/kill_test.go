package llm_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/runners/llm"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

const (
	killCalls    = 60
	killAfter    = 15
	killIdentity = "m@r|" + model
)

func killCall(i int) llm.Call {
	req := chat(fmt.Sprintf("kill task %d", i))
	req.Seed = ptr[int64](int64(i))
	return llm.Call{Request: req, Sample: i % 3}
}

// TestKillHelper is the process TestKilledRunRepeatsNoCompletedCall
// kills: it makes the calls against the server at $LLM_KILL_URL with the
// store at $LLM_KILL_STORE and prints "done" as each returns.
func TestKillHelper(t *testing.T) {
	url, dir := os.Getenv("LLM_KILL_URL"), os.Getenv("LLM_KILL_STORE")
	if url == "" {
		t.Skip("run by TestKilledRunRepeatsNoCompletedCall")
	}
	s, err := artifacts.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := llm.New(llm.Endpoint{BaseURL: url, ServedName: model, Concurrency: 4}, llm.WithCache(s.Calls(), killIdentity))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range killCalls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Do(context.Background(), killCall(i)); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			fmt.Println("done", i)
			mu.Unlock()
		}()
	}
	wg.Wait()
}

func TestKilledRunRepeatsNoCompletedCall(t *testing.T) {
	srv := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Reply: echo}}, Delay: 50 * time.Millisecond})
	defer srv.Close()
	dir := t.TempDir()

	cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LLM_KILL_URL="+srv.URL(), "LLM_KILL_STORE="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := 0
	sc := bufio.NewScanner(out)
	for done < killAfter && sc.Scan() {
		if len(sc.Text()) > 5 && sc.Text()[:5] == "done " {
			done++
		}
	}
	cmd.Process.Kill() // SIGKILL: no deferred function, no flush runs
	cmd.Wait()
	if done < killAfter {
		t.Fatalf("the helper stopped after %d calls: %v", done, sc.Err())
	}

	s, err := artifacts.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: model, Concurrency: 4}, llm.WithCache(s.Calls(), killIdentity))
	var calls []llm.Call
	cached := map[int]bool{}
	for i := range killCalls {
		calls = append(calls, killCall(i))
		cached[i] = c.Cached(calls[i])
	}
	nCached := 0
	for _, ok := range cached {
		if ok {
			nCached++
		}
	}
	if nCached < killAfter || nCached == killCalls {
		t.Fatalf("%d calls cached after the kill; want at least the %d reported done and fewer than all %d", nCached, killAfter, killCalls)
	}
	byText := func() map[string]llmtest.Call {
		m := map[string]llmtest.Call{}
		for _, call := range srv.Calls() {
			m[call.Request.Text()] = call
		}
		return m
	}
	srv.Settle(200 * time.Millisecond) // the killed process's last requests land first
	before := byText()

	got := doAll(t, c, calls, 8)
	after := byText()
	for i, r := range got {
		text := fmt.Sprintf("kill task %d", i)
		if want := fmt.Sprintf("answer to %s seed %d", text, i+i%3); r.Text != want {
			t.Errorf("call %d: %q, want %q", i, r.Text, want)
		}
		asked := after[text].Requests - before[text].Requests
		switch {
		case cached[i] && (asked != 0 || !r.Cached):
			t.Errorf("call %d completed before the kill, yet the re-run asked the server %d times", i, asked)
		case !cached[i] && (asked != 1 || r.Cached):
			t.Errorf("call %d was not cached before the kill; the re-run asked %d times, want once", i, asked)
		}
	}
	if st := c.Stats(); st.Cached != int64(nCached) || st.Calls != int64(killCalls-nCached) {
		t.Errorf("re-run stats %+v: want %d replays and %d calls", st, nCached, killCalls-nCached)
	}
	t.Logf("killed after %d reported calls; %d cached; the re-run made %d", done, nCached, killCalls-nCached)
}
