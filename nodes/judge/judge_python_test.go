package judge_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/judge"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/nodes/tasks/taskstest"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
	"github.com/parquet-go/parquet-go"
)

// TestPythonJudgeModelDecidesWhatTheFastPathLeaves runs solutions of the
// fixture's scale task through solve and a judge with a scripted judge
// model and sem: the reference and a syntax break are decided by the fast
// path and never asked about; a call whose result is altered is undecided,
// sent to the model with the Python prompt (the solution's and the
// reference's calls as source, the shapes the spy recorded), and its
// answer decides (path llm); one with an extra keyword is refused by the
// model (400) and the fallback decides from param_corr (path fallback,
// WrongParam). Every sample gets a sem score from the Python sem prompt.
func TestPythonJudgeModelDecidesWhatTheFastPathLeaves(t *testing.T) {
	dir, scale := taskstest.PyScaleTask(t)
	var mu sync.Mutex
	var verdictPrompts []string
	srv := llmtest.New(llmtest.Config{
		Models: []string{"judge-model"},
		Script: []llmtest.Rule{
			{Contains: "Solution to judge:", Reply: func(q llmtest.Request) string {
				if !strings.Contains(q.Messages[0].Content, "a Python coding task") || strings.Contains(q.Text(), "```go") {
					return "not a Python sem prompt"
				}
				ref := between(q.Text(), "Reference solution:\n```python\n", "\n```")
				sol := between(q.Text(), "Solution to judge:\n```python\n", "\n```")
				if ref == sol {
					return `{"equivalent": true, "score": 1}`
				}
				return `{"equivalent": false, "score": 0.25}`
			}},
			{Contains: "k=3", Status: 400},
			{Contains: "v + 1", Reply: func(q llmtest.Request) string {
				mu.Lock()
				verdictPrompts = append(verdictPrompts, q.Messages[0].Content+"\n"+q.Text())
				mu.Unlock()
				return `{"class": "WrongLogic", "rationale": "adds one to every scaled value"}`
			}},
		},
		Default: `{"class": "WrongSyntax", "rationale": "not asked"}`,
	})
	defer srv.Close()
	cases := []struct {
		sampleID, solution, class, path, rule string
		corr                                  string
		sem                                   float64
	}{
		{"correct", scale.Mask, "OK", judge.PathRule, "passed", "1", 1},
		{"syntax", "return scale(xs\n", "WrongSyntax", judge.PathRule, "does not compile", "0", 0.25},
		{"value", "from pystats import scale\nreturn [v + 1 for v in scale(xs)]\n", "WrongLogic", judge.PathLLM, "adds one to every scaled value", "1", 0.25},
		{"keyword", "from pystats import scale\nreturn scale(xs, k=3)\n", "WrongParam", judge.PathFallback,
			"judge refused: HTTP 400 Bad Request", "0.5", 0.25},
	}
	var sols []string
	for _, c := range cases {
		sols = append(sols, c.sampleID, c.solution)
	}
	taskstest.WriteSolutions(t, dir, scale.TaskID, sols...)
	run := nodetest.Run(t, dir, taskstest.PySolvePipeline+fmt.Sprintf(`
model "judge" {
  id          = "judge-model"
  endpoint    = %q
  max_retries = 0
  timeout     = "10s"
}
node "judge" "model" {
  tasks   = node.tasks.stats
  samples = node.solve.model
  model   = model.judge
  sem     = true
}
`, srv.URL()))
	judged := nodetest.Read[judge.JudgeRow](t, run, "node.judge.model")
	if len(judged) != len(cases) {
		t.Fatalf("%d judged, want %d", len(judged), len(cases))
	}
	for i, c := range cases {
		j := judged[i]
		if j.SampleID != c.sampleID || j.Class != c.class || j.Path != c.path || !strings.Contains(j.Rule, c.rule) || fmtCorr(j.ParamCorr) != c.corr {
			t.Errorf("%s: %s by %s (%q), param_corr %s; want %s by %s (%q), param_corr %s", c.sampleID, j.Class, j.Path, j.Rule, fmtCorr(j.ParamCorr), c.class, c.path, c.rule, c.corr)
		}
		if j.Sem == nil || *j.Sem != c.sem {
			t.Errorf("%s: sem %s, want %v", c.sampleID, fmtCorr(j.Sem), c.sem)
		}
	}
	if r := judged[3].Rule; !strings.Contains(r, "param_corr 0.50") {
		t.Errorf("keyword: the fallback's rule %q does not say why", r)
	}
	// Two verdicts asked (value, keyword), four sem scores.
	if n := len(srv.Calls()); n != 2+4 {
		t.Errorf("%d calls, want 6", n)
	}
	if len(verdictPrompts) != 1 {
		t.Fatalf("%d verdict prompts for the value sample, want 1", len(verdictPrompts))
	}
	p := verdictPrompts[0]
	for _, want := range []string{"a Python coding task", "Target API: pystats.scale [defined as pystats._core.scale] (package pystats)", "Solution:\n```python\nfrom pystats import scale\nreturn [v + 1 for v in scale(xs)]",
		"in the solution (from its source):\n- scale(xs)\n", "The reference solution calls: scale(xs)", "when the solution ran (positional arguments _, keywords by name):\n- scale(_)\n",
		"recorded the same way:\n- scale(_)\n", "Failure:\nharness: comparative: "} {
		if !strings.Contains(p, want) {
			t.Errorf("the verdict prompt lacks %q:\n%s", want, p)
		}
	}
	if note := run.Notes("done")["node.judge.model"]; !strings.Contains(note, "paths: rule 2, llm 1, fallback 1") || !strings.Contains(note, "1 judge calls failed (0 unreachable, 1 refused)") {
		t.Errorf("note %q", note)
	}
}

// TestPythonJudgeAsksNothingAboutSamplesNeverRun: the fixture's tasks,
// with the scale task's harness taken away (as when its reference failed),
// imported and solved: scale's samples are never run, so they are NotRun,
// and a judge with a model and sem makes no model call about them, for a
// verdict or a sem score; the ordered task's sample beside them is judged
// and scored as usual.
func TestPythonJudgeAsksNothingAboutSamplesNeverRun(t *testing.T) {
	dir, scale := taskstest.PyScaleTask(t)
	var rows []tasks.Row
	ordered := ""
	for _, r := range nodetest.Read[tasks.Row](t, nodetest.Run(t, dir, taskstest.PyTasksPipeline), "node.tasks.stats") {
		if r.TaskID == scale.TaskID {
			r.Expect, r.ObserveError = "", "reference failed: taken away by the test"
		}
		if r.Qualified == "pystats.ordered" && r.Difficulty == "easy" {
			ordered = r.TaskID
		}
		rows = append(rows, r)
	}
	if err := parquet.WriteFile(filepath.Join(dir, "tasks.parquet"), rows); err != nil {
		t.Fatal(err)
	}
	sols := []map[string]string{
		{"task_id": scale.TaskID, "sample_id": "reference-like", "solution": scale.Mask},
		{"task_id": scale.TaskID, "sample_id": "syntax", "solution": "return scale(xs\n"},
		{"task_id": ordered, "sample_id": "ordered-syntax", "solution": "return ordered(xs\n"},
	}
	var lines []string
	for _, sol := range sols {
		b, err := json.Marshal(sol)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(filepath.Join(dir, "solutions.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(llmtest.Config{Models: []string{"judge-model"}, Script: []llmtest.Rule{{Contains: "Solution to judge:", Reply: func(llmtest.Request) string { return `{"equivalent": false, "score": 0}` }}},
		Default: `{"class": "WrongLogic", "rationale": "asked about a sample"}`})
	defer srv.Close()
	run := nodetest.Run(t, dir, fmt.Sprintf(`
node "import" "tasks" { path = "tasks.parquet" }
node "import" "solutions" { path = "solutions.jsonl" }
node "solve" "model" {
  tasks     = node.import.tasks
  solutions = node.import.solutions
  ecosystem = "python"
}
model "judge" {
  id          = "judge-model"
  endpoint    = %q
  max_retries = 0
  timeout     = "10s"
}
node "judge" "model" {
  tasks   = node.import.tasks
  samples = node.solve.model
  model   = model.judge
  sem     = true
}
`, srv.URL()))
	judged := nodetest.Read[judge.JudgeRow](t, run, "node.judge.model")
	if len(judged) != len(sols) {
		t.Fatalf("%d judged, want %d", len(judged), len(sols))
	}
	for _, j := range judged[:2] {
		if j.Class != judge.ClassNotRun || j.Path != judge.PathRule || !strings.Contains(j.Rule, "no harness: reference failed: taken away by the test") || j.Sem != nil || j.ParamCorr != nil {
			t.Errorf("%s: %s by %s (%q), sem %s, param_corr %s; want NotRun by rule, no sem, no param_corr", j.SampleID, j.Class, j.Path, j.Rule, fmtCorr(j.Sem), fmtCorr(j.ParamCorr))
		}
	}
	if j := judged[2]; j.Class != "WrongSyntax" || j.Sem == nil {
		t.Errorf("%s: %s, sem %s; want WrongSyntax with a sem score", j.SampleID, j.Class, fmtCorr(j.Sem))
	}
	// One sem score, for the ordered sample; nothing about scale's.
	if n := len(srv.Calls()); n != 1 {
		t.Errorf("%d model calls, want 1 (the ordered sample's sem)", n)
	}
}
