package experiments_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes/experiments"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks/taskstest"
	"github.com/lacuna-dev/lacuna/runners/llm"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

// killSrc is the pipeline of TestGenerateResumesAfterKill: every task,
// 3 seeded samples each (so that every call is a distinct request).
func killSrc(url string) string {
	return taskstest.ModelBlock(url) + `
node "generate" "slow" {
  tasks   = node.tasks.shapes
  model   = model.coder
  samples = 3
  seed    = 1
}
`
}

// TestGenerateResumesAfterKill runs a generate node whose model answers
// slowly in a child process (this test binary again), kills it with
// SIGKILL once the server has answered some calls, and runs the pipeline
// again: the server gets no request for a call the child had completed
// (its answer is in the store's call cache), one for every other, and the
// rows are complete.
func TestGenerateResumesAfterKill(t *testing.T) {
	if dir := os.Getenv("LACUNA_TEST_KILL_DIR"); dir != "" {
		// The child: the parent's environment (offline proxy) is ours.
		nodetest.Run(t, dir, taskstest.Pipeline+killSrc(os.Getenv("LACUNA_TEST_KILL_URL")))
		return
	}
	dir := t.TempDir()
	byID := taskstest.ReadTasks(t, taskstest.Run(t, dir, ""))
	total := 3 * len(byID)
	// Each answer names its call, so that the cache says which calls the
	// child completed.
	srv := llmtest.New(llmtest.Config{Models: []string{"test-model"}, Delay: 400 * time.Millisecond,
		Script: []llmtest.Rule{{Reply: func(q llmtest.Request) string { return "```go\n// call " + q.ID + "\n_ = 0\n```" }}}})
	defer srv.Close()

	child := exec.Command(os.Args[0], "-test.run=^TestGenerateResumesAfterKill$", "-test.count=1")
	child.Env = append(os.Environ(), "LACUNA_TEST_KILL_DIR="+dir, "LACUNA_TEST_KILL_URL="+srv.URL())
	var out strings.Builder
	child.Stdout, child.Stderr = &out, &out
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); srv.Stats().Answers < 6; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			child.Process.Kill()
			child.Wait()
			t.Fatalf("the server answered %d calls in 2 minutes; child output:\n%s", srv.Stats().Answers, out.String())
		}
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()

	// The calls the child completed are those in the call cache.
	st, err := artifacts.Open(filepath.Join(dir, ".lacuna"))
	if err != nil {
		t.Fatal(err)
	}
	completed := map[string]bool{} // server call IDs
	shards, _ := filepath.Glob(filepath.Join(dir, ".lacuna", "calls", "*", "*"))
	for _, p := range shards {
		v, ok, err := st.Calls().Get(filepath.Base(p))
		if err != nil || !ok {
			continue // a temporary file the kill left
		}
		var resp llm.Response
		if err := json.Unmarshal(v, &resp); err != nil {
			t.Fatal(err)
		}
		_, id, _ := strings.Cut(resp.Text, "// call ")
		id, _, _ = strings.Cut(id, "\n")
		completed[id] = true
	}
	if len(completed) == 0 || len(completed) >= total {
		t.Fatalf("the child completed %d of %d calls before the kill; output:\n%s", len(completed), total, out.String())
	}
	srv.Settle(200 * time.Millisecond) // the child's last requests land first
	before := map[string]int{}
	for _, c := range srv.Calls() {
		before[c.ID] = c.Requests
	}

	run := taskstest.Run(t, dir, killSrc(srv.URL()))
	asked := 0
	for _, c := range srv.Calls() {
		n := c.Requests - before[c.ID]
		asked += n
		if completed[c.ID] && n != 0 {
			t.Errorf("call %s, completed before the kill, was asked %d times again", c.ID, n)
		}
		if !completed[c.ID] && n != 1 {
			t.Errorf("call %s, not completed before the kill, was asked %d times", c.ID, n)
		}
	}
	if asked != total-len(completed) {
		t.Errorf("the re-run made %d requests, want %d (%d calls, %d cached)", asked, total-len(completed), total, len(completed))
	}
	rows := nodetest.Read[experiments.GenerateRow](t, run, "node.generate.slow")
	seen := map[string]bool{}
	for _, r := range rows {
		if !strings.HasPrefix(r.Solution, "// call ") || byID[r.TaskID].TaskID == "" {
			t.Errorf("row %s %s: solution %q", r.TaskID, r.SampleID, r.Solution)
		}
		seen[r.TaskID+" "+r.SampleID] = true
	}
	if len(rows) != total || len(seen) != total {
		t.Errorf("%d rows (%d distinct), want %d", len(rows), len(seen), total)
	}
	t.Logf("killed after %d of %d calls were cached; the re-run made %d", len(completed), total, asked)
}
