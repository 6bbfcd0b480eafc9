package judge_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/judge"
	"github.com/lacuna-dev/lacuna/nodes/llmenv"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/nodes/tasks/taskstest"
	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

// between is the text of s between the first from and the next to.
func between(s, from, to string) string {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	out, _, _ := strings.Cut(rest, to)
	return out
}

// solutionHas matches a judge prompt whose solution contains sub.
func solutionHas(sub string) func(llmtest.Request) bool {
	return func(q llmtest.Request) bool {
		return strings.Contains(between(q.Text(), "Solution:\n```go\n", "\n```"), sub)
	}
}

// TestJudgeModelDecidesWhatTheFastPathLeaves runs the calibration samples
// through a scripted judge model that answers the exit mutants with a valid
// verdict after its thinking, in a fence, the perturbed arguments with
// another valid one, the goexit mutants with garbage and the
// discarded-result mutants never (503 on every try; on_judge_error =
// "fallback"): each sample's path says who decided, the fallback decides
// where the model could not, and the calibration table is exact. With sem,
// every sample gets a score: 1 when it is the reference, 0 otherwise.
func TestJudgeModelDecidesWhatTheFastPathLeaves(t *testing.T) {
	srv := llmtest.New(llmtest.Config{
		Models: []string{"judge-model"},
		Script: []llmtest.Rule{
			{Contains: "Solution to judge:", Reply: func(q llmtest.Request) string {
				ref := between(q.Text(), "Reference solution:\n```go\n", "\n```")
				sol := between(q.Text(), "Solution to judge:\n```go\n", "\n```")
				if ref == sol {
					return `{"equivalent": true, "score": 1}`
				}
				return `{"equivalent": false, "score": 0}`
			}},
			// A reasoning model: it thinks, then fences its verdict.
			{When: solutionHas("os.Exit(0)"), Answer: "<think>\nThe call is right; then os.Exit(0).\n</think>\n\n```json\n" +
				`{"class": "WrongLogic", "rationale": "exits before the scenario ends"}` + "\n```"},
			{When: solutionHas("runtime.Goexit()"), Answer: `I would say WrongLogic.`},
			{When: solutionHas(`fmt.Print("`), Status: 503}, // the discarded mutants print the result as a literal
		},
		Default: `{"class": "WrongParam", "rationale": "an argument differs from the reference's"}`,
	})
	defer srv.Close()
	run := taskstest.Run(t, "", taskstest.Calibration+fmt.Sprintf(`
model "judge" {
  id          = "judge-model"
  endpoint    = %q
  max_retries = 1
  timeout     = "10s"
}
node "judge" "llm" {
  tasks          = node.tasks.shapes
  samples        = node.solve.calibration
  model          = model.judge
  sem            = true
  on_judge_error = "fallback"
}
`, srv.URL()))
	rows := nodetest.Read[judge.JudgeRow](t, run, "node.judge.llm")
	samples := nodetest.Read[tasks.SampleRow](t, run, "node.solve.calibration")
	byTask := taskstest.ReadTasks(t, run)
	want := map[string]struct{ class, path, rule string }{
		"reference":               {goharness.ClassOK, judge.PathRule, "passed"},
		goharness.MutantSyntax:    {goharness.ClassWrongSyntax, judge.PathRule, "does not parse"},
		goharness.MutantImport:    {goharness.ClassWrongImport, judge.PathRule, "import"},
		goharness.MutantSibling:   {goharness.ClassWrongAPISelection, judge.PathRule, "instead"},
		goharness.MutantNull:      {goharness.ClassWrongAPISelection, judge.PathRule, "never calls"},
		goharness.MutantHardcoded: {goharness.ClassWrongAPISelection, judge.PathRule, "never calls"},
		goharness.MutantPerturb:   {goharness.ClassWrongParam, judge.PathLLM, "an argument differs"},
		goharness.MutantExit:      {goharness.ClassWrongLogic, judge.PathLLM, "exits before"},
		goharness.MutantGoexit:    {goharness.ClassWrongLogic, judge.PathFallback, "judge answer broke the schema"},
		goharness.MutantDiscarded: {goharness.ClassWrongLogic, judge.PathFallback, "judge unreachable"},
	}
	for i, j := range rows {
		w, ok := want[j.Kind]
		if j.Kind == goharness.MutantPerturb && j.Passed {
			w = want["reference"] // a weak harness let it pass
		}
		if !ok || j.Class != w.class || j.Path != w.path || !strings.Contains(j.Rule, w.rule) {
			t.Errorf("%s %s: %s by %s (%q), want %s by %s (%q)", j.TaskID, j.Kind, j.Class, j.Path, j.Rule, w.class, w.path, w.rule)
		}
		wantSem := 0.0 // the script: 1 for the reference's text (an import mutant may be that too)
		if samples[i].Solution == byTask[j.TaskID].Mask {
			wantSem = 1
		}
		if j.Sem == nil || *j.Sem != wantSem {
			t.Errorf("%s %s: sem %v, want %v", j.TaskID, j.Kind, fmt.Sprint(j.Sem != nil && *j.Sem == 1), wantSem)
		}
	}
	if note := run.Notes("done")["node.judge.llm"]; !strings.Contains(note, "paths: rule 57, llm 16, fallback 16") || !strings.Contains(note, "9 judge answers unusable") ||
		!strings.Contains(note, "7 judge calls failed (7 unreachable, 0 refused)") {
		t.Errorf("note %q", note)
	}
	// The judge's usage is a report named usage, as lacuna show documents
	// it: 78 sem and 25 verdict questions answered, 7 failed.
	act, err := run.Store.GetAction(run.Nodes["node.judge.llm"].Key)
	if err != nil {
		t.Fatal(err)
	}
	var usage struct{ Calls, Failed int64 }
	if err := json.Unmarshal(act.Reports["usage"], &usage); err != nil || usage.Calls != 78+25 || usage.Failed != 7 {
		t.Errorf("usage report %s (%v), want 103 calls and 7 failed; reports %v", act.Reports["usage"], err, slices.Collect(maps.Keys(act.Reports)))
	}
	rep, _ := calibrationReport(t, run, "node.judge.llm")
	// The offline fixture: 9 tasks, 89 calibration samples; no perturbed
	// argument passes (the harness compares the target's arguments).
	wantConfusion := map[string]map[string]int{
		goharness.ClassOK:                {goharness.ClassOK: 18},
		goharness.ClassWrongSyntax:       {goharness.ClassWrongSyntax: 9},
		goharness.ClassWrongAPISelection: {goharness.ClassWrongAPISelection: 21},
		goharness.ClassWrongImport:       {goharness.ClassWrongImport: 9},
		goharness.ClassWrongParam:        {goharness.ClassWrongParam: 7},
		goharness.ClassWrongLogic:        {goharness.ClassWrongLogic: 25},
	}
	if rep.Samples != 89 || rep.Agree != 89 || !reflect.DeepEqual(rep.Confusion, wantConfusion) {
		t.Errorf("calibration: %d of %d agree, confusion %v", rep.Agree, rep.Samples, rep.Confusion)
	}
	paths := map[string][2]int{}
	for p, a := range rep.ByPath {
		paths[p] = [2]int{a.Agree, a.Samples}
	}
	// llm: 7 perturbed + 9 exit; fallback: 9 goexit + 7 discarded.
	if want := map[string][2]int{judge.PathRule: {57, 57}, judge.PathLLM: {16, 16}, judge.PathFallback: {16, 16}}; !reflect.DeepEqual(paths, want) {
		t.Errorf("agreement by path %v, want %v", paths, want)
	}
	// Every distinct question was asked once (the unreachable ones twice:
	// max_retries = 1): 78 sem questions (the reference and its second run
	// ask the same, and so do two import mutants whose answer is the
	// reference's text), 7 + 9 + 9 answered verdicts.
	asked := map[string]int{}
	for _, c := range srv.Calls() {
		asked[fmt.Sprint(c.Requests)]++
	}
	if want := map[string]int{"1": 78 + 16 + 9, "2": 7}; !reflect.DeepEqual(asked, want) {
		t.Errorf("calls by requests each %v, want %v", asked, want)
	}
}

// TestJudgeCallFailuresAreNotStoredAsAnswers: a judge model that cannot be
// reached (503 on every try) or refuses (400) on some calls. With the
// default on_judge_error = "fail" the node fails once every call is made,
// saying how many failed; with "fallback" the fallback decides those
// samples, each row saying why (unreachable, refused with its status). Run
// again with the judge answering, the failed node makes only the calls
// that failed; the fallback node's output was stored and is not recomputed
// (its fallback rows stay until it is). A judge that only refuses (400
// on the exit mutants, every time) does not fail the default node: the
// fallback decides those samples, and the node's output keeps them.
func TestJudgeCallFailuresAreNotStoredAsAnswers(t *testing.T) {
	refusing := llmtest.New(llmtest.Config{
		Models:  []string{"judge-model"},
		Script:  []llmtest.Rule{{When: solutionHas("os.Exit(0)"), Status: 400}},
		Default: `{"class": "WrongLogic", "rationale": "the program around the call is wrong"}`,
	})
	defer refusing.Close()
	var down atomic.Bool
	down.Store(true)
	srv := llmtest.New(llmtest.Config{
		Models: []string{"judge-model"},
		Script: []llmtest.Rule{
			{When: func(q llmtest.Request) bool { return down.Load() && solutionHas("os.Exit(0)")(q) }, Status: 400},
			{When: func(q llmtest.Request) bool {
				return down.Load() && solutionHas(`fmt.Print("`)(q) && !solutionHas("runtime.Goexit()")(q)
			}, Status: 503},
		},
		Default: `{"class": "WrongLogic", "rationale": "the program around the call is wrong"}`,
	})
	defer srv.Close()
	dir := t.TempDir()
	src := taskstest.Calibration + fmt.Sprintf(`
model "judge" {
  id          = "judge-model"
  endpoint    = %q
  max_retries = 1
  timeout     = "10s"
}
node "judge" "fail" {
  tasks   = node.tasks.shapes
  samples = node.solve.calibration
  model   = model.judge
}
node "judge" "fallback" {
  tasks          = node.tasks.shapes
  samples        = node.solve.calibration
  model          = model.judge
  on_judge_error = "fallback"
}
model "refusing" {
  id       = "judge-model"
  endpoint = %q
  seed     = 7 # a key of its own: the fail node's output is not this one's
}
node "judge" "refused" {
  tasks   = node.tasks.shapes
  samples = node.solve.calibration
  model   = model.refusing
}
`, srv.URL(), refusing.URL())
	nodetest.OfflineShapes(t)
	run := nodetest.RunErr(t, dir, taskstest.Pipeline+src)
	// 7 discarded-result mutants unreachable, 9 exit mutants refused, of
	// 30 distinct questions (5 perturbed arguments and 9 goexit mutants
	// besides).
	err := run.Nodes["node.judge.fail"].Err
	for _, want := range []string{"16 of 32 judge model calls failed after their retries (7 unreachable, 9 refused; the first unreachable: ", "HTTP 503",
		"the 16 answered are cached, so a re-run makes only the failed calls", `on_judge_error = "fallback"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("node.judge.fail: error %v, want %q", err, want)
		}
	}
	fb := run.Nodes["node.judge.fallback"]
	if fb.Err != nil {
		t.Fatalf("node.judge.fallback: %v", fb.Err)
	}
	if err := run.Nodes["node.judge.refused"].Err; err != nil {
		t.Fatalf("node.judge.refused: %v, want the refused calls' samples decided by the fallback", err)
	}
	refusedRows := func(run *nodetest.Result) {
		t.Helper()
		n := 0
		for _, j := range nodetest.Read[judge.JudgeRow](t, run, "node.judge.refused") {
			if j.Kind != goharness.MutantExit {
				continue
			}
			n++
			if j.Path != judge.PathFallback || !strings.HasPrefix(j.Rule, "judge refused: HTTP 400 Bad Request: ") {
				t.Errorf("node.judge.refused: %s %s: %s by %s (%q), want the fallback's, rule prefixed judge refused", j.TaskID, j.Kind, j.Class, j.Path, j.Rule)
			}
		}
		if n == 0 {
			t.Error("node.judge.refused: no exit mutants")
		}
	}
	refusedRows(run)
	if note := run.Notes("done")["node.judge.refused"]; !strings.Contains(note, "9 judge calls failed (0 unreachable, 9 refused)") {
		t.Errorf("node.judge.refused: note %q", note)
	}
	for _, j := range nodetest.Read[judge.JudgeRow](t, run, "node.judge.fallback") {
		want := ""
		switch j.Kind {
		case goharness.MutantDiscarded:
			want = "judge unreachable; "
		case goharness.MutantExit:
			want = "judge refused: HTTP 400 Bad Request: "
		default:
			continue
		}
		if j.Path != judge.PathFallback || !strings.HasPrefix(j.Rule, want) {
			t.Errorf("%s %s: %s by %s (%q), want the fallback's, rule prefixed %q", j.TaskID, j.Kind, j.Class, j.Path, j.Rule, want)
		}
	}
	if note := run.Notes("done")["node.judge.fallback"]; !strings.Contains(note, "16 judge calls failed (7 unreachable, 9 refused)") {
		t.Errorf("note %q", note)
	}

	down.Store(false)
	before := srv.Stats().Requests
	run = nodetest.Run(t, dir, taskstest.Pipeline+src)
	if made := srv.Stats().Requests - before; made != 16 {
		t.Errorf("the re-run made %d requests, want the 16 that failed", made)
	}
	for _, n := range []string{"node.judge.fallback", "node.judge.refused"} {
		if _, ok := run.Notes("cached")[n]; !ok {
			t.Errorf("%s was recomputed", n)
		}
	}
	refusedRows(run)
	for _, j := range nodetest.Read[judge.JudgeRow](t, run, "node.judge.fail") {
		if (j.Kind == goharness.MutantDiscarded || j.Kind == goharness.MutantExit) && j.Path != judge.PathLLM {
			t.Errorf("%s %s: %s by %s (%q), want the judge model's", j.TaskID, j.Kind, j.Class, j.Path, j.Rule)
		}
	}
}

// TestJudgeModelSystemReplacesTheBuiltInPrompt: a model block's system is
// the system message of every judge call, verdicts and sem scores alike;
// without it, the judge's own.
func TestJudgeModelSystemReplacesTheBuiltInPrompt(t *testing.T) {
	var mu sync.Mutex
	systems := map[string]int{} // the system message of each request
	srv := llmtest.New(llmtest.Config{
		Models: []string{"judge-model"},
		Script: []llmtest.Rule{{When: func(q llmtest.Request) bool {
			mu.Lock()
			defer mu.Unlock()
			sys := "(none)"
			if len(q.Messages) > 0 && q.Messages[0].Role == "system" {
				sys = q.Messages[0].Content
			}
			systems[sys]++
			return false
		}}, {Contains: "Solution to judge:", Answer: `{"equivalent": false, "score": 0}`}},
		Default: `{"class": "WrongLogic", "rationale": "the program around the call is wrong"}`,
	})
	defer srv.Close()
	const custom = "You are the house judge. Classes: WrongSyntax, WrongAPISelection, WrongImport, WrongParam, WrongShapeDtype, WrongLogic."
	run := taskstest.Run(t, "", taskstest.Calibration+fmt.Sprintf(`
model "judge" {
  id       = "judge-model"
  endpoint = %q
  system   = %q
}
model "plain" {
  id       = "judge-model"
  endpoint = %q
}
node "judge" "custom" {
  tasks   = node.tasks.shapes
  samples = node.solve.calibration
  model   = model.judge
  sem     = true
}
node "judge" "builtin" {
  tasks   = node.tasks.shapes
  samples = node.solve.calibration
  model   = model.plain
}
`, srv.URL(), custom, srv.URL()))
	llm := 0
	for _, j := range nodetest.Read[judge.JudgeRow](t, run, "node.judge.custom") {
		if j.Path == judge.PathLLM {
			llm++
		}
	}
	// 78 sem and 32 verdict questions with the model block's system, 32
	// verdict questions with the judge's own.
	sys, _ := goharness.JudgePrompt(goharness.JudgeInput{})
	if want := map[string]int{custom: 78 + 32, sys: 32}; !reflect.DeepEqual(systems, want) || llm != 32 {
		t.Errorf("system messages %v, want %v; %d verdicts by the model", systems, want, llm)
	}
}

// TestJudgePlanEstimatesTheModelsMaxTokens: lacuna plan's estimate of a
// judge's completion tokens is a short verdict (60) per call, unless the
// judge's model block sets max_tokens (a reasoning judge thinks first):
// then a share of that (llmenv.MaxTokensShare), per call, not the bound.
func TestJudgePlanEstimatesTheModelsMaxTokens(t *testing.T) {
	dir := t.TempDir()
	taskstest.Run(t, dir, taskstest.Calibration)
	srv := llmtest.New(llmtest.Config{Models: []string{"judge-model"}})
	defer srv.Close()
	src := taskstest.Pipeline + taskstest.Calibration + fmt.Sprintf(`
model "short" {
  id       = "judge-model"
  endpoint = %[1]q
}
model "reasoning" {
  id         = "judge-model"
  endpoint   = %[1]q
  max_tokens = 2048
}
node "judge" "short" {
  tasks   = node.tasks.shapes
  samples = node.solve.calibration
  model   = model.short
}
node "judge" "reasoning" {
  tasks   = node.tasks.shapes
  samples = node.solve.calibration
  model   = model.reasoning
}
`, srv.URL())
	entries := nodetest.Plan(t, dir, src)
	plans := map[string]nodes.CallPlan{}
	for _, e := range entries {
		if len(e.Calls) == 1 {
			plans[e.Node] = e.Calls[0]
		}
	}
	for node, perCall := range map[string]int64{"node.judge.short": 60, "node.judge.reasoning": int64(math.Round(llmenv.MaxTokensShare * 2048))} {
		p, ok := plans[node]
		if !ok || p.Calls == 0 || p.Cached != 0 || p.OutputTokens != perCall*p.Calls {
			t.Errorf("%s: plan %+v (found %v), want %d completion tokens per call", node, p, ok, perCall)
		}
	}
	if n := srv.Stats().Requests; n != 0 {
		t.Errorf("planning made %d requests", n)
	}
}
