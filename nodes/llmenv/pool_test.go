package llmenv_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/llmenv"
	"github.com/lacuna-dev/lacuna/runners/llm"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

// progressRun is the part of nodes.Run DoAll uses: its Work and status.
type progressRun struct {
	nodes.Run
	work   nodes.Work
	status string
}

func (r *progressRun) Work() *nodes.Work            { return &r.work }
func (r *progressRun) Status(f string, args ...any) { r.status = fmt.Sprintf(f, args...) }

func TestDoAll(t *testing.T) {
	srv := llmtest.New(llmtest.Config{Models: []string{"m"}, Default: "fine",
		Script: []llmtest.Rule{{Contains: "call 3", Status: 400}}})
	defer srv.Close()
	calls := make([]llm.Call, 8)
	for i := range calls {
		calls[i] = llm.Call{Request: llm.Request{API: "chat", Messages: []llm.Message{{Role: "user", Content: fmt.Sprintf("call %d", i)}}}}
	}
	for _, c := range []struct {
		name        string
		stop        bool
		answered    int
		maxRequests int
	}{
		{"every call, the failure counted", false, 7, 8},
		{"the first failure stops new calls", true, 3, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := srv.Stats().Requests
			cl := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: "m", Concurrency: 1, MaxRetries: llm.NoRetries})
			r := &progressRun{}
			var failed []int
			got := llmenv.DoAll(context.Background(), r, cl, calls, 1, c.stop, func(i int, resp *llm.Response, err error) {
				if err != nil {
					failed = append(failed, i)
				} else if resp.Text != "fine" {
					t.Errorf("call %d answered %q", i, resp.Text)
				}
			})
			if got != c.answered || len(failed) != 1 || failed[0] != 3 {
				t.Errorf("answered %d (want %d), failed %v (want [3])", got, c.answered, failed)
			}
			if n := srv.Stats().Requests - before; n > c.maxRequests {
				t.Errorf("%d requests, want at most %d", n, c.maxRequests)
			}
			// Every call made is counted, the failed one too.
			done, total, unit := r.work.Load()
			if done != int64(c.answered+1) || total != 8 || unit != "calls" || !strings.HasPrefix(r.status, fmt.Sprintf("%d made, 0 from the cache;", c.answered)) {
				t.Errorf("work %d/%d %s, status %q", done, total, unit, r.status)
			}
			// A second round adds its calls to the total.
			llmenv.DoAll(context.Background(), r, cl, calls[:2], 1, c.stop, func(int, *llm.Response, error) {})
			if done, total, _ := r.work.Load(); done != int64(c.answered+3) || total != 10 {
				t.Errorf("after a second round of 2 calls: work %d/%d", done, total)
			}
		})
	}
}
