package judge_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/judge"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks/taskstest"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

// TestJudgeOnLlamaCppPython: llama-cpp-python's server answers the
// judge's response_format json_schema with HTTP 500. The client does not
// retry it nine times and call the judge unreachable: it falls back to
// json_object with the schema in the prompt, the verdicts are read, and
// the node's note warns that the fallback was taken. A refusal the
// fallback cannot mend (a 500 whose message is about the request) is
// "judge refused", its samples the fallback's, never a failed node.
func TestJudgeOnLlamaCppPython(t *testing.T) {
	srv := llmtest.New(llmtest.LlamaCppPython(llmtest.Config{
		Models: []string{"judge-model"},
		Script: []llmtest.Rule{
			{When: func(q llmtest.Request) bool { return solutionHas("os.Exit(0)")(q) }, Status: 500, Error: "Input should be a valid string: 'loc': ('body', 'messages', 1)"},
			{When: func(q llmtest.Request) bool { return q.JSONObject && strings.Contains(q.Text(), "JSON schema") }, Answer: `{"class": "WrongParam", "rationale": "an argument differs"}`},
		},
		Default: "I cannot say.",
	}))
	defer srv.Close()
	run := taskstest.Run(t, "", taskstest.Calibration+fmt.Sprintf(`
model "judge" {
  id       = "judge-model"
  endpoint = %q
  timeout  = "10s"
}
node "judge" "llm" {
  tasks   = node.tasks.shapes
  samples = node.solve.calibration
  model   = model.judge
}
`, srv.URL()))
	if err := run.Nodes["node.judge.llm"].Err; err != nil {
		t.Fatalf("node.judge.llm: %v", err)
	}
	llm, refused := 0, 0
	for _, j := range nodetest.Read[judge.JudgeRow](t, run, "node.judge.llm") {
		switch {
		case j.Path == judge.PathLLM && j.Class == "WrongParam":
			llm++
		case strings.HasPrefix(j.Rule, "judge refused: HTTP 500"):
			refused++
		case j.Path == judge.PathLLM:
			t.Errorf("%s %s: %s by %s (%q)", j.TaskID, j.Kind, j.Class, j.Path, j.Rule)
		}
	}
	if llm == 0 || refused == 0 {
		t.Errorf("%d verdicts through json_object, %d refused: want both", llm, refused)
	}
	note := run.Notes("done")["node.judge.llm"]
	if !strings.Contains(note, "warning: ") || !strings.Contains(note, "structured-output fallback") || !strings.Contains(note, fmt.Sprintf("%d refused", refused)) {
		t.Errorf("note %q", note)
	}
	// The json_schema requests in flight before the first refusal (at
	// most the model's concurrency, 8) are refused, then every call goes
	// straight to json_object; no refusal is retried.
	if st := srv.Stats(); st.Status[500] < 1+refused || st.Status[500] > 8+refused {
		t.Errorf("server stats %+v: want 1 to 8 json_schema refusals and the %d refused calls", st, refused)
	}
}

// TestJudgeLimitBoundsTheCalibrationCalls: limit = 1 judges the samples of
// the first task alone: a slice's calibration plans and makes that task's
// judge calls, not every task's.
func TestJudgeLimitBoundsTheCalibrationCalls(t *testing.T) {
	dir := t.TempDir()
	taskstest.Run(t, dir, taskstest.Calibration)
	srv := llmtest.New(llmtest.Config{Models: []string{"judge-model"}, Default: `{"class": "WrongParam", "rationale": "x"}`})
	defer srv.Close()
	node := func(limit string) string {
		return taskstest.Pipeline + taskstest.Calibration + fmt.Sprintf(`
model "judge" {
  id       = "judge-model"
  endpoint = %q
}
node "judge" "calibration" {
  tasks   = node.tasks.shapes
  samples = node.solve.calibration
  model   = model.judge
  %s
}
`, srv.URL(), limit)
	}
	plan := func(src string) nodes.CallPlan {
		for _, e := range nodetest.Plan(t, dir, src) {
			if e.Node == "node.judge.calibration" && len(e.Calls) == 1 {
				return e.Calls[0]
			}
		}
		t.Fatal("no plan of the judge's calls")
		return nodes.CallPlan{}
	}
	all, one := plan(node("")), plan(node("limit = 1"))
	if one.Calls == 0 || one.Calls >= all.Calls {
		t.Errorf("calls planned: %d with limit 1, %d without", one.Calls, all.Calls)
	}
	run := nodetest.Run(t, dir, node("limit = 1"))
	rows := nodetest.Read[judge.JudgeRow](t, run, "node.judge.calibration")
	tasksSeen := map[string]bool{}
	for _, j := range rows {
		tasksSeen[j.TaskID] = true
	}
	if len(tasksSeen) != 1 || int64(srv.Stats().Requests) != one.Calls {
		t.Errorf("limit 1: rows of tasks %v, %d requests (planned %d)", tasksSeen, srv.Stats().Requests, one.Calls)
	}
	_, diags := engine.ExpandSource(filepath.Join(dir, "p.hcl"), []byte(node("limit = 0")), dir, engine.Options{})
	if !strings.Contains(diags.Error(), "limit must be at least 1") {
		t.Errorf("limit 0: %v", diags)
	}
}
