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

// progressRun is the part of nodes.Run DoAll uses: progress and status.
type progressRun struct {
	nodes.Run
	done, total int64
	status      string
}

func (r *progressRun) Progress(done, total int64)   { r.done, r.total = done, total }
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
			if r.done != int64(c.answered) || r.total != 8 || !strings.HasPrefix(r.status, fmt.Sprintf("%d/8 calls", c.answered)) {
				t.Errorf("progress %d/%d, status %q", r.done, r.total, r.status)
			}
		})
	}
}
