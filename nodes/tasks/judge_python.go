package tasks

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
	"github.com/lacuna-dev/lacuna/novelapibench/pyharness"
)

// judgePython classifies a Python task's sample: pyharness.Judge (the
// fast path: OK, WrongSyntax, WrongImport, WrongAPISelection), then, for
// what it leaves undecided, pyFallback (path fallback). The judge model's
// prompt reads Go call structure, so Python samples are not sent to it;
// ParamCorr is null (no Python call matcher yet).
func judgePython(s SampleRow, task Row) (JudgeRow, error) {
	row := JudgeRow{TaskID: s.TaskID, SampleID: s.SampleID, Kind: s.Kind, Model: s.Model, Cell: s.Cell, APIID: s.APIID,
		Library: task.Library, Difficulty: task.Difficulty, Passed: s.Passed, SpyDirect: s.SpyDirect, APICalled: s.SpyDirect > 0, Path: PathRule}
	row.Expected, _ = goharness.ExpectedClass(s.Kind)
	var spec pyharness.Task
	var exp pyharness.Expectation
	if err := json.Unmarshal([]byte(task.Spec), &spec); err != nil {
		return row, fmt.Errorf("task %s: spec: %w", task.TaskID, err)
	}
	if task.Expect != "" {
		if err := json.Unmarshal([]byte(task.Expect), &exp); err != nil {
			return row, fmt.Errorf("task %s: expect: %w", task.TaskID, err)
		}
	}
	var run pyharness.Run
	if s.Observation != "" {
		if err := json.Unmarshal([]byte(s.Observation), &run); err != nil {
			return row, fmt.Errorf("sample %s/%s: observation: %w", s.TaskID, s.SampleID, err)
		}
		run.Output = s.Output
	} else {
		run.Problem = s.Failures // not run (solve says why)
	}
	v := pyharness.Verdict{Passed: s.Passed, Reason: s.Failures}
	if len(s.FailedLayers) > 0 {
		v.Layer = s.FailedLayers[0]
	}
	jd := pyharness.Judge(spec.Target, s.Solution, exp, v, run)
	if jd.Class != pyharness.ClassUndecided {
		row.Class, row.Rule = jd.Class, jd.Rule
		return row, nil
	}
	row.Class, row.Rule = pyFallback(spec.Target, run, v)
	row.Rule += " (undecided: " + jd.Rule + ")"
	row.Path = PathFallback
	return row, nil
}

// pyFallback decides a Python sample the fast path left undecided,
// deterministically, in the spirit of goharness.Fallback:
//
//  1. no authenticated record (not run, crashed, hung, tampered) →
//     WrongLogic;
//  2. the target never called from the solution → WrongAPISelection (it
//     names the target, or the fast path would have decided);
//  3. a TypeError about the arguments of a call of the target's name →
//     WrongParam;
//  4. an exception raised inside the target's package → WrongShapeDtype
//     (a contract violated inside the API's body);
//  5. anything else (a wrong value, an exception in the solver's own
//     code, a time-out) → WrongLogic.
func pyFallback(tg pyharness.Target, run pyharness.Run, v pyharness.Verdict) (class, rule string) {
	rec := run.Record
	name := tg.Name()
	if rec == nil {
		why := run.Problem
		if run.TimedOut {
			why = "runs past its time limit"
		}
		return goharness.ClassWrongLogic, "the program left no record: " + why
	}
	if rec.Direct == 0 {
		return goharness.ClassWrongAPISelection, "names " + name + " but never calls it"
	}
	e := rec.Error
	if e == nil {
		for _, o := range rec.Real {
			if o.Raised != nil {
				e = o.Raised
				break
			}
		}
	}
	if e != nil {
		pkg := tg.Package()
		file := strings.ReplaceAll(e.File, "\\", "/")
		switch {
		case e.Type == "TypeError" && strings.Contains(e.Message, name+"()") && strings.Contains(e.Message, "argument"):
			return goharness.ClassWrongParam, "calls " + name + " with arguments it does not take: " + e.String()
		case e.File != pyharness.SolutionFile && strings.Contains(file, "/"+strings.ReplaceAll(pkg, ".", "/")+"/"):
			return goharness.ClassWrongShapeDtype, "raises inside " + pkg + ": " + e.String()
		}
		return goharness.ClassWrongLogic, "calls " + name + "; fails: " + e.String()
	}
	return goharness.ClassWrongLogic, "calls " + name + "; the outcome is wrong: " + v.Layer + ": " + v.Reason
}
