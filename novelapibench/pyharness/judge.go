package pyharness

import (
	"regexp"
	"strings"

	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
)

// The failure taxonomy is goharness's (NovelAPIBench §3.3).
const (
	ClassOK                = goharness.ClassOK
	ClassWrongSyntax       = goharness.ClassWrongSyntax
	ClassWrongAPISelection = goharness.ClassWrongAPISelection
	ClassWrongImport       = goharness.ClassWrongImport
	ClassWrongParam        = goharness.ClassWrongParam
	ClassWrongShapeDtype   = goharness.ClassWrongShapeDtype
	ClassWrongLogic        = goharness.ClassWrongLogic
	// ClassUndecided is what the fast path leaves to the LLM judge, with
	// the evidence (Judgement.Evidence).
	ClassUndecided = "undecided"
	// ClassNotRun is a sample whose run says nothing of the solution: the
	// environment or the target did not load (the task's fault). Not a
	// failure class: never for the LLM judge, left out of metrics.
	ClassNotRun = "NotRun"
)

// Judgement is the fast path's answer.
type Judgement struct {
	Class string
	Rule  string // the rule that fired
	// Evidence is what the LLM judge is given of an undecided sample's
	// failure (JudgeInput.Evidence): the harness's layer and reason, the
	// exception and its traceback, and the output of a process that left
	// no record. The direct calls' shapes are JudgeInput's own parts.
	Evidence string
}

// Judge classifies a sample by deterministic rules, the judge's fast path
// for Python:
//
//   - passed → OK;
//   - the environment or the target did not load (Record.Stage "load":
//     the task's fault, not the solution's) → NotRun;
//   - SyntaxError (IndentationError, TabError) compiling the program →
//     WrongSyntax;
//   - ImportError or ModuleNotFoundError raised by the program's own
//     code, or for a module of the target's package → WrongImport; one
//     raised inside a library for another module (an optional
//     dependency missing from the environment) → undecided;
//   - NameError of the target's package or name (used, never imported)
//     → WrongImport;
//   - AttributeError on a module of the target's package: for the
//     target's own name (the right name at a wrong path) → WrongImport,
//     for another name (a hallucinated or misremembered symbol) →
//     WrongAPISelection;
//   - the program ran, its own lines never called the target and the
//     solution never names it (by its name or the last component of one
//     of its paths) → WrongAPISelection (one that names it but stopped
//     before the call is left undecided);
//   - the rest → undecided, for the LLM judge.
//
// An exception the reference raised too on the same input (exp) is what
// the task expects, and counts for none of these rules. A run without an
// authenticated record is undecided when the process crashed or hung, and
// is never OK.
func Judge(tg Target, solution string, exp Expectation, v Verdict, run Run) Judgement {
	if v.Passed {
		return Judgement{Class: ClassOK, Rule: "passed the harness"}
	}
	undecided := func(rule string, e *PyError) Judgement {
		ev := "harness: " + v.Layer + ": " + v.Reason
		if e != nil {
			ev += "\nexception: " + e.String()
			if e.Traceback != "" {
				ev += "\n" + e.Traceback
			}
		}
		if run.Record == nil && run.Output != "" {
			ev += "\noutput:\n" + cut(run.Output, 4096)
		}
		return Judgement{Class: ClassUndecided, Rule: rule, Evidence: ev}
	}
	rec := run.Record
	if rec == nil {
		return undecided("no authenticated record: "+run.Problem, nil)
	}
	var errs []*PyError
	if rec.Error != nil {
		errs = append(errs, rec.Error)
	}
	for i, o := range rec.Real {
		if o.Raised != nil && (i >= len(exp.Expected) || exp.Expected[i].Raises != o.Raised.Type) {
			errs = append(errs, o.Raised)
		}
	}
	if rec.Stage == "load" {
		rule := "not run: the task's environment or target did not load"
		if rec.Error != nil {
			rule += ": " + rec.Error.String()
		}
		return Judgement{Class: ClassNotRun, Rule: rule}
	}
	if rec.Stage == "compile" && rec.Error != nil {
		switch rec.Error.Type {
		case "SyntaxError", "IndentationError", "TabError":
			return Judgement{Class: ClassWrongSyntax, Rule: "does not compile: " + rec.Error.String()}
		}
	}
	pkg := tg.Package()
	inPackage := func(mod string) bool { return mod == pkg || strings.HasPrefix(mod, pkg+".") }
	for _, e := range errs {
		switch e.Type {
		case "ImportError", "ModuleNotFoundError":
			if e.File == SolutionFile || inPackage(e.Name) {
				return Judgement{Class: ClassWrongImport, Rule: "an import fails: " + e.String()}
			}
			return undecided("an import inside the library fails ("+e.File+"): an optional dependency missing from the environment?", e)
		case "NameError":
			if e.Name == pkg || e.Name == tg.Name() {
				return Judgement{Class: ClassWrongImport, Rule: "uses " + e.Name + " without importing it"}
			}
		case "AttributeError":
			if e.ObjModule != "" && inPackage(e.ObjModule) {
				if e.Name == tg.Name() {
					return Judgement{Class: ClassWrongImport, Rule: "module " + e.ObjModule + " has no " + e.Name + ": the right name at a wrong path"}
				}
				return Judgement{Class: ClassWrongAPISelection, Rule: "calls " + e.ObjModule + "." + e.Name + ", which does not exist"}
			}
		}
	}
	if rec.Stage == "ran" && rec.Direct == 0 && !namesTarget(solution, tg) {
		return Judgement{Class: ClassWrongAPISelection, Rule: "never calls the target, and never names it"}
	}
	var first *PyError
	if len(errs) > 0 {
		first = errs[0]
	}
	switch {
	case rec.Stage == "timeout":
		return undecided("ran past its time limit", first)
	case rec.Direct == 0:
		return undecided("names the target but never called it", first)
	}
	return undecided("calls the target; the outcome is wrong", first)
}

// namesTarget reports whether code names the target: its name or the
// last component of one of its paths, as a whole word.
func namesTarget(code string, tg Target) bool {
	names := []string{tg.Name()}
	for _, p := range tg.Paths {
		names = append(names, p[strings.LastIndex(p, ".")+1:])
	}
	for _, n := range names {
		if n != "" && regexp.MustCompile(`\b`+regexp.QuoteMeta(n)+`\b`).MatchString(code) {
			return true
		}
	}
	return false
}

// CallShape renders a recorded call's shape as an argument list:
// positional arguments as _, keywords by name ("(_, _, k=_)").
func CallShape(c Call) string {
	s := strings.Repeat("_, ", c.Args)
	for _, k := range c.Kwargs {
		s += k + "=_, "
	}
	return "(" + strings.TrimSuffix(s, ", ") + ")"
}
