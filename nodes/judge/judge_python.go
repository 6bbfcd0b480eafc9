package judge

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
	"github.com/lacuna-dev/lacuna/novelapibench/pyharness"
)

// judgePython classifies a Python task's sample. One never run (solve's
// row without an observation: the task has no harness, or the sandbox
// cannot mount the environment) is NotRun (path rule, the rule solve's
// reason), and so is one whose environment or target did not load
// (pyharness.Judge: the task's fault); nothing is asked of the judge
// model about either. Otherwise pyharness.Judge decides (the fast path:
// OK, WrongSyntax, WrongImport, WrongAPISelection), or, for what it
// leaves undecided, pyFallback (path fallback) until the judge model
// answers: ask is then what it is shown.
//
// ParamCorr is pyharness.ParamCorr of the solution against the task's
// reference answer (Mask): null when the reference shows no call of the
// Target's name, and null (unknown, not 0) when the solution's source
// shows none but the spy counted direct calls of the target (SpyDirect >
// 0): a call the lexical scan cannot see (map(scale, xss),
// functools.partial(scale, k=2), g = scale; g(xs)).
func judgePython(s tasks.SampleRow, task tasks.Row) (row JudgeRow, ask *pyharness.JudgeInput, err error) {
	row = JudgeRow{TaskID: s.TaskID, SampleID: s.SampleID, Kind: s.Kind, Model: s.Model, Cell: s.Cell, APIID: s.APIID,
		Library: task.Library, Difficulty: task.Difficulty, Passed: s.Passed, SpyDirect: s.SpyDirect, APICalled: s.SpyDirect > 0, Path: PathRule}
	row.Expected, _ = pyharness.ExpectedClass(s.Kind)
	if s.Observation == "" {
		row.Class, row.Rule = ClassNotRun, s.Failures
		return row, nil, nil
	}
	var spec pyharness.Task
	var exp pyharness.Expectation
	if err := json.Unmarshal([]byte(task.Spec), &spec); err != nil {
		return row, nil, fmt.Errorf("task %s: spec: %w", task.TaskID, err)
	}
	if task.Expect != "" {
		if err := json.Unmarshal([]byte(task.Expect), &exp); err != nil {
			return row, nil, fmt.Errorf("task %s: expect: %w", task.TaskID, err)
		}
	}
	run, v, err := tasks.PyRun(s)
	if err != nil {
		return row, nil, err
	}
	tg := spec.Target
	jd := pyharness.Judge(tg, s.Solution, exp, v, run)
	if jd.Class == pyharness.ClassNotRun {
		row.Class, row.Rule, row.APICalled = ClassNotRun, jd.Rule, false
		return row, nil, nil
	}
	calls := pyharness.TargetCalls(s.Solution, tg)
	var ref *pyharness.SourceCall
	if refs := pyharness.TargetCalls(task.Mask, tg); len(refs) > 0 {
		ref = &refs[0]
	}
	if corr, ok := pyharness.MatchCalls(calls, ref); ok && (len(calls) > 0 || s.SpyDirect == 0) {
		row.ParamCorr = &corr
	}
	if jd.Class != pyharness.ClassUndecided {
		row.Class, row.Rule = jd.Class, jd.Rule
		return row, nil, nil
	}
	row.Class, row.Rule = pyFallback(tg, run, v, row.ParamCorr, len(calls) > 0, exp.Calls)
	row.Rule += " (undecided: " + jd.Rule + ")"
	row.Path = PathFallback
	ask = &pyharness.JudgeInput{Target: tg, Description: task.Description, Context: task.Context, Solution: s.Solution,
		Recorded: run.Record != nil, ReferenceCalls: exp.Calls, Source: calls, Reference: ref, Evidence: jd.Evidence}
	if run.Record != nil {
		ask.Calls = run.Record.Calls
	}
	return row, ask, nil
}

// pyFallback decides a Python sample the fast path left undecided,
// deterministically, in the spirit of goharness.Fallback:
//
//  1. no authenticated record (the process crashed, was killed at its
//     time limit, or its record failed authentication), or a record of a
//     pass that ran past its time limit or found its data replaced
//     (Record.Stage "timeout", "tampered") → WrongLogic;
//  2. the target never called from the solution → WrongAPISelection (it
//     names the target, or the fast path would have decided);
//  3. a TypeError about the arguments of a call of the target's name →
//     WrongParam;
//  4. an exception raised inside the target's package → WrongShapeDtype
//     (a contract violated inside the API's body);
//  5. the calls' arguments differ from the reference's (paramCorr < 1,
//     pyharness.ParamCorr) → WrongParam; skipped when paramCorr is nil
//     (the reference has no call of the target's name to compare with,
//     or the solution's calls are not in its source text);
//  6. where the solution's source shows no call of the target's name
//     (inSource false) but the spy recorded direct calls, those calls'
//     shapes (Record.Calls: how many positional arguments, which
//     keywords) against the reference's (refCalls, Expectation.Calls):
//     none of the solution's shaped as any of the reference's →
//     WrongParam (equal shapes say nothing of the values: no rule);
//  7. anything else (a wrong value, an exception in the solver's own
//     code) → WrongLogic.
//
// Rules 5 and 6 are goharness.Fallback's rule 7, as heuristic: an
// argument written differently but equal in value, or a keyword passed
// positionally, counts as different; that is what the LLM judge is for.
func pyFallback(tg pyharness.Target, run pyharness.Run, v pyharness.Verdict, paramCorr *float64, inSource bool, refCalls []pyharness.Call) (class, rule string) {
	rec := run.Record
	name := tg.Name()
	if rec == nil {
		why := run.Problem
		if run.TimedOut {
			why = "runs past its time limit"
		}
		return goharness.ClassWrongLogic, "the program left no record: " + why
	}
	switch rec.Stage {
	case "timeout", "tampered":
		why := rec.Stage
		if rec.Error != nil {
			why = rec.Error.String()
		}
		return goharness.ClassWrongLogic, "the program did not finish: " + why
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
	}
	if paramCorr != nil && *paramCorr < 1 {
		return goharness.ClassWrongParam, fmt.Sprintf("calls %s with arguments other than the reference's (param_corr %.2f)", name, *paramCorr)
	}
	if !inSource && len(rec.Calls) > 0 && len(refCalls) > 0 && !shapeShared(rec.Calls, refCalls) {
		return goharness.ClassWrongParam, fmt.Sprintf("calls %s (not in its source text) as %s%s, never shaped as the reference's %s%s",
			name, name, pyharness.CallShape(rec.Calls[0]), name, pyharness.CallShape(refCalls[0]))
	}
	if e != nil {
		return goharness.ClassWrongLogic, "calls " + name + "; fails: " + e.String()
	}
	return goharness.ClassWrongLogic, "calls " + name + "; the outcome is wrong: " + v.Layer + ": " + v.Reason
}

// shapeShared reports whether one of calls has the shape of one of refs:
// as many positional arguments, the same keywords in any order.
func shapeShared(calls, refs []pyharness.Call) bool {
	key := func(c pyharness.Call) string {
		kw := slices.Clone(c.Kwargs)
		slices.Sort(kw)
		return fmt.Sprint(c.Args, kw)
	}
	ref := map[string]bool{}
	for _, c := range refs {
		ref[key(c)] = true
	}
	for _, c := range calls {
		if ref[key(c)] {
			return true
		}
	}
	return false
}
