package judge

import (
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
)

// A Python sample solve never ran (no observation) is NotRun, decided by
// rule with solve's reason, with nothing to ask the judge model and no
// param_corr; calibration agreement leaves it out.
func TestJudgePythonMarksSamplesNeverRunNotRun(t *testing.T) {
	task := tasks.Row{TaskID: "t", Ecosystem: "python", Library: "py-stats", Difficulty: "easy", Mask: "from pystats import scale\nreturn scale(xs)\n"}
	for _, why := range []string{
		"not run: the task has no harness: the reference raised",
		"not run: the sandbox cannot mount the environment: the store is private",
	} {
		for _, kind := range []string{"model", "reference"} {
			s := tasks.SampleRow{TaskID: "t", SampleID: "s", Kind: kind, Solution: "from pystats import scale\nreturn scale(xs)\n",
				FailedLayers: []string{"integrity"}, Failures: why}
			row, ask, err := judgePython(s, task)
			if err != nil {
				t.Fatal(err)
			}
			if row.Class != ClassNotRun || row.Path != PathRule || row.Rule != why || ask != nil || row.ParamCorr != nil || row.APICalled {
				t.Errorf("%s %q: %s by %s (%q), asks %v, param_corr %v, api_called %v", kind, why, row.Class, row.Path, row.Rule, ask != nil, row.ParamCorr, row.APICalled)
			}
		}
	}
	rows := []JudgeRow{
		{Kind: "reference", Expected: goharness.ClassOK, Class: ClassNotRun, Path: PathRule},
		{Kind: "reference", Expected: goharness.ClassOK, Class: goharness.ClassOK, Path: PathRule},
	}
	if rep := Calibration(rows); rep == nil || rep.Samples != 1 || rep.Agree != 1 {
		t.Errorf("calibration %+v, want the NotRun row left out", rep)
	}
	if Calibration(rows[:1]) != nil {
		t.Error("calibration of NotRun rows only: want none")
	}
}
