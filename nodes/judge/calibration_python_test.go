package judge_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/filters"
	"github.com/lacuna-dev/lacuna/nodes/judge"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/nodes/tasks/taskstest"
	"github.com/lacuna-dev/lacuna/novelapibench/pyharness"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

// pyCalibrationPipeline is the Python fixture's chain with the
// Calibration run once by solve, read back by c1 (samples) and judged
// against the class each solution stands for.
const pyCalibrationPipeline = `
node "solve" "calibration" {
  tasks       = node.tasks.stats
  calibration = true
  ecosystem   = "python"
}
node "judge" "calibration" {
  tasks   = node.tasks.stats
  samples = node.solve.calibration
  model   = model.judge
}
node "c1" "self" {
  tasks     = node.tasks.stats
  ecosystem = "python"
}
node "filter" "scale_tasks" {
  input = node.tasks.stats
  where = strcontains(row.api_id, ":scale")
}
node "filter" "box_samples" {
  input = node.solve.calibration
  where = strcontains(row.api_id, ":box")
}
node "c1" "mismatch" {
  tasks     = node.filter.scale_tasks
  samples   = node.filter.box_samples
  ecosystem = "python"
}
node "filter" "no_scale_syntax" {
  input = node.solve.calibration
  where = row.kind != "syntax" || !strcontains(row.api_id, ":scale")
}
node "c1" "partial" {
  tasks     = node.tasks.stats
  samples   = node.filter.no_scale_syntax
  ecosystem = "python"
}
`

// TestPythonCalibrationThroughSolveAndJudge runs the Python fixture's
// Calibration as Go's runs: solve with calibration = true runs each
// task's reference and its mutants (kind = the mutant's: six, and a
// perturb mutant for clamp, the one task with a parameter whose change
// changes the outcome: hi), c1 reads them (samples) and keeps exactly
// what c1 running them itself keeps (box dropped: its throwaway mutant
// passes), c1 given samples of none of its tasks fails, c1 given samples
// that lack a kind of mutant for a task (its syntax mutants filtered out)
// drops that task for it and decides the others as before, and the judge's
// Calibration report measures each path against pyharness.ExpectedClass
// exactly: the fast path decides the reference, null, sibling, import
// and syntax rows and box's surviving throwaway (OK, expected
// WrongLogic: the one disagreement); the scripted judge model answers the
// exit mutants (WrongLogic) and clamp's perturb mutant (WrongParam) and
// refuses the throwaway ones, which the fallback decides (WrongLogic:
// the right calls, a wrong outcome).
func TestPythonCalibrationThroughSolveAndJudge(t *testing.T) {
	taskstest.OfflinePyStats(t)
	dir := nodetest.StoreDir(t)
	srv := llmtest.New(llmtest.Config{
		Models: []string{"judge-model"},
		Script: []llmtest.Rule{
			{Contains: "_lacuna_os._exit(0)", Reply: func(llmtest.Request) string { return `{"class": "WrongLogic", "rationale": "ends the process early"}` }},
			{Contains: "_lacuna_discarded", Status: 400},
		},
		Default: `{"class": "WrongParam", "rationale": "an argument differs"}`,
	})
	defer srv.Close()
	src := strings.Replace(taskstest.PyTasksPipeline, "tasks     = node.tasks.stats\n  ecosystem = \"python\"",
		"tasks     = node.tasks.stats\n  samples   = node.solve.calibration\n  ecosystem = \"python\"", 1) +
		pyCalibrationPipeline + fmt.Sprintf(`
model "judge" {
  id          = "judge-model"
  endpoint    = %q
  max_retries = 0
  timeout     = "10s"
}
`, srv.URL())
	run := nodetest.RunErr(t, dir, src)
	for addr, r := range run.Nodes {
		switch {
		case addr == "node.c1.mismatch":
			if r.Err == nil || !strings.Contains(r.Err.Error(), "none of the 7 samples is of the 1 observed tasks") {
				t.Errorf("c1 on samples of other tasks: error %v, want none of its tasks'", r.Err)
			}
		case r.Err != nil:
			t.Fatalf("%s: %v", addr, r.Err)
		}
	}

	rows := nodetest.Read[tasks.Row](t, run, "node.tasks.stats")
	name := map[string]string{} // task_id → qualified/difficulty
	for _, r := range rows {
		name[r.TaskID] = r.Qualified + "/" + r.Difficulty
	}
	samples := nodetest.Read[tasks.SampleRow](t, run, "node.solve.calibration")
	kinds := map[string][]string{} // task_id → kinds run
	for _, s := range samples {
		kinds[s.TaskID] = append(kinds[s.TaskID], s.Kind)
		passes := s.Kind == "reference" || s.Kind == pyharness.MutantThrowaway && name[s.TaskID] == "pystats.box/easy"
		if s.SampleID != s.Kind || s.Observation == "" || s.Passed != passes {
			t.Errorf("%s %s: kind %s, passed %v, observation %d bytes", name[s.TaskID], s.SampleID, s.Kind, s.Passed, len(s.Observation))
		}
	}
	// Only clamp's reference passes its target a parameter whose change
	// changes the outcome (hi: clamp(5, 0, 4) is 4): only it has a
	// perturb mutant.
	for _, r := range rows {
		want := "reference null sibling import syntax exit throwaway"
		if r.Qualified == "pystats.clamp" {
			want = "reference null sibling import perturb syntax exit throwaway"
		}
		if got := strings.Join(kinds[r.TaskID], " "); got != want {
			t.Errorf("%s: calibration kinds %q, want %q", name[r.TaskID], got, want)
		}
	}

	c1 := nodetest.Read[filters.C1Row](t, run, "node.c1.stats")
	if len(c1) != len(rows) {
		t.Fatalf("%d c1 rows for %d tasks", len(c1), len(rows))
	}
	for _, c := range c1 {
		box := c.Qualified == "pystats.box"
		wantReason := ""
		if box {
			wantReason = "no outcome depends on the target: substituting its result changes nothing, so a throwaway call cannot be told apart"
		}
		if c.Keep == box || !c.C1Passed || c.Reason != wantReason || c.AuditRun != int32(len(kinds[c.TaskID])-1) ||
			(c.AuditKill == c.AuditRun) == box || (strings.Join(c.Survivors, ",") == "throwaway") != box {
			t.Errorf("c1 %s/%s: keep %v passed %v reason %q killed %d/%d survivors %v", c.Qualified, c.Difficulty, c.Keep, c.C1Passed, c.Reason, c.AuditKill, c.AuditRun, c.Survivors)
		}
	}

	// Without its syntax mutant's run, a scale task is dropped for it,
	// whatever the other runs say; the other tasks are decided as before.
	partial := nodetest.Read[filters.C1Row](t, run, "node.c1.partial")
	scales := 0
	for i, c := range partial {
		want := c1[i]
		if strings.Contains(c.APIID, ":scale") {
			scales++
			want.Keep, want.Reason = false, "calibration sample syntax missing"
			want.AuditRun, want.AuditKill = c1[i].AuditRun-1, c1[i].AuditKill-1
			want.Discrimination = float64(want.AuditKill) / float64(want.AuditRun)
		}
		if g, w := mustJSON(t, c), mustJSON(t, want); g != w {
			t.Errorf("c1 without scale's syntax samples\n%s\nwant\n%s", g, w)
		}
	}
	if scales == 0 {
		t.Error("no scale task: the partial samples test nothing")
	}

	// c1 running the calibration itself decides as c1 reading solve's
	// samples.
	if g, w := mustJSON(t, nodetest.Read[filters.C1Row](t, run, "node.c1.self")), mustJSON(t, c1); g != w {
		t.Errorf("c1 without samples\n%s\nwith samples\n%s", g, w)
	}

	judged := nodetest.Read[judge.JudgeRow](t, run, "node.judge.calibration")
	if len(judged) != len(samples) {
		t.Fatalf("%d judged, want %d", len(judged), len(samples))
	}
	for _, j := range judged {
		if want, _ := pyharness.ExpectedClass(j.Kind); j.Expected != want || want == "" {
			t.Errorf("%s/%s: expected %q, want %q", j.TaskID, j.SampleID, j.Expected, want)
		}
	}
	rep, _ := calibrationReport(t, run, "node.judge.calibration")
	want := judge.CalibrationReport{Samples: 43, Agree: 42, Agreement: 42.0 / 43,
		Confusion: map[string]map[string]int{"OK": {"OK": 6}, "WrongAPISelection": {"WrongAPISelection": 12}, "WrongImport": {"WrongImport": 6},
			"WrongSyntax": {"WrongSyntax": 6}, "WrongLogic": {"OK": 1, "WrongLogic": 11}, "WrongParam": {"WrongParam": 1}},
		ByPath: map[string]*judge.PathAgreement{
			judge.PathRule: {Samples: 31, Agree: 30, Confusion: map[string]map[string]int{"OK": {"OK": 6}, "WrongAPISelection": {"WrongAPISelection": 12},
				"WrongImport": {"WrongImport": 6}, "WrongSyntax": {"WrongSyntax": 6}, "WrongLogic": {"OK": 1}}},
			judge.PathLLM:      {Samples: 7, Agree: 7, Confusion: map[string]map[string]int{"WrongLogic": {"WrongLogic": 6}, "WrongParam": {"WrongParam": 1}}},
			judge.PathFallback: {Samples: 5, Agree: 5, Confusion: map[string]map[string]int{"WrongLogic": {"WrongLogic": 5}}},
		}}
	if g, w := mustJSON(t, rep), mustJSON(t, want); g != w {
		t.Errorf("calibration report\n%s\nwant\n%s", g, w)
	}
	for _, j := range judged {
		if j.Path == judge.PathFallback && (j.Kind != pyharness.MutantThrowaway || !strings.HasPrefix(j.Rule, "judge refused: HTTP 400")) {
			t.Errorf("%s %s: fallback by %q", name[j.TaskID], j.Kind, j.Rule)
		}
	}
	// The model is asked about the exit, perturb and throwaway mutants
	// that fail (6 + 1 + 5), nothing else.
	if n := len(srv.Calls()); n != 12 {
		t.Errorf("%d judge model calls, want 12", n)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
