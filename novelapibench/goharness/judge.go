package goharness

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strings"

	"github.com/lacuna-dev/lacuna/runners/goapi"
)

// The failure taxonomy (NovelAPIBench §3.3): OK and six mutually
// exclusive failure classes. The deterministic fast path (Judge) assigns
// OK, WrongSyntax, WrongAPISelection and WrongImport, or ClassNeedsLLM for
// what the LLM judge (or Fallback) decides.
const (
	ClassOK                = "OK"
	ClassWrongSyntax       = "WrongSyntax"       // the code does not parse
	ClassWrongAPISelection = "WrongAPISelection" // the target never called: a sibling or a hallucinated symbol instead
	ClassWrongImport       = "WrongImport"       // the right symbol, a wrong or missing import path
	ClassWrongParam        = "WrongParam"        // the right call, a wrong argument
	ClassWrongShapeDtype   = "WrongShapeDtype"   // the right call, a contract violated inside the API's body
	ClassWrongLogic        = "WrongLogic"        // the right call, the surrounding program wrong
	ClassNeedsLLM          = "needs_llm"
)

// FailureClasses are the six failure classes, in the paper's order.
var FailureClasses = []string{ClassWrongSyntax, ClassWrongAPISelection, ClassWrongImport, ClassWrongParam, ClassWrongShapeDtype, ClassWrongLogic}

// Sample is one solution's run, as the judge sees it.
type Sample struct {
	Program      string // the whole program with the solution in place
	Solution     string // the solver's code alone: whose calls are judged
	Passed       bool
	CompileError string
	Ran          bool  // the harness ran (it compiled)
	Direct       int64 // direct calls of the target
}

var (
	importTrouble = regexp.MustCompile(`could not import|cannot find package|no required module provides package|does not contain package|is not in std|is not in GOROOT|cannot find module providing package|module lookup disabled`)
	undefinedSel  = regexp.MustCompile(`undefined: (\w+)\.(\w+)`)
	undefinedName = regexp.MustCompile(`undefined: (\w+)($|\s|\n)`)
	noSuchMember  = regexp.MustCompile(`has no field or method (\w+)`)
)

// Judge classifies a sample by deterministic rules and names the rule that
// fired. pkgName is the name the program imports the target's package by;
// a whole program (package main with its imports) is the program that
// ran, all of it the solver's code, and names the package by its own
// import.
func Judge(s Sample, tg Target, pkgName string) (class, rule string) {
	s.Solution, s.Program, pkgName = solverCode(s.Solution, s.Program, tg, pkgName)
	if s.Passed {
		return ClassOK, "passed the harness"
	}
	if _, err := parser.ParseFile(token.NewFileSet(), "solution.go", s.Program, parser.AllErrors); err != nil {
		return ClassWrongSyntax, "does not parse: " + firstLine(err.Error())
	}
	if s.CompileError != "" {
		e := s.CompileError
		switch {
		case importTrouble.MatchString(e):
			return ClassWrongImport, "an import path does not resolve"
		}
		for _, m := range undefinedSel.FindAllStringSubmatch(e, -1) {
			if m[1] == pkgName && m[2] == tg.Name {
				return ClassWrongImport, "the imported package has no " + tg.Name + ": wrong import path"
			}
			if m[1] == pkgName {
				return ClassWrongAPISelection, "calls " + m[1] + "." + m[2] + ", which does not exist"
			}
		}
		for _, m := range undefinedName.FindAllStringSubmatch(e, -1) {
			if m[1] == pkgName {
				return ClassWrongImport, "uses " + pkgName + " without importing it"
			}
		}
		if m := noSuchMember.FindStringSubmatch(e); m != nil {
			return ClassWrongAPISelection, "calls method " + m[1] + ", which does not exist"
		}
		if !callsTarget(s.Program, s.Solution, pkgName, tg) {
			if other := otherPackageCalls(s.Program, s.Solution, pkgName, tg); len(other) > 0 {
				return ClassWrongAPISelection, "calls " + strings.Join(other, ", ") + " instead of " + tg.Name + " (does not compile)"
			}
		}
		return ClassNeedsLLM, "does not compile; cause unclear"
	}
	if s.Ran && !callsTarget(s.Program, s.Solution, pkgName, tg) {
		// The solver's own code never names the target: calls the task's
		// context makes do not count, whatever the spy saw.
		if other := otherPackageCalls(s.Program, s.Solution, pkgName, tg); len(other) > 0 {
			return ClassWrongAPISelection, "never calls " + tg.Name + "; calls " + strings.Join(other, ", ") + " instead"
		}
		return ClassWrongAPISelection, "never calls " + tg.Name
	}
	if s.Ran && s.Direct == 0 {
		if other := otherPackageCalls(s.Program, s.Solution, pkgName, tg); len(other) > 0 {
			return ClassWrongAPISelection, "never calls " + tg.Name + "; calls " + strings.Join(other, ", ") + " instead"
		}
		return ClassNeedsLLM, "never calls the target"
	}
	return ClassNeedsLLM, "calls the target; the result is wrong"
}

// otherPackageCalls lists the calls a solver made instead of the target:
// pkg.X for a function, a function of another imported package with the
// target's name (slices.Chunk for lo.Chunk: a standard-library sibling);
// for a method, also v.X on a value (any exported method call on something
// that is not an imported package; syntax alone cannot tell whose method
// it is).
func otherPackageCalls(program, solution, pkgName string, tg Target) []string {
	f, err := solverFile(solution)
	if err != nil {
		return nil
	}
	imported := importedNames(program, pkgName)
	seen := map[string]bool{}
	var out []string
	for _, c := range calledSelectors(f) {
		if isTargetCall(c, pkgName, tg, imported) || seen[c.pkg+"."+c.name] {
			continue
		}
		if c.pkg == pkgName || (c.name == tg.Name && imported[c.pkg]) || (tg.Receiver != "" && !imported[c.pkg] && ast.IsExported(c.name)) {
			seen[c.pkg+"."+c.name] = true
			out = append(out, strings.TrimPrefix(c.pkg+"."+c.name, "."))
		}
	}
	return out
}

// solverFile parses the solver's code: a whole program as it is (its
// helpers are the solver's too), a span as a function's body.
func solverFile(solution string) (*ast.File, error) {
	if f, err := parser.ParseFile(token.NewFileSet(), "", solution, 0); err == nil && f.Name.Name == "main" {
		return f, nil
	}
	return parser.ParseFile(token.NewFileSet(), "", "package p\nfunc _() {\n"+solution+"\n}\n", 0)
}

// importedNames are the names program imports packages by, pkgName
// included.
func importedNames(program, pkgName string) map[string]bool {
	imported := map[string]bool{pkgName: true}
	if pf, err := parser.ParseFile(token.NewFileSet(), "", program, parser.ImportsOnly); err == nil {
		for _, im := range pf.Imports {
			imported[goapi.ImportName(im)] = true
		}
	}
	return imported
}

// callsTarget reports whether the solution's code calls the target by
// name: pkg.Name for a function, .Name on a value (not on an imported
// package) for a method.
func callsTarget(program, solution, pkgName string, tg Target) bool {
	f, err := solverFile(solution)
	if err != nil {
		return false
	}
	imported := importedNames(program, pkgName)
	for _, c := range calledSelectors(f) {
		if isTargetCall(c, pkgName, tg, imported) {
			return true
		}
	}
	return false
}

// isTargetCall reports whether a call names the target: the target's
// package and name for a function; for a method its name on anything but
// an imported package.
func isTargetCall(c selCall, pkgName string, tg Target, imported map[string]bool) bool {
	if c.name != tg.Name {
		return false
	}
	if tg.Receiver == "" {
		return c.pkg == pkgName
	}
	return !imported[c.pkg]
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
